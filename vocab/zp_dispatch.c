#include "zp_dispatch.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* Sources:
 *  - alltoall: Megatron-core's MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/token_dispatcher.py)
 *    permutes the tokens by expert and all-to-alls them over the EP group: a token routed to two experts on
 *    one rank goes there twice, and a copy for another node crosses the network whatever else goes there.
 *  - allgather: the same file's MoEAllGatherTokenDispatcher, Megatron-core's default
 *    (--moe-token-dispatcher-type allgather): gather_from_sequence_parallel_region of the hidden states (and
 *    of the routing map and probabilities) over the TP x EP group, a permute of the tokens the local experts
 *    take, and reduce_scatter_to_sequence_parallel_region of their outputs in token_unpermutation. With
 *    sequence parallelism the TP part of that gather is the one SP does anyway (zplan counts it there): over
 *    the EP group each rank receives EP - 1 ranks' tokens, T h each, against the all-to-all's T k h (EP-1)/EP.
 *  - deepep: the same file's MoEFlexTokenDispatcher with --moe-enable-deepep calls DeepEP's normal
 *    (training) kernels. DeepEP (github.com/deepseek-ai/DeepEP, README, Feb 2025) implements DeepSeek-V3's
 *    scheme (DeepSeek-V3 Technical Report, arXiv 2412.19437, section 3.2.2): "IB first to the GPUs with the
 *    same in-node index on their target nodes", then "forwarded via NVLink to specific GPUs that host their
 *    target experts, without being blocked by subsequently arriving tokens"; the combine is the reverse, the
 *    outputs of a token's experts in a node summed before they cross back.
 *  - deepep-fp8: DeepSeek-V3's own training (same report, section 3.3.2, "Low-Precision Communication"): the
 *    activations before the experts' up-projections are quantized to FP8 and then dispatched, and so is
 *    the activation gradient before the down-projections; "for both the forward and backward combine
 *    components, we retain them in BF16". DeepEP's dispatch takes the FP8 tokens with their 1x128 FP32
 *    scales (its README: "FP8 dispatching and BF16 combining"). */
static const zp_dispatch_info g_dispatch[ZP_NDISPATCH] = {
    [ZP_DISPATCH_ALLTOALL] = {.name = "alltoall", .megatron = "alltoall"},
    [ZP_DISPATCH_DEEPEP] = {.name = "deepep", .megatron = "flex", .deepep = 1, .dedup = 1},
    [ZP_DISPATCH_DEEPEP_FP8] = {.name = "deepep-fp8", .dedup = 1, .fp8_out = 1},
    [ZP_DISPATCH_ALLGATHER] = {.name = "allgather", .megatron = "allgather", .gather = 1},
};

const zp_dispatch_info *zp_dispatch_get(int kind)
{
    return kind >= 0 && kind < ZP_NDISPATCH ? &g_dispatch[kind] : NULL;
}

const char *zp_dispatch_names(void) { return "alltoall, allgather, deepep, deepep-fp8"; }

zp_status zp_dispatch_parse(const char *name, int *out)
{
    for (int k = 0; k < ZP_NDISPATCH; k++)
        if (strcasecmp(name, g_dispatch[k].name) == 0) {
            *out = k;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher: '%s' is not a token dispatcher (use %s)", name, zp_dispatch_names());
}

double zp_dispatch_elt_bytes(int kind, int dir)
{
    const zp_dispatch_info *d = zp_dispatch_get(kind);
    return d && d->fp8_out && dir == 0 ? 1.0 + 4.0 / 128.0 : 2.0;
}

/* DeepEP's recommended configurations (deep_ep/buffer.py, get_dispatch_config and get_combine_config, at
 * github.com/deepseek-ai/DeepEP 04b06f7): by EP ranks, the NVLink chunk of tokens received and the RDMA
 * chunks of tokens sent and received, dispatch's then combine's; Buffer.num_sms = 20 (10 channels), which
 * Megatron-core keeps (--moe-deepep-num-sms 20). An EP size between rows takes the next larger row's (DeepEP
 * itself asserts a listed one). */
static const struct {
    int ranks, nvl_recv, rdma_send[2], rdma_recv;
} g_deepep_cfg[] = {{2, 256, {6, 6}, 128},     {4, 256, {6, 6}, 128},     {8, 256, {6, 6}, 128},
                    {16, 288, {20, 28}, 128},  {24, 288, {32, 20}, 128},  {32, 288, {32, 20}, 128},
                    {64, 288, {28, 20}, 128},  {128, 560, {32, 12}, 128}, {144, 720, {12, 8}, 128},
                    {160, 720, {12, 8}, 128}};
#define ZP_DEEPEP_CHANNELS 10    /* num_sms / 2 */
#define ZP_DEEPEP_NVL_PEERS 8    /* NUM_MAX_NVL_PEERS */
#define ZP_DEEPEP_MAX_TOPK 128   /* kNumMaxTopK, kNumMaxScales of csrc/config.hpp */
#define ZP_DEEPEP_SOURCE_META 8  /* internode::SourceMeta: two ints */

/* Config::get_nvl_buffer_size_hint and get_rdma_buffer_size_hint (csrc/config.hpp): per channel and peer, a
 * chunk of tokens of hidden_bytes each with their source metadata, top-k indices (int64) and weights (float)
 * and FP8 scales (float) for up to 128, and the channels' head and tail counters; the RDMA chunk doubled
 * (send and receive halves) and aligned to its send chunk, plus 1 MiB; each rounded up to 128 bytes. */
double zp_dispatch_buffer_bytes(int kind, int64_t ep, int64_t hidden)
{
    const zp_dispatch_info *d = zp_dispatch_get(kind);
    if (!d || !d->dedup || ep <= 1 || hidden <= 0)
        return 0.0;
    const size_t n = sizeof g_deepep_cfg / sizeof g_deepep_cfg[0];
    size_t r = 0;
    while (r + 1 < n && g_deepep_cfg[r].ranks < ep)
        r++;
    const double hb = 2.0 * (double)hidden, ch = ZP_DEEPEP_CHANNELS, K = ZP_DEEPEP_MAX_TOPK;
    const double rdma_ranks = fmax(floor((double)ep / ZP_DEEPEP_NVL_PEERS), 1.0);
    const double nvl_ranks = fmin((double)ep, ZP_DEEPEP_NVL_PEERS);
    const double per_token = hb + ZP_DEEPEP_SOURCE_META + K * 8.0 + K * 4.0 + K * 4.0;
    double nvl = ch * nvl_ranks * (2.0 * rdma_ranks + 3.0) * 4.0 + ch * nvl_ranks * g_deepep_cfg[r].nvl_recv * per_token;
    nvl = ceil(nvl / 128.0) * 128.0;
    double rdma = 0.0;
    for (int c = 0; ep > ZP_DEEPEP_NVL_PEERS && c < 2; c++) { /* the larger of dispatch's and combine's */
        const double send = g_deepep_cfg[r].rdma_send[c];
        const double recv = ceil(g_deepep_cfg[r].rdma_recv / send) * send;
        double b = ch * rdma_ranks * (ZP_DEEPEP_NVL_PEERS * 2.0 + 2.0) * 2.0 * 4.0 +
                   ch * rdma_ranks * recv * 2.0 * (per_token + 16.0) + /* + an int4 a token */
                   1048576.0;
        rdma = fmax(rdma, ceil(b / 128.0) * 128.0);
    }
    return nvl + rdma;
}

/* C(n - a, k) / C(n, k): the chance that k of n items taken at random miss a given a of them. */
static double miss(double n, double a, double k)
{
    double r = 1.0;
    for (double i = 0; i < k; i++) {
        if (n - a - i <= 0)
            return 0.0;
        r *= (n - a - i) / (n - i);
    }
    return r;
}

/* C(n, r) in double (n at most the experts: a few hundred; 0 outside 0 <= r <= n). */
static double choose(double n, double r)
{
    if (r < 0 || r > n)
        return 0.0;
    double c = 1.0;
    for (double i = 0; i < r; i++)
        c = c * (n - i) / (i + 1.0);
    return c;
}

/* The chance that unit [lo, hi) of the experts holds one of a token's k experts: over the groups its
 * experts lie in (q whole groups of s, at most two partial ones at its edges with o[] of their experts),
 * which of them are among the token's M of G groups (hypergeometric), and then whether the k experts taken
 * from the chosen groups' M s miss the unit's share of them. */
static double unit_hit(double lo, double hi, double s, double G, double M, double k)
{
    double q = 0, o[2];
    int p = 0;
    for (double g = floor(lo / s); g * s < hi; g++) {
        const double a = fmax(lo, g * s), b = fmin(hi, (g + 1.0) * s);
        if (b - a >= s)
            q += 1;
        else if (p < 2)
            o[p++] = b - a;
    }
    double miss_all = 0.0;
    for (int sub = 0; sub < (1 << p); sub++) {
        double part = 0;
        int np = 0;
        for (int i = 0; i < p; i++)
            if (sub & (1 << i)) {
                part += o[i];
                np++;
            }
        for (double j = 0; j <= q && j + np <= M; j++) {
            const double pr = choose(q, j) * choose(G - q - p, M - j - np) / choose(G, M);
            miss_all += pr * miss(M * s, j * s + part, k);
        }
    }
    return 1.0 - miss_all;
}

double zp_dispatch_spread(const zp_model *m, int64_t units)
{
    if (units <= 1 || m->experts <= 0 || m->experts % units != 0)
        return units >= 1 ? 1.0 : 0.0;
    const double E = (double)m->experts, k = (double)m->top_k, u = E / (double)units;
    const int grouped = m->route_groups > 1 && m->experts % m->route_groups == 0;
    const double G = grouped ? (double)m->route_groups : 1.0, M = grouped ? (double)m->route_topk : 1.0;
    double hit = 0.0;
    for (int64_t x = 0; x < units; x++)
        hit += unit_hit((double)x * u, (double)(x + 1) * u, E / G, G, M, k);
    return hit;
}

double zp_dispatch_share(const zp_model *m, int kind, int64_t units)
{
    const zp_dispatch_info *d = zp_dispatch_get(kind);
    return d && d->dedup && m->top_k > 0 ? zp_dispatch_spread(m, units) / (double)m->top_k : 1.0;
}
