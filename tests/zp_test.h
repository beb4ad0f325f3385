/* zp_test.h — what the Criterion suites share: a cluster preset by name (the test fails without it) and a
 * plan of a ZeRO stage, DP and MP degrees and a micro-batch (sequences) on zp_plan_default's other values.
 * Included after <criterion/criterion.h> as "../zp_test.h" from a suite's folder. */
#ifndef ZP_TEST_H
#define ZP_TEST_H

#include <stdint.h>

#include "zp_cluster.h"
#include "zp_plan.h"

static inline const zp_cluster *zp_test_preset(const char *name)
{
    const zp_cluster *c = NULL;
    cr_assert_eq(zp_cluster_find(name, &c), ZP_OK, "cluster preset %s", name);
    return c;
}

static inline zp_plan zp_test_plan(int stage, int64_t dp, int64_t mp, int64_t micro_batch)
{
    zp_plan p;
    zp_plan_default(&p, dp);
    p.stage = stage;
    p.mp = mp;
    p.micro_batch = micro_batch;
    return p;
}

#endif
