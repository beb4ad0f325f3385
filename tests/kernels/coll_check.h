/* coll_check.h — what the plain-program collective tests share (test_coll_mpi.c for the cpu backend,
 * test_cuda_coll.c for NCCL): pass/fail counters with file:line (nccl-tests' TESTCHECK), and values that
 * are exact in fp32, fp16 and bf16 and in every partial sum. Each test defines g_pass, g_fail and g_rank. */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "zp_elementwise.h"
#include "zp_kernels.h"

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            g_pass++;                                                        \
        } else {                                                             \
            g_fail++;                                                        \
            fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

#define OK(expr) CHECK((expr) == ZP_OK, "%s: %s", #expr, zp_error_message())

static inline void put(void *buf, zp_dtype dt, size_t i, double x)
{
    if (dt == ZP_DT_F32)
        ((float *)buf)[i] = (float)x;
    else if (dt == ZP_DT_F16)
        ((uint16_t *)buf)[i] = zp_f32_to_f16((float)x);
    else
        ((uint16_t *)buf)[i] = zp_f32_to_bf16((float)x);
}

static inline double get(const void *buf, zp_dtype dt, size_t i)
{
    if (dt == ZP_DT_F32)
        return ((const float *)buf)[i];
    if (dt == ZP_DT_F16)
        return zp_f16_to_f32(((const uint16_t *)buf)[i]);
    return zp_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* small integers: exact in every type and in every partial sum */
static inline double val(int rank, size_t i) { return (double)(rank + (int)(i % 7)); }

#endif
