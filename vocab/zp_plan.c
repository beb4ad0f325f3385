#include "zp_plan.h"

#include "zp_dispatch.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const zp_stage_info g_stages[] = {
    {0, "baseline", "plain data parallelism", 0, 0, 0, 2.0},
    {1, "Pos", "optimizer states partitioned", 1, 0, 0, 2.0},
    {2, "Pos+g", "optimizer states and gradients partitioned", 1, 1, 0, 2.0},
    {3, "Pos+g+p", "optimizer states, gradients and parameters partitioned", 1, 1, 1, 3.0},
};

const zp_stage_info *zp_stage_get(int stage) { return (stage >= 0 && stage <= 3) ? &g_stages[stage] : NULL; }

const char *zp_offload_name(zp_offload o)
{
    switch (o) {
    case ZP_OFFLOAD_OPTIMIZER: return "optimizer";
    case ZP_OFFLOAD_PARAMS: return "params";
    default: return "none";
    }
}

zp_status zp_offload_parse(const char *text, zp_offload *out)
{
    if (strcasecmp(text, "none") == 0)
        *out = ZP_OFFLOAD_NONE;
    else if (strcasecmp(text, "optimizer") == 0 || strcasecmp(text, "cpu") == 0)
        *out = ZP_OFFLOAD_OPTIMIZER;
    else if (strcasecmp(text, "params") == 0 || strcasecmp(text, "param") == 0)
        *out = ZP_OFFLOAD_PARAMS;
    else
        return ZP_FAIL(ZP_EINVAL, "--offload: unknown value '%s' (use none, optimizer or params)", text);
    return ZP_OK;
}

const char *zp_pp_schedule_name(zp_pp_schedule s)
{
    static const char *const names[] = {"1f1b", "gpipe", "interleaved"};
    return (unsigned)s < ZP_PP_NSCHEDULES ? names[s] : "?";
}

zp_status zp_pp_schedule_parse(const char *text, zp_pp_schedule *out)
{
    for (int s = 0; s < ZP_PP_NSCHEDULES; s++)
        if (strcasecmp(text, zp_pp_schedule_name((zp_pp_schedule)s)) == 0) {
            *out = (zp_pp_schedule)s;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--schedule: unknown pipeline schedule '%s' (use gpipe, 1f1b or interleaved)", text);
}

const char *zp_cp_comm_name(zp_cp_comm c)
{
    static const char *const names[] = {"ring", "all-gather"};
    return (unsigned)c < ZP_NCP_COMM ? names[c] : "?";
}

const char *zp_cp_comm_megatron(zp_cp_comm c)
{
    static const char *const names[] = {"p2p", "all_gather"};
    return (unsigned)c < ZP_NCP_COMM ? names[c] : "?";
}

zp_status zp_cp_comm_parse(const char *text, zp_cp_comm *out)
{
    for (int c = 0; c < ZP_NCP_COMM; c++)
        if (strcasecmp(text, zp_cp_comm_name((zp_cp_comm)c)) == 0 ||
            strcasecmp(text, zp_cp_comm_megatron((zp_cp_comm)c)) == 0) {
            *out = (zp_cp_comm)c;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--cp-comm: unknown '%s' (use ring or all-gather; Megatron-core's p2p or all_gather)",
                   text);
}

const char *zp_tp_overlap_name(zp_tp_overlap t)
{
    static const char *const names[] = {"off", "te", "async"};
    return (unsigned)t < ZP_NTP_OVERLAP ? names[t] : "?";
}

zp_status zp_tp_overlap_parse(const char *text, zp_tp_overlap *out)
{
    static const struct {
        const char *name;
        zp_tp_overlap t;
    } words[] = {{"off", ZP_TP_OVERLAP_OFF}, {"none", ZP_TP_OVERLAP_OFF}, {"te", ZP_TP_OVERLAP_TE},
                 {"on", ZP_TP_OVERLAP_TE},   {"userbuffers", ZP_TP_OVERLAP_TE}, {"async", ZP_TP_OVERLAP_ASYNC}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(text, words[i].name) == 0) {
            *out = words[i].t;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap: unknown '%s' (use off, te: Megatron-core/Transformer Engine's "
                              "userbuffers, async: torchtitan's async TP, or auto: searched)",
                   text);
}

const char *zp_recompute_name(zp_recompute r)
{
    static const char *const names[] = {"full", "selective", "none", "op"};
    return (unsigned)r < ZP_NRECOMPUTE ? names[r] : "?";
}

zp_status zp_recompute_parse(const char *text, zp_recompute *out)
{
    for (int r = 0; r < ZP_NRECOMPUTE; r++)
        if (strcasecmp(text, zp_recompute_name((zp_recompute)r)) == 0) {
            *out = (zp_recompute)r;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--recompute: unknown value '%s' (use full, selective, none or op)", text);
}

static const zp_rc_module_info g_rc_modules[] = {
    {"core_attn", ZP_RCM_CORE_ATTN},     {"moe_act", ZP_RCM_MOE_ACT}, {"layernorm", ZP_RCM_LAYERNORM},
    {"mla_up_proj", ZP_RCM_MLA_UP_PROJ}, {"mlp", ZP_RCM_MLP},         {"moe", ZP_RCM_MOE},
    {"shared_experts", ZP_RCM_SHARED_EXPERTS},
};

const zp_rc_module_info *zp_rc_module_get(int i)
{
    return i >= 0 && (size_t)i < sizeof g_rc_modules / sizeof g_rc_modules[0] ? &g_rc_modules[i] : NULL;
}

zp_status zp_rc_module_parse(const char *text, const char *what, unsigned *out)
{
    static const char gaps[] = " ,[]()'\"\t";
    unsigned bits = 0;
    for (const char *s = text + strspn(text, gaps); *s; s += strspn(s, gaps)) {
        const size_t len = strcspn(s, gaps);
        const zp_rc_module_info *m = NULL;
        for (int i = 0; zp_rc_module_get(i) && !m; i++)
            if (strlen(zp_rc_module_get(i)->name) == len && strncmp(s, zp_rc_module_get(i)->name, len) == 0)
                m = zp_rc_module_get(i);
        if (!m)
            return ZP_FAIL(ZP_EINVAL, "%s: unknown module '%.*s' (Megatron-core's: core_attn, moe_act, layernorm, "
                                      "mla_up_proj, mlp, moe, shared_experts)",
                           what, (int)(len > 40 ? 40 : len), s);
        bits |= m->bit;
        s += len;
    }
    if (!bits)
        return ZP_FAIL(ZP_EINVAL, "%s: no module named (Megatron-core's default is core_attn)", what);
    *out = bits;
    return ZP_OK;
}

int zp_rc_module_text(unsigned bits, const char *sep, char *buf, size_t len)
{
    int n = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; zp_rc_module_get(i); i++)
        if ((bits & zp_rc_module_get(i)->bit) && (size_t)n < len)
            n += snprintf(buf + n, len - (size_t)n, "%s%s", n ? sep : "", zp_rc_module_get(i)->name);
    return n;
}

unsigned zp_plan_rc_modules(const zp_plan *p)
{
    return !p->selective ? 0u : p->rc_modules ? p->rc_modules : (unsigned)ZP_RCM_CORE_ATTN;
}

zp_recompute zp_plan_recompute(const zp_plan *p)
{
    return p->checkpoint  ? ZP_RECOMPUTE_FULL
           : p->selective ? ZP_RECOMPUTE_SELECTIVE
           : p->op_sac    ? ZP_RECOMPUTE_OP
                          : ZP_RECOMPUTE_NONE;
}

void zp_plan_set_recompute(zp_plan *p, zp_recompute r)
{
    p->checkpoint = r == ZP_RECOMPUTE_FULL;
    p->selective = r == ZP_RECOMPUTE_SELECTIVE;
    p->op_sac = r == ZP_RECOMPUTE_OP;
    if (r != ZP_RECOMPUTE_FULL) /* every k-th block is a form of full recompute */
        p->ckpt_every = 0;
}

int zp_plan_block_checkpointed(const zp_plan *p, int64_t l)
{
    return p->checkpoint && (p->ckpt_every <= 1 || (l + 1) % p->ckpt_every == 0);
}

double zp_plan_ckpt_fraction(const zp_plan *p, int64_t layers)
{
    if (!p->checkpoint || layers < 1)
        return 0.0;
    return p->ckpt_every <= 1 ? 1.0 : (double)(layers / p->ckpt_every) / (double)layers;
}

/* The named degrees are the table's array (zp_plan.deg): the same memory, in the table's order. */
_Static_assert(offsetof(zp_plan, mp) == offsetof(zp_plan, deg) + ZP_DIM_TP * sizeof(int64_t), "TP");
_Static_assert(offsetof(zp_plan, ep) == offsetof(zp_plan, deg) + ZP_DIM_EP * sizeof(int64_t), "EP");
_Static_assert(offsetof(zp_plan, dp) == offsetof(zp_plan, deg) + ZP_DIM_DP * sizeof(int64_t), "DP");
_Static_assert(offsetof(zp_plan, pp) == offsetof(zp_plan, deg) + ZP_DIM_PP * sizeof(int64_t), "PP");

int64_t zp_plan_gpus(const zp_plan *p) { return zp_dims_gpus(p->deg); }

void zp_plan_default(zp_plan *p, int64_t gpus)
{
    memset(p, 0, sizeof *p);
    p->stage = 0;
    for (int d = 0; d < ZP_NDIMS; d++) /* every dimension of degree 1, DP what they leave: all the GPUs */
        p->deg[d] = 1;
    p->dp = gpus;
    p->vstages = 1;
    p->micro_batch = 1;
    p->grad_accum = 1;
    p->checkpoint = 1;
    p->cb = 1;
    p->bucket = ZP_DEFAULT_BUCKET;
    p->md = 1;
    p->offload = ZP_OFFLOAD_NONE;
    p->k_optimizer = ZP_ADAM_K;
    p->param_bytes = 2.0;
    p->overlap_comm = 1;
    p->overlap_p2p_comm = 1;
    p->swiglu_fusion = 1;
    p->stage3_max_live = ZP_DEFAULT_MAX_LIVE;
    p->stage3_prefetch = ZP_DEFAULT_PREFETCH;
    p->persistence_threshold = ZP_DEFAULT_PERSISTENCE;
    p->capacity_factor = 1.0;
    p->moe_imbalance = 1.0;
}

double zp_plan_grad_bytes(const zp_plan *p) { return p->grad_bytes > 0 ? p->grad_bytes : p->param_bytes; }

double zp_plan_moments_saved(const zp_plan *p)
{
    const double m = p->exp_avg_bytes > 0 ? p->exp_avg_bytes : 4.0, v = p->exp_avg_sq_bytes > 0 ? p->exp_avg_sq_bytes : 4.0;
    return 8.0 - m - v;
}

double zp_plan_optimizer_bytes(const zp_plan *p) { return p->k_optimizer - zp_plan_moments_saved(p); }

double zp_adam_moment_bytes(const char *type)
{
    static const struct {
        const char *name;
        double bytes;
    } types[] = {{"fp32", 4.0}, {"bf16", 2.0}, {"fp16", 2.0}, {"fp8", 1.0}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(type, types[i].name) == 0)
            return types[i].bytes;
    return 0.0;
}

const char *zp_adam_moment_name(double bytes) { return bytes == 1.0 ? "fp8" : bytes == 2.0 ? "bf16" : "fp32"; }

const char *zp_plan_precision_name(const zp_plan *p)
{
    return p->param_bytes == 4.0 ? "fp32" : p->bf16 ? "bf16" : "fp16";
}

int64_t zp_plan_replicas(const zp_plan *p) { return zp_dims_replicas(p->deg); }

double zp_plan_global_batch(const zp_plan *p)
{
    return (double)p->micro_batch * (double)p->grad_accum * (double)zp_plan_replicas(p);
}

const char *zp_reshard_name(zp_reshard r)
{
    static const char *const names[] = {"default", "always", "never"};
    return (unsigned)r < ZP_NRESHARD ? names[r] : "?";
}

zp_status zp_reshard_parse(const char *text, zp_reshard *out)
{
    for (int r = 0; r < ZP_NRESHARD; r++)
        if (strcasecmp(text, zp_reshard_name((zp_reshard)r)) == 0) {
            *out = (zp_reshard)r;
            return ZP_OK;
        }
    if (strcasecmp(text, "on") == 0 || strcasecmp(text, "true") == 0)
        *out = ZP_RESHARD_ALWAYS;
    else if (strcasecmp(text, "off") == 0 || strcasecmp(text, "false") == 0)
        *out = ZP_RESHARD_NEVER;
    else
        return ZP_FAIL(ZP_EINVAL, "--reshard-after-forward: unknown policy '%s' (use default, always or never; on "
                                  "or off)", text);
    return ZP_OK;
}

int zp_plan_reshards(const zp_plan *p)
{
    if (p->stage != 3)
        return 0;
    return p->reshard == ZP_RESHARD_ALWAYS || (p->reshard == ZP_RESHARD_DEFAULT && p->pp <= 1);
}

int64_t zp_plan_shard_degree(const zp_plan *p) { return p->shard_group > 0 ? p->shard_group : p->dp; }

int zp_plan_grads_once(const zp_plan *p) { return p->stage >= 2 && p->pp > 1; }

/* Hybrid sharding: a shard group of G DP ranks that divides DP, for the stages that shard parameters or
 * gradients (FSDP2 HSDP and MiCS shard all the states of ZeRO-3; ZeRO-2 is FSDP2 with the parameters kept
 * gathered), not beside expert parallelism (whose EDP groups partition the experts' states already). */
static zp_status validate_shard_group(const zp_plan *p)
{
    const int64_t g = p->shard_group;
    if (g == 0)
        return ZP_OK;
    if (g < 1 || p->dp % g != 0)
        return ZP_FAIL(ZP_EINVAL, "--shard-group %lld does not divide the data-parallel degree %lld (give a "
                                  "divisor of %lld, e.g. the GPUs of a node over TP x PP)",
                       (long long)g, (long long)p->dp, (long long)p->dp);
    if (p->stage < 2)
        return ZP_FAIL(ZP_EINVAL, "--shard-group %lld: hybrid sharding shards gradients and parameters: it needs "
                                  "--stage 2 or 3 (FSDP2 HSDP, MiCS)", (long long)g);
    if (p->ep > 1)
        return ZP_FAIL(ZP_EINVAL, "--shard-group with --ep %lld: the experts' states are partitioned over their "
                                  "own EDP groups already (drop one)", (long long)p->ep);
    if (p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "--shard-group with --offload: not modelled together (drop one)");
    return ZP_OK;
}

zp_status zp_plan_validate(const zp_plan *p)
{
    if (!zp_stage_get(p->stage))
        return ZP_FAIL(ZP_EINVAL, "--stage: %d is not a ZeRO stage (use 0, 1, 2 or 3)", p->stage);
    if (p->dp < 1 || p->mp < 1)
        return ZP_FAIL(ZP_EINVAL, "data- and model-parallel degrees must be at least 1");
    if (p->pp < 1)
        return ZP_FAIL(ZP_EINVAL, "--pp: the pipeline stages must be at least 1");
    if ((unsigned)p->cp_comm >= ZP_NCP_COMM)
        return ZP_FAIL(ZP_EINVAL, "--cp-comm: not a context-parallel communication");
    if ((unsigned)p->schedule >= ZP_PP_NSCHEDULES)
        return ZP_FAIL(ZP_EINVAL, "--schedule: not a pipeline schedule");
    if (p->vstages < 1 || p->vstages > ZP_MAX_VSTAGES)
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages: %d is not between 1 and %d", p->vstages, ZP_MAX_VSTAGES);
    if (p->vstages > 1 && (p->schedule != ZP_PP_INTERLEAVED || p->pp < 2))
        return ZP_FAIL(ZP_EINVAL, "--virtual-stages %d: model chunks per pipeline rank are the interleaved "
                                  "schedule's (--pp P >= 2 --schedule interleaved)", p->vstages);
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && p->vstages < 2)
        return ZP_FAIL(ZP_EINVAL, "--schedule interleaved needs --virtual-stages v >= 2 (model chunks per rank)");
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && p->grad_accum % p->pp != 0)
        return ZP_FAIL(ZP_EINVAL, "--schedule interleaved: the %lld micro-batches per step must be a multiple of "
                                  "the %lld pipeline stages (as Megatron-LM requires)",
                       (long long)p->grad_accum, (long long)p->pp);
    if ((unsigned)p->reshard >= ZP_NRESHARD)
        return ZP_FAIL(ZP_EINVAL, "--reshard-after-forward: not a reshard policy");
    ZP_TRY(validate_shard_group(p));
    if (p->checkpoint + p->selective + p->op_sac > 1)
        return ZP_FAIL(ZP_EINVAL, "--recompute: full, selective and op recompute exclude each other");
    if (p->rc_modules & ~(unsigned)ZP_RCM_ALL)
        return ZP_FAIL(ZP_EINVAL, "--recompute-modules: not a set of modules");
    if (p->ckpt_every < 0)
        return ZP_FAIL(ZP_EINVAL, "--checkpoint-every: must be at least 1");
    if (p->ckpt_every > 1 && (p->pa || p->pa_cpu))
        return ZP_FAIL(ZP_EINVAL, "--checkpoint-every with --pa/--pa-cpu: ZeRO-R partitions every block's "
                                  "checkpoint (drop one)");
    if (p->ckpt_every > 1 && !p->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--checkpoint-every %d checkpoints one block in %d whole: it needs --recompute "
                                  "full", p->ckpt_every, p->ckpt_every);
    if (p->sp && (p->pa || p->pa_cpu))
        return ZP_FAIL(ZP_EINVAL, "--sp shards the checkpoints over the MP group already: ZeRO-R --pa/--pa-cpu "
                                  "have nothing left to partition (drop one)");
    if ((unsigned)p->tp_overlap >= ZP_NTP_OVERLAP)
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap: not a tensor-parallel overlap");
    if (zp_plan_tp_overlapped(p) && !p->sp)
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap %s overlaps sequence parallelism's all-gathers and "
                                  "reduce-scatters: it needs --sp (Megatron-core asserts it; torchtitan's TP is "
                                  "sequence-parallel)",
                       zp_tp_overlap_name((zp_tp_overlap)p->tp_overlap));
    if (p->overlap_param_gather && (p->stage < 1 || p->stage > 2 || !p->overlap_comm || p->offload != ZP_OFFLOAD_NONE))
        return ZP_FAIL(ZP_EINVAL, "--overlap-param-gather overlaps the distributed optimizer's all-gather of the "
                                  "updated parameters with the next forward: it needs --stage 1 or 2, "
                                  "--overlap-comm (Megatron-core's --overlap-grad-reduce) and no offload");
    if (p->overlap_p2p_warmup_flush && !p->overlap_p2p_comm)
        return ZP_FAIL(ZP_EINVAL, "the warm-up's and the flush's pipeline sends overlapped without the steady "
                                  "state's are not modelled (--overlap-p2p-comm all overlaps every send)");
    if (p->micro_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--micro-batch: must be at least 1");
    if (p->grad_accum < 1)
        return ZP_FAIL(ZP_EINVAL, "gradient accumulation steps must be at least 1");
    if ((p->pa || p->pa_cpu) && !p->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--pa/--pa-cpu partition activation checkpoints: they need checkpointing "
                                  "(drop --no-checkpoint)");
    if (p->offload == ZP_OFFLOAD_OPTIMIZER && p->stage < 1)
        return ZP_FAIL(ZP_EINVAL, "--offload optimizer needs ZeRO stage 1, 2 or 3 (as in DeepSpeed)");
    if (p->offload == ZP_OFFLOAD_PARAMS && p->stage != 3)
        return ZP_FAIL(ZP_EINVAL, "--offload params needs ZeRO stage 3 (as in DeepSpeed)");
    if (p->cb && !(p->bucket >= 1))
        return ZP_FAIL(ZP_EINVAL, "--bucket: must be at least 1 element");
    if (p->exp_avg_bytes < 0 || p->exp_avg_bytes > 4 || p->exp_avg_sq_bytes < 0 || p->exp_avg_sq_bytes > 4)
        return ZP_FAIL(ZP_EINVAL, "--adam-moments: not a moment type (fp32, bf16, fp16 or fp8)");
    if (zp_plan_moments_saved(p) > 0 && p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "--adam-moments with --offload: the offloaded optimizer (DeepSpeed's CPU Adam) keeps "
                                  "its moments in fp32 (drop one)");
    if (!(p->k_optimizer > 0) || !(zp_plan_optimizer_bytes(p) > 0))
        return ZP_FAIL(ZP_EINVAL, "optimizer multiplier K must be positive");
    if (p->param_bytes != 2.0 && p->param_bytes != 4.0)
        return ZP_FAIL(ZP_EINVAL, "parameters are 2 (fp16/bf16) or 4 (fp32) bytes");
    if (p->grad_bytes != 0 && p->grad_bytes != 2.0 && p->grad_bytes != 4.0)
        return ZP_FAIL(ZP_EINVAL, "gradients are 2 (16-bit) or 4 (fp32) bytes");
    if (p->stage3_max_live < 0 || p->persistence_threshold < 0 || p->stage3_prefetch < 0)
        return ZP_FAIL(ZP_EINVAL, "stage-3 limits must not be negative");
    if ((p->nvme & ZP_NVME_OPTIMIZER) && p->offload == ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "NVMe offload needs --offload optimizer or params (it is where offloaded states "
                                  "go)");
    if ((p->nvme & ZP_NVME_PARAMS) && p->offload != ZP_OFFLOAD_PARAMS)
        return ZP_FAIL(ZP_EINVAL, "parameters on NVMe need --offload params (ZeRO-3 Offload)");
    if (p->ep < 1 || p->dp % p->ep != 0)
        return ZP_FAIL(ZP_EINVAL, "--ep: %lld must divide the data-parallel degree %lld (experts are sharded over "
                                  "the DP ranks)", (long long)p->ep, (long long)p->dp);
    for (int d = 0; d < ZP_NDIMS; d++) { /* every other dimension inside DP: its group is made of DP ranks */
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        if (t->within == ZP_DIM_DP && t->id != ZP_DIM_DP && (p->deg[d] < 1 || p->dp % p->deg[d] != 0))
            return ZP_FAIL(ZP_EINVAL, "%s: %lld must divide the data-parallel degree %lld (its groups are made of DP "
                                      "ranks)", t->option, (long long)p->deg[d], (long long)p->dp);
    }
    if (!(p->capacity_factor > 0 && p->capacity_factor <= 64))
        return ZP_FAIL(ZP_EINVAL, "--capacity-factor: %g is not in (0, 64]", p->capacity_factor);
    if (!(p->moe_imbalance >= 1 && p->moe_imbalance <= 64))
        return ZP_FAIL(ZP_EINVAL, "--moe-imbalance: %g is not between 1 (even routing) and 64", p->moe_imbalance);
    if (!zp_dispatch_get(p->dispatcher))
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher: not a token dispatcher (use %s)", zp_dispatch_names());
    return ZP_OK;
}

int zp_plan_glu_fused(const zp_plan *p) { return p->swiglu_fusion && !p->eager; }

int zp_plan_p2p_overlapped(const zp_plan *p)
{
    return p->overlap_p2p_comm && p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED;
}

int zp_plan_tp_overlapped(const zp_plan *p) { return p->tp_overlap != ZP_TP_OVERLAP_OFF && p->mp > 1; }
