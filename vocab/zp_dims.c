/* zp_dims.c — the table of parallel dimensions (zp_dims.h): one row each, its checks and search range. */
#include "zp_dims.h"

#include <stddef.h>

static int64_t degree_or_1(const zp_dim_ctx *c, zp_dim_id id) { return c->deg[id] > 0 ? c->deg[id] : 1; }

/* ---- what the model lets a degree split (Megatron-LM's rules) */

int zp_dims_tp_ok(const zp_model *m, int64_t t)
{
    const int64_t kv = zp_model_kv_heads(m);
    return t >= 1 && m->heads % t == 0 && (m->attn != ZP_ATTN_STANDARD || kv % t == 0 || t % kv == 0);
}

zp_status zp_dims_check_tp(const zp_model *m, int64_t t)
{
    if (t < 1)
        return ZP_FAIL(ZP_EINVAL, "--mp: must be at least 1");
    if (m->heads % t != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp: %lld does not divide the model's %lld attention heads (Megatron splits "
                                  "heads across MP ranks): use an --mp that divides %lld, or a model whose heads "
                                  "are a multiple of %lld (a config.json's n_head / num_attention_heads)",
                       (long long)t, (long long)m->heads, (long long)m->heads, (long long)t);
    const int64_t kv = zp_model_kv_heads(m);
    if (m->attn == ZP_ATTN_STANDARD && kv % t != 0 && t % kv != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp: %lld and the model's %lld key/value heads must divide one another (Megatron "
                                  "splits the KV heads, or replicates them when MP exceeds them)",
                       (long long)t, (long long)kv);
    return ZP_OK;
}

zp_status zp_dims_check_ep(const zp_model *m, int64_t ep, int64_t dp)
{
    if (ep <= 1)
        return ZP_OK;
    if (m->experts == 0)
        return ZP_FAIL(ZP_EINVAL, "--ep %lld: model '%s' has no experts to shard", (long long)ep, m->name);
    if (m->experts % ep != 0)
        return ZP_FAIL(ZP_EINVAL, "--ep: %lld does not divide the model's %lld routed experts", (long long)ep,
                       (long long)m->experts);
    if (dp % ep != 0)
        return ZP_FAIL(ZP_EINVAL, "--ep: %lld does not divide the data-parallel degree %lld (experts are sharded "
                                  "over the DP ranks)",
                       (long long)ep, (long long)dp);
    return ZP_OK;
}

/* ---- tensor parallelism: Megatron-LM's split of heads and widths; inside a node unless asked */

static zp_status tp_check(const zp_dim_ctx *c, int64_t t)
{
    if (t < 1)
        return ZP_FAIL(ZP_EINVAL, "--mp: must be at least 1");
    if (t > c->gpus)
        return ZP_FAIL(ZP_EINVAL, "--mp: %lld exceeds the %lld GPUs", (long long)t, (long long)c->gpus);
    if (c->gpus % t != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp: %lld does not divide the %lld GPUs", (long long)t, (long long)c->gpus);
    return zp_dims_check_tp(c->model, t);
}

static int tp_admits(const zp_dim_ctx *c, int64_t t) { return c->gpus % t == 0; }

/* Powers of two dividing the GPUs and the heads, up to max_tp (a node's GPUs by default: Megatron-LM's TP
 * across nodes only when asked); inside a node, groups that tile it (TP 16 does not tile a 72-GPU NVLink
 * domain; every power of two up to 8 or 16 tiles the 8- and 16-GPU nodes); beyond a node, whole nodes. The
 * node is the NVLink domain (zp_cluster_domain). */
static int64_t tp_next(const zp_dim_ctx *c, int64_t prev)
{
    const int64_t node = c->gpus_per_node > 0 ? c->gpus_per_node : 1, max = c->max_tp > 0 ? c->max_tp : node;
    const int64_t gpn = c->gpus < node ? c->gpus : node; /* a job smaller than a node fills part of one */
    for (int64_t t = prev > 0 ? 2 * prev : 1; t <= c->gpus; t *= 2)
        if (t <= max && c->gpus % t == 0 && zp_dims_tp_ok(c->model, t) && (t > gpn ? t % gpn == 0 : gpn % t == 0))
            return t;
    return 0;
}

/* ---- expert parallelism: the routed experts over EP of the DP ranks */

static zp_status ep_check(const zp_dim_ctx *c, int64_t e)
{
    if (e < 1)
        return ZP_FAIL(ZP_EINVAL, "--ep: must be at least 1");
    /* the experts must split; the DP degree too when TP (hence DP) is given */
    return zp_dims_check_ep(c->model, e, c->deg[ZP_DIM_TP] != ZP_DIM_ANY ? c->gpus / c->deg[ZP_DIM_TP] : e);
}

/* EP divides the DP degree the others leave and the routed experts (a dense model: 1 only). */
static int ep_admits(const zp_dim_ctx *c, int64_t e)
{
    const int64_t dp = c->gpus / zp_dims_gpus(c->deg), experts = c->model->experts;
    return dp % e == 0 && (experts == 0 ? e == 1 : experts % e == 0);
}

/* Powers of two up to the experts; 1 for a dense model. */
static int64_t ep_next(const zp_dim_ctx *c, int64_t prev)
{
    const int64_t top = c->model->experts > 0 ? c->model->experts : 1;
    for (int64_t e = prev > 0 ? 2 * prev : 1; e <= top; e *= 2)
        if (ep_admits(c, e))
            return e;
    return 0;
}

/* ---- pipeline parallelism: the layers cut into stages, a stage's GPUs filling nodes or sharing one */

static zp_status pp_check(const zp_dim_ctx *c, int64_t pp)
{
    if (pp < 1)
        return ZP_FAIL(ZP_EINVAL, "--pp: must be at least 1");
    if (c->gpus % pp != 0)
        return ZP_FAIL(ZP_EINVAL, "--pp: %lld pipeline stages do not divide the %lld GPUs", (long long)pp,
                       (long long)c->gpus);
    const int64_t tp = c->deg[ZP_DIM_TP];
    if (tp != ZP_DIM_ANY && c->gpus % (pp * tp) != 0)
        return ZP_FAIL(ZP_EINVAL, "--pp %lld x --mp %lld do not divide the %lld GPUs", (long long)pp, (long long)tp,
                       (long long)c->gpus);
    if (c->model && pp > c->model->layers)
        return ZP_FAIL(ZP_EINVAL, "--pp %lld: more pipeline stages than the model's %lld layers (each stage needs at "
                                  "least one)",
                       (long long)pp, (long long)c->model->layers);
    return ZP_OK;
}

/* Whether P stages fit the degrees decided: P divides what TP leaves, each stage has a layer, and a
 * stage's GPUs fill whole nodes or share one (zp_pp_place_get). */
static int pp_admits(const zp_dim_ctx *c, int64_t pp)
{
    const int64_t tp = degree_or_1(c, ZP_DIM_TP);
    if (c->gpus % (tp * pp) != 0 || pp > c->model->layers)
        return 0;
    if (pp == 1)
        return 1;
    /* zp_pp_place_get's rule: a stage's GPUs fill whole nodes, or a node holds whole stages */
    const int64_t g = c->gpus / pp, gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    return g % gpn == 0 || gpn % g == 0;
}

static int64_t pp_next(const zp_dim_ctx *c, int64_t prev)
{
    for (int64_t pp = prev + 1; pp <= c->gpus / degree_or_1(c, ZP_DIM_TP); pp++)
        if (pp_admits(c, pp))
            return pp;
    return 0;
}

/* ---- context parallelism: each sequence cut over CP of the DP ranks (Megatron-core's ring attention) */

/* The search offers CP > 1 only while each rank keeps a slice of at least this many tokens: below it a
 * slice's attention is too short to hide its KV transfer to the next rank (the ring's P2P step), and
 * Megatron-core's own guidance is CP for long sequences (Llama 3 405B: 131,072 tokens over CP 16, 8K slices).
 * A given --cp is taken whatever its slice. */
#define ZP_CP_MIN_SLICE 8192

static int cp_divides_seq(const zp_dim_ctx *c, int64_t cp)
{
    return cp == 1 || (c->model && c->model->seq % (2 * cp) == 0);
}

static zp_status cp_check(const zp_dim_ctx *c, int64_t cp)
{
    if (cp < 1)
        return ZP_FAIL(ZP_EINVAL, "--cp: must be at least 1");
    if (cp == 1)
        return ZP_OK;
    if (!cp_divides_seq(c, cp))
        return ZP_FAIL(ZP_EINVAL, "--cp %lld: the sequence of %lld tokens does not cut into 2 x %lld equal chunks "
                                  "(causal load balancing gives each CP rank a pair, the first and last unmasked "
                                  "alike); use a CP degree whose double divides the sequence, or --seq",
                       (long long)cp, (long long)c->model->seq, (long long)cp);
    const int64_t tp = c->deg[ZP_DIM_TP], pp = c->deg[ZP_DIM_PP] > 0 ? c->deg[ZP_DIM_PP] : 1;
    const int64_t dp = tp > 0 ? c->gpus / tp / pp : c->gpus / pp;
    if (c->gpus % cp != 0 || dp % cp != 0)
        return ZP_FAIL(ZP_EINVAL, "--cp %lld does not divide the %lld data-parallel ranks the other degrees leave "
                                  "(CP ranks are DP ranks that share one sequence)",
                       (long long)cp, (long long)dp);
    return ZP_OK;
}

/* CP divides the DP ranks the others leave, and twice CP the sequence. */
static int cp_admits(const zp_dim_ctx *c, int64_t cp)
{
    return (c->gpus / zp_dims_gpus(c->deg)) % cp == 0 && cp_divides_seq(c, cp);
}

/* 1, then powers of two whose slices keep ZP_CP_MIN_SLICE tokens. */
static int64_t cp_next(const zp_dim_ctx *c, int64_t prev)
{
    for (int64_t cp = prev > 0 ? 2 * prev : 1; cp <= c->gpus && (cp == 1 || c->model->seq / cp >= ZP_CP_MIN_SLICE);
         cp *= 2)
        if (cp_admits(c, cp))
            return cp;
    return 0;
}

/* The table, in placement order (innermost first). DeepSpeed's names: its pipeline engine's num_stages
 * (deepspeed.pipe.PipelineModule), the MoE layer's ep_size (deepspeed.moe.layer.MoE), and the
 * model-parallel unit Megatron-DeepSpeed hands it (mpu) for TP. */
static const zp_dim_type g_dims[ZP_NDIMS] = {
    {ZP_DIM_TP, "tensor", "--mp", "attention heads and the MLP's width (Megatron-LM's column/row split)",
     ZP_DIM_TP, "--tensor-model-parallel-size", "mpu (model_parallel_size)", "TP", 0, tp_check, tp_admits, tp_next,
     "  --mp M               model-parallel degree (divides GPUs and heads, and the KV heads or they it); default:\n"
     "                       searched over 1, 2, 4, ... up to the GPUs of a node\n"},
    {ZP_DIM_EP, "expert", "--ep", "routed experts", ZP_DIM_DP, "--expert-model-parallel-size", "ep_size",
     "EP", 0, ep_check, ep_admits, ep_next,
     "  --ep E               expert-parallel degree of an MoE model: its routed experts sharded over E of the\n"
     "                       DP ranks (divides the experts and GPUs / MP); default: searched over 1, 2, 4, ...\n"},
    {ZP_DIM_DP, "data", "", "the global batch (ZeRO partitions model states over it)", ZP_DIM_DP, NULL,
     "data_parallel_size", "DP", 0, NULL, NULL, NULL, NULL},
    {ZP_DIM_PP, "pipeline", "--pp", "layers (a stage's consecutive blocks)", ZP_DIM_PP,
     "--pipeline-model-parallel-size", "num_stages", "PP", 0, pp_check, pp_admits, pp_next,
     "  --pp P               pipeline stages (divides GPUs / MP; at most the layers); default: searched when\n"
     "                       --global-batch or --grad-accum gives micro-batches to fill a pipeline, else 1;\n"
     "                       with --stage 2 or 3 as torchtitan runs FSDP2 beside pipelines (gradients reduced\n"
     "                       once a step, after the last micro-batch)\n"},
    {ZP_DIM_CP, "context", "--cp", "each sequence (ring attention over its slices)", ZP_DIM_DP,
     "--context-parallel-size", NULL, "CP", 1, cp_check, cp_admits, cp_next,
     "  --cp C               context parallelism: each sequence cut over C data-parallel ranks (Megatron-core's\n"
     "                       ring attention; 2C divides the sequence); default: searched while each rank keeps\n"
     "                       8K tokens or more (1 below 16K)\n"},
};

const zp_dim_type *zp_dims_get(zp_dim_id id) { return (unsigned)id < ZP_NDIMS ? &g_dims[id] : NULL; }

void zp_dims_ctx_init(zp_dim_ctx *c, const zp_model *model, int64_t gpus, int gpus_per_node, int64_t max_tp)
{
    *c = (zp_dim_ctx){.model = model, .gpus = gpus, .gpus_per_node = gpus_per_node, .max_tp = max_tp};
    for (int d = 0; d < ZP_NDIMS; d++)
        c->deg[d] = ZP_DIM_ANY;
}

int64_t zp_dims_gpus(const int64_t *deg)
{
    int64_t n = 1;
    for (int d = 0; d < ZP_NDIMS; d++)
        if (g_dims[d].within == (zp_dim_id)d && deg[d] > 0) /* ZP_DIM_ANY: not decided, counts 1 */
            n *= deg[d];
    return n;
}

int64_t zp_dims_seq_split(const int64_t *deg)
{
    int64_t n = 1;
    for (int d = 0; d < ZP_NDIMS; d++)
        if (g_dims[d].seq_split && deg[d] > 0)
            n *= deg[d];
    return n;
}

int64_t zp_dims_replicas(const int64_t *deg)
{
    const int64_t dp = deg[ZP_DIM_DP] > 0 ? deg[ZP_DIM_DP] : 1;
    return dp / zp_dims_seq_split(deg);
}

int64_t zp_dims_stride(const int64_t *deg, zp_dim_id id)
{
    int64_t s = 1;
    const zp_dim_id outer = g_dims[id].within;
    for (int d = 0; d < (int)outer; d++)
        if (g_dims[d].within == (zp_dim_id)d && deg[d] > 0)
            s *= deg[d];
    return s;
}

int64_t zp_dims_coord(const int64_t *deg, int64_t rank, zp_dim_id id)
{
    const int64_t n = deg[id] > 0 ? deg[id] : 1;
    return rank / zp_dims_stride(deg, id) % n;
}
