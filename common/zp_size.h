/* zp_size.h — parsing of the sizes users type: "32G", "1.5B", "500M", "1K", "64".
 *
 * Suffixes are decimal, as in the ZeRO paper (32 GB = 32e9 bytes; 1.5B = 1.5e9):
 * K = 1e3, M = 1e6, G = B = 1e9, T = 1e12, P = 1e15, case-insensitive. Binary
 * suffixes Ki, Mi, Gi, Ti (and KiB...) are 2^10... A trailing "B"/"b" after a
 * K/M/G/T suffix ("32GB") means bytes and changes nothing. */
#ifndef ZP_SIZE_H
#define ZP_SIZE_H

#include <stdint.h>

#include "zp_status.h"

/* Parses a non-negative finite number with an optional suffix into *out.
 * `what` names the value for the error message ("--gpu-mem"). */
zp_status zp_size_parse(const char *text, const char *what, double *out);

/* As zp_size_parse, then requires a whole number in [min, max]. */
zp_status zp_size_parse_int(const char *text, const char *what, int64_t min, int64_t max, int64_t *out);

/* As zp_size_parse, then requires min <= value <= max. */
zp_status zp_size_parse_range(const char *text, const char *what, double min, double max, double *out);

/* Parses a comma-separated list of sizes ("1,4,16K"); at most `cap` entries. */
zp_status zp_size_parse_list(const char *text, const char *what, double *out, int cap, int *n);

/* Formats a count with the largest decimal suffix that keeps it >= 1 ("1.5B", "800M").
 * Writes at most `len` bytes. */
void zp_size_format(double value, char *buf, int len);

#endif
