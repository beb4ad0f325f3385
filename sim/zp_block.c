/* zp_block.c — one block's ops as one MP rank runs them (zp_block.h): attention with CP's K/V exchange, the
 * MLP or the MoE layer (router, the EP all-to-alls, the experts, the shared experts), forward and backward,
 * what selective and op-level recompute run again before a backward, and the LM head. Shapes per rank:
 * vocab/zp_shape.h. */
#include "zp_block.h"

#include "zp_dispatch.h"
#include "zp_emit.h"
#include "zp_shape.h"

/* Context parallelism (cp > 1): every slice's K and V of this rank's heads, 16-bit (MLA: each head's K with
 * the shared rotary part), the bytes of an all-gather over the CP group. */
static double cp_kv_bytes(const zp_builder *b, const zp_block_shape *S)
{
    const double kv = S->kv_n + (S->mla ? S->qh * S->rope : 0.0);
    return 2.0 * S->T * kv * (double)b->p->cp;
}

/* Ops on the CP stream once the compute stream has what they move; CP_RING signals that they are done. */
static void cp_transfer(zp_builder *b, int op, int then, double bytes)
{
    zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_CP_KV);
    zp_emit_wait(b, ZP_STREAM_CP, ZP_CH_CP_KV);
    zp_emit_move(b, ZP_STREAM_CP, op, bytes);
    if (then >= 0)
        zp_emit_move(b, ZP_STREAM_CP, then, bytes);
    zp_emit_signal(b, ZP_STREAM_CP, ZP_CH_CP_RING);
}

/* Before a block's attention (forward, or its backward): the ring passes the slices' K and V (backward: and
 * their gradients back) beside the attention that hides it; the all-gather form (--cp-comm all-gather)
 * gathers them whole first and the attention waits for them. */
static void cp_kv_before(zp_builder *b, const zp_block_shape *S, int backward)
{
    if (b->p->cp <= 1)
        return;
    const int gather = b->p->cp_comm == ZP_CP_ALLGATHER;
    cp_transfer(b, ZP_OPK_CP_KV_RING, backward && !gather ? ZP_OPK_CP_DKV_RING : -1, cp_kv_bytes(b, S));
    if (gather)
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_CP_RING);
}

/* After it: the ring's end waited for; the all-gather form reduce-scatters the gradients of K and V back once
 * the attention's backward is done, and waits for that (its forward has nothing left). */
static void cp_kv_after(zp_builder *b, const zp_block_shape *S, int backward)
{
    if (b->p->cp <= 1)
        return;
    const int gather = b->p->cp_comm == ZP_CP_ALLGATHER;
    if (gather && !backward)
        return;
    if (gather)
        cp_transfer(b, ZP_OPK_CP_DKV_RING, -1, cp_kv_bytes(b, S));
    zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_CP_RING);
}

/* The attention core of one block (scores, softmax, context): part of its forward, and what selective
 * recompute recomputes before the block's backward. */
static void attention_core(zp_builder *b, const zp_block_shape *S)
{
    const double s = S->s;
    cp_kv_before(b, S, 0);
    zp_emit_gemm(b, ZP_OPK_ATTN_SCORES, s, s, S->dqk, S->bh);
    zp_emit_eltwise(b, ZP_OPK_SOFTMAX, 3.0 * 2.0 * S->bh * s * s, S->bh * s * s);
    zp_emit_gemm(b, ZP_OPK_ATTN_CONTEXT, s, S->dv, s, S->bh);
    cp_kv_after(b, S, 0);
}
/* Attention's projections in (Q, K, V: fused, or MLA's low-rank pairs), the rotary turn, scores, softmax,
 * context. Shapes per MP rank (vocab/zp_shape.h). */
static void attention_forward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h;
    if (S->mla) {
        if (S->q_rank > 0) {
            zp_emit_gemm(b, ZP_OPK_Q_DOWN, T, S->q_rank, h, 1);
            zp_emit_eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->q_rank, T * S->q_rank);
            zp_emit_gemm(b, ZP_OPK_Q_UP, T, S->q_n, S->q_rank, 1);
        } else {
            zp_emit_gemm(b, ZP_OPK_QKV, T, S->q_n, h, 1); /* a plain Q projection (DeepSeek-V2-Lite) */
        }
        zp_emit_gemm(b, ZP_OPK_KV_DOWN, T, S->kv_rank + S->rope, h, 1);
        zp_emit_eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
        zp_emit_gemm(b, ZP_OPK_KV_UP, T, S->kv_n, S->kv_rank, 1);
    } else {
        zp_emit_gemm(b, ZP_OPK_QKV, T, S->qkv_n, h, 1);
    }
    if (S->rotary)
        zp_emit_eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    attention_core(b, S);
}

/* ... its backward, then the reduce-scatter (or all-reduce) over MP of its input's gradient (`rs` bytes). */
static void attention_backward(zp_builder *b, const zp_block_shape *S, double rs)
{
    const double T = S->T, h = S->h, s = S->s;
    cp_kv_before(b, S, 1);
    zp_emit_gemm_bwd(b, ZP_OPK_ATTN_CONTEXT_DGRAD, ZP_OPK_ATTN_CONTEXT_WGRAD, s, S->dv, s, S->bh);
    zp_emit_eltwise(b, ZP_OPK_SOFTMAX_BWD, 3.0 * 2.0 * S->bh * s * s, S->bh * s * s);
    zp_emit_gemm_bwd(b, ZP_OPK_ATTN_SCORES_DGRAD, ZP_OPK_ATTN_SCORES_WGRAD, s, s, S->dqk, S->bh);
    cp_kv_after(b, S, 1);
    if (S->rotary)
        zp_emit_eltwise(b, ZP_OPK_ROPE_BWD, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    if (S->mla) {
        zp_emit_gemm_bwd(b, ZP_OPK_KV_UP_DGRAD, ZP_OPK_KV_UP_WGRAD, T, S->kv_n, S->kv_rank, 1);
        zp_emit_eltwise(b, ZP_OPK_MLA_NORM_BWD, 3.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
        zp_emit_gemm_bwd(b, ZP_OPK_KV_DOWN_DGRAD, ZP_OPK_KV_DOWN_WGRAD, T, S->kv_rank + S->rope, h, 1);
        if (S->q_rank > 0) {
            zp_emit_gemm_bwd(b, ZP_OPK_Q_UP_DGRAD, ZP_OPK_Q_UP_WGRAD, T, S->q_n, S->q_rank, 1);
            zp_emit_eltwise(b, ZP_OPK_MLA_NORM_BWD, 3.0 * 2.0 * T * S->q_rank, T * S->q_rank);
            zp_emit_gemm_bwd(b, ZP_OPK_Q_DOWN_DGRAD, ZP_OPK_Q_DOWN_WGRAD, T, S->q_rank, h, 1);
        } else {
            zp_emit_gemm_bwd(b, ZP_OPK_QKV_DGRAD, ZP_OPK_QKV_WGRAD, T, S->q_n, h, 1);
        }
        zp_emit_mp_reduce(b, rs);
    } else {
        zp_emit_gemm_bwd_rs(b, ZP_OPK_QKV_DGRAD, ZP_OPK_QKV_WGRAD, T, S->qkv_n, h, rs);
    }
}

/* A dense MLP of inner width f per rank: up (and gate: 2f columns), the activation, down; then the
 * reduce-scatter (or all-reduce) over MP of its output's partial sums (`rs` bytes; 0: none here). */
static void mlp_forward(zp_builder *b, const zp_block_shape *S, double f, double rs)
{
    const double T = S->T, h = S->h;
    zp_emit_gemm(b, ZP_OPK_MLP_UP, T, S->gated ? 2.0 * f : f, h, 1);
    if (S->gated)
        zp_emit_eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f); /* reads gate and up, writes f */
    else
        zp_emit_eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
    zp_emit_gemm_rs(b, ZP_OPK_MLP_DOWN, T, h, f, rs);
}

/* ... its backward, and the reduce-scatter (or all-reduce) of its input's gradient (`rs` bytes; 0: none). */
static void mlp_backward(zp_builder *b, const zp_block_shape *S, double f, double rs)
{
    const double T = S->T, h = S->h;
    zp_emit_gemm_bwd(b, ZP_OPK_MLP_DOWN_DGRAD, ZP_OPK_MLP_DOWN_WGRAD, T, h, f, 1);
    if (S->gated)
        zp_emit_eltwise(b, ZP_OPK_GLU_BWD, 5.0 * 2.0 * T * f, T * f); /* reads gate, up, dout; writes both grads */
    else
        zp_emit_eltwise(b, ZP_OPK_GELU_BWD, 3.0 * 2.0 * T * f, T * f);
    if (rs > 0)
        zp_emit_gemm_bwd_rs(b, ZP_OPK_MLP_UP_DGRAD, ZP_OPK_MLP_UP_WGRAD, T, S->gated ? 2.0 * f : f, h, rs);
    else
        zp_emit_gemm_bwd(b, ZP_OPK_MLP_UP_DGRAD, ZP_OPK_MLP_UP_WGRAD, T, S->gated ? 2.0 * f : f, h, 1);
}

/* ---- the EP all-to-alls beside the other micro-batch's compute (zp_plan.ep_overlap) ----
 * Megatron-core's combined 1F1B (--overlap-moe-expert-parallel-comm; megatron/core/pipeline_parallel/
 * combined_1f1b.py) runs the forward of one micro-batch and the backward of another layer by layer, each
 * one's all-to-alls on a communication stream beside the other's compute, as DeepSeek's DualPipe pairs its
 * chunks. The step here keeps one micro-batch's passes in order and stands the other's compute in for it:
 * an all-to-all goes to the EP stream and the compute stream goes on; it waits for it when it issues the
 * next one (the paired pass's compute of one stretch hides one all-to-all: a stretch lasts the longer of
 * the two) and before the pass hands its result to the next stage. Only the passes that have a partner are
 * paired: with pipeline stages the steady state's (not a stage's warm-up forwards and cool-down backwards,
 * nor the first forward and the last backward of the last stage), without them every pass but the first
 * forward and the last backward. The SMs the transfers hold are counted as NCCL's (sim/zp_actors.c). */
void zp_block_ep_drain(zp_builder *b)
{
    for (; b->ep_pending > 0; b->ep_pending--)
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_EP_DONE);
}

static void ep_a2a(zp_builder *b, int type, double bytes)
{
    zp_block_ep_drain(b);
    zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_EP_GO);
    zp_emit_wait(b, ZP_STREAM_EP, ZP_CH_EP_GO);
    zp_emit_move(b, ZP_STREAM_EP, type, bytes);
    zp_emit_signal(b, ZP_STREAM_EP, ZP_CH_EP_DONE);
    b->ep_pending++;
}

/* Compute run beside an all-to-all (the shared experts' part, below), or NULL. */
typedef void (*beside_fn)(zp_builder *b, const zp_block_shape *S);

/* An all-to-all of the MoE dispatch or combine over the EP group (none without EP: the tokens stay); dir 0
 * toward the experts, 1 back from them (zp_block_shape.a2a_bytes). Megatron-core's all-gather dispatcher
 * runs an all-gather where the tokens (forward) or the output gradients (backward) go out and a reduce-
 * scatter where they come back, in place of the all-to-all. With `beside`, the all-to-all goes to the EP
 * stream, the compute stream runs beside() and then waits for it: the stretch lasts the longer of the two,
 * the kernels slowed by the SMs the transfer holds (sim/zp_actors.c). */
static void moe_a2a(zp_builder *b, int type, int dir, const zp_block_shape *S, beside_fn beside)
{
    if (b->p->ep <= 1) {
        if (beside)
            beside(b, S);
        return;
    }
    const zp_dispatch_info *d = zp_dispatch_get(b->p->dispatcher);
    if (d && d->gather) {
        static const int gathered[][2] = {
            {ZP_OPK_A2A_DISPATCH, ZP_OPK_EP_AG_DISPATCH}, {ZP_OPK_A2A_COMBINE, ZP_OPK_EP_RS_COMBINE},
            {ZP_OPK_A2A_COMBINE_BWD, ZP_OPK_EP_AG_COMBINE_BWD}, {ZP_OPK_A2A_DISPATCH_BWD, ZP_OPK_EP_RS_DISPATCH_BWD}};
        for (size_t i = 0; i < sizeof gathered / sizeof gathered[0]; i++)
            if (gathered[i][0] == type)
                type = gathered[i][1];
    }
    if (b->ep_async || beside)
        ep_a2a(b, type, S->a2a_bytes[dir]);
    else
        zp_emit_move(b, ZP_STREAM_COMPUTE, type, S->a2a_bytes[dir]);
    if (beside) {
        beside(b, S);
        zp_block_ep_drain(b);
    }
}

/* ---- the shared experts beside the all-to-alls (zp_plan.shared_overlap) ----
 * Megatron-core's --moe-shared-expert-overlap (megatron/core/transformer/moe/shared_experts.py, called from
 * the all-to-all dispatcher): the shared experts run on a stream of their own, their up-projection and
 * activation beside the dispatch all-to-all, their down-projection beside the combine's, and the main
 * stream waits for them before it adds their output. In backward autograd runs their backward first (their
 * grad_fn's sequence numbers are set highest) on that stream, beside the combine's all-to-all. The MoE
 * layer's TP reduction of the sum is unchanged (block_mlp). */
static void shared_up(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, f = S->f;
    zp_emit_gemm(b, ZP_OPK_MLP_UP, T, S->gated ? 2.0 * f : f, h, 1);
    if (S->gated)
        zp_emit_eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f);
    else
        zp_emit_eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
}

static void shared_down(zp_builder *b, const zp_block_shape *S)
{
    zp_emit_gemm_rs(b, ZP_OPK_MLP_DOWN, S->T, S->h, S->f, 0.0);
}

static void shared_bwd(zp_builder *b, const zp_block_shape *S) { mlp_backward(b, S, S->f, 0.0); }

/* The shared experts go beside the all-to-alls: asked for, there are some, and this pass's all-to-alls are
 * not already beside another micro-batch (Megatron-core refuses the two together). */
static int shared_beside(const zp_builder *b, const zp_block_shape *S)
{
    return b->p->shared_overlap && S->f > 0 && !b->ep_async;
}

/* The experts' activation over their e_local x e_rows x e_f elements (bwd: its backward): GLU reads gate
 * and up and writes one (its backward reads three, writes two), GeLU reads and writes one (three). */
static void expert_act(zp_builder *b, const zp_block_shape *S, int bwd)
{
    static const int op[2][2] = {{ZP_OPK_EXPERT_GELU, ZP_OPK_EXPERT_GLU},
                                 {ZP_OPK_EXPERT_GELU_BWD, ZP_OPK_EXPERT_GLU_BWD}};
    static const double tensors[2][2] = {{2.0, 3.0}, {3.0, 5.0}};
    const double n = S->e_local * S->e_rows * S->e_f;
    zp_emit_eltwise(b, op[bwd][S->gated != 0], tensors[bwd][S->gated != 0] * 2.0 * n, n);
}

/* The MoE MLP: router (h -> E, whole on every rank), softmax and top-k, each token copied to its k experts'
 * slots, dispatched, the local experts' up (and gate), activation and down as batched GEMMs of e_rows rows
 * each, the outputs back and summed with the router's weights; then the shared experts as a dense MLP. */
static void moe_forward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    zp_emit_gemm(b, ZP_OPK_ROUTER, T, E, h, 1);
    zp_emit_eltwise(b, ZP_OPK_TOPK, 2.0 * 2.0 * T * E, T * E);
    zp_emit_eltwise(b, ZP_OPK_MOE_PERMUTE, 2.0 * 2.0 * T * k * h, T * k * h);
    const int beside = shared_beside(b, S);
    moe_a2a(b, ZP_OPK_A2A_DISPATCH, 0, S, beside ? shared_up : NULL);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_UP, rows, up, h, S->e_local, useful);
    expert_act(b, S, 0);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_DOWN, rows, h, f, S->e_local, useful);
    moe_a2a(b, ZP_OPK_A2A_COMBINE, 1, S, beside ? shared_down : NULL);
    zp_emit_eltwise(b, ZP_OPK_MOE_COMBINE, 2.0 * (T * k * h + T * h), T * k * h);
    if (S->f > 0 && !beside)
        mlp_forward(b, S, S->f, 0.0);
}

static void moe_backward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    const int beside = shared_beside(b, S);
    if (S->f > 0 && !beside)
        mlp_backward(b, S, S->f, 0.0);
    zp_emit_eltwise(b, ZP_OPK_MOE_COMBINE_BWD, 2.0 * (T * h + 2.0 * T * k * h), T * k * h);
    moe_a2a(b, ZP_OPK_A2A_COMBINE_BWD, 0, S, beside ? shared_bwd : NULL);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_DOWN_DGRAD, rows, f, h, S->e_local, useful);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_DOWN_WGRAD, f, h, rows, S->e_local, useful);
    expert_act(b, S, 1);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_UP_DGRAD, rows, h, up, S->e_local, useful);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_UP_WGRAD, h, up, rows, S->e_local, useful);
    moe_a2a(b, ZP_OPK_A2A_DISPATCH_BWD, 1, S, NULL);
    zp_emit_eltwise(b, ZP_OPK_MOE_PERMUTE_BWD, 2.0 * 2.0 * T * k * h, T * k * h);
    if (b->p->impl == ZP_IMPL_EXEC && b->p->mp > 1) /* zplan's executor sums the gates' partial gradients */
        zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_ROUTER_DGATE_ALLREDUCE, T * k * 4.0 /* fp32 */);
    zp_emit_eltwise(b, ZP_OPK_TOPK_BWD, 3.0 * 2.0 * T * E, T * E);
    zp_emit_gemm_bwd(b, ZP_OPK_ROUTER_DGRAD, ZP_OPK_ROUTER_WGRAD, T, E, h, 1);
}

/* A block's MLP (its experts in an MoE layer), forward or backward, then the all-reduce over MP of what its
 * row-split GEMM leaves partial: the output forward, the input's gradient backward. */
static void block_mlp(zp_builder *b, const zp_block_shape *S, int backward)
{
    const double rs = 2.0 * S->T * S->h;
    if (S->moe) /* no userbuffers in the MoE layer: its all-gather blocks */
        zp_emit_tp_flush(b);
    if (S->moe && backward)
        moe_backward(b, S);
    else if (S->moe)
        moe_forward(b, S);
    else if (backward)
        mlp_backward(b, S, S->f, rs);
    else
        mlp_forward(b, S, S->f, rs);
    if (S->moe)
        zp_emit_mp_reduce(b, rs);
}

/* Forward of one block on the compute stream (also its recompute), Megatron's layout: column-split Q/K/V
 * and MLP-up, row-split projection and MLP-down, one all-reduce of T·h fp16 after each row-split GEMM.
 * The shapes are the model description's (vocab/zp_shape.c): GQA, MLA, RMSNorm, rotary, gated MLPs;
 * a parallel block (GPT-J, NeoX) feeds attention and MLP the same input, with one norm or two. */
/* Block l's shape, then its input norm (LayerNorm or RMSNorm: reads and writes T·h fp16, over the sequence
 * slice under SP) and SP's all-gather of its output (T·h fp16): how the forward and its op-level recompute
 * start. */
static void block_input_norm(zp_builder *b, zp_block_shape *S)
{
    zp_shape_block(b->m, b->p, b->layer, S);
    const double T = S->T, h = S->h, Ts = zp_emit_sp_tokens(b, T);
    zp_emit_eltwise(b, S->rms ? ZP_OPK_RMSNORM1 : ZP_OPK_LAYERNORM1, 2.0 * 2.0 * Ts * h, Ts * h);
    zp_emit_mp_gather(b, 2.0 * T * h);
}

/* After attention: the residual add and the second norm, fused (reads two T·h, writes one), and SP's
 * all-gather; a parallel block with one norm (GPT-J) has neither. */
static void block_mid_norm(zp_builder *b, const zp_block_shape *S)
{
    if (S->one_norm)
        return;
    const double T = S->T, h = S->h, Ts = zp_emit_sp_tokens(b, T);
    zp_emit_eltwise(b, S->rms ? ZP_OPK_RESID_RMS2 : ZP_OPK_RESID_LN2, 3.0 * 2.0 * 2.0 * Ts * h, Ts * h);
    zp_emit_mp_gather(b, 2.0 * T * h);
}

void zp_block_forward(zp_builder *b)
{
    zp_block_shape S;
    block_input_norm(b, &S);
    const double T = S.T, h = S.h, Ts = zp_emit_sp_tokens(b, T);
    attention_forward(b, &S);
    zp_emit_gemm_rs(b, ZP_OPK_ATTN_PROJ, T, h, S.o_k, 2.0 * T * h);
    block_mid_norm(b, &S);
    block_mlp(b, &S, 0);
    zp_emit_eltwise(b, ZP_OPK_RESID, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
}

void zp_block_backward(zp_builder *b)
{
    zp_block_shape S;
    zp_shape_block(b->m, b->p, b->layer, &S);
    const double T = S.T, h = S.h, Ts = zp_emit_sp_tokens(b, T);
    zp_emit_eltwise(b, ZP_OPK_RESID_BWD, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
    zp_emit_mp_gather(b, 2.0 * T * h);
    block_mlp(b, &S, 1);
    if (!S.one_norm) {
        zp_emit_eltwise(b, S.rms ? ZP_OPK_RMSNORM2_BWD : ZP_OPK_LAYERNORM2_BWD, 3.0 * 2.0 * 2.0 * Ts * h, Ts * h);
        zp_emit_mp_gather(b, 2.0 * T * h);
    }
    zp_emit_gemm_bwd(b, ZP_OPK_ATTN_PROJ_DGRAD, ZP_OPK_ATTN_PROJ_WGRAD, T, h, S.o_k, 1);
    attention_backward(b, &S, 2.0 * T * h);
    zp_emit_eltwise(b, S.rms ? ZP_OPK_RMSNORM1_BWD : ZP_OPK_LAYERNORM1_BWD, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
}

/* ---- activation recompute ---- */

/* torchtitan's op-level selective recompute of one block (zp_model_op_sac says which matmuls run again:
 * every second aten.mm, the routed experts' grouped GEMMs, never w2): before the block's backward its forward
 * runs again up to the last tensor backward needs, the MLP's (or the shared experts') activation output, w2's
 * input; what the save list keeps is not computed again: the odd-numbered matmuls, the SDPA kernel,
 * a reduce-scatter (sequence parallelism), the all-to-alls. Everything else before that point is: the norms
 * and SP's all-gathers, the rotary turn, MLA's latent norms, without SP the all-reduce after wo (its output
 * feeds the residual), the router's top-k, the token permutation, the activations. */
static void op_sac_mlp(zp_builder *b, const zp_block_shape *S, double f, unsigned rerun)
{
    const double T = S->T, h = S->h;
    if (rerun & ZP_SAC_W1)
        zp_emit_gemm(b, ZP_OPK_MLP_UP, T, f, h, 1);
    if (rerun & ZP_SAC_W3)
        zp_emit_gemm(b, ZP_OPK_MLP_UP, T, f, h, 1);
    if (S->gated)
        zp_emit_eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f);
    else
        zp_emit_eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
}

static void op_sac_moe(zp_builder *b, const zp_block_shape *S, unsigned rerun)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    if (rerun & ZP_SAC_ROUTER)
        zp_emit_gemm(b, ZP_OPK_ROUTER, T, E, h, 1);
    zp_emit_eltwise(b, ZP_OPK_TOPK, 2.0 * 2.0 * T * E, T * E);
    zp_emit_eltwise(b, ZP_OPK_MOE_PERMUTE, 2.0 * 2.0 * T * k * h, T * k * h);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_UP, rows, up, h, S->e_local, useful);
    expert_act(b, S, 0);
    zp_emit_gemm_part(b, ZP_OPK_EXPERT_DOWN, rows, h, f, S->e_local, useful);
    if (S->f > 0)
        op_sac_mlp(b, S, S->f, rerun);
}

static void op_sac_attention(zp_builder *b, const zp_block_shape *S, unsigned rerun)
{
    const double T = S->T, h = S->h;
    if (rerun & ZP_SAC_WQ_A)
        zp_emit_gemm(b, ZP_OPK_Q_DOWN, T, S->q_rank, h, 1);
    if (S->mla && S->q_rank > 0)
        zp_emit_eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->q_rank, T * S->q_rank);
    if (rerun & ZP_SAC_WQ_B)
        zp_emit_gemm(b, ZP_OPK_Q_UP, T, S->q_n, S->q_rank, 1);
    if (rerun & ZP_SAC_WQ)
        zp_emit_gemm(b, ZP_OPK_QKV, T, S->q_n, h, 1);
    if (rerun & ZP_SAC_WK)
        zp_emit_gemm(b, ZP_OPK_QKV, T, S->kvh * S->dqk, h, 1);
    if (rerun & ZP_SAC_WV)
        zp_emit_gemm(b, ZP_OPK_QKV, T, S->kvh * S->dv, h, 1);
    if (rerun & ZP_SAC_WKV_A)
        zp_emit_gemm(b, ZP_OPK_KV_DOWN, T, S->kv_rank + S->rope, h, 1);
    if (S->mla)
        zp_emit_eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
    if (rerun & ZP_SAC_WKV_B)
        zp_emit_gemm(b, ZP_OPK_KV_UP, T, S->kv_n, S->kv_rank, 1);
    if (S->rotary)
        zp_emit_eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    if (rerun & ZP_SAC_WO)
        zp_emit_gemm(b, ZP_OPK_ATTN_PROJ, T, h, S->o_k, 1);
    if (!b->p->sp)
        zp_emit_mp_reduce(b, 2.0 * T * h);
}

void zp_block_recompute_op(zp_builder *b)
{
    zp_block_shape S;
    block_input_norm(b, &S);
    zp_op_sac o;
    zp_model_op_sac(b->m, S.moe, &o);
    op_sac_attention(b, &S, o.rerun);
    block_mid_norm(b, &S);
    if (S.moe)
        op_sac_moe(b, &S, o.rerun);
    else
        op_sac_mlp(b, &S, S.f, o.rerun);
}

/* Megatron-core's selective recompute of block l (zp_plan_rc_modules; vocab/zp_plan.h says which module is
 * checkpointed whole and which discards its output): each module's forward again, as the block's forward runs
 * it, before the block's backward; the MLP side first, as backward meets it. mlp and moe run their layer
 * whole, SP's all-gather of the input, the EP all-to-alls and the TP reduction included (Megatron-core's
 * tensor_parallel.checkpoint re-runs the module's forward); moe holds moe_act and shared_experts. The norms
 * run again as the input norm's kernel (reads and writes T·h). */
void zp_block_recompute_modules(zp_builder *b)
{
    zp_block_shape S;
    zp_shape_block(b->m, b->p, b->layer, &S);
    const unsigned mods = zp_plan_rc_modules(b->p);
    const double T = S.T, h = S.h, Ts = zp_emit_sp_tokens(b, T);
    const int norm = S.rms ? ZP_OPK_RMSNORM1 : ZP_OPK_LAYERNORM1;
    if ((S.moe && (mods & ZP_RCM_MOE)) || (!S.moe && (mods & ZP_RCM_MLP))) {
        zp_emit_mp_gather(b, 2.0 * T * h);
        block_mlp(b, &S, 0);
    } else if (S.moe) {
        if (mods & ZP_RCM_MOE_ACT)
            expert_act(b, &S, 0);
        if ((mods & ZP_RCM_SHARED_EXPERTS) && S.f > 0) {
            zp_emit_mp_gather(b, 2.0 * T * h);
            mlp_forward(b, &S, S.f, 0.0);
        }
    }
    if ((mods & ZP_RCM_LAYERNORM) && !S.one_norm)
        zp_emit_eltwise(b, norm, 2.0 * 2.0 * Ts * h, Ts * h);
    if ((mods & ZP_RCM_MLA_UP_PROJ) && S.mla) {
        if (S.q_rank > 0)
            zp_emit_gemm(b, ZP_OPK_Q_UP, T, S.q_n, S.q_rank, 1);
        else
            zp_emit_gemm(b, ZP_OPK_QKV, T, S.q_n, h, 1);
        zp_emit_gemm(b, ZP_OPK_KV_UP, T, S.kv_n, S.kv_rank, 1);
        if (S.rotary)
            zp_emit_eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S.rope_n, T * S.rope_n);
    }
    if (mods & ZP_RCM_CORE_ATTN)
        attention_core(b, &S);
    if (mods & ZP_RCM_LAYERNORM)
        zp_emit_eltwise(b, norm, 2.0 * 2.0 * Ts * h, Ts * h);
}

/* The LM head on T tokens: the final norm (`norm`: the model's unless it has none; an MTP module's always),
 * TP's gather of its input, the vocab-parallel GEMM and the cross-entropy; backward in reverse, the input's
 * gradient reduced over TP. `main`: the main head, whose forward allocates the logits the layout keeps (with
 * the MTP modules' activations: sim/zp_layout.c ds_logits_bytes). */
void zp_block_lm_head(zp_builder *b, double T, int backward, int norm, int main)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, h = (double)m->hidden, V = (double)m->vocab;
    const int rms = m->norm == ZP_NORM_RMSNORM;
    if (!backward) {
        if (norm)
            zp_emit_eltwise(b, rms ? ZP_OPK_FINAL_RMS : ZP_OPK_FINAL_LN, 2.0 * 2.0 * T * h, T * h);
        zp_emit_mp_gather(b, 2.0 * T * h); /* the LM head is a column-parallel GEMM */
        if (main)
            b->lay->logits(b);
        zp_emit_gemm(b, ZP_OPK_LM_HEAD, T, V / t, h, 1);
        zp_emit_eltwise(b, ZP_OPK_XENT, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
        return;
    }
    zp_emit_eltwise(b, ZP_OPK_XENT_BWD, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
    zp_emit_gemm_bwd(b, ZP_OPK_LM_HEAD_DGRAD, ZP_OPK_LM_HEAD_WGRAD, T, V / t, h, 1);
    zp_emit_mp_reduce(b, 2.0 * T * h);
    if (norm)
        zp_emit_eltwise(b, rms ? ZP_OPK_FINAL_RMS_BWD : ZP_OPK_FINAL_LN_BWD, 3.0 * 2.0 * T * h, T * h);
}

/* An MTP module's eh_proj (2h -> h, column-parallel) and TP's gather of its output. */
void zp_block_mtp_proj(zp_builder *b, double T)
{
    const double t = (double)b->p->mp, h = (double)b->m->hidden;
    zp_emit_gemm(b, ZP_OPK_MTP_PROJ, T, h / t, 2.0 * h, 1);
    zp_emit_mp_gather(b, 2.0 * T * h);
}
