/* zp_model.h — a GPT-style decoder-only transformer and its exact arithmetic.
 *
 * Parameter, FLOP and activation counts follow:
 *  - parameters: Megatron-LM GPT (Shoeybi et al. 2019; Narayanan et al. 2021):
 *      per layer 4h^2 + 2h*f + 9h + f   (QKV 3h^2+3h, proj h^2+h, MLP h*f+f and f*h+h, 2 LayerNorms 4h)
 *      = 12h^2 + 13h with f = 4h; embeddings (V + s)h (LM head tied); final LayerNorm 2h.
 *  - FLOPs: Narayanan et al. 2021 (Megatron-LM, "Efficient large-scale language model training on GPU
 *      clusters", eq. 3): 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) per iteration with full activation
 *      recomputation, i.e. 2 FLOPs per multiply-add, forward counted once, backward twice, recompute once
 *      for the transformer layers and the logits counted forward + backward. zplan counts the FLOPs
 *      actually executed: without recomputation the layers' recompute term is dropped.
 *  - activations: Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer
 *      models", eq. 1-2): s*b*h*(34 + 5*a*s/h) bytes per layer in fp16 without recomputation;
 *      with tensor (model) parallelism t and no sequence parallelism s*b*h*(10 + 24/t + 5*a*s/(h*t));
 *      with full checkpointing the layer keeps only its fp16 input, 2*s*b*h bytes.
 * All counts are doubles: exact integers up to 2^53 (9e15), far above any model zplan accepts. */
#ifndef ZP_MODEL_H
#define ZP_MODEL_H

#include <stdint.h>

#include "zp_status.h"

#define ZP_MODEL_NAME_LEN 96

/* Largest parameter count zplan accepts (1e15 = 1000T): beyond it nothing physical exists. */
#define ZP_MODEL_MAX_PARAMS 1e15

typedef struct {
    char name[ZP_MODEL_NAME_LEN];
    int64_t layers; /* l: transformer blocks */
    int64_t hidden; /* h: model width */
    int64_t heads;  /* a: attention heads (h % a == 0) */
    int64_t seq;    /* s: sequence length (tokens), also the number of position embeddings */
    int64_t vocab;  /* V: vocabulary size (rows of the tied embedding / LM head) */
    int64_t ffn;    /* f: MLP inner size (4h for GPT) */
} zp_model;

/* Default GPT-2 vocabulary (50257 BPE tokens) and sequence length used when a source gives none. */
#define ZP_MODEL_DEFAULT_VOCAB 50257
#define ZP_MODEL_DEFAULT_SEQ 1024

/* Fills a model with f = 4h and checks it; name may be NULL. */
zp_status zp_model_init(zp_model *m, const char *name, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t seq, int64_t vocab, int64_t ffn);
/* Checks that every dimension is positive, heads divide hidden and the size is representable. */
zp_status zp_model_validate(const zp_model *m);

/* Parameters of one transformer block (with its two LayerNorms and biases). */
double zp_model_params_layer(const zp_model *m);
/* Token + position embedding parameters (V + s) * h; the LM head is tied to the token embedding. */
double zp_model_params_embedding(const zp_model *m);
/* Total: l * layer + embedding + final LayerNorm (2h). */
double zp_model_params(const zp_model *m);
/* The largest single parameter group that must be materialised at once (stage 3 gathers it):
 * max(one block, the token embedding V*h). */
double zp_model_params_largest_layer(const zp_model *m);

/* Parameters held in tensors of fewer than `threshold` elements (biases, LayerNorms) per MP rank
 * of degree mp: what ZeRO stage 3 keeps whole on every rank (DeepSpeed's
 * stage3_param_persistence_threshold). */
double zp_model_params_small_tensors(const zp_model *m, int64_t mp, double threshold);

/* FLOPs of one forward pass over `tokens` = b*s tokens (2 FLOPs per multiply-add). */
double zp_model_flops_forward_layer(const zp_model *m, double batch);   /* one block, batch sequences */
double zp_model_flops_forward_logits(const zp_model *m, double batch);  /* LM head: 2*b*s*h*V */
/* FLOPs of one iteration over `batch` sequences: forward + backward (2x forward) + the recomputed
 * forward of every block when `recompute` (activation checkpointing). With recompute and f = 4h
 * this equals 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)). */
double zp_model_flops_iteration(const zp_model *m, double batch, int recompute);

/* Activation bytes of one block for `batch` sequences with model-parallel degree mp (fp16),
 * without recomputation: s*b*h*(10 + 24/t + 5*a*s/(h*t)) (Korthikanti 2022, t = mp). */
double zp_model_activation_bytes_layer(const zp_model *m, double batch, int64_t mp);
/* The checkpoint a block keeps under full activation checkpointing: its fp16 input, 2*s*b*h bytes
 * (replicated on each of the mp ranks unless partitioned with ZeRO-R Pa). */
double zp_model_checkpoint_bytes_layer(const zp_model *m, double batch);

#endif
