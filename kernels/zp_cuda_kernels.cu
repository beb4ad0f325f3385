/* zp_cuda_kernels.cu — the cuda backend's device kernels. The Adam arithmetic is the shared
 * zp_elementwise.h, the same code the cpu backend runs and the CPU tests check. */
#include <cuda_runtime.h>

#include "zp_cuda_launch.h"

#include "zp_cuda_kernels.h"

namespace {

using zp_cuda::grid_for;
using zp_cuda::kThreads;

__global__ void adam_kernel(zp_adam_coeffs c, float *__restrict__ p, const float *__restrict__ g,
                            float *__restrict__ m, float *__restrict__ v, uint16_t *__restrict__ h, int half_kind,
                            size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float np = zp_adam_update(c, &p[i], g[i], &m[i], &v[i]);
        if (half_kind == 1)
            h[i] = zp_f32_to_f16(np);
        else if (half_kind == 2)
            h[i] = zp_f32_to_bf16(np);
    }
}

__global__ void nonfinite_kernel(const float *__restrict__ g, size_t n, unsigned long long *count)
{
    unsigned local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        local += !zp_f32_is_finite(g[i]);
    /* warp reduction, then one atomic per warp that found something */
    for (int off = 16; off > 0; off >>= 1)
        local += __shfl_down_sync(0xffffffffu, local, off);
    if ((threadIdx.x & 31) == 0 && local)
        atomicAdd(count, (unsigned long long)local);
}

__global__ void copy_kernel(float *__restrict__ a, const float *__restrict__ b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i];
}

__global__ void triad_kernel(float *__restrict__ a, const float *__restrict__ b, const float *__restrict__ c, float s,
                             size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i] + s * c[i];
}

} // namespace

extern "C" int zp_cuda_launch_adam(zp_adam_coeffs c, float *p, const float *g, float *m, float *v, uint16_t *h,
                                   int half_kind, size_t n, void *stream)
{
    if (n == 0)
        return 0;
    adam_kernel<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(c, p, g, m, v, h, half_kind, n);
    return (int)cudaGetLastError();
}

extern "C" int zp_cuda_launch_count_nonfinite(const float *g, size_t n, unsigned long long *count, void *stream)
{
    if (n == 0)
        return 0;
    nonfinite_kernel<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(g, n, count);
    return (int)cudaGetLastError();
}

extern "C" int zp_cuda_launch_copy(float *a, const float *b, size_t n, void *stream)
{
    if (n == 0)
        return 0;
    copy_kernel<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(a, b, n);
    return (int)cudaGetLastError();
}

extern "C" int zp_cuda_launch_triad(float *a, const float *b, const float *c, float s, size_t n, void *stream)
{
    if (n == 0)
        return 0;
    triad_kernel<<<grid_for(n), kThreads, 0, (cudaStream_t)stream>>>(a, b, c, s, n);
    return (int)cudaGetLastError();
}
