/* kernel_rand.h — the random inputs, the closeness test and the shared references of the kernels' tests. Included by one test file
 * each (after criterion.h), which defines KERNEL_RAND_SEED first: the seed its inputs are drawn from, each
 * file with its own generator. */
#ifndef ZP_KERNEL_RAND_H
#define ZP_KERNEL_RAND_H

#include <math.h>
#include <stdlib.h>

static unsigned kernel_rand_state = KERNEL_RAND_SEED;

/* Uniform in [-1, 1), in steps of 2^-15: exact in a float as in a double. */
static inline double drand(void)
{
    kernel_rand_state = kernel_rand_state * 1103515245u + 12345u;
    return (double)((kernel_rand_state >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* n floats uniform in [-scale, scale), with room past the end (a valid buffer for n = 0). */
static inline float *frand_vec(size_t n, double scale)
{
    float *v = malloc(n * sizeof *v + 4);
    cr_assert(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(scale * drand());
    return v;
}

/* |a - b| <= atol + rtol |b| */
static inline int close_to(double a, double b, double rtol, double atol) { return fabs(a - b) <= atol + rtol * fabs(b); }

/* The causal softmax in double, the reference of the kernels' (zp_nn.h): `rows` rows of T scores s, row r at
 * position r % T, each scaled and normalised over its positions <= r % T, zeros after. */
static inline void softmax_causal_ref(double *p, const double *s, size_t rows, size_t T, double scale)
{
    for (size_t r = 0; r < rows; r++) {
        size_t t = r % T;
        double mx = -INFINITY, z = 0;
        for (size_t j = 0; j <= t; j++)
            mx = fmax(mx, scale * s[r * T + j]);
        for (size_t j = 0; j <= t; j++)
            z += exp(scale * s[r * T + j] - mx);
        for (size_t j = 0; j < T; j++)
            p[r * T + j] = j <= t ? exp(scale * s[r * T + j] - mx) / z : 0.0;
    }
}

#endif
