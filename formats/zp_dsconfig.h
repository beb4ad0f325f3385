/* zp_dsconfig.h — DeepSpeed JSON configurations in and out.
 *
 * In: the keys that decide memory and speed (zero_optimization.*, the batch sizes, fp16/bf16,
 * activation_checkpointing.*) fix the corresponding options of a search request; "auto" leaves an
 * option to zplan and is reported; unknown keys are warned about; batch sizes must satisfy
 * train_batch_size = micro x accumulation x data-parallel degree, as DeepSpeed requires.
 * Out: a plan as a configuration deepspeed.initialize accepts. Reading back what was written gives
 * the same plan. */
#ifndef ZP_DSCONFIG_H
#define ZP_DSCONFIG_H

#include <jansson.h>

#include "zp_search.h"

#define ZP_DS_MAX_NOTES 48

/* What reading a config resolved, assumed or could not model: lines for stderr. */
typedef struct {
    int n;
    char line[ZP_DS_MAX_NOTES][240];
} zp_ds_notes;

/* Applies the configuration in `path` to `r` (its gpus and mp must be set: mp defaults to 1 when
 * r->mp is open, since DeepSpeed configs do not set model parallelism). */
zp_status zp_dsconfig_read(const char *path, zp_search_req *r, zp_ds_notes *notes);
/* The same from text (`name` for messages). */
zp_status zp_dsconfig_parse(const char *json, const char *name, zp_search_req *r, zp_ds_notes *notes);

/* DeepSpeed reads its configs as HJSON (hjson.load): comments (#, //, / * * /), trailing commas, members
 * on their own lines without commas, quoteless keys and quoteless string values. This tolerant pre-pass
 * rewrites such text as strict JSON with the same lines (jansson's line numbers still point at the
 * user's); strict JSON comes out unchanged in meaning. *out is malloc'ed. */
zp_status zp_dsconfig_hjson_to_json(const char *text, char **out);

/* ZP_OK when DeepSpeed runs the plan (its engine and pipeline engine, --framework deepspeed); else
 * ZP_EUNSUPPORTED naming what a DeepSpeed config cannot express: Megatron-LM's sequence parallelism,
 * selective recompute, the interleaved pipeline schedule, fused gradient accumulation. */
zp_status zp_dsconfig_check(const zp_plan *plan);
/* Writes `plan` of a model of `layers` blocks as a DeepSpeed configuration, atomically. */
zp_status zp_dsconfig_write(const zp_plan *plan, int64_t layers, const char *path);
/* The configuration as a JSON object (new reference). */
json_t *zp_dsconfig_to_json(const zp_plan *plan, int64_t layers);

#endif
