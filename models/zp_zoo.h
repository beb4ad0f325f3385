/* zp_zoo.h — the named models zplan knows, GPT-2-like models of a requested size, and
 * HuggingFace config.json files: everything `--model` accepts. */
#ifndef ZP_ZOO_H
#define ZP_ZOO_H

#include "zp_model.h"

typedef struct {
    zp_model model;
    double published_params; /* the size its source states, for the zoo test */
    const char *source;      /* where the configuration comes from */
    double published_active; /* parameters a token passes through (MoE), 0 for a dense model */
} zp_zoo_entry;

int zp_zoo_count(void);
const zp_zoo_entry *zp_zoo_get(int i);
/* Case-insensitive lookup by name; NULL when absent. */
const zp_zoo_entry *zp_zoo_find(const char *name);

/* A GPT-2-like model of about `params` parameters: hidden from the ZeRO paper's size classes,
 * heads from the same class, layers = round(params / 12h^2) (at least 1), V = 50257, s = 1024. */
zp_status zp_model_from_size(double params, zp_model *out);

/* Reads a HuggingFace config.json (models/zp_hf.c): model_type selects the family (llama, mistral,
 * mixtral, qwen2, qwen2_moe, gemma, gemma2, phi3, falcon, gpt_neox, gptj, gpt2, opt, bloom,
 * deepseek_v2, deepseek_v3) whose keys are read as transformers reads them; a size key that is
 * wrong-typed or not understood, or an unknown model_type, is ZP_EINVAL naming it. Without model_type
 * only GPT-2's own keys are accepted (read as gpt2). */
zp_status zp_model_from_hf_config(const char *path, zp_model *out);
/* The same from the file's text; `path` (may be NULL) names it in messages and gives the model's name. */
zp_status zp_model_from_hf_json(const char *text, const char *path, zp_model *out);
/* The model_type values understood (including the old Falcon names RefinedWeb, RefinedWebModel). */
int zp_hf_family_count(void);
const char *zp_hf_family_name(int i);

/* How `--model` text was understood. */
typedef enum { ZP_MODEL_FROM_ZOO, ZP_MODEL_FROM_SIZE, ZP_MODEL_FROM_FILE } zp_model_origin;

/* Resolves a zoo name, a size ("37B", "1.2T", "350M") or a path to a config.json. `seq`, when
 * positive, overrides the sequence length. */
zp_status zp_model_resolve(const char *spec, int64_t seq, zp_model *out, zp_model_origin *origin);
/* The model's family as HuggingFace's model_type names it ("llama", "mixtral", "deepseek_v3", ...): a
 * config.json's own; the zoo's by name; "gpt" for the GPT shapes and models generated from a size. */
const char *zp_model_family(const zp_model *m);

#endif
