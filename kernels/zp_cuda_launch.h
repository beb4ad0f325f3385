/* zp_cuda_launch.h — private to kernels/'s .cu files: the launch shape every device kernel of the cuda
 * backend uses, a grid-stride loop of kThreads-thread blocks (one definition for zp_cuda_kernels.cu and
 * zp_nn_cuda.cu). */
#ifndef ZP_CUDA_LAUNCH_H
#define ZP_CUDA_LAUNCH_H

#include <stddef.h>

namespace zp_cuda {

const int kThreads = 256;

/* Blocks for n items, capped: the grid-stride loops cover the rest. */
inline unsigned grid_for(size_t n)
{
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 65535u * 32u)
        blocks = 65535u * 32u;
    return blocks ? (unsigned)blocks : 1u;
}

} // namespace zp_cuda

/* for i over [0, n) in a grid-stride loop */
#define ZP_GRID_LOOP(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

#endif
