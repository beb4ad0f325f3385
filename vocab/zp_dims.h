/* zp_dims.h — the parallel dimensions of a plan as one const table (GSL-style types, as gsl_rng_type):
 * for each dimension its names (zplan's option, Megatron-LM's, DeepSpeed's), what it divides, which
 * dimension's ranks it subdivides, its legality checks and messages, and its search range. A plan holds
 * its degrees in an array indexed by this table (zp_plan.deg); the search walks the table (planner/), and
 * ranks are placed in the table's order, innermost first (MP inside a node before EP, EP inside DP, the
 * pipeline outermost), as Megatron-LM orders its process groups (tp-ep-dp-pp).
 *
 * A new dimension is a row here, its enum id, and its functions (check, admits, next); its option parses
 * from the row (src/zp_cli_opts.c, into zp_plan.deg[id]) and its --help lines are the row's help; the
 * places that use a degree (the schedule's shapes, the memory model, the cost of its collectives) then
 * read it as deg[id]. */
#ifndef ZP_DIMS_H
#define ZP_DIMS_H

#include <stdint.h>

#include "zp_model.h"
#include "zp_status.h"

/* Placement order, innermost first, of the dimensions that multiply the GPUs: a dimension's group members
 * are the product of the degrees of those before it apart (zp_dims_stride); one that subdivides another
 * (EP and CP inside DP) has the stride of the one it subdivides, wherever its row is. */
typedef enum {
    ZP_DIM_TP = 0, /* tensor (model) parallelism: Megatron-LM's column/row split of every block */
    ZP_DIM_EP,     /* expert parallelism: the routed experts sharded over EP of the DP ranks */
    ZP_DIM_DP,     /* data parallelism (ZeRO shards over it): the GPUs the other dimensions leave */
    ZP_DIM_PP,     /* pipeline parallelism: the layers cut into stages */
    ZP_DIM_CP,     /* context parallelism: each sequence cut over CP of the DP ranks (Megatron-core's ring
                      attention), placed inside DP next to TP as Megatron-core's tp-cp-ep-dp-pp order does */
    ZP_NDIMS
} zp_dim_id;

/* What the table's functions know when they judge a degree: the model, the GPUs, the degrees fixed so far
 * (ZP_DIM_ANY where not yet known) and the node size. */
#define ZP_DIM_ANY (-1)
typedef struct {
    const zp_model *model;
    int64_t gpus;
    int gpus_per_node;        /* 0: not known (no cluster) */
    int64_t max_tp;           /* the largest TP degree searched; 0: a node's GPUs */
    int64_t deg[ZP_NDIMS];    /* the degrees decided so far, ZP_DIM_ANY where open */
} zp_dim_ctx;

typedef struct zp_dim_type {
    zp_dim_id id;
    const char *name;         /* "tensor", "expert", "data", "pipeline" */
    const char *option;       /* zplan's option: "--mp", "--ep", "" (DP: what is left), "--pp" */
    const char *divides;      /* what it divides, for messages and the README */
    zp_dim_id within;         /* the dimension whose ranks it subdivides (EP: DP), or its own id when its
                                 degree multiplies the GPUs (gpus = product of those degrees) */
    const char *megatron;     /* Megatron-LM's argument, or NULL (DP is what the GPUs leave) */
    const char *deepspeed;    /* DeepSpeed's name (config key or engine argument), or NULL */
    const char *tag;          /* its short label in a plan's options ("EP8"), for one inside another */
    int seq_split;            /* its ranks split each sequence between them (context parallelism): inside DP,
                                 they hold the same weights (ZeRO partitions over them, their gradients are
                                 reduced together) but are one replica of the batch (zp_dims_replicas) */
    /* A degree given by the user against the context: ZP_OK or ZP_EINVAL naming the option and the fix.
     * NULL: nothing to check beyond >= 1. */
    zp_status (*check)(const zp_dim_ctx *c, int64_t degree);
    /* Whether a degree (given, or pinned by --exact) fits the degrees decided so far (it was checked).
     * NULL: always. */
    int (*admits)(const zp_dim_ctx *c, int64_t degree);
    /* The search range: the next candidate degree after `prev` (0: the first) that the context allows,
     * or 0 when there is none; NULL: not searched (its degree follows from the others). */
    int64_t (*next)(const zp_dim_ctx *c, int64_t prev);
    /* Its lines in `zplan --help` (the option, its value and what it does, each line ending in '\n'), printed
     * where the usage names the row (zp_cli_usage_put); NULL when it has no option (DP). */
    const char *help;
} zp_dim_type;

/* The row of a dimension; NULL outside the table. */
const zp_dim_type *zp_dims_get(zp_dim_id id);
/* The context of `gpus` GPUs of `model`, nothing decided. */
void zp_dims_ctx_init(zp_dim_ctx *c, const zp_model *model, int64_t gpus, int gpus_per_node, int64_t max_tp);
/* deg: (ZP_NDIMS) degrees indexed by the table (a zp_plan's deg, or a context's).
 * GPUs a set of degrees occupies: the product of the degrees that multiply the GPUs (unset ones count 1). */
int64_t zp_dims_gpus(const int64_t *deg);
/* The ways each sequence is split: the product of the degrees of the rows that split it (1: none). */
int64_t zp_dims_seq_split(const int64_t *deg);
/* The replicas of the batch: the DP degree over the ways its sequences are split (a global batch is
 * micro-batch x accumulation x this). */
int64_t zp_dims_replicas(const int64_t *deg);
/* Ranks between consecutive members of a dimension's group: the product of the degrees of the dimensions
 * that multiply the GPUs and are placed inside it, or inside the one it subdivides (TP 1, EP the TP
 * degree, DP the TP degree, PP TP x DP). */
int64_t zp_dims_stride(const int64_t *deg, zp_dim_id id);

/* Whether a TP degree t splits the model's heads as Megatron-LM can (the heads, and the KV heads of
 * standard attention, divide t or t divides them): 1 / 0, and as a status naming why not. */
int zp_dims_tp_ok(const zp_model *m, int64_t t);
zp_status zp_dims_check_tp(const zp_model *m, int64_t t);
/* Whether an EP degree fits the model and the DP degree: it divides the routed experts and dp. */
zp_status zp_dims_check_ep(const zp_model *m, int64_t ep, int64_t dp);

/* A rank's index in a dimension's group (its coordinate): (rank / stride) mod degree, the table's placement
 * (the executor's process groups and the engine's placement both follow it). */
int64_t zp_dims_coord(const int64_t *deg, int64_t rank, zp_dim_id id);

#endif
