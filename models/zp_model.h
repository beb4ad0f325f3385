/* zp_model.h — a decoder-only transformer and its exact arithmetic.
 *
 * The description holds the architectures in use today: multi-head, grouped-query and multi-query
 * attention (kv_heads), a head size independent of hidden/heads (head_dim), plain or gated MLPs
 * (SwiGLU, GeGLU), tied or untied embeddings, learned/rotary/ALiBi positions, LayerNorm or RMSNorm,
 * per-linear biases, parallel attention+MLP blocks, an embedding norm, mixture-of-experts (routed and
 * shared experts, dense layers, layer frequency), multi-head latent attention (DeepSeek-V2/V3) and
 * multi-token-prediction modules (DeepSeek-V3).
 *
 * Every new field is zero for GPT-2 (Megatron-LM GPT): MHA, plain GeLU MLP with biases, tied LM head,
 * learned positions (seq of them), LayerNorm with bias, two norms per block, a final norm. A model
 * built by hand with only layers/hidden/heads/seq/vocab/ffn set, or by zp_model_init, is that GPT.
 *
 * Parameter counts come from ONE enumeration of the parameter tensors (zp_model_tensors: name,
 * shape, per-expert copies, kind, Megatron tensor-parallel split), as llm.c's
 * fill_in_parameter_sizes: totals, active-per-token, per block, embedding, head, largest group,
 * small tensors and per-MP-rank counts are sums over it, and the GEMM FLOPs are its weight matrices.
 *  - GPT parameters: Megatron-LM GPT (Shoeybi et al. 2019; Narayanan et al. 2021):
 *      per layer 4h^2 + 2h*f + 9h + f   (QKV 3h^2+3h, proj h^2+h, MLP h*f+f and f*h+h, 2 LayerNorms 4h)
 *      = 12h^2 + 13h with f = 4h; embeddings (V + s)h (LM head tied); final LayerNorm 2h.
 *  - FLOPs: 2 FLOPs per multiply-add of every GEMM a token passes through (active experts only, the
 *      router included) plus attention's Q K^T and A V (2*s*heads*(qk head size + v head size) per
 *      token, no causal halving). For GPT this is Narayanan et al. 2021 eq. 3:
 *      96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) per iteration with full activation recomputation
 *      (forward once, backward twice, recompute once for the blocks; logits forward + backward).
 *      zplan counts the FLOPs actually executed: without recomputation the blocks' recompute term is
 *      dropped.
 *  - activations: Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer
 *      models", eq. 1-2), term by term from the description: for GPT s*b*h*(34 + 5*a*s/h) bytes per
 *      layer in fp16 without recomputation; with tensor (model) parallelism t and no sequence
 *      parallelism s*b*h*(10 + 24/t + 5*a*s/(h*t)); with full checkpointing the layer keeps only its
 *      fp16 input, 2*s*b*h bytes.
 * All counts are doubles: exact integers up to 2^53 (9e15), far above any model zplan accepts. */
#ifndef ZP_MODEL_H
#define ZP_MODEL_H

#include <stdint.h>

#include "zp_status.h"

#define ZP_MODEL_NAME_LEN 96

/* Largest parameter count zplan accepts (1e15 = 1000T): beyond it nothing physical exists. */
#define ZP_MODEL_MAX_PARAMS 1e15

/* The MLP of a block (and of every expert). */
typedef enum {
    ZP_MLP_PLAIN = 0, /* up (h -> f), activation, down (f -> h): GPT-2, NeoX, Falcon, OPT, BLOOM */
    ZP_MLP_GATED,     /* act(gate(x)) * up(x), down: three matrices (SwiGLU: Llama; GeGLU: Gemma) */
    ZP_MLP_COUNT
} zp_mlp_kind;

/* The MLP's activation (it changes no count; reported and used by the executor later). */
typedef enum {
    ZP_ACT_GELU = 0, /* exact or tanh-approximated GeLU (GPT-2's gelu_new) */
    ZP_ACT_SILU,     /* SiLU / Swish (SwiGLU when gated) */
    ZP_ACT_RELU,
    ZP_ACT_OTHER,
    ZP_ACT_COUNT
} zp_activation;

typedef enum {
    ZP_POS_LEARNED = 0, /* a learned table of `positions` rows added to the token embedding (GPT-2, OPT) */
    ZP_POS_ROTARY,      /* RoPE: no parameters */
    ZP_POS_ALIBI,       /* ALiBi: no parameters (BLOOM, some Falcon) */
    ZP_POS_COUNT
} zp_position;

typedef enum {
    ZP_NORM_LAYERNORM = 0, /* gain and bias: 2 x width parameters */
    ZP_NORM_RMSNORM,       /* gain only: width parameters */
    ZP_NORM_PLAIN,         /* LayerNorm without affine parameters (OPT's layer_norm_elementwise_affine false) */
    ZP_NORM_COUNT
} zp_norm;

typedef enum {
    ZP_ATTN_STANDARD = 0, /* Q, K, V projections of heads/kv_heads x head_dim, output projection */
    ZP_ATTN_MLA,          /* multi-head latent attention: low-rank Q and joint low-rank K/V (DeepSeek-V2/V3) */
    ZP_ATTN_COUNT
} zp_attention;

/* The linear layers that can carry a bias; zp_model.nobias lists the ones WITHOUT one. Under MLA
 * ZP_BIAS_QKV is the bias of the down-projections q_a and kv_a (DeepSeek's attention_bias). */
enum {
    ZP_BIAS_QKV = 1u << 0,      /* query/key/value projections */
    ZP_BIAS_ATTN_OUT = 1u << 1, /* attention output projection */
    ZP_BIAS_MLP_UP = 1u << 2,   /* MLP up and gate projections (experts' too) */
    ZP_BIAS_MLP_DOWN = 1u << 3, /* MLP down projection (experts' too) */
    ZP_BIAS_ALL = 0xFu          /* Llama, Mistral, Gemma, Phi-3, DeepSeek: no linear has a bias */
};

/* At most this many explicit dense (non-MoE) layers (Qwen2-MoE's mlp_only_layers). */
#define ZP_MODEL_MAX_DENSE_LIST 32

typedef struct {
    char name[ZP_MODEL_NAME_LEN];
    int64_t layers; /* l: transformer blocks */
    int64_t hidden; /* h: model width */
    int64_t heads;  /* a: query heads (h % a == 0 unless head_dim is set) */
    int64_t seq;    /* s: sequence length (tokens); also the learned positions when `positions` is 0 */
    int64_t vocab;  /* V: vocabulary size (rows of the token embedding and of the LM head) */
    int64_t ffn;    /* f: MLP inner size of a dense block (4h for GPT) */

    /* Attention. */
    zp_attention attn;
    int64_t kv_heads; /* key/value heads: 0 = heads (MHA); 1 = MQA; between = GQA (heads % kv_heads == 0) */
    int64_t head_dim; /* width of one head of Q, K and V: 0 = hidden / heads */
    int qkv_separate; /* Q, K, V are three tensors (Llama) rather than one fused (h, 3h) tensor (GPT-2) */
    /* MLA (attn == ZP_ATTN_MLA): Q = q_b(norm(q_a(x))) or q_proj(x); [c_kv, k_rope] = kv_a(x);
     * [k_nope, v] = kv_b(norm(c_kv)); output o (heads*v_head_dim -> h). */
    int64_t q_lora_rank;  /* rank of Q's down-projection; 0 = a plain Q projection (DeepSeek-V2-Lite) */
    int64_t kv_lora_rank; /* rank of the joint K/V latent (what the KV cache holds) */
    int64_t qk_nope_dim;  /* per-head Q/K width without rotary */
    int64_t qk_rope_dim;  /* per-head Q/K rotary width (K's is shared by all heads) */
    int64_t v_head_dim;   /* per-head V width */

    /* MLP and norms. */
    zp_mlp_kind mlp;
    zp_activation act;
    int gate_up_fused; /* gated MLP's gate and up are one (2f, h) tensor (Phi-3) */
    zp_norm norm;
    int block_norms;   /* norms per block: 0 = 2 (before attention, before MLP); 1 = one shared by a parallel
                        * block (GPT-J, Falcon-7B); 4 = also after attention and after MLP (Gemma 2) */
    int parallel;      /* attention and MLP read the same input and their outputs are summed (GPT-J, NeoX,
                        * Falcon): no count changes, the schedule can overlap them */
    int no_final_norm; /* no norm after the last block (OPT-350m: post-LN) */
    unsigned nobias;   /* ZP_BIAS_* of the linears WITHOUT a bias; 0 = all have one (GPT-2) */

    /* Embeddings and positions. */
    zp_position pos;
    int64_t positions; /* rows of the learned position table; 0 = seq (GPT, today's behaviour) */
    double rope_theta; /* RoPE's base (HF rope_theta, Megatron-LM --rotary-base); 0 = not stated: 10000, the
                        * RoPE paper's (Su et al. 2021) and both tools' default. Changes no count or time. */
    int untied;        /* the LM head (V x E) is its own tensor; 0 = tied to the token embedding (GPT-2) */
    int lm_head_bias;  /* the LM head has a bias of V (GPT-J) */
    int embed_norm;    /* a norm right after the token embedding (BLOOM's word_embeddings_layernorm) */
    int64_t embed_dim; /* E: token-embedding width when it differs from h, with bias-less projections
                        * E -> h in and h -> E out (OPT-350m's word_embed_proj_dim); 0 = hidden */

    /* Mixture of experts: a block is MoE when experts > 0, i >= dense_layers,
     * i % moe_every == moe_phase (moe_every 0 or 1: every block) and i is not in dense_list. */
    int64_t experts;        /* routed experts per MoE block; 0 = dense model */
    int64_t top_k;          /* routed experts a token passes through */
    int64_t expert_ffn;     /* MLP inner size of one routed expert; 0 = ffn */
    int64_t shared_experts; /* experts every token passes through (DeepSeek: n_shared_experts; Qwen2-MoE: 1) */
    int64_t shared_ffn;     /* MLP inner size of one shared expert; 0 = expert_ffn */
    int shared_gate;        /* a sigmoid gate (h -> 1) scales the shared experts' output (Qwen2-MoE) */
    int router_bias;        /* the router has a per-expert bias (DeepSeek-V3's e_score_correction_bias) */
    int64_t route_groups;   /* group-limited routing: the experts in this many equal groups of consecutive
                               indices, a token's top_k taken from its best route_topk groups (DeepSeek-V2's
                               device-limited and V3's node-limited routing: HF n_group, topk_group; Megatron-
                               core --moe-router-num-groups, --moe-router-group-topk); 0: not limited */
    int64_t route_topk;     /* ... the groups a token's experts may come from (0 with route_groups 0) */
    int64_t dense_layers;   /* the first blocks keep a dense MLP (DeepSeek's first_k_dense_replace) */
    int64_t moe_every;      /* MoE every k-th block (DeepSeek moe_layer_freq, Qwen decoder_sparse_step) */
    int64_t moe_phase;      /* ... at blocks with i % moe_every == moe_phase (Qwen: k-1, DeepSeek: 0) */
    int n_dense_list;
    int32_t dense_list[ZP_MODEL_MAX_DENSE_LIST]; /* blocks with a dense MLP (Qwen2-MoE mlp_only_layers) */

    /* Multi-token prediction (DeepSeek-V3): each module is norms (2h), a projection (2h -> h), one more
     * block (of the kind block `layers + k` would be) and a final norm; it shares the embedding and the
     * LM head. Not part of zp_model_params (the published main-model size): zp_model_params_mtp. */
    int64_t mtp_layers;

    /* Dropout (ZP_DROPOUT_* bits of the masks the model does NOT keep; 0 = Megatron-LM's: a 1-byte mask
     * after the attention and after the MLP of each block, and one on the attention probabilities). A
     * config with its dropout probabilities at 0 (MPT, Llama's attention_dropout) keeps no such mask. */
    unsigned no_dropout;

    /* Where the model came from, for reports: the HF model_type of a config.json (NULL for the zoo and
     * generated models: zp_model_family), and which sequence a config.json gave and why ("" otherwise). */
    const char *family;
    char seq_note[192];
} zp_model;

#define ZP_DROPOUT_NO_HIDDEN 1u /* no mask after the attention and the MLP: 2·s·b·h bytes less per block */
#define ZP_DROPOUT_NO_ATTN 2u   /* no mask on the attention probabilities: a·s²·b bytes less per block */

/* The longest sequence taken as a config.json's pre-training context when it names none: rotary models
 * state their longest context in max_position_embeddings (32,768 to 131,072 for Qwen2 and Mistral), which
 * their pre-training reached only in a final long-context phase; their main phase ran at 8,192 or less
 * (Llama 3: 8,192; Qwen2: 4,096, then 32,768). --seq sets another. */
#define ZP_MODEL_PRETRAIN_SEQ_CAP 8192

/* Default GPT-2 vocabulary (50257 BPE tokens) and sequence length used when a source gives none. */
#define ZP_MODEL_DEFAULT_VOCAB 50257
#define ZP_MODEL_DEFAULT_SEQ 1024

/* Fills a GPT model (every new field at its default) with f = 4h when ffn <= 0 and checks it;
 * name may be NULL. */
zp_status zp_model_init(zp_model *m, const char *name, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t seq, int64_t vocab, int64_t ffn);
/* Checks every field: positive dimensions, heads divisible by kv_heads, top_k within the experts,
 * MLA ranks, ... ZP_EINVAL with a message naming the field; ZP_ERANGE when too large. */
zp_status zp_model_validate(const zp_model *m);

/* ---- The parameter tensors ---------------------------------------------------------------- */

/* How Megatron-style tensor (model) parallelism over t ranks splits a tensor. */
typedef enum {
    ZP_TP_REPLICATED = 0, /* whole on every rank: norms, row-parallel biases, routers, positions */
    ZP_TP_COLUMN,         /* output rows split (Q/K/V, MLP up/gate, their biases): 1/t per rank */
    ZP_TP_ROW,            /* input columns split (attention output, MLP down): 1/t per rank */
    ZP_TP_VOCAB           /* vocabulary rows split (token embedding, LM head): 1/t per rank */
} zp_tp_split;

typedef enum {
    ZP_TENSOR_MATRIX = 0, /* a linear layer's weight: each token multiplies it (2 FLOPs an element) */
    ZP_TENSOR_LOOKUP,     /* an embedding table: read by index, no GEMM */
    ZP_TENSOR_BIAS,
    ZP_TENSOR_NORM,       /* a norm's gain or bias */
    ZP_TENSOR_ROUTER      /* an MoE router's or shared gate's weight (a GEMM), or the router's bias */
} zp_tensor_kind;

/* Which group of tensors. A model is EMBEDDING + its blocks (each DENSE or MOE) + HEAD; MTP is the
 * extra of one multi-token-prediction module (its block is counted as a block of its kind). */
typedef enum { ZP_SECTION_EMBEDDING = 0, ZP_SECTION_BLOCK_DENSE, ZP_SECTION_BLOCK_MOE, ZP_SECTION_HEAD, ZP_SECTION_MTP, ZP_NSECTIONS } zp_model_section;

typedef struct {
    const char *name;    /* as a checkpoint names it, e.g. "attn.q.weight", "moe.experts.up.weight" */
    int64_t rows, cols;  /* shape: a weight is (out, in) as torch.nn.Linear; a vector is (n, 1) */
    int64_t copies;      /* routed experts holding one each (experts); 1 otherwise */
    int routed;          /* one per routed expert: a token passes through top_k of the copies */
    zp_tensor_kind kind;
    zp_tp_split split;
} zp_tensor;

/* Upper bound of the tensors of one part. */
#define ZP_MODEL_MAX_TENSORS 48

/* THE enumeration: writes the tensors of `part` to out (at most cap) and returns how many the part
 * has (may exceed cap; 0 for a part the model lacks, e.g. MOE of a dense model). */
int zp_model_tensors(const zp_model *m, zp_model_section part, zp_tensor *out, int cap);
/* Elements of a tensor (all copies), and on one of `mp` tensor-parallel ranks. */
double zp_tensor_numel(const zp_tensor *t);
double zp_tensor_numel_rank(const zp_tensor *t, int64_t mp);

/* Whether block i (0-based) has an MoE MLP; the number of MoE blocks. */
int zp_model_block_is_moe(const zp_model *m, int64_t i);
int64_t zp_model_moe_blocks(const zp_model *m);
/* 1 when the model computes exactly as GPT-2 (Megatron GPT): MHA with head size h/a, plain GeLU MLP, all
 * biases, LayerNorm before attention and MLP, learned positions, tied LM head, dense; the executor's
 * kernels and the simulator's per-block shapes assume it until they read the full description. The
 * storage of Q/K/V (fused or not) and the rows of the position table do not matter. */
int zp_model_is_gpt(const zp_model *m);
/* Effective values of the defaulted fields. */
int64_t zp_model_kv_heads(const zp_model *m);   /* kv_heads or heads; heads under MLA */
int64_t zp_model_head_dim(const zp_model *m);   /* head_dim or hidden / heads; MLA: qk_nope + qk_rope */
int64_t zp_model_v_head_dim(const zp_model *m); /* V's head width: head_dim, or v_head_dim under MLA */
int64_t zp_model_expert_ffn(const zp_model *m); /* one routed expert's MLP inner size: expert_ffn, or ffn */
int64_t zp_model_shared_ffn(const zp_model *m); /* one shared expert's: shared_ffn, or the routed one's */
/* Elements a token adds to one block's KV cache: 2*kv_heads*head_dim, or kv_lora_rank + qk_rope_dim
 * (MLA caches the latent). */
int64_t zp_model_kv_width(const zp_model *m);

/* ---- Parameter counts (all sums over zp_model_tensors) -------------------------------------- */

/* Total: embedding + every block + head (the published size; MTP modules excluded). */
double zp_model_params(const zp_model *m);
/* Parameters a token passes through: only top_k of the routed experts (published "active"). */
double zp_model_params_active(const zp_model *m);
/* Block i's parameters. */
double zp_model_params_block(const zp_model *m, int64_t i);
/* The mean block, so that layers x it is the blocks' total; for GPT one block with its two
 * LayerNorms and biases. */
double zp_model_params_layer(const zp_model *m);
/* Input side: token embedding (V x E) + learned positions + embedding norm + projection E -> h;
 * (V + s) * h for GPT. */
double zp_model_params_embedding(const zp_model *m);
/* Output side: final norm + projection h -> E + the untied LM head (and its bias); 2h for GPT. */
double zp_model_params_head(const zp_model *m);
/* One MTP module's extra parameters (norms, projection, its block, final norm) x mtp_layers. */
double zp_model_params_mtp(const zp_model *m);
/* The largest single parameter group that must be materialised at once (stage 3 gathers it):
 * max(largest block, token embedding, untied LM head); for GPT max(one block, V*h). */
double zp_model_params_largest_layer(const zp_model *m);
/* The largest single parameter tensor on one of `mp` tensor-parallel ranks (one expert's copy of a
 * routed tensor): the least ZeRO stage 3 must gather at once, as DeepSpeed fetches parameters module by
 * module (an nn.Linear at a time), whatever stage3_max_live_parameters says. */
double zp_model_params_largest_tensor_rank(const zp_model *m, int64_t mp);
/* Parameters of one of `mp` tensor-parallel ranks (Megatron splits; replicated tensors whole). */
double zp_model_params_rank(const zp_model *m, int64_t mp);
/* Parameters held in vectors (biases, norm gains, router biases) of fewer than `threshold` elements
 * per MP rank of degree mp: what ZeRO stage 3 keeps whole on every rank (DeepSpeed's
 * stage3_param_persistence_threshold). DeepSpeed applies the threshold to every tensor; zplan counts
 * the vectors only, as the weight matrices of a model that needs stage 3 are far above it. */
double zp_model_params_small_tensors(const zp_model *m, int64_t mp, double threshold);

/* ---- FLOPs (2 per multiply-add) ------------------------------------------------------------ */

/* Forward FLOPs of one token at context length seq: active GEMMs (blocks and LM head) + attention. */
double zp_model_flops_token(const zp_model *m);
/* Forward FLOPs of block i over `batch` sequences of seq tokens. */
double zp_model_flops_forward_block(const zp_model *m, int64_t i, double batch);
/* The mean block (layers x it = every block); for GPT 2*b*s*(4h^2 + 2hf) + 4*b*s^2*h. */
double zp_model_flops_forward_layer(const zp_model *m, double batch);
/* The GEMMs outside the blocks: LM head 2*b*s*E*V (+ OPT's projections). */
double zp_model_flops_forward_logits(const zp_model *m, double batch);
/* FLOPs of one iteration over `batch` sequences: forward + backward (2x forward) + the recomputed
 * forward of every block when `recompute` (activation checkpointing); MTP modules included. With
 * recompute and a GPT of f = 4h this equals 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)). */
double zp_model_flops_iteration(const zp_model *m, double batch, int recompute);

/* ---- Activations ---------------------------------------------------------------------------- */

/* Bytes a block keeps per attention score (per head, query and key): the scores and the softmax output in
 * 16 bits, and the dropout mask unless the model has none: 5 or 4. FlashAttention keeps none of them. */
double zp_model_score_bytes(const zp_model *m);
/* Activation bytes of block i for `batch` sequences with model-parallel degree mp (fp16), without
 * recomputation, Korthikanti's terms from the description (Q/K/V widths, MLP kind and width, active
 * experts, norms); GPT: s*b*h*(10 + 24/t + 5*a*s/(h*t)) (t = mp). */
double zp_model_activation_bytes_block(const zp_model *m, int64_t i, double batch, int64_t mp);
/* The mean block (layers x it = every block). */
double zp_model_activation_bytes_layer(const zp_model *m, double batch, int64_t mp);
/* torchtitan's op-level selective recompute (zp_plan.op_sac; selective_ac_option = "op"), as torchtitan ran it
 * from September 2025 (torchtitan/distributed/activation_checkpoint.py _apply_op_sac with the models'
 * _op_sac_save_list, llama3's and, since pytorch/torchtitan#1672, the MoE models' with all_to_all_single):
 * the outputs of aten.mm, the SDPA kernels, reduce_scatter and all_to_all are kept, but _custom_policy
 * recomputes every second aten.mm of a block (`meta[mm_count] % 2 == 0`); everything else (the norms, the
 * rotary turn, the activations, the router's softmax and top-k, the token permutation, the routed experts'
 * torch._grouped_mm, an all-gather, an all-reduce) runs again. The replay stops at the last tensor backward
 * needs, the MLP's (or the shared experts') activation output, w2's input: w2 never runs again.
 * A block's matmuls in the order torchtitan's modules run them (zp_model_op_sac): */
typedef enum {
    ZP_SAC_WQ = 1u << 0,      /* Q (MLA without a Q latent: its plain Q projection) */
    ZP_SAC_WK = 1u << 1,      /* K, then V: torchtitan's Llama attention runs wq, wk, wv apart */
    ZP_SAC_WV = 1u << 2,
    ZP_SAC_WQ_A = 1u << 3,    /* MLA: the Q latent's down- and up-projections, the KV latent's (with the */
    ZP_SAC_WQ_B = 1u << 4,    /* shared rotary key) and its up-projection */
    ZP_SAC_WKV_A = 1u << 5,
    ZP_SAC_WKV_B = 1u << 6,
    ZP_SAC_WO = 1u << 7,      /* the output projection */
    ZP_SAC_ROUTER = 1u << 8,  /* an MoE block's gate (h -> E) */
    ZP_SAC_W1 = 1u << 9,      /* a dense block's MLP, or an MoE block's shared experts: w1 (gate; fc1), */
    ZP_SAC_W3 = 1u << 10,     /* w3 (up; none ungated), w2 (down; fc2) */
    ZP_SAC_W2 = 1u << 11,
    ZP_SAC_EXPERTS = 1u << 12 /* the routed experts' grouped GEMMs: not aten.mm, never kept */
} zp_sac_part;

typedef struct {
    unsigned has;   /* the block's parts (zp_sac_part bits) */
    unsigned kept;  /* those whose outputs are kept from the forward (odd-numbered matmuls) */
    unsigned rerun; /* those run again before the block's backward (even-numbered, w2 but, the experts) */
} zp_op_sac;

/* The op-level recompute of a dense (moe 0) or an MoE block of m. Llama's block: wq, wv, w1, w2 kept, wk, wo,
 * w3 run again; DeepSeek-V3's MoE block (wq_a, wq_b, wkv_a, wkv_b, wo, gate, shared w1, w3, w2): wq_a, wkv_a,
 * wo, w1, w2 kept, wq_b, wkv_b, the gate, w3 and every routed expert run again. */
void zp_model_op_sac(const zp_model *m, int moe, zp_op_sac *out);
/* ZP_OK for a model of sequential attention and MLP (or MoE) blocks without multi-token prediction modules
 * (torchtitan's have none), else ZP_EUNSUPPORTED naming what the model has; and the GEMM FLOPs the recompute
 * runs again in one iteration over `batch` sequences: 2·tokens·(the rerun matmuls' weights, the routed
 * experts' active ones) per block (the elementwise ops count no FLOPs); Llama: 2·tokens·(h·kv·d + a·dv·h +
 * h·f) per block. */
zp_status zp_model_check_op_sac(const zp_model *m);
double zp_model_flops_op_sac_recompute(const zp_model *m, double batch);

/* A block's modules as selective recompute names them (Megatron-core's --recompute-modules; the names and
 * what each recompute does: vocab/zp_plan.h zp_rc_module_get). */
typedef enum {
    ZP_RCM_CORE_ATTN = 1u << 0,      /* the attention core: scores, softmax, context */
    ZP_RCM_LAYERNORM = 1u << 1,      /* input_layernorm and pre_mlp_layernorm's outputs */
    ZP_RCM_MOE_ACT = 1u << 2,        /* the routed experts' activation's output (grouped GEMM) */
    ZP_RCM_MLA_UP_PROJ = 1u << 3,    /* MLA's Q and KV up-projections and the rotary turn: Q, K, V */
    ZP_RCM_MLP = 1u << 4,            /* a dense block's MLP whole */
    ZP_RCM_MOE = 1u << 5,            /* an MoE block's MoE layer whole: router, dispatch, experts, combine */
    ZP_RCM_SHARED_EXPERTS = 1u << 6, /* the shared experts' MLP whole */
    ZP_RCM_ALL = (1u << 7) - 1
} zp_rc_module;

/* How a gated MLP's activation is kept for backward (the `glu` bits below): zp_model_activation_bytes_* count
 * what PyTorch eager's F.silu(gate) * up keeps (gate, up, the SiLU's output, the product: 4 x 2 bytes per f). */
typedef enum {
    ZP_GLU_FP8_INPUT = 1u << 0, /* gate and up as 1-byte FP8 (zp_model_glu_fp8_saved_layer) */
    ZP_GLU_FUSED = 1u << 1      /* one fused kernel keeping its input only, no SiLU output
                                   (zp_model_glu_fused_saved_layer) */
} zp_glu_keep;

/* Megatron-core's selective recompute beyond the attention core (zp_plan.rc_modules, the bits above): the
 * bytes the mean block no longer keeps when `module` (one bit) is recomputed, per MP
 * rank as zp_model_activation_bytes_layer, a GEMM's saved input taking `gin` bytes an element (2, or FP8's
 * copy); and the GEMM FLOPs that recomputing `mods` adds to one iteration over `batch` sequences (every
 * block, MTP's included: MLA's up-projections, dense MLPs, MoE layers or their shared experts). `glu`
 * (zp_glu_keep bits): how the SwiGLU keeps its activations, so what a module that discards them frees. */
double zp_model_rc_saved_layer(const zp_model *m, unsigned module, double batch, int64_t mp, double gin, unsigned glu);
/* Megatron-core's --activation-func-fp8-input-store: the bytes the mean block no longer keeps when a SwiGLU's
 * input (gate and up: 2f elements a token, a dense MLP's or the routed and shared experts') is kept as 1-byte
 * FP8 instead of 2 bytes, per MP rank as zp_model_activation_bytes_layer; 0 for a model without gated MLPs. */
double zp_model_glu_fp8_saved_layer(const zp_model *m, double batch, int64_t mp);
/* A fused SwiGLU (zp_plan_glu_fused: Megatron-core's bias_swiglu_impl, whose backward recomputes the SiLU from
 * the saved gate): the bytes the mean block no longer keeps against eager's count, the SiLU's output, f
 * elements of 2 bytes a token (a dense MLP's f, or the routed and shared experts'), per MP rank as
 * zp_model_activation_bytes_layer; 0 for a model without gated MLPs. */
double zp_model_glu_fused_saved_layer(const zp_model *m, double batch, int64_t mp);
double zp_model_flops_rc_modules(const zp_model *m, unsigned mods, double batch);

/* The checkpoint a block keeps under full activation checkpointing: its fp16 input, 2*s*b*h bytes
 * (replicated on each of the mp ranks unless partitioned with ZeRO-R Pa). */
double zp_model_checkpoint_bytes_layer(const zp_model *m, double batch);

/* Names of the enum values, for reports ("gated", "silu", "rotary", "rmsnorm", "mla"). */
const char *zp_model_mlp_name(zp_mlp_kind k);
const char *zp_model_activation_name(zp_activation a);
const char *zp_model_position_name(zp_position p);
const char *zp_model_norm_name(zp_norm n);
const char *zp_model_attention_name(zp_attention a);

#endif
