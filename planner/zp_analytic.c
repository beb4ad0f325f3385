#include "zp_analytic.h"

#include <math.h>

#include "zp_coll.h"
#include "zp_device.h"
#include "zp_device_fp8.h"
#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_pipeline.h"
#include "zp_shape.h"

double zp_analytic_group_bw(const zp_cluster *c, int64_t n, int64_t stride, double *latency)
{
    int64_t gpn = zp_cluster_domain(c);
    if (n * stride <= gpn) {
        /* the whole group inside one node: NVSwitch, or the n-1 links among its GPUs of a mesh */
        *latency = c->nvlink_latency;
        return zp_cluster_group_bw(c, (int)n);
    }
    /* The group spans nodes. Per node, the groups that share its InfiniBand rails are the `stride`
     * interleaved groups (at most one node's worth of GPUs): each gets node_bw / concurrent groups. A node
     * here is an NVLink domain, with the NICs of its GPUs.
     * A ring (or NCCL's tree) crossing nodes is bounded by that share, and by NVSwitch. */
    double concurrent = (double)(stride < gpn ? stride : gpn);
    double bw = zp_cluster_domain_ib_bw(c) / concurrent;
    *latency = c->ib_latency;
    return bw < c->nvlink_bw ? bw : c->nvlink_bw;
}

/* The compute rate, FLOP/s: the GPU's peak of the plan's type at the preset's GEMM efficiency; with FP8 the
 * blocks' linear GEMMs (2 FLOPs a parameter of a block and a token, at most the block's forward) at the FP8
 * rate of the device model (sim/zp_device_fp8.h) and the rest (attention's core, the LM head) at the
 * 16-bit rate, a harmonic blend. First order: the casts are the simulation's (sim/zp_device_fp8.c). */
static double compute_rate(const zp_model *m, const zp_plan *plan, const zp_cluster *c, double b)
{
    const double r16 = zp_cluster_peak_flops(c, zp_plan_precision_name(plan)) * c->gemm_efficiency;
    const zp_fp8_info *f8 = zp_fp8_get(plan->fp8);
    if (!f8 || !zp_cluster_has_fp8(c))
        return r16;
    const double r8 = c->peak_flops_fp8 * c->gemm_efficiency * ZP_DEVICE_FP8_EFF_REL * f8->gemm_rel;
    const double layer = zp_model_flops_forward_layer(m, b), tokens = b * (double)m->seq;
    const double lin = fmin(2.0 * tokens * zp_model_params_layer(m), layer) * (double)m->layers;
    const double all = layer * (double)m->layers + zp_model_flops_forward_logits(m, b);
    const double f = all > 0 ? lin / all : 0.0;
    return 1.0 / ((1.0 - f) / r16 + f / r8);
}

/* The most blocks a stage of an uneven layout holds, over the even share L/P (>= 1 when the layout is
 * checked; 1 when it is not: zp_pp_check refuses it elsewhere). */
static double slowest_stage(const zp_model *m, const zp_plan *p)
{
    if (zp_pp_check(m, p) != ZP_OK)
        return 1.0;
    const int P = (int)p->pp, v = p->pp > 1 ? p->vstages : 1;
    int most = 0;
    for (int s = 0; s < P; s++) {
        int n = 0;
        for (int c = 0; c < v; c++)
            n += zp_pp_vstage_layers(m, p, c * P + s);
        most = n > most ? n : most;
    }
    return (double)most * (double)P / (double)m->layers;
}

/* zp_analytic_flops_executed: zp_analytic.h */
double zp_analytic_flops_executed(const zp_model *model, const zp_plan *plan, double batch)
{
    double f = zp_model_flops_iteration(model, batch, plan->checkpoint);
    if (plan->checkpoint && plan->ckpt_every > 1) { /* only the checkpointed blocks run their forward again */
        const double none = zp_model_flops_iteration(model, batch, 0);
        f = none + zp_plan_ckpt_fraction(plan, model->layers) * (f - none);
    }
    if (plan->op_sac)
        f += zp_model_flops_op_sac_recompute(model, batch);
    f += zp_model_flops_rc_modules(model, zp_plan_rc_modules(plan), batch);
    if (zp_plan_rc_modules(plan) & ZP_RCM_CORE_ATTN) {
        const double s = (double)model->seq;
        f += batch * (double)model->layers * 2.0 * s * s * (double)model->heads *
             (double)(zp_model_head_dim(model) + zp_model_v_head_dim(model));
    }
    return f;
}

/* ZeRO-DP: fp16 elements of the local parameters (a stage's share with pipeline stages). Stage 0-1
 * all-reduce once per step; stage 2 reduce-scatters each micro-batch's gradients (once per step beside
 * pipeline stages: zp_plan_grads_once) and all-gathers the updated parameters once; stage 3 also all-gathers
 * every parameter before forward and before backward of each micro-batch, or once per micro-batch's forward
 * when it keeps them gathered (zp_plan_reshards 0), once per step with pipeline stages. Hybrid sharding
 * (shard group G): the reduce-scatter and the all-gathers over G ranks, then an all-reduce of the 1/G shard
 * over the dp / G replicas (G·mp ranks apart). */
static double dp_comm(const zp_plan *plan, const zp_cluster *c, double psi, double psi_all, double accum)
{
    const int64_t g = zp_plan_shard_degree(plan);
    double lat_dp;
    double bw_dp = zp_analytic_group_bw(c, g, plan->mp, &lat_dp);
    double experts = psi_all - psi > 0 ? (psi_all - psi) / (double)(plan->ep - 1) : 0.0; /* a rank's experts */
    double bytes = plan->param_bytes * (psi - experts);
    double rs = zp_coll_ring_time(bytes, g, bw_dp, lat_dp, 1.0);
    if (experts > 0) { /* the local experts' gradients over the dp/ep ranks holding the same experts */
        double lat_x, bw_x = zp_analytic_group_bw(c, plan->dp / plan->ep, plan->ep * plan->mp, &lat_x);
        rs += zp_coll_ring_time(plan->param_bytes * experts, plan->dp / plan->ep, bw_x, lat_x, 1.0);
    }
    double ag = rs;
    if (g < plan->dp) { /* the shard's all-reduce across the replicas */
        double lat_r, bw_r = zp_analytic_group_bw(c, plan->dp / g, g * plan->mp, &lat_r);
        rs += zp_coll_ring_time(bytes / (double)g, plan->dp / g, bw_r, lat_r, 2.0);
    }
    const double reductions = zp_plan_grads_once(plan) ? 1.0 : accum;
    switch (plan->stage) {
    case 0:
    case 1: return rs + ag;
    case 2: return reductions * rs + ag;
    default:
        if (zp_plan_reshards(plan) && !zp_plan_grads_once(plan))
            return accum * (rs + 2.0 * ag);
        if (zp_plan_reshards(plan))
            return rs + accum * 2.0 * ag;
        return reductions * rs + (plan->pp > 1 ? 1.0 : accum) * ag;
    }
}

zp_status zp_analytic_step(const zp_model *model, const zp_plan *plan, const zp_cluster *c, zp_step_time *out)
{
    ZP_TRY(zp_plan_validate(plan));
    const zp_stage_info *si = zp_stage_get(plan->stage);
    const double b = (double)plan->micro_batch, nm = (double)plan->mp, accum = (double)plan->grad_accum;
    const double np = (double)(plan->pp > 0 ? plan->pp : 1), v = plan->pp > 1 ? (double)plan->vstages : 1.0;
    double psi, psi_all; /* held by a rank (EP shards the experts), and what ZeRO partitions over DP; a
                            pipeline stage holds 1/P of them */
    zp_shape_params(model, plan, &psi, &psi_all);
    psi /= np;
    psi_all /= np;
    zp_step_time t = {0};

    /* Compute: the executed FLOPs of one micro-batch split over the MP group and the pipeline stages; a
     * pipeline idles (P - 1)/v passes of each stage's per-micro-batch work (its bubble). */
    const double split = (double)zp_dims_seq_split(plan->deg); /* context parallelism: a rank's slice */
    double flops = zp_analytic_flops_executed(model, plan, b) / nm / np / split;
    const double frac = zp_plan_ckpt_fraction(plan, model->layers); /* blocks recomputed whole: 1, 1/k or 0 */
    const unsigned mods = zp_plan_rc_modules(plan); /* selective recompute's modules beyond the attention core */
    const double rate = compute_rate(model, plan, c, b);
    /* an uneven layout (zp_pipeline.h), stated or the default split of P stages that do not divide the layers
     * (the first and the last take floor(L/P), the others share the rest): the stage with the most blocks
     * sets the pace of every pass */
    const int split_uneven = plan->pp > 1 && v == 1.0 && model->layers % plan->pp != 0;
    const double slowest = zp_pp_uneven(plan) || split_uneven ? slowest_stage(model, plan) : 1.0;
    flops *= slowest;
    t.compute = accum * flops / rate;
    t.pp_comm = (np - 1.0) / v * flops / rate;

    /* Collectives as rings (zp_coll_ring_time): all-reduce 2(n-1)/n · S/B + 2(n-1)·α, reduce-scatter
     * and all-gather half of it (the nccl-tests bus-bandwidth convention).
     * Megatron MP: per block 2 all-reduces of b·s·h fp16 in forward, 2 in backward, 2 more when the
     * forward is recomputed; Pa adds one all-gather of the checkpoint before each recompute. */
    double lat_mp;
    double bw_mp = zp_analytic_group_bw(c, plan->mp, 1, &lat_mp);
    double act_bytes = 2.0 * b * (double)model->seq / split * (double)model->hidden;
    /* op-level recompute: the all-reduce after wo again (with SP the two all-gathers, as much traffic) */
    double n_ar = plan->checkpoint ? 4.0 + 2.0 * frac : (plan->op_sac ? 5.0 : 4.0);
    /* selective recompute of the MLP or MoE layer whole: its reduction again in the blocks that have it */
    const int64_t moe = zp_model_moe_blocks(model);
    const double moe_frac = model->layers > 0 ? (double)moe / (double)model->layers : 0.0;
    if (mods & ZP_RCM_MLP)
        n_ar += 1.0 - moe_frac;
    if (mods & ZP_RCM_MOE)
        n_ar += moe_frac;
    const double ar_mp = zp_coll_ring_time(act_bytes, plan->mp, bw_mp, lat_mp, 2.0);
    t.mp_comm = accum * (double)model->layers / np * slowest * n_ar * ar_mp;
    if (plan->pa || plan->pa_cpu)
        t.mp_comm +=
            accum * (double)model->layers / np * zp_coll_ring_time(act_bytes, plan->mp, bw_mp, lat_mp, 1.0);
    /* Pipeline: each micro-batch's activation in and its gradient out of every model chunk, 1/Nm of it
     * per GPU over the node's links (Megatron-LM's scatter/gather). */
    if (np > 1) {
        double lat_pp;
        double bw_pp = zp_analytic_group_bw(c, 2, plan->dp * plan->mp, &lat_pp);
        t.pp_comm += accum * v * 2.0 * (act_bytes / nm / bw_pp + lat_pp);
    }
    /* MoE with EP: per MoE block a dispatch and a combine all-to-all in forward, their gradients in
     * backward, again in the recompute; each rank sends (ep-1)/ep of its T·k·cf tokens of h fp16. A
     * dispatcher that sends a token once per node (DeepEP) moves the nodes' share of the copies across
     * nodes, the ranks' inside one (vocab/zp_dispatch.h), and FP8 toward the experts halves those.
     * Megatron-core's all-gather dispatcher gathers the EP group's tokens whole (each rank receives (ep-1)
     * ranks' T h) and reduce-scatters them back. */
    if (plan->ep > 1 && moe > 0) {
        double lat_ep, bw_ep = zp_analytic_group_bw(c, plan->ep, plan->mp, &lat_ep);
        double a2a = act_bytes * (double)model->top_k * plan->capacity_factor;
        if (zp_dispatch_get(plan->dispatcher) && zp_dispatch_get(plan->dispatcher)->gather) {
            a2a = act_bytes * (double)plan->ep; /* the gathered buffer: (ep-1)/ep of it arrives */
        } else if (plan->dispatcher != ZP_DISPATCH_ALLTOALL) { /* the nodes the EP group spans, or its ranks in one */
            const int64_t span = plan->ep * plan->mp, gpn = zp_cluster_domain(c);
            const int64_t units = span > gpn && gpn > 0 && plan->ep % (span / gpn) == 0 ? span / gpn : plan->ep;
            a2a *= zp_dispatch_share(model, plan->dispatcher, units) *
                   (zp_dispatch_elt_bytes(plan->dispatcher, 0) + zp_dispatch_elt_bytes(plan->dispatcher, 1)) / 4.0;
        }
        double one = zp_coll_ring_time(a2a, plan->ep, bw_ep, lat_ep, 1.0);
        const double again = plan->checkpoint ? 2.0 * frac : (mods & ZP_RCM_MOE) ? 2.0 : 0.0; /* recomputed */
        t.mp_comm += accum * (double)moe / np * (4.0 + again) * one;
    }

    t.dp_comm = dp_comm(plan, c, psi, psi_all, accum);

    /* Optimizer on the local partition: ZP_DEVICE_OPTIMIZER_BYTES per parameter (fused Adam with the
     * gradient's cast, norm and unscaling and the 16-bit parameter copy) at HBM bandwidth. With offload
     * the CPU Adam of the node is shared by its GPUs, and gradients go down and fp16 parameters come
     * back over PCIe (2 bytes each way per parameter). */
    double part = si->partitions_optimizer ? psi_all / (double)zp_plan_shard_degree(plan) : psi;
    if (plan->offload == ZP_OFFLOAD_NONE) {
        t.optimizer = zp_device_adam_bytes(plan) * part / c->hbm_bw;
    } else {
        t.optimizer = part / (c->cpu_adam_rate / (double)c->gpus_per_node);
        t.offload += 2.0 * plan->param_bytes * part / c->pcie_bw;
        if (plan->offload == ZP_OFFLOAD_PARAMS) /* fetch the fp16 partition for forward and backward */
            t.offload += accum * 2.0 * plan->param_bytes * part / c->pcie_bw;
    }
    if (plan->pa_cpu) {
        /* each checkpoint partition goes to the host after forward and comes back before recompute */
        double ckpt = (double)model->layers * act_bytes / nm;
        t.offload += accum * 2.0 * ckpt / c->pcie_bw;
    }
    t.total = t.compute + t.mp_comm + t.dp_comm + t.optimizer + t.offload + t.pp_comm;
    if (!isfinite(t.total))
        return ZP_FAIL(ZP_ERANGE, "step time of this plan is beyond representable range");
    *out = t;
    return ZP_OK;
}
