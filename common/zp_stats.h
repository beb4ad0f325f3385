/* zp_stats.h — small statistics over arrays of doubles (timings, errors). */
#ifndef ZP_STATS_H
#define ZP_STATS_H

#include <stddef.h>

/* The median of x[0..n): the middle value, or the mean of the two middle values when n is even; NAN
 * for n = 0. Sorts x in place (ascending). */
double zp_stats_median(double *x, size_t n);

#endif
