/* zp_pipeline.c — stages, chunks, placement and pass order of pipeline parallelism (see zp_pipeline.h). */
#include "zp_pipeline.h"

#include <stdio.h>
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

/* The layers of pipeline stage s (all its chunks) under --pp-first-layers / --pp-last-layers: the given
 * counts on the first and the last stage, the rest shared evenly by the stages between (Megatron-core's
 * get_num_layers_to_build); 0 when the rest does not divide (zp_pp_check refuses it). */
static int first_last_layers(int L, const zp_plan *p, int s)
{
    const int P = (int)p->pp;
    if (s == 0 && p->pp_first > 0)
        return p->pp_first;
    if (s == P - 1 && p->pp_last > 0)
        return p->pp_last;
    const int left = P - (p->pp_first > 0) - (p->pp_last > 0), rest = L - p->pp_first - p->pp_last;
    return left > 0 && rest % left == 0 ? rest / left : 0;
}

/* Virtual stage k of n under pp_acc: (L + the parts counted) / n layers, the part's stage one fewer. */
static int acc_layers(int L, int acc, int n, int k)
{
    const int e = (acc & ZP_PP_ACC_EMBED) != 0, l = (acc & ZP_PP_ACC_LOSS) != 0;
    return (L + e + l) / n - (k == 0 && e) - (k == n - 1 && l);
}

int zp_pp_vstage_layers(const zp_model *m, const zp_plan *p, int k)
{
    const int P = (int)p->pp, v = p->pp > 1 ? p->vstages : 1, L = (int)m->layers, s = k % P;
    if (p->pp_acc)
        return acc_layers(L, p->pp_acc, P * v, k);
    if (p->pp_layout)
        return p->pp_layout_n == P * v ? p->pp_layout[k] : p->pp_layout[s] / v;
    if (p->pp_first > 0 || p->pp_last > 0)
        return first_last_layers(L, p, s) / v;
    if (v == 1) {
        int first, count;
        stage_layers(L, P, s, &first, &count);
        return count;
    }
    return L / (P * v);
}

int zp_pp_uneven(const zp_plan *p)
{
    return p->pp_layout != NULL || p->pp_first > 0 || p->pp_last > 0 || p->pp_acc != 0;
}

void zp_pp_layout_text(const zp_plan *p, char *buf, size_t len)
{
    if (p->pp_acc) {
        snprintf(buf, len, "%s%s%s", p->pp_acc & ZP_PP_ACC_EMBED ? "--account-for-embedding-in-pipeline-split" : "",
                 p->pp_acc == (ZP_PP_ACC_EMBED | ZP_PP_ACC_LOSS) ? " " : "",
                 p->pp_acc & ZP_PP_ACC_LOSS ? "--account-for-loss-in-pipeline-split" : "");
        return;
    }
    if (!p->pp_layout) {
        if (p->pp_first > 0 && p->pp_last > 0)
            snprintf(buf, len, "--pp-first-layers %d --pp-last-layers %d", p->pp_first, p->pp_last);
        else
            snprintf(buf, len, "--pp-%s-layers %d", p->pp_first > 0 ? "first" : "last",
                     p->pp_first > 0 ? p->pp_first : p->pp_last);
        return;
    }
    size_t at = (size_t)snprintf(buf, len, "--pp-layout ");
    for (int i = 0; i < p->pp_layout_n && at < len;) { /* runs as N*count, as the option takes them */
        int j = i;
        while (j < p->pp_layout_n && p->pp_layout[j] == p->pp_layout[i])
            j++;
        at += (size_t)snprintf(buf + at, len - at, j - i > 1 ? "%s%d*%d" : "%s%d", i ? "," : "", p->pp_layout[i],
                               j - i);
        i = j;
    }
}

/* An uneven layout against the model: every virtual stage at least one layer (the first and the last
 * virtual stage may have none: they carry the embedding and the LM head, as Llama 3's 405B did, Dubey et
 * al. 2024 §3.3.2), every stage's count divisible by v when given per stage (Megatron-core's rule), and
 * the layers summing to the model's. */
static zp_status check_uneven(const zp_model *m, const zp_plan *p)
{
    const int P = (int)p->pp, v = p->pp > 1 ? p->vstages : 1, L = (int)m->layers;
    char what[512];
    zp_pp_layout_text(p, what, sizeof what);
    if (!p->pp_layout && P < 2)
        return ZP_FAIL(ZP_EINVAL, "%s: the first and the last stage's layers need pipeline stages (give --pp P >= 2)",
                       what);
    if (p->pp_acc) {
        const int all = L + ((p->pp_acc & ZP_PP_ACC_EMBED) != 0) + ((p->pp_acc & ZP_PP_ACC_LOSS) != 0);
        if (p->pp_layout || p->pp_first > 0 || p->pp_last > 0 || all % (P * v) != 0)
            return ZP_FAIL(ZP_EINVAL, "%s: the %d layers with the embedding and the loss counted must divide over the "
                                      "%d virtual stages, without another layout",
                           what, all, P * v);
    }
    if (p->pp_layout && p->pp_layout_n != P && p->pp_layout_n != P * v)
        return ZP_FAIL(ZP_EINVAL, "%s: %d entries, but the pipeline has %d stages of %d model chunk%s (give %d, one "
                                  "per stage, or %d, one per virtual stage, with --virtual-stages)",
                       what, p->pp_layout_n, P, v, v > 1 ? "s" : "", P, P * v);
    const int left = P - (p->pp_first > 0) - (p->pp_last > 0), rest = L - p->pp_first - p->pp_last;
    if (!p->pp_layout && !p->pp_acc && left > 0 && (rest < left || rest % left != 0))
        return ZP_FAIL(ZP_EINVAL, "%s: the other %d of the model's %d layers do not divide evenly over the %d other "
                                  "stages (give counts that leave a multiple of them, or --pp-layout)",
                       what, rest, L, left);
    const int per_stage = !p->pp_acc && (!p->pp_layout || p->pp_layout_n == P);
    int sum = 0;
    for (int s = 0; s < P; s++) {
        const int n = p->pp_layout ? (per_stage ? p->pp_layout[s] : 0) : first_last_layers(L, p, s);
        if (per_stage && (n < 1 || n % v != 0))
            return ZP_FAIL(ZP_EINVAL, "%s: stage %d gets %d layers; %s", what, s, n,
                           n < 1 ? "every pipeline stage needs at least one"
                                 : "with --virtual-stages each stage's layers must divide evenly over its model "
                                   "chunks (as Megatron-core requires)");
    }
    for (int k = 0; k < P * v; k++) {
        const int n = zp_pp_vstage_layers(m, p, k);
        if (n < 0 || (n == 0 && k != 0 && k != P * v - 1))
            return ZP_FAIL(ZP_EINVAL, "%s: virtual stage %d gets %d layers; only the first (the embedding) and the "
                                      "last (the LM head) may have none",
                           what, k, n);
        sum += n;
    }
    for (int s = 0; s < P; s++) {
        int n = 0;
        for (int c = 0; c < v; c++)
            n += zp_pp_vstage_layers(m, p, c * P + s);
        if (n < 1)
            return ZP_FAIL(ZP_EINVAL, "%s: stage %d gets no layer (every pipeline stage needs at least one)", what, s);
    }
    if (sum != L)
        return ZP_FAIL(ZP_EINVAL, "%s: %d layers in all, but the model has %d (the layout must sum to them)", what,
                       sum, L);
    return ZP_OK;
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
    if (zp_pp_uneven(p))
        return check_uneven(m, p);
    if (v > 1 && L % (P * v) != 0)
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages %lld does not divide the layers per stage (%lld layers over %lld "
                                  "stages%s): Megatron-LM's interleaved schedule needs every model chunk the same "
                                  "(or give an uneven layout: --pp-first-layers / --pp-last-layers, --pp-layout)",
                       (long long)v, (long long)L, (long long)P,
                       L % P == 0 ? "" : ", which do not divide either");
    if (v > 1 && L / (P * v) < 1)
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages %lld: %lld layers cannot fill %lld x %lld model chunks",
                       (long long)v, (long long)L, (long long)P, (long long)v);
    return ZP_OK;
}

int zp_pp_fits(const zp_model *m, const zp_plan *p) { return zp_pp_check(m, p) == ZP_OK; }

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
    if (zp_pp_uneven(p)) { /* chunk c is virtual stage c·P + stage: its first layer follows all before it */
        int first = 0;
        for (int k = 0; k < P * v; k++) {
            const int n = zp_pp_vstage_layers(m, p, k);
            if (k % P == stage) {
                out->first[k / P] = first;
                out->layers[k / P] = n;
            }
            first += n;
        }
    } else if (v == 1) {
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
        /* Megatron-core's get_pp_rank_microbatches (schedules.py, core_r0.10 on; the same order as Llama 3's
         * schedule, Dubey et al. 2024 §3.3.2, with N = P micro-batches a round): (P - s - 1)·2 + (v - 1)·N
         * virtual micro-batches of warm-up, capped by the stage's m·v (then every forward runs before the
         * first backward). Megatron-LM v2 to Megatron-core 0.9 ran every forward first on every stage when m
         * equals P (`if num_microbatches == pipeline_parallel_size: all_warmup_microbatches = True`); with
         * m = P the cap reaches only the stages s <= P/2 - 1, so the later ones differ. */
        const int64_t total = m * v;
        if (m == P && p->interleave_all_warmup)
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

zp_status zp_pp_layout_parse(const char *text, int *out, int cap, int *n)
{
    *n = 0;
    const char *at = text;
    while (*at) {
        char *end;
        const long layers = strtol(at, &end, 10);
        long count = 1;
        if (end == at || layers < 0 || layers > 1000000)
            return ZP_FAIL(ZP_EINVAL, "--pp-layout %s: '%.*s' is not a layer count (give layers per stage, e.g. "
                                      "7,8*14,7)",
                           text, (int)strcspn(at, ","), at);
        if (*end == '*') {
            const char *c = end + 1;
            count = strtol(c, &end, 10);
            if (end == c || count < 1 || count > cap)
                return ZP_FAIL(ZP_EINVAL, "--pp-layout %s: '%.*s' repeats a count a bad number of times (N*K: K >= 1)",
                               text, (int)strcspn(at, ","), at);
        }
        if (*end != ',' && *end != '\0')
            return ZP_FAIL(ZP_EINVAL, "--pp-layout %s: '%.*s' is not a layer count (give layers per stage, e.g. "
                                      "7,8*14,7)",
                           text, (int)strcspn(at, ","), at);
        if (*n + count > cap)
            return ZP_FAIL(ZP_EINVAL, "--pp-layout %s: more than %d stages", text, cap);
        for (long i = 0; i < count; i++)
            out[(*n)++] = (int)layers;
        at = *end == ',' ? end + 1 : end;
        if (*end == ',' && !*at)
            return ZP_FAIL(ZP_EINVAL, "--pp-layout %s: a trailing comma", text);
    }
    if (*n == 0)
        return ZP_FAIL(ZP_EINVAL, "--pp-layout: give the layers of each stage, e.g. 7,8*14,7");
    return ZP_OK;
}
