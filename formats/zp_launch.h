/* zp_launch.h — a team's launch, read from its framework's own files: Megatron-LM's pretrain_gpt.py
 * arguments (zp_megatron_args.c), a torchtitan job TOML (zp_torchtitan.c), a NeMo YAML (zp_nemo.c).
 *
 * Each reader turns its file into entries (a key, its value, its line) and applies them through a key
 * table of its format, as zp_dsconfig.c reads DeepSpeed: a key the table reads sets a field of zp_launch;
 * a key it knows and that changes nothing modelled is skipped; a key it does not know but that is within two
 * edits of one it reads exits 2 naming both (ignoring it would judge another launch); a key it refuses
 * (what zplan does not model yet, and that would change the answer) exits 2 naming it; other unknown keys
 * are counted in a note. zp_launch_model and zp_launch_request turn the launch into the model and the
 * request that pins exactly its plan (what the file leaves out takes the framework's own default). */
#ifndef ZP_LAUNCH_H
#define ZP_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "zp_dsconfig.h"
#include "zp_model.h"
#include "zp_pipeline.h"
#include "zp_search.h"

typedef enum { ZP_LAUNCH_MEGATRON = 0, ZP_LAUNCH_TORCHTITAN, ZP_LAUNCH_NEMO, ZP_LAUNCH_DEEPSPEED, ZP_NLAUNCH } zp_launch_kind;

/* "Megatron-LM arguments", "torchtitan TOML", "NeMo YAML", "DeepSpeed config" */
const char *zp_launch_kind_name(zp_launch_kind k);

#define ZP_LAUNCH_UNSET (-1)
enum { ZP_LAUNCH_FP32 = 1, ZP_LAUNCH_FP16, ZP_LAUNCH_BF16 };

/* Blocks a --moe-layer-freq list may describe. */
#define ZP_LAUNCH_MAX_LAYERS 1024

/* What a launch file states. Integers are ZP_LAUNCH_UNSET (or 0 for sizes) where it says nothing. */
typedef struct {
    zp_launch_kind kind;
    char name[160];          /* the file, for messages */
    /* the model */
    int64_t layers, hidden, heads, kv_heads, ffn, seq, positions, vocab, head_dim;
    int64_t vocab_multiple;  /* Megatron-LM's --make-vocab-size-divisible-by (128 by default) */
    double rope_theta;       /* 0: not stated */
    int swiglu, rmsnorm, rope, untied, no_bias; /* 0/1, or UNSET */
    int qkv_bias;            /* with no_bias: Q, K and V keep theirs (Qwen2; Megatron-LM --add-qkv-bias) */
    double hidden_dropout, attn_dropout;        /* probabilities; < 0: not stated */
    char tokenizer[64];      /* the tokenizer's type, "" when not stated */
    char zoo[64];            /* a zoo model the file names (torchtitan's name and flavor), "" when none */
    int no_mtp;              /* 1: that zoo model trained without its multi-token prediction modules */
    /* mixture of experts (Megatron-core's arguments; other launches' experts are refused) */
    int64_t experts;         /* --num-experts (0: dense) */
    int64_t topk, moe_ffn, shared_ffn; /* --moe-router-topk, --moe-ffn-hidden-size,
                                          --moe-shared-expert-intermediate-size (0: not stated) */
    int64_t route_groups, route_topk;  /* --moe-router-num-groups, --moe-router-group-topk (0: not stated) */
    int router_bias;         /* --moe-router-enable-expert-bias */
    /* multi-head latent attention (Megatron-core's --multi-latent-attention and its sizes; 0: not stated) */
    int mla;                 /* --multi-latent-attention */
    int64_t q_lora, kv_lora; /* --q-lora-rank (not stated: a plain Q projection), --kv-lora-rank */
    int64_t qk_head, qk_pos, v_head; /* --qk-head-dim (without rotary), --qk-pos-emb-head-dim, --v-head-dim */
    int64_t mtp;             /* --mtp-num-layers: DeepSeek-V3's multi-token prediction modules */
    int moe_dense[ZP_LAUNCH_MAX_LAYERS]; /* --moe-layer-freq as a pattern: 1 where block i is dense */
    int moe_pattern;         /* 1: moe_dense holds a --moe-layer-freq list */
    int64_t moe_every;       /* --moe-layer-freq k: MoE at the blocks i % k == 0 (0: not stated) */
    int64_t ep;              /* --expert-model-parallel-size (0: not stated) */
    int64_t etp;             /* torchtitan's expert_tensor_parallel_degree (0: not stated) */
    int moe_dispatch;        /* --moe-token-dispatcher-type: 0 not stated (Megatron-core's allgather), 1 alltoall,
                                2 flex, 3 allgather */
    int deepep;              /* --moe-enable-deepep */
    int ep_overlap;          /* --overlap-moe-expert-parallel-comm */
    int shared_overlap;      /* --moe-shared-expert-overlap */
    int act_fp8_store;       /* --activation-func-fp8-input-store (NeMo model.activation_func_fp8_input_store) */
    int swiglu_fusion;       /* 0: --no-bias-swiglu-fusion (NeMo model.bias_activation_fusion false); UNSET: fused,
                                Megatron-core's default */
    double exp_avg_bytes, exp_avg_sq_bytes; /* --exp-avg-dtype, --exp-avg-sq-dtype: bytes an element (0: fp32) */
    int precision_aware;     /* --use-precision-aware-optimizer */
    double capacity;         /* --moe-expert-capacity-factor (0: not stated: dropless) */
    /* the cluster */
    int64_t gpus_per_node, nodes; /* 0: not stated */
    /* the plan */
    int64_t tp, pp, cp, vp;  /* degrees (0: not stated); vp: layers per virtual pipeline stage */
    int cp_comm;             /* a zp_cp_comm (0, the ring, unless stated) */
    int64_t vstages;         /* NeMo's virtual_pipeline_model_parallel_size (0: not stated) */
    int64_t dp_shard, dp_replicate; /* torchtitan's FSDP and DDP degrees (-1: what is left; 0: not stated) */
    int64_t micro_batch, global_batch, grad_accum; /* sequences (0: not stated) */
    int stage;               /* ZeRO stage (Megatron's distributed optimizer: 1; FSDP: 3), or UNSET */
    int recompute;           /* a zp_recompute, or UNSET */
    unsigned rc_modules;     /* Megatron-core's --recompute-modules as ZP_RCM_* bits (0: not stated) */
    int moe_layer_rc;        /* 1: --moe-layer-recompute (selective, moe added to the modules) */
    int sp, flash, overlap, fusion; /* 0/1, or UNSET */
    int pa;                  /* 1: the checkpoints split over the TP ranks (ZeRO-R Pa: Megatron-LM
                                --distribute-saved-activations); 0 */
    int precision;           /* ZP_LAUNCH_FP32/FP16/BF16, or UNSET */
    int grad_fp32;           /* 1: gradients accumulated and reduced in fp32; UNSET */
    int grad_bf16;           /* 1: --grad-reduce-in-bf16 (Megatron-LM: gradients kept and reduced in bf16) */
    int main_grads_bf16;     /* 1: --main-grads-dtype bf16 (the precision-aware optimizer's; the same) */
    int param_gather;        /* 1: Megatron-LM --overlap-param-gather (NeMo optim.overlap_param_sync); UNSET */
    int p2p_overlap;         /* the interleaved schedule's pipeline sends overlapped: 0 with Megatron-LM's
                                --no-overlap-p2p-communication, NeMo's model.overlap_p2p_comm; UNSET: the
                                framework's default (Megatron-LM and torchtitan: on; NeMo: off) */
    int p2p_warmup_flush;    /* 1: --overlap-p2p-communication-warmup-flush (NeMo's
                                model.overlap_p2p_comm_warmup_flush); 0 */
    int tp_overlap;          /* a zp_tp_overlap the launch asks for (Megatron-LM --tp-comm-overlap, NeMo
                                ub_tp_comm_overlap: te; torchtitan enable_async_tensor_parallel: async), or UNSET */
    int fp8;                 /* FP8 training stated (Megatron-LM --fp8-format, torchtitan's float8 converter) */
    int fp8_recipe;          /* its zp_fp8_recipe (vocab/zp_fp8.h) where stated; 0: the framework's default */
    int fp8_all_gather;      /* torchtitan [float8] enable_fsdp_float8_all_gather */
    int reshard;             /* a zp_reshard: torchtitan's fsdp_reshard_after_forward (0: "default") */
    int64_t shard_group;     /* hybrid sharding's group (torchtitan's HSDP: FSDP's shard x CP ranks); 0: none */
    int compile;             /* torchtitan's training.compile (compile.enable): 0/1, or UNSET (torchtitan's
                                default: False, eager) */
    zp_ds_notes notes;       /* what was assumed, resolved or skipped: lines for stderr */
    /* torchtitan's activation_checkpoint.selective_ac_option with mode "selective": "op" (sac_op 1) or every
       k-th block (sac_every k; 0: every block, as torchtitan reads "0"); UNSET: torchtitan's default "2" */
    int sac_op;
    int64_t sac_every;
    /* uneven pipeline stages (vocab/zp_pipeline.h; Megatron-core's arguments) */
    int64_t pp_first, pp_last; /* --decoder-first/last-pipeline-num-layers (0: not stated) */
    int pp_acc_emb, pp_acc_loss; /* --account-for-embedding/loss-in-pipeline-split: the embedding, the loss
                                    count as a layer of the first, the last virtual stage (0/1) */
    int pp_layout[ZP_PP_MAX_LAYOUT]; /* --pipeline-model-parallel-layout: layers per virtual stage, or the
                                        split the account-for flags make (zp_launch_request) */
    int pp_layout_n;         /* 0: none */
    int pp_layout_mtp;       /* the MTP modules (m) that layout places on its last virtual stage */
    /* torchtitan's parallelism.pipeline_parallel_first/last_stage_less_layers: the embedding's and the output's
       weight in its split (zp_torchtitan_split); UNSET: torchtitan's default, 1 each */
    int64_t tt_first_less, tt_last_less;
} zp_launch;

/* One key of a file and its value (flattened: "training.batch_size", "tensor-model-parallel-size"). */
typedef struct {
    char key[128];
    char value[256];
    int has_value;           /* a Megatron-LM flag has none */
    int line;
} zp_launch_entry;

typedef struct {
    zp_launch_entry *e;
    int n, cap;
} zp_launch_entries;

/* Appends an entry (the key and value truncated to their fields; ZP_EINVAL naming the line when longer). */
zp_status zp_launch_entries_add(zp_launch_entries *l, const char *name, int line, const char *key, size_t klen,
                                const char *value, size_t vlen, int has_value);
void zp_launch_entries_free(zp_launch_entries *l);

/* How a key of a format's table is read. */
typedef enum {
    ZP_LK_INT = 0, /* a whole number >= 1 into an int64_t */
    ZP_LK_INT0,    /* a whole number >= 0 (or -1 when the field allows it: torchtitan's degrees) */
    ZP_LK_REAL,    /* a real number >= 0 into a double */
    ZP_LK_BOOL,    /* true/false (also True/False, 1/0, yes/no) into an int; a Megatron-LM flag sets `set` */
    ZP_LK_FLAG,    /* a Megatron-LM flag: present sets the int field to `set` */
    ZP_LK_STR,     /* text into a char[64] */
    ZP_LK_FN,      /* the key's own reader */
    ZP_LK_KNOWN,   /* known, changes nothing zplan models */
    ZP_LK_REFUSE   /* changes the answer and zplan does not model it: exit 2 with `why` */
} zp_launch_key_type;

typedef struct zp_launch_key {
    const char *name;
    zp_launch_key_type type;
    size_t off;              /* offsetof(zp_launch, field) */
    int set;                 /* ZP_LK_FLAG / ZP_LK_BOOL: the value a set flag stores */
    zp_status (*fn)(zp_launch *l, const zp_launch_entry *e);
    const char *why;         /* ZP_LK_REFUSE: what zplan does not model */
} zp_launch_key;

/* A launch with nothing stated. */
void zp_launch_init(zp_launch *l, zp_launch_kind kind, const char *name);
/* Applies entries through a table (its last row has name NULL); `sep` is how the format writes a key in
 * messages ("--" for Megatron-LM, "" for the others). */
zp_status zp_launch_apply(zp_launch *l, const zp_launch_key *table, const zp_launch_entries *en, const char *sep);
/* Edits (insert, delete, substitute, swap; case ignored) from a to b, counting no further than 3. */
int zp_launch_key_distance(const char *a, const char *b);
/* A note line (stderr) on the launch. */
void zp_launch_note(zp_launch *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Megatron-core's --recompute-modules (NeMo's model.recompute_modules): the modules selective recompute
 * re-runs, as words, a list or a Python list, into l->rc_modules; ZP_EINVAL naming a module Megatron-core
 * does not have. */
zp_status zp_launch_recompute_modules(zp_launch *l, const zp_launch_entry *e);
/* A Megatron-core --fp8-recipe value (Megatron-LM's arguments, NeMo's model.fp8_recipe) into l->fp8_recipe;
 * ZP_EINVAL naming the file, the line, `key` ("" or "model.fp8_recipe: ") and the recipes zplan models. */
zp_status zp_launch_set_fp8_recipe(zp_launch *l, const zp_launch_entry *e, const char *key);
/* Megatron-core's token dispatcher, alltoall | flex | allgather, into l->moe_dispatch (Megatron-LM's
 * --moe-token-dispatcher-type, NeMo's model.moe_token_dispatcher_type: `key` names it in the message). */
zp_status zp_launch_set_moe_dispatcher(zp_launch *l, const zp_launch_entry *e, const char *key);

/* The readers: text into a launch (`name` for messages); ZP_EINVAL naming the line and the key. */
zp_status zp_megatron_args_parse(const char *text, const char *name, zp_launch *l);
zp_status zp_torchtitan_parse(const char *text, const char *name, zp_launch *l);
zp_status zp_nemo_parse(const char *text, const char *name, zp_launch *l);
/* Reads a file of the kind (at most 16 MiB). */
zp_status zp_launch_read(const char *path, zp_launch_kind kind, zp_launch *l);

/* The model the launch states: *stated 0 when it gives no shape (torchtitan names a flavor: l->zoo; the
 * caller resolves it, with the launch's sequence length). */
zp_status zp_launch_model(const zp_launch *l, zp_model *m, int *stated);
/* The GPUs the launch states (nodes x GPUs per node; NeMo's trainer), 0 when it does not. */
int64_t zp_launch_gpus(const zp_launch *l);
/* Pins r (its model, cluster and gpus set, every plan option open) to exactly the launch's plan, what the
 * file leaves out at its framework's default: ZP_EINVAL naming the key when the GPUs cannot be split so. */
zp_status zp_launch_request(zp_launch *l, zp_search_req *r);
/* Whether the launch's framework runs a plan (for the verdict's best plan and the emitted launches):
 * Megatron-LM and NeMo, zp_megatron_check; torchtitan, zp_torchtitan_check; DeepSpeed, zp_dsconfig_check. */
int zp_launch_runs(zp_launch_kind kind, const zp_plan *p);
/* The name of a plan setting in the launch's own terms, for the verdict's "one change" ("--tensor-model-
 * parallel-size", "parallelism.tensor_parallel_degree", ...): `what` is one of the zp_verdict knobs'
 * names ("stage", "tp", "pp", "micro", "recompute", "sp", "offload"). */
const char *zp_launch_key_of(zp_launch_kind kind, const char *what);

#endif
