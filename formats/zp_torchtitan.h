/* zp_torchtitan.h — a plan as a torchtitan job TOML ([model] name and flavor, [training] batch, sequence and
 * mixed precision, [parallelism] degrees, [activation_checkpoint] mode); reading one is zp_launch.h's
 * zp_torchtitan_parse. */
#ifndef ZP_TORCHTITAN_H
#define ZP_TORCHTITAN_H

#include <stddef.h>

#include "zp_model.h"
#include "zp_plan.h"

/* ZP_OK when torchtitan runs the plan: DDP (stage 0) or FSDP (stage 3), no offload or Pa, TP with sequence
 * parallelism, bf16 or fp32, no fused accumulation, 1F1B or 2-chunk interleaved pipelines; else
 * ZP_EUNSUPPORTED saying why. */
zp_status zp_torchtitan_check(const zp_plan *p);
/* ZP_OK when the TOML can name the model: torchtitan sizes its models by flavor (torchtitan/models/llama3),
 * and the zoo's llama-3-8b, -70b and -405b are its llama3 8B, 70B and 405B; else ZP_EUNSUPPORTED. */
zp_status zp_torchtitan_check_model(const zp_model *m);
/* torchtitan's split of L layers over n virtual stages (torchtitan/distributed/pipeline_parallel.py,
 * _generate_llm_fqn_per_model_part): the embedding and the output weigh `first_less` and `last_less` layers
 * (parallelism.pipeline_parallel_first/last_stage_less_layers, 1 by default), each virtual stage gets
 * (L + both) / n of the weighted layers, the first (L + both) mod n one more, the first and the last less their
 * weight. Layers per virtual stage into out[0..n); ZP_EINVAL with torchtitan's reason where it refuses (a
 * stage left empty, a weight above a stage's share). */
zp_status zp_torchtitan_split(int64_t L, int64_t n, int64_t first_less, int64_t last_less, int *out);
/* The TOML into buf (`step`, may be NULL: a phrase for the header comment, e.g. "step 3.2 s (simgrid)");
 * ZP_EUNSUPPORTED also when the model is not a torchtitan llama3 flavor (torchtitan sizes models by flavor). */
zp_status zp_torchtitan_text(const zp_model *m, const zp_plan *p, const char *step, char *buf, size_t len);
/* The same written atomically to path. */
zp_status zp_torchtitan_write(const zp_model *m, const zp_plan *p, const char *step, const char *path);

#endif
