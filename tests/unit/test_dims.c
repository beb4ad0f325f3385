/* vocab/zp_dims: the table of parallel dimensions, and the search's walk over it (planner/zp_search_walk.c). */
#include <criterion/criterion.h>

#include <string.h>

#include "zp_dims.h"
#include "zp_plan.h"
#include "zp_search.h"
#include "zp_zoo.h"
#include "../zp_test.h"

Test(dims, rows_are_their_ids_and_well_formed)
{
    for (int d = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        cr_assert_not_null(t);
        cr_assert_eq((int)t->id, d, "row %d holds dimension %d", d, (int)t->id);
        cr_assert(t->name && *t->name && t->divides && *t->divides && t->option);
        cr_assert((unsigned)t->within < ZP_NDIMS);
        /* a dimension inside another is placed inside it: its stride is the one it sits in (EP and CP inside
         * DP: the TP degree), wherever its row is */
        if (t->within != t->id) {
            int64_t deg[ZP_NDIMS];
            for (int e = 0; e < ZP_NDIMS; e++)
                deg[e] = e == (int)t->id ? 2 : 4;
            cr_assert_eq(zp_dims_stride(deg, t->id), zp_dims_stride(deg, t->within), "%s", t->name);
        }
        /* searched dimensions have a range and a check; the derived one (DP) has neither */
        cr_assert((t->next == NULL) == (t->check == NULL), "%s", t->name);
        for (int e = 0; e < d; e++)
            cr_assert_str_neq(t->name, zp_dims_get((zp_dim_id)e)->name);
    }
    cr_assert_null(zp_dims_get(ZP_NDIMS));
}

Test(dims, the_plan_holds_its_degrees_in_the_table_order)
{
    zp_plan p = zp_test_plan(0, 8, 2, 1); /* DP 8, TP 2 */
    p.ep = 4;
    p.pp = 4;
    cr_assert_eq(p.deg[ZP_DIM_TP], 2);
    cr_assert_eq(p.deg[ZP_DIM_EP], 4);
    cr_assert_eq(p.deg[ZP_DIM_DP], 8);
    cr_assert_eq(p.deg[ZP_DIM_PP], 4);
    /* EP subdivides DP: it does not multiply the GPUs */
    cr_assert_eq(zp_plan_gpus(&p), 64);
    /* placement, innermost first: TP, then EP inside DP, then the pipeline */
    cr_assert_eq(zp_dims_stride(p.deg, ZP_DIM_TP), 1);
    cr_assert_eq(zp_dims_stride(p.deg, ZP_DIM_EP), 2);
    cr_assert_eq(zp_dims_stride(p.deg, ZP_DIM_DP), 2);
    cr_assert_eq(zp_dims_stride(p.deg, ZP_DIM_PP), 16);
    /* rank 45 = pp 2 (32..47), dp 6 (2 per DP step: 45 - 32 = 13 -> 6), tp 1; its EP index 6 mod 4 */
    cr_assert_eq(zp_dims_coord(p.deg, 45, ZP_DIM_TP), 1);
    cr_assert_eq(zp_dims_coord(p.deg, 45, ZP_DIM_DP), 6);
    cr_assert_eq(zp_dims_coord(p.deg, 45, ZP_DIM_EP), 2);
    cr_assert_eq(zp_dims_coord(p.deg, 45, ZP_DIM_PP), 2);
}

/* A given degree is judged by its row, with the row's message. */
Test(dims, given_degrees_are_checked_by_their_rows)
{
    const zp_model *m = &zp_zoo_find("100B")->model;
    zp_dim_ctx c;
    zp_dims_ctx_init(&c, m, 400, 16, 0);
    const zp_dim_type *tp = zp_dims_get(ZP_DIM_TP), *pp = zp_dims_get(ZP_DIM_PP), *ep = zp_dims_get(ZP_DIM_EP);
    cr_assert_eq(tp->check(&c, 16), ZP_OK);
    cr_assert_eq(tp->check(&c, 3), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "--mp: 3 does not divide the 400 GPUs"), "%s", zp_error_message());
    cr_assert_eq(pp->check(&c, 200), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "more pipeline stages than the model's 125 layers"), "%s",
              zp_error_message());
    c.deg[ZP_DIM_TP] = 16;
    cr_assert_eq(pp->check(&c, 8), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "--pp 8 x --mp 16 do not divide the 400 GPUs"), "%s", zp_error_message());
    cr_assert_eq(ep->check(&c, 2), ZP_EINVAL); /* a dense model has no experts */
    cr_assert(strstr(zp_error_message(), "has no experts to shard"), "%s", zp_error_message());
}

/* Each row's range: every candidate it offers is admitted, and TP stays in a node unless asked. */
Test(dims, search_ranges_offer_what_they_admit)
{
    const zp_model *m = &zp_zoo_find("mixtral-8x7b")->model;
    zp_dim_ctx c;
    zp_dims_ctx_init(&c, m, 64, 8, 0);
    const zp_dim_type *tp = zp_dims_get(ZP_DIM_TP), *pp = zp_dims_get(ZP_DIM_PP), *ep = zp_dims_get(ZP_DIM_EP);
    int64_t want_tp[] = {1, 2, 4, 8}, n = 0;
    for (int64_t t = tp->next(&c, 0); t > 0; t = tp->next(&c, t), n++) {
        cr_assert_lt(n, 4);
        cr_assert_eq(t, want_tp[n]);
    }
    cr_assert_eq(n, 4);
    c.deg[ZP_DIM_TP] = 2;
    for (int64_t p = pp->next(&c, 0); p > 0; p = pp->next(&c, p)) {
        cr_assert(pp->admits(&c, p));
        cr_assert_eq(32 % p, 0);
    }
    c.deg[ZP_DIM_PP] = 4; /* DP 8: EP 1, 2, 4, 8 (Mixtral's 8 experts) */
    n = 0;
    for (int64_t e = ep->next(&c, 0); e > 0; e = ep->next(&c, e), n++)
        cr_assert_eq(e, INT64_C(1) << n);
    cr_assert_eq(n, 4);
    cr_assert_not(ep->admits(&c, 16));
}

/* The search walks the table: every plan it returns has degrees its rows admit, and the GPUs. */
Test(dims, the_search_offers_only_admitted_degrees)
{
    const zp_cluster *cl = zp_test_preset("dgx-h100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("mixtral-8x7b")->model, cl, 64);
    r.simulate = 0;
    r.global_batch = 256;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    zp_search_result res;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int seen_ep = 0, seen_pp = 0;
    for (int i = 0; i < res.n; i++) {
        const zp_plan *p = &res.plans[i].plan;
        cr_assert_eq(zp_plan_gpus(p), 64);
        cr_assert_eq(p->dp % p->ep, 0);
        cr_assert_leq(p->mp, 8);
        seen_ep |= p->ep > 1;
        seen_pp |= p->pp > 1;
    }
    cr_assert(seen_ep && seen_pp, "the walk searched EP and PP");
    zp_search_result_free(&res);
    /* the data-parallel degree is never given */
    r.base.dp = 8;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_DP));
    cr_assert_eq(zp_search_run(&r, &res), ZP_EINVAL);
}

/* Context parallelism: a row inside DP that splits each sequence. Its ranks are DP ranks (ZeRO's group
 * and the gradient reduction keep them), the batch has DP / CP replicas, its group sits next to TP. */
Test(dims, context_parallelism_splits_the_sequence_inside_dp)
{
    const zp_dim_type *cp = zp_dims_get(ZP_DIM_CP);
    cr_assert_eq(cp->within, ZP_DIM_DP);
    cr_assert(cp->seq_split);
    cr_assert_str_eq(cp->option, "--cp");
    cr_assert_str_eq(cp->megatron, "--context-parallel-size");
    zp_plan p = zp_test_plan(0, 128, 8, 1); /* Llama 3 405B at 128K: TP 8, CP 16, PP 16, DP 8 */
    p.pp = 16;
    p.cp = 16;
    p.grad_accum = 16;
    cr_assert_eq(zp_plan_gpus(&p), 16384);
    cr_assert_eq(zp_plan_replicas(&p), 8);
    cr_assert_eq(zp_dims_seq_split(p.deg), 16);
    cr_assert_float_eq(zp_plan_global_batch(&p), 128.0, 1e-9);
    cr_assert_eq(zp_dims_stride(p.deg, ZP_DIM_CP), 8);
    cr_assert_eq(zp_dims_coord(p.deg, 8 * 5 + 3, ZP_DIM_CP), 5);
    cr_assert_eq(zp_plan_validate(&p), ZP_OK);
    p.cp = 3; /* not a divisor of the DP ranks */
    cr_assert_eq(zp_plan_validate(&p), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "--cp: 3 must divide the data-parallel degree 128"), "%s",
              zp_error_message());
}

Test(dims, context_parallel_degrees_are_checked_and_searched_on_long_sequences)
{
    zp_model m = zp_zoo_find("llama-3-8b")->model;
    m.seq = 131072;
    zp_dim_ctx c;
    zp_dims_ctx_init(&c, &m, 64, 8, 0);
    const zp_dim_type *cp = zp_dims_get(ZP_DIM_CP);
    cr_assert_eq(cp->check(&c, 16), ZP_OK);
    m.seq = 8192;
    cr_assert_eq(cp->check(&c, 3), ZP_EINVAL); /* 2 x 3 does not divide 8192 */
    cr_assert(strstr(zp_error_message(), "2 x 3 equal chunks"), "%s", zp_error_message());
    c.deg[ZP_DIM_TP] = 8;
    cr_assert_eq(cp->check(&c, 16), ZP_EINVAL); /* 64 / 8 leaves 8 DP ranks */
    cr_assert(strstr(zp_error_message(), "does not divide the 8 data-parallel ranks"), "%s", zp_error_message());
    /* the range: 1 alone at 8K (a slice keeps 8K tokens), 1..16 at 128K within the 64 / 8 x ... DP ranks */
    c.deg[ZP_DIM_TP] = 1;
    c.deg[ZP_DIM_PP] = 1;
    cr_assert_eq(cp->next(&c, 0), 1);
    cr_assert_eq(cp->next(&c, 1), 0);
    m.seq = 131072;
    int64_t n = 0, last = 0;
    for (int64_t d = cp->next(&c, 0); d > 0; d = cp->next(&c, d), n++)
        last = d;
    cr_assert_eq(n, 5);
    cr_assert_eq(last, 16);
}
