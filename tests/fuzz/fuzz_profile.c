/* fuzz_profile — device profile JSON through zp_profile_parse (the exact bytes, no terminator). An
 * accepted profile must validate, be writable (zp_profile_to_json) and read back to the same profile. */
#include <math.h>

#include "fuzz_common.h"
#include "zp_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so reading past `size` is an ASan error */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    if (size)
        memcpy(buf, data, size);
    zp_profile *p = malloc(sizeof *p), *q = malloc(sizeof *q);
    if (!p || !q)
        abort();
    if (zp_profile_parse(buf, size, "fuzz.json", p) == ZP_OK) {
        FZ_ASSERT(zp_profile_validate(p) == ZP_OK, "accepted profile does not validate: %s", zp_error_message());
        char *text = NULL;
        FZ_ASSERT(zp_profile_to_json(p, &text) == ZP_OK, "accepted profile cannot be written: %s",
                  zp_error_message());
        FZ_ASSERT(zp_profile_parse(text, strlen(text), "again.json", q) == ZP_OK, "written profile is refused: %s",
                  zp_error_message());
        char *text2 = NULL;
        FZ_ASSERT(zp_profile_to_json(q, &text2) == ZP_OK, "second write");
        FZ_ASSERT(strcmp(text, text2) == 0, "profile does not round-trip");
        free(text);
        free(text2);
        double t = zp_profile_gemm_time(p, 1024, 1024, 1024);
        FZ_ASSERT(!isnan(t), "gemm time NaN");
        double e = zp_profile_gemm_efficiency(p, 1024, 1024, 1024);
        FZ_ASSERT(e > 0 && e <= 1, "efficiency %g", e);
    }
    free(p);
    free(q);
    free(buf);
    return 0;
}
