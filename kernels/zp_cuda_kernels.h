/* zp_cuda_kernels.h — private to kernels/: launchers of the cuda backend's device kernels
 * (zp_cuda_kernels.cu), callable from C. Each returns a cudaError_t as int (0 = success);
 * `stream` is a cudaStream_t (NULL = the default stream). */
#ifndef ZP_CUDA_KERNELS_H
#define ZP_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "zp_elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One launch over the partition; half_kind 0: no copy, 1: fp16, 2: bf16. */
int zp_cuda_launch_adam(zp_adam_coeffs c, float *p, const float *g, float *m, float *v, uint16_t *h, int half_kind,
                        size_t n, void *stream);
/* Adds the number of NaN/inf among g[0..n) to *count (a device counter). */
int zp_cuda_launch_count_nonfinite(const float *g, size_t n, unsigned long long *count, void *stream);
int zp_cuda_launch_copy(float *a, const float *b, size_t n, void *stream);
int zp_cuda_launch_triad(float *a, const float *b, const float *c, float s, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
