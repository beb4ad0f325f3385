/* fuzz_size — zp_size_parse, zp_size_parse_int, zp_size_parse_list and zp_size_format.
 * Input: 2 bytes choose the integer range and the list capacity, the rest is the text. */
#include <math.h>

#include "fuzz_common.h"
#include "zp_size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t bounds[] = {0, 1, 3, 1000, 1048576, INT64_C(1) << 30, INT64_C(1) << 50,
                                     INT64_C(100000000), INT64_MAX - 1, INT64_MAX};
    const size_t nb = sizeof bounds / sizeof bounds[0];
    uint8_t sel = size > 0 ? data[0] : 0, capsel = size > 1 ? data[1] : 0;
    char *s = fz_strndup(size > 2 ? data + 2 : data, size > 2 ? size - 2 : 0);

    double v = -1;
    if (zp_size_parse(s, "fuzz", &v) == ZP_OK) {
        FZ_ASSERT(isfinite(v) && v >= 0, "'%s' -> %g", s, v);
        char buf[16];
        zp_size_format(v, buf, (int)sizeof buf);
        FZ_ASSERT(strlen(buf) < sizeof buf, "format");
    }

    int64_t lo = bounds[sel % nb], hi = bounds[(sel / nb) % nb];
    if (lo <= hi) {
        int64_t i = -7;
        if (zp_size_parse_int(s, "fuzz", lo, hi, &i) == ZP_OK)
            FZ_ASSERT(i >= lo && i <= hi, "'%s' -> %lld outside [%lld, %lld]", s, (long long)i, (long long)lo,
                      (long long)hi);
    }

    int cap = capsel % 70;
    double *out = cap ? malloc((size_t)cap * sizeof *out) : NULL; /* exact size: ASan sees overruns */
    int n = -1;
    if (zp_size_parse_list(s, "fuzz", out, cap, &n) == ZP_OK) {
        FZ_ASSERT(n >= 1 && n <= cap, "list of %d with capacity %d", n, cap);
        for (int k = 0; k < n; k++)
            FZ_ASSERT(isfinite(out[k]) && out[k] >= 0, "list[%d] = %g", k, out[k]);
    }
    free(out);
    free(s);
    return 0;
}
