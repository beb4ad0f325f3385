#include "zp_stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double zp_stats_median(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof x[0], cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
