/* zp_pipeline.h — pipeline parallelism: which layers each stage (and each of its model chunks) holds,
 * where the embedding and the LM head sit, where a stage's GPUs are on the cluster, and the order in
 * which a stage runs the forward and backward passes of its micro-batches under GPipe, 1F1B and
 * Megatron-LM's interleaved 1F1B (Narayanan et al. SC'21, §2.2). The schedule builder (zp_schedule.c)
 * emits each pass's ops in this order, with the point-to-point sends and receives between stages; the
 * bubble, the memory of the micro-batches in flight and the first and last stages' extra work come out of
 * simulating and replaying those ops (no formula).
 *
 * Virtual stages: with v model chunks per rank there are P·v virtual stages; chunk c of stage s is virtual
 * stage c·P + s (Megatron-LM's assignment), so activations go s -> s+1 and from the last stage back to
 * stage 0 for the next chunk. The first virtual stage carries the embedding, the last the final norm, the
 * LM head and the loss.
 *
 * Layers: L/(P·v) per virtual stage when that divides (Megatron-LM requires it with v >= 2). With v = 1
 * and L not a multiple of P, as Megatron-LM's uneven split (--decoder-first/last-pipeline-num-layers) is
 * used for: the first and the last stage, which carry the embedding and the head, get floor(L/P) layers
 * and the stages between share the rest, the extra layers going to the stages after the first.
 *
 * Uneven layouts, given: the first and the last stage's layers (Megatron-core's
 * --decoder-first/last-pipeline-num-layers: the stages between share the rest evenly, and with v chunks
 * each stage's layers divide over them), or the layers of every stage or of every virtual stage. The
 * first virtual stage also runs the embedding and the last one the final norm, the LM head and the loss
 * (their own ops in the schedule), so a layout balances them by giving those stages fewer blocks: Llama 3
 * 405B ran 126 layers on 16 stages with one layer fewer on the first and the last (Dubey et al. 2024,
 * §3.3.2), whose first and last model chunks hold only the embedding and only the head. The step's time
 * is then set by the slowest stage, as the simulated schedule's dependencies make it.
 *
 * Uneven layouts, searched: where no v divides the layers evenly (126 layers on 16 stages), the search also
 * tries Megatron-core's accounting of the embedding and the loss as a layer each (zp_plan.pp_acc: its
 * --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split, Megatron-LM merge
 * request !1961, commit ef490839e8, February 2025): each of the P·v virtual stages gets (L + 2)/(P·v)
 * layers, the first and the last one fewer, where that divides (Llama 3 405B's 0,1*126,0 at v 8). */
#ifndef ZP_PIPELINE_H
#define ZP_PIPELINE_H

#include "zp_model.h"
#include "zp_plan.h"

/* The model chunks of one pipeline stage. */
typedef struct {
    int stage, stages;               /* s of P */
    int chunks;                      /* v */
    int first[ZP_MAX_VSTAGES];       /* chunk c: its first layer (0-based) */
    int layers[ZP_MAX_VSTAGES];      /* ... and how many */
    int embedding;                   /* chunk 0 of stage 0: the embedding (0/1) */
    int head;                        /* chunk v-1 of stage P-1: final norm, LM head, loss (0/1) */
} zp_pp_stage;

/* The chunks of stage `stage` of the plan (P = plan->pp, v = plan->vstages). ZP_EINVAL when the layers do
 * not split: more stages than layers, or v not dividing the layers per stage. */
zp_status zp_pp_stage_get(const zp_model *m, const zp_plan *p, int stage, zp_pp_stage *out);
/* Checks that the plan's pipeline fits the model (every stage has a layer; v divides L/P; an uneven layout
 * sums to L, gives every stage a layer and every virtual stage but the first and the last one). */
zp_status zp_pp_check(const zp_model *m, const zp_plan *p);
/* zp_pp_check's answer as a yes/no, for the search's candidates. */
int zp_pp_fits(const zp_model *m, const zp_plan *p);
/* Whether the plan gives an uneven layout (pp_first, pp_last, pp_layout or pp_acc). */
int zp_pp_uneven(const zp_plan *p);
/* Layers of virtual stage k = c·P + s (chunk c of stage s; k = s without interleaving) of a checked plan. */
int zp_pp_vstage_layers(const zp_model *m, const zp_plan *p, int k);
/* The uneven layout as the options that give it ("--pp-layout 0,1*126,0", "--pp-first-layers 7 ..."), for
 * messages. */
void zp_pp_layout_text(const zp_plan *p, char *buf, size_t len);
/* zp_plan.pp_acc's bits: the embedding, the loss counted as a layer of the first, the last virtual stage. */
enum { ZP_PP_ACC_EMBED = 1, ZP_PP_ACC_LOSS = 2 };
/* Most entries of a layout (stages or virtual stages). */
#define ZP_PP_MAX_LAYOUT 1024
/* Parses --pp-layout's text: comma-separated layer counts, each N or N*K (N repeated K times), into
 * out[0..*n) (at most cap). ZP_EINVAL naming the text when malformed. */
zp_status zp_pp_layout_parse(const char *text, int *out, int cap, int *n);

/* One pass of a stage: forward or backward of micro-batch `micro` through chunk `chunk`. */
typedef struct {
    int backward;
    int64_t micro;
    int chunk;
} zp_pp_pass;

/* The passes stage `stage` runs in one step, in order (2·m·v of them, m = plan->grad_accum micro-batches),
 * into *out (malloc'ed). GPipe: every forward, then every backward. 1F1B: min(P - s - 1, m) warm-up
 * forwards, then one forward and one backward alternately, then the remaining backwards. Interleaved:
 * Megatron-LM's forward_backward_pipelining_with_interleaving order (warm-up (P - s - 1)·2 + (v - 1)·P
 * virtual micro-batches, at most the m·v there are, or all of them on every stage when m = P with
 * plan->interleave_all_warmup, Megatron-LM v2's rule; chunk of the k-th forward (k mod P·v) / P, of the k-th
 * backward v - 1 - that). A stage then holds at most warm-up + 1 virtual micro-batches' activations (the
 * steady state's forward runs before its backward): with an even split, stage 0's 2(P - 1) + (v - 1)P + 1 of
 * L/(P·v) layers each, L·(1 + (P - 1)/(P·v)) layers' (Korthikanti et al. 2022 §4.2.3). */
zp_status zp_pp_order(const zp_plan *p, int stage, zp_pp_pass **out, int *n);
/* How many of those passes are warm-up forwards (before the first backward). */
int64_t zp_pp_warmup(const zp_plan *p, int stage);
/* The k-th of those passes (0 <= k < 2·m·v), without building the list: a step of many micro-batches
 * whose memory-only schedule keeps a few of them costs what those cost. */
zp_pp_pass zp_pp_pass_at(const zp_plan *p, int stage, int64_t k);

/* Where the stages are: Megatron-LM's rank order (tensor-parallel ranks innermost, then data-parallel,
 * then pipeline), so a stage's dp·mp GPUs are consecutive: stages span whole nodes when dp·mp is a
 * multiple of the GPUs per node (pipeline neighbours on different nodes), and share a node when dp·mp
 * divides them. */
typedef struct {
    int per_stage_nodes;   /* nodes a stage spans (>= 1) */
    int stages_per_node;   /* stages sharing one node (>= 1; > 1 only when per_stage_nodes is 1) */
} zp_pp_place;

/* ZP_EINVAL when a stage's GPUs neither fill whole nodes nor divide a node. */
zp_status zp_pp_place_get(const zp_plan *p, int gpus_per_node, zp_pp_place *out);

#endif
