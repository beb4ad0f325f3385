/* zp_pipeline.c — stages, chunks, placement and pass order of pipeline parallelism (see zp_pipeline.h). */
#include "zp_pipeline.h"

#include <stdlib.h>
#include <string.h>

/* Layers of stage s of P over L layers (v = 1): even when P divides L; otherwise the first and the last
 * stage get floor(L/P) and the stages between share the rest, in order (with P = 2 the first stage takes
 * the extra layer: the last one carries the LM head). */
static void stage_layers(int L, int P, int s, int *first, int *count)
{
    const int q = L / P, r = L % P;
    if (r == 0 || P == 1) {
        *first = s * q;
        *count = q;
        return;
    }
    if (P == 2) {
        *first = s == 0 ? 0 : q + r;
        *count = s == 0 ? q + r : q;
        return;
    }
    /* stages 1..P-2 share (P-2)q + r layers: the first (r mod (P-2)) of them one more than the rest */
    const int mid = P - 2, extra = r / mid, more = r % mid;
    int f = 0;
    for (int i = 0; i < s; i++)
        f += (i == 0 || i == P - 1) ? q : q + extra + (i - 1 < more);
    *first = f;
    *count = (s == 0 || s == P - 1) ? q : q + extra + (s - 1 < more);
}

zp_status zp_pp_check(const zp_model *m, const zp_plan *p)
{
    const int64_t P = p->pp, v = p->vstages, L = m->layers;
    if (P < 1)
        return ZP_FAIL(ZP_EINVAL, "--pp: the pipeline stages must be at least 1");
    if (P > L)
        return ZP_FAIL(ZP_EINVAL, "--pp %lld: more pipeline stages than the model's %lld layers (each stage needs "
                                  "at least one)",
                       (long long)P, (long long)L);
    if (v > 1 && L % (P * v) != 0)
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages %lld does not divide the layers per stage (%lld layers over %lld "
                                  "stages%s): Megatron-LM's interleaved schedule needs every model chunk the same",
                       (long long)v, (long long)L, (long long)P,
                       L % P == 0 ? "" : ", which do not divide either");
    if (v > 1 && L / (P * v) < 1)
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages %lld: %lld layers cannot fill %lld x %lld model chunks",
                       (long long)v, (long long)L, (long long)P, (long long)v);
    return ZP_OK;
}

zp_status zp_pp_stage_get(const zp_model *m, const zp_plan *p, int stage, zp_pp_stage *out)
{
    ZP_TRY(zp_pp_check(m, p));
    const int P = (int)p->pp, v = p->vstages, L = (int)m->layers;
    if (stage < 0 || stage >= P)
        return ZP_FAIL(ZP_EINVAL, "pipeline stage %d is not one of the %d", stage, P);
    memset(out, 0, sizeof *out);
    out->stage = stage;
    out->stages = P;
    out->chunks = v;
    if (v == 1) {
        stage_layers(L, P, stage, &out->first[0], &out->layers[0]);
    } else {
        const int per = L / (P * v);
        for (int c = 0; c < v; c++) {
            out->first[c] = (c * P + stage) * per;
            out->layers[c] = per;
        }
    }
    out->embedding = stage == 0;
    out->head = stage == P - 1;
    return ZP_OK;
}

int64_t zp_pp_warmup(const zp_plan *p, int stage)
{
    const int64_t P = p->pp, v = p->vstages, m = p->grad_accum;
    switch (p->pp > 1 ? p->schedule : ZP_PP_1F1B) {
    case ZP_PP_GPIPE: return m;
    case ZP_PP_INTERLEAVED: {
        const int64_t total = m * v;
        if (m == P)
            return total;
        int64_t w = (P - stage - 1) * 2 + (v - 1) * P;
        return w < total ? w : total;
    }
    default: {
        int64_t w = P - stage - 1;
        return w < m ? w : m;
    }
    }
}

/* The k-th forward (or backward) virtual micro-batch of a stage: its chunk and micro-batch (interleaved:
 * Megatron-LM's get_model_chunk_id; otherwise the k-th micro-batch of the one chunk). */
static zp_pp_pass pass_of(const zp_plan *p, int64_t k, int backward)
{
    if (p->pp <= 1 || p->schedule != ZP_PP_INTERLEAVED)
        return (zp_pp_pass){.backward = backward, .micro = k, .chunk = 0};
    const int64_t P = p->pp, v = p->vstages, in_group = k % (P * v);
    int chunk = (int)(in_group / P);
    if (backward)
        chunk = (int)v - 1 - chunk;
    return (zp_pp_pass){.backward = backward, .micro = (k / (P * v)) * P + k % P, .chunk = chunk};
}

zp_pp_pass zp_pp_pass_at(const zp_plan *p, int stage, int64_t k)
{
    const int64_t v = p->pp > 1 ? p->vstages : 1, total = p->grad_accum * v, w = zp_pp_warmup(p, stage);
    if (k < w)
        return pass_of(p, k, 0);
    if (k < w + 2 * (total - w)) {
        const int64_t i = (k - w) / 2;
        return (k - w) % 2 == 0 ? pass_of(p, w + i, 0) : pass_of(p, i, 1);
    }
    return pass_of(p, k - total, 1); /* the cool-down's backwards: total - w .. total - 1 */
}

zp_status zp_pp_order(const zp_plan *p, int stage, zp_pp_pass **out, int *n)
{
    const int64_t v = p->pp > 1 ? p->vstages : 1, count = 2 * p->grad_accum * v;
    if (count > (1 << 28))
        return ZP_FAIL(ZP_ERANGE, "%lld passes in one step are beyond the schedule", (long long)count);
    zp_pp_pass *o = malloc((size_t)count * sizeof *o);
    if (!o)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int64_t k = 0; k < count; k++)
        o[k] = zp_pp_pass_at(p, stage, k);
    *out = o;
    *n = (int)count;
    return ZP_OK;
}

zp_status zp_pp_place_get(const zp_plan *p, int gpus_per_node, zp_pp_place *out)
{
    const int64_t g = p->dp * p->mp, gpn = gpus_per_node > 0 ? gpus_per_node : 1;
    if (g % gpn == 0) {
        *out = (zp_pp_place){.per_stage_nodes = (int)(g / gpn), .stages_per_node = 1};
    } else if (gpn % g == 0) {
        *out = (zp_pp_place){.per_stage_nodes = 1, .stages_per_node = (int)(gpn / g)};
    } else {
        return ZP_FAIL(ZP_EINVAL, "a pipeline stage of %lld GPUs (DP %lld x MP %lld) neither fills whole nodes of %lld "
                                  "GPUs nor divides one",
                       (long long)g, (long long)p->dp, (long long)p->mp, (long long)gpn);
    }
    return ZP_OK;
}
