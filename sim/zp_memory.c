#include "zp_memory.h"

#include "zp_zoo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double zp_memory_model_states(double psi, int stage, double nd, double nm, double k)
{
    double p = psi / nm;
    switch (stage) {
    case 0: return (2.0 + 2.0 + k) * p;                    /* baseline: 16Ψ */
    case 1: return 4.0 * p + k * p / nd;                   /* Pos:  4Ψ + KΨ/Nd */
    case 2: return 2.0 * p + (2.0 + k) * p / nd;           /* Pos+g: 2Ψ + (K+2)Ψ/Nd */
    default: return (2.0 + 2.0 + k) * p / nd;              /* Pos+g+p: (K+4)Ψ/Nd */
    }
}

double zp_memory_max_params(int stage, double nd, double nm, double k, double gpu_mem)
{
    /* model states are linear in Ψ: Ψ_max = gpu_mem / (bytes per parameter) */
    return gpu_mem / zp_memory_model_states(1.0, stage, nd, nm, k);
}

zp_status zp_memory_estimate(const zp_model *model, const zp_plan *plan, zp_memory *out)
{
    ZP_TRY(zp_plan_validate(plan));
    const zp_stage_info *si = zp_stage_get(plan->stage);
    const double nd = (double)plan->dp, nm = (double)plan->mp, b = (double)plan->micro_batch;
    const double psi = zp_model_params(model) / nm; /* parameters of one MP rank (Megatron splits blocks) */
    const double k = plan->k_optimizer;
    zp_memory m = {0};

    const double pb = plan->param_bytes > 0 ? plan->param_bytes : 2.0; /* 2: fp16/bf16, 4: fp32 */
    /* fp16 parameters: 2Ψ/Nm, ÷Nd at stage 3 (Pos+g+p); on the host with parameter offload. */
    double params = pb * psi / (si->partitions_params ? nd : 1.0);
    /* fp16 gradients: 2Ψ/Nm, ÷Nd from stage 2 (Pos+g). */
    double grads = pb * psi / (si->partitions_grads ? nd : 1.0);
    /* optimizer states: KΨ/Nm, ÷Nd from stage 1 (Pos). */
    double optimizer = k * psi / (si->partitions_optimizer ? nd : 1.0);

    if (plan->offload == ZP_OFFLOAD_OPTIMIZER || plan->offload == ZP_OFFLOAD_PARAMS) {
        /* ZeRO-Offload (Ren et al. 2021, §4): the optimizer states and an fp32 copy of the gradient
         * partition (4 bytes per parameter) live in host memory; the CPU runs Adam. */
        m.host += optimizer + 4.0 * optimizer / k;
        optimizer = 0.0;
    }
    if (plan->offload == ZP_OFFLOAD_PARAMS) {
        /* ZeRO-3 Offload: the fp16 parameter partition lives in host memory too. */
        m.host += params;
        params = 0.0;
    }
    if (si->partitions_params && plan->persistence_threshold > 0) {
        /* stage 3 keeps tensors below the persistence threshold whole on every rank (DeepSpeed) */
        params += pb * zp_model_params_small_tensors(model, plan->mp, plan->persistence_threshold) * (1.0 - 1.0 / nd);
    }

    /* Activations (Korthikanti et al. 2022; ZeRO §6.1 for Pa):
     *  - with checkpointing: one checkpoint of 2·s·b·h bytes per block (÷Nm with Pa, on the host with
     *    Pa+cpu), plus the full activations of the one block being recomputed and back-propagated,
     *    s·b·h·(10 + 24/Nm + 5·a·s/(h·Nm));
     *  - without: every block's full activations;
     *  - plus the logits and their gradient in fp16: 2·2·b·s·V/Nm (vocabulary split across MP). */
    double layer_act = zp_model_activation_bytes_layer(model, b, plan->mp);
    double logits = 4.0 * b * (double)model->seq * (double)model->vocab / nm;
    double act;
    if (plan->checkpoint) {
        double ckpt = (double)model->layers * zp_model_checkpoint_bytes_layer(model, b);
        if (plan->pa || plan->pa_cpu)
            ckpt /= nm;
        if (plan->pa_cpu) {
            m.host += ckpt;
            ckpt = 0.0;
        }
        m.checkpoints = ckpt;
        act = ckpt + layer_act + logits;
    } else {
        act = (double)model->layers * layer_act + logits;
    }

    /* Buffers (ZeRO §6.2): without CB a fused fp32 buffer as large as the local parameters, 4Ψ/Nm
     * (a 3B model's is 12 GB); with CB two constant-size fp16 buckets (reduce and all-gather) of
     * `bucket` elements, never larger than the local parameters. Stage 3 also holds the gathered fp16
     * parameters of the block in use and of the prefetched one, less the 1/Nd share it owns anyway:
     * 2 bytes x min(2 x largest block, Ψ)/Nm x (1 - 1/Nd) (no more than the whole model is ever live). */
    double buffers = plan->cb ? 2.0 * pb * fmin(plan->bucket, psi) : 4.0 * psi;
    if (si->partitions_params) {
        double live = fmin(2.0 * zp_model_params_largest_layer(model) / nm, psi);
        if (plan->stage3_max_live > 0) /* DeepSpeed's stage3_max_live_parameters caps it */
            live = fmin(live, plan->stage3_max_live);
        buffers += pb * live * (1.0 - 1.0 / nd);
    }

    /* Fragmentation (ZeRO §6.3): without MD, interleaved short- and long-lived tensors leave a share of
     * the memory they occupy unusable; MD pre-allocates contiguous regions and removes it. */
    double frag = plan->md ? 0.0 : ZP_FRAGMENTATION_FRACTION * (act + grads + buffers);

    m.params = params;
    m.grads = grads;
    m.optimizer = optimizer;
    m.activations = act;
    m.buffers = buffers;
    m.fragmentation = frag;
    m.total = params + grads + optimizer + act + buffers + frag;
    if (!isfinite(m.total) || !isfinite(m.host))
        return ZP_FAIL(ZP_ERANGE, "memory of this plan is beyond representable range");
    *out = m;
    return ZP_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Parameters of one MP rank's groups in the executor's Megatron layout (see zp_memory.h). */
static void exec_groups(const zp_model *m, double t, double *emb, double *blk)
{
    const double C = (double)m->hidden, F = (double)m->ffn;
    *emb = (double)m->vocab / t * C + (double)m->seq * C + 2 * C;
    *blk = 4 * C + 3 * C / t * C + 3 * C / t + C * C / t + C + F / t * C + F / t + C * F / t + C;
}

zp_status zp_memory_estimate_exec(const zp_model *model, const zp_plan *plan, zp_memory *out)
{
    ZP_TRY(zp_plan_validate(plan));
    ZP_TRY(zp_model_validate(model));
    const zp_stage_info *si = zp_stage_get(plan->stage);
    const double t = (double)plan->mp, nd = (double)plan->dp, fb = 4.0; /* fp32 bytes */
    const double L = (double)model->layers, C = (double)model->hidden, s = (double)model->seq;
    const double a = (double)model->heads, V = (double)model->vocab, F = (double)model->ffn;
    const double BT = (double)plan->micro_batch * s;
    double emb, blk;
    exec_groups(model, t, &emb, &blk);
    const double psi = emb + L * blk;
    /* units: groups cut by gradient buckets from the top; each sharded into nd pieces of ceil(len/nd) */
    const double bucket = plan->cb ? fmin(plan->bucket, psi) : psi;
    double shard = 0, max_unit = 0;
    const double nb = ceil(psi / bucket);
    if (nb > 1e8)
        return ZP_FAIL(ZP_ERANGE, "bucket of %g elements: too many buckets", bucket);
    size_t ncut = (size_t)model->layers + 2 + (size_t)nb;
    double *cut = malloc(ncut * sizeof *cut);
    if (!cut)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    size_t n = 0;
    cut[n++] = psi;
    for (int64_t g = 0; g <= model->layers; g++)
        cut[n++] = g == 0 ? 0 : emb + (double)(g - 1) * blk;
    for (double k = 1; k < nb; k++)
        cut[n++] = psi - k * bucket;
    qsort(cut, n, sizeof *cut, cmp_double);
    for (size_t i = 0; i + 1 < n; i++) {
        double len = cut[i + 1] - cut[i];
        if (len <= 0)
            continue;
        shard += ceil(len / nd);
        max_unit = fmax(max_unit, len);
    }
    free(cut);
    const double piece_max = ceil(max_unit / nd);
    zp_memory m = {0};
    m.params = fb * (si->partitions_params ? shard : psi);
    m.grads = fb * (si->partitions_grads ? shard : psi);
    m.optimizer = plan->k_optimizer * (si->partitions_optimizer ? shard : psi);

    /* activations, in elements */
    const double att = (double)plan->micro_batch * (a / t) * s * s;
    const double layer = BT * (4 * C + 12 * C / t) + att + 4 * BT; /* Korthikanti w/o dropout + LN stats */
    double act;
    if (plan->checkpoint) {
        int pa = plan->pa && plan->mp > 1;
        double ck = pa ? ceil(BT * C / t) : BT * C;
        /* one block's set (its input is the checkpoint: 3C/t... less the replicated input, counted in ck) */
        act = L * ck + (layer - BT * C) + BT * C /* residual stream */ + (pa ? ck * t : 0);
    } else {
        act = L * layer + BT * C; /* + the last block's output */
    }
    act += BT * C /* row-parallel partial sums */ + BT * C + 2 * BT /* final LayerNorm */ + BT * V / t /* logits */
           + 3 * BT /* cross-entropy statistics */;
    act += 2 * BT * C + 4 * BT * C / t + att + BT * F / t; /* backward working tensors of one block */
    m.activations = fb * act;
    m.checkpoints = plan->checkpoint ? fb * L * (plan->pa && plan->mp > 1 ? ceil(BT * C / t) : BT * C) : 0;

    double buf = 0;
    if (plan->stage >= 1)
        buf += piece_max;                /* this rank's piece */
    if (plan->stage == 1 || plan->stage == 2)
        buf += nd * piece_max;           /* a gathered unit */
    if (plan->stage >= 2)
        buf += psi + nd;                 /* the gradient bucket backward writes into */
    if (plan->stage == 3) {
        /* three consecutive groups of the gather order (embedding, blocks, LM head): the next group is
         * prefetched when the current one starts, the previous one is released when the current one
         * computes */
        double live = L >= 3 ? fmax(emb + 2 * blk, 3 * blk) : (L == 2 ? emb + 2 * blk : 2 * emb + blk);
        buf += fmin(live, 2 * emb + L * blk) + 3 * nd;
    }
    m.buffers = fb * buf;
    if (plan->offload == ZP_OFFLOAD_OPTIMIZER) {
        /* ZeRO-Offload: the partition's optimizer states leave the device; the host holds them with the
         * fp32 master copy (4 B), the fp32 gradient partition the device sends (4 B) and the fp16 copy of
         * the updated parameters that goes back (2 B), per element of the (padded) partition. The
         * device keeps its fp32 working parameters (params) and gradients; the fp16 values come back
         * through the piece buffer it already has. */
        const double part = si->partitions_optimizer ? shard : psi;
        m.host = m.optimizer + (fb + fb + 2.0) * part;
        m.optimizer = 0;
    }
    m.total = m.params + m.grads + m.optimizer + m.activations + m.buffers;
    *out = m;
    return ZP_OK;
}

int zp_memory_fits(const zp_memory *m, double gpu_mem, double host_mem_per_gpu, char *reason, int reason_len)
{
    if (m->total > gpu_mem) {
        if (reason) {
            double states = m->params + m->grads + m->optimizer;
            if (states > gpu_mem)
                snprintf(reason, (size_t)reason_len, "model states alone need %.1f GB > %.1f GB per GPU",
                         states / 1e9, gpu_mem / 1e9);
            else
                snprintf(reason, (size_t)reason_len,
                         "%.1f GB > %.1f GB per GPU (states %.1f GB, activations %.1f GB, buffers %.1f GB%s)",
                         m->total / 1e9, gpu_mem / 1e9, states / 1e9, m->activations / 1e9, m->buffers / 1e9,
                         m->fragmentation > 0 ? ", fragmentation" : "");
        }
        return 0;
    }
    if (m->host > host_mem_per_gpu) {
        if (reason)
            snprintf(reason, (size_t)reason_len, "host memory %.1f GB > %.1f GB per GPU's share", m->host / 1e9,
                     host_mem_per_gpu / 1e9);
        return 0;
    }
    if (reason && reason_len > 0)
        reason[0] = '\0';
    return 1;
}

int64_t zp_memory_max_micro_batch(const zp_model *model, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, int64_t cap)
{
    zp_plan p = *plan;
    zp_memory m1, m2;
    p.micro_batch = 1;
    if (zp_memory_estimate(model, &p, &m1) != ZP_OK || !zp_memory_fits(&m1, gpu_mem, host_mem_per_gpu, NULL, 0))
        return 0;
    p.micro_batch = 2;
    if (zp_memory_estimate(model, &p, &m2) != ZP_OK)
        return 0;
    /* GPU and host memory are affine in b: M(b) = M(1) + (b - 1)·slope. */
    double best = (double)cap;
    double slope = m2.total - m1.total;
    if (slope > 0)
        best = fmin(best, 1.0 + floor((gpu_mem - m1.total) / slope));
    double hslope = m2.host - m1.host;
    if (hslope > 0)
        best = fmin(best, 1.0 + floor((host_mem_per_gpu - m1.host) / hslope));
    int64_t b = best < 1 ? 1 : (int64_t)best;
    /* Guard the rounding of the affine solve with the exact model. */
    for (;;) {
        p.micro_batch = b;
        zp_memory m;
        if (zp_memory_estimate(model, &p, &m) == ZP_OK && zp_memory_fits(&m, gpu_mem, host_mem_per_gpu, NULL, 0))
            break;
        b--;
    }
    return b;
}

static int fits_layers(const zp_model *shape, const zp_plan *plan, double gpu_mem, double host, int64_t layers)
{
    zp_model m = *shape;
    m.layers = layers;
    zp_memory mem;
    if (zp_model_validate(&m) != ZP_OK || zp_memory_estimate(&m, plan, &mem) != ZP_OK)
        return 0;
    return zp_memory_fits(&mem, gpu_mem, host, NULL, 0);
}

zp_status zp_memory_largest_model(const zp_model *shape, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, zp_model *out)
{
    ZP_TRY(zp_plan_validate(plan));
    *out = *shape;
    /* Memory grows monotonically with layers (every term is non-decreasing in l): bisect. */
    int64_t lo = 0, hi = 1;
    while (hi < (INT64_C(1) << 40) && fits_layers(shape, plan, gpu_mem, host_mem_per_gpu, hi)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits_layers(shape, plan, gpu_mem, host_mem_per_gpu, mid))
            lo = mid;
        else
            hi = mid;
    }
    out->layers = lo;
    return ZP_OK;
}

static int fits_size(const zp_plan *plan, double gpu_mem, double host, double psi, double *actual)
{
    zp_model m;
    zp_memory mem;
    if (zp_model_from_size(psi, &m) != ZP_OK || zp_memory_estimate(&m, plan, &mem) != ZP_OK)
        return 0;
    *actual = zp_model_params(&m);
    return zp_memory_fits(&mem, gpu_mem, host, NULL, 0);
}

zp_status zp_memory_largest_fitting(const zp_plan *plan, double gpu_mem, double host_mem_per_gpu,
                                    double *params_out)
{
    ZP_TRY(zp_plan_validate(plan));
    double lo = 0, hi = zp_memory_max_params(plan->stage, (double)plan->dp, (double)plan->mp, plan->k_optimizer,
                                             gpu_mem) * 1.01; /* model states alone bound it */
    if (hi > ZP_MODEL_MAX_PARAMS)
        hi = ZP_MODEL_MAX_PARAMS;
    double best = 0, actual;
    double small = 1e7;
    if (!fits_size(plan, gpu_mem, host_mem_per_gpu, small, &actual)) {
        *params_out = 0;
        return ZP_OK;
    }
    lo = small;
    best = actual;
    while (hi / lo > 1.005) {
        double mid = sqrt(lo * hi);
        if (fits_size(plan, gpu_mem, host_mem_per_gpu, mid, &actual)) {
            lo = mid;
            if (actual > best)
                best = actual;
        } else {
            hi = mid;
        }
    }
    *params_out = best;
    return ZP_OK;
}
