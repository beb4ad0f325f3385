#include "zp_size.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int suffix_multiplier(const char *s, double *mult)
{
    static const struct {
        const char *suffix;
        double mult;
    } table[] = {
        {"", 1.0},          {"K", 1e3},           {"M", 1e6},           {"G", 1e9},
        {"B", 1e9},         {"T", 1e12},          {"P", 1e15},          {"KB", 1e3},
        {"MB", 1e6},        {"GB", 1e9},          {"TB", 1e12},         {"Ki", 1024.0},
        {"Mi", 1048576.0},  {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}, {"KiB", 1024.0},
        {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcasecmp(s, table[i].suffix) == 0) {
            *mult = table[i].mult;
            return 1;
        }
    }
    return 0;
}

zp_status zp_size_parse(const char *text, const char *what, double *out)
{
    if (text == NULL || *text == '\0')
        return ZP_FAIL(ZP_EINVAL, "%s: empty value (expected a number such as 64, 1.5B or 32G)", what);
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '-' || *p == '+')
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' must be a positive number without a sign", what, text);
    if (!isdigit((unsigned char)*p) && *p != '.')
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a number (expected e.g. 64, 1.5B, 32G)", what, text);
    /* strtod also accepts "inf", "nan" and hex floats: reject them by the check above
     * and by refusing an 'x' right after a leading 0. */
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a decimal number", what, text);
    errno = 0;
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p)
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a number", what, text);
    if (errno == ERANGE || !isfinite(v))
        return ZP_FAIL(ZP_ERANGE, "%s: '%s' is out of range", what, text);
    char suffix[8];
    size_t n = strlen(end);
    while (n > 0 && isspace((unsigned char)end[n - 1]))
        n--;
    if (n >= sizeof suffix)
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' has an unknown suffix (use K, M, G/B, T, or Ki, Mi, Gi)", what, text);
    memcpy(suffix, end, n);
    suffix[n] = '\0';
    double mult = 1.0;
    if (!suffix_multiplier(suffix, &mult))
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' has an unknown suffix '%s' (use K, M, G/B, T, or Ki, Mi, Gi)", what,
                       text, suffix);
    v *= mult;
    if (!isfinite(v) || v > 1e300)
        return ZP_FAIL(ZP_ERANGE, "%s: '%s' is out of range", what, text);
    *out = v;
    return ZP_OK;
}

zp_status zp_size_parse_range(const char *text, const char *what, double min, double max, double *out)
{
    double v;
    ZP_TRY(zp_size_parse(text, what, &v));
    if (v < min || v > max)
        return ZP_FAIL(ZP_ERANGE, "%s: '%s' is not between %g and %g", what, text, min, max);
    *out = v;
    return ZP_OK;
}

zp_status zp_size_parse_int(const char *text, const char *what, int64_t min, int64_t max, int64_t *out)
{
    double v;
    ZP_TRY(zp_size_parse(text, what, &v));
    if (v != floor(v))
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' must be a whole number", what, text);
    if (v < (double)min)
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' must be at least %lld", what, text, (long long)min);
    /* (double)max may round up to 2^63, which no int64_t holds: compare before converting, then
     * again exactly as integers. */
    if (v > (double)max || v >= 0x1p63)
        return ZP_FAIL(ZP_ERANGE, "%s: '%s' is too large (at most %lld)", what, text, (long long)max);
    int64_t i = (int64_t)v;
    if (i > max)
        return ZP_FAIL(ZP_ERANGE, "%s: '%s' is too large (at most %lld)", what, text, (long long)max);
    if (i < min)
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' must be at least %lld", what, text, (long long)min);
    *out = i;
    return ZP_OK;
}

zp_status zp_size_parse_list(const char *text, const char *what, double *out, int cap, int *n)
{
    if (text == NULL || *text == '\0')
        return ZP_FAIL(ZP_EINVAL, "%s: empty list", what);
    char buf[1024];
    if (strlen(text) >= sizeof buf)
        return ZP_FAIL(ZP_EINVAL, "%s: list too long", what);
    strcpy(buf, text);
    int count = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (count >= cap)
            return ZP_FAIL(ZP_EINVAL, "%s: at most %d values", what, cap);
        ZP_TRY(zp_size_parse(tok, what, &out[count]));
        count++;
    }
    if (count == 0)
        return ZP_FAIL(ZP_EINVAL, "%s: empty list", what);
    *n = count;
    return ZP_OK;
}

void zp_size_format(double value, char *buf, int len)
{
    static const struct {
        double mult;
        const char *suffix;
    } table[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (value >= table[i].mult) {
            snprintf(buf, (size_t)len, "%.3g%s", value / table[i].mult, table[i].suffix);
            return;
        }
    }
    snprintf(buf, (size_t)len, "%.3g", value);
}
