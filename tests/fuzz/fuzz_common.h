/* fuzz_common.h — helpers shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c). */
#ifndef ZP_FUZZ_COMMON_H
#define ZP_FUZZ_COMMON_H

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated, malloc'ed copy of the fuzzer's bytes (ASan sees reads past `size`). */
static inline char *fz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Stops the fuzzer with a message: an invariant the code under test promises was broken. */
#define FZ_ASSERT(cond, ...)                                                                              \
    do {                                                                                                  \
        if (!(cond)) {                                                                                    \
            fprintf(stderr, "fuzz invariant broken at %s:%d: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                                 \
            fputc('\n', stderr);                                                                          \
            abort();                                                                                      \
        }                                                                                                 \
    } while (0)

/* Non-zero when `s` shows a non-finite number as a word: "nan", "inf", "infinity", "-nan" in any case
 * (not inside another word such as "information"). */
static inline int fz_has_nonfinite(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (p != s && isalpha((unsigned char)p[-1]))
            continue;
        size_t n = 0;
        if (strncasecmp(p, "nan", 3) == 0)
            n = 3;
        else if (strncasecmp(p, "infinity", 8) == 0)
            n = 8;
        else if (strncasecmp(p, "inf", 3) == 0)
            n = 3;
        if (n && !isalpha((unsigned char)p[n]))
            return 1;
    }
    return 0;
}

#endif
