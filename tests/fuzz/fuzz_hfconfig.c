/* fuzz_hfconfig — HuggingFace config.json text through zp_model_from_hf_json; an accepted model must
 * validate and give finite parameter, FLOP and activation counts. */
#include <math.h>

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
        double f = zp_model_flops_iteration(&m, 1, 1);
        FZ_ASSERT(isfinite(f) && f > 0, "flops %g", f);
        double a = zp_model_activation_bytes_layer(&m, 1, 1);
        FZ_ASSERT(isfinite(a) && a > 0, "activations %g", a);
    }
    free(s);
    return 0;
}
