/* fuzz_hfconfig — HuggingFace config.json text through zp_model_from_hf_json; an accepted model must
 * validate and give finite parameter, FLOP and activation counts that agree with each other: the
 * blocks, embedding and head sum to the total, the active count is within it, one tensor-parallel rank
 * holds at most the whole, and the MoE blocks are among the blocks. A refusal must leave a message. */
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "zp_zoo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fz_strndup(data, size);
    zp_model m;
    if (zp_model_from_hf_json(s, "fuzz/config.json", &m) == ZP_OK) {
        FZ_ASSERT(zp_model_validate(&m) == ZP_OK, "accepted model does not validate");
        FZ_ASSERT(m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.seq > 0 && m.vocab > 0 && m.ffn > 0, "dims");
        double p = zp_model_params(&m);
        FZ_ASSERT(isfinite(p) && p > 0, "params %g", p);
        double act = zp_model_params_active(&m);
        FZ_ASSERT(act > 0 && act <= p, "active %g of %g", act, p);
        FZ_ASSERT(zp_model_params_rank(&m, 8) <= p, "one of 8 ranks holds more than the model");
        int64_t moe = zp_model_moe_blocks(&m);
        FZ_ASSERT(moe >= 0 && moe <= m.layers, "moe blocks %lld of %lld", (long long)moe, (long long)m.layers);
        double parts = zp_model_params_embedding(&m) + zp_model_params_head(&m) +
                       (double)m.layers * zp_model_params_layer(&m);
        FZ_ASSERT(fabs(parts - p) <= 1e-9 * p, "parts %g != total %g", parts, p);
        FZ_ASSERT(zp_model_params_largest_layer(&m) <= p, "largest group above the total");
        double small = zp_model_params_small_tensors(&m, 4, 1e5);
        FZ_ASSERT(small >= 0 && small <= p, "small tensors %g", small);
        double f = zp_model_flops_iteration(&m, 1, 1);
        FZ_ASSERT(isfinite(f) && f > 0, "flops %g", f);
        FZ_ASSERT(zp_model_flops_token(&m) > 0, "flops per token");
        double a = zp_model_activation_bytes_layer(&m, 1, 1);
        FZ_ASSERT(isfinite(a) && a > 0, "activations %g", a);
        FZ_ASSERT(zp_model_kv_width(&m) > 0, "kv width");
    } else {
        FZ_ASSERT(zp_error_message()[0] != '\0', "refused without a message");
        FZ_ASSERT(strchr(zp_error_message(), '\n') == NULL, "a message is one line");
    }
    free(s);
    return 0;
}
