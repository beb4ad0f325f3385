/* zp_kernels.c — backend table, argument checks and small helpers shared by the backends. */
#include "zp_kernels_impl.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#if ZP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#if ZP_HAVE_NCCL
#include <nccl.h>
#endif

size_t zp_dtype_size(zp_dtype dt)
{
    switch (dt) {
    case ZP_DT_F32: return 4;
    case ZP_DT_F16:
    case ZP_DT_BF16: return 2;
    case ZP_DT_U8: return 1;
    default: return 0;
    }
}

const char *zp_dtype_name(zp_dtype dt)
{
    switch (dt) {
    case ZP_DT_F32: return "fp32";
    case ZP_DT_F16: return "fp16";
    case ZP_DT_BF16: return "bf16";
    case ZP_DT_U8: return "u8";
    default: return "?";
    }
}

zp_adam_hparams zp_adam_hparams_default(void)
{
    zp_adam_hparams hp = {
        .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0, .adamw = 0,
        .bias_correction = 1, .step = 1, .loss_scale = 1.0, .clip = 1.0, .grads_checked = 0,
    };
    return hp;
}

zp_status zp_adam_hparams_check(const zp_adam_hparams *hp)
{
    if (!hp)
        return ZP_FAIL(ZP_EINVAL, "adam: no hyper-parameters");
    if (!isfinite(hp->lr) || hp->lr < 0)
        return ZP_FAIL(ZP_EINVAL, "adam: lr must be finite and >= 0 (got %g)", hp->lr);
    if (!(hp->beta1 >= 0 && hp->beta1 < 1))
        return ZP_FAIL(ZP_EINVAL, "adam: beta1 must be in [0, 1) (got %g)", hp->beta1);
    if (!(hp->beta2 >= 0 && hp->beta2 < 1))
        return ZP_FAIL(ZP_EINVAL, "adam: beta2 must be in [0, 1) (got %g)", hp->beta2);
    if (!isfinite(hp->eps) || hp->eps <= 0)
        return ZP_FAIL(ZP_EINVAL, "adam: eps must be finite and > 0 (got %g)", hp->eps);
    if (!isfinite(hp->weight_decay) || hp->weight_decay < 0)
        return ZP_FAIL(ZP_EINVAL, "adam: weight_decay must be finite and >= 0 (got %g)", hp->weight_decay);
    if (hp->step < 1)
        return ZP_FAIL(ZP_EINVAL, "adam: step must be >= 1 (got %ld)", hp->step);
    if (!isfinite(hp->loss_scale) || hp->loss_scale <= 0)
        return ZP_FAIL(ZP_EINVAL, "adam: loss_scale must be finite and > 0 (got %g)", hp->loss_scale);
    if (!isfinite(hp->clip) || hp->clip <= 0)
        return ZP_FAIL(ZP_EINVAL, "adam: clip must be finite and > 0 (got %g)", hp->clip);
    return ZP_OK;
}

zp_status zp_adam_buffers_check(const zp_adam_buffers *b)
{
    if (!b)
        return ZP_FAIL(ZP_EINVAL, "adam: no buffers");
    if (b->n > 0 && (!b->param || !b->grad || !b->m || !b->v))
        return ZP_FAIL(ZP_EINVAL, "adam: param, grad, m and v must be non-NULL for %zu elements", b->n);
    if (b->half && b->half_dtype != ZP_DT_F16 && b->half_dtype != ZP_DT_BF16)
        return ZP_FAIL(ZP_EINVAL, "adam: the 16-bit copy must be fp16 or bf16 (got %s)",
                       zp_dtype_name(b->half_dtype));
    return ZP_OK;
}

zp_adam_coeffs zp_adam_coeffs_make(const zp_adam_hparams *hp)
{
    double bc1 = hp->bias_correction ? 1.0 - pow(hp->beta1, (double)hp->step) : 1.0;
    double bc2 = hp->bias_correction ? 1.0 - pow(hp->beta2, (double)hp->step) : 1.0;
    zp_adam_coeffs c;
    c.lr = (float)hp->lr;
    c.beta1 = (float)hp->beta1;
    c.beta2 = (float)hp->beta2;
    c.one_minus_beta1 = (float)(1.0 - hp->beta1);
    c.one_minus_beta2 = (float)(1.0 - hp->beta2);
    c.eps = (float)hp->eps;
    c.l2 = hp->adamw ? 0.0f : (float)hp->weight_decay;
    c.decay = hp->adamw ? (float)(1.0 - hp->lr * hp->weight_decay) : 1.0f;
    c.grad_mul = (float)(hp->clip / hp->loss_scale);
    c.step_size = (float)(hp->lr / bc1);
    c.inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    return c;
}

zp_status zp_gemm_batch_check(int batch, const void *a, const void *b, const void *c)
{
    if (batch < 0 || (batch > 0 && (!a || !b || !c)))
        return ZP_FAIL(ZP_EINVAL, "gemm_batched: batch %d with %s pointer arrays", batch,
                       batch < 0 ? "negative" : "missing");
    return ZP_OK;
}

zp_status zp_gemm_args_check(const zp_gemm_args *g)
{
    if (!g)
        return ZP_FAIL(ZP_EINVAL, "gemm: no arguments");
    if (g->m < 0 || g->n < 0 || g->k < 0)
        return ZP_FAIL(ZP_EINVAL, "gemm: negative shape (m=%d, n=%d, k=%d)", g->m, g->n, g->k);
    int min_lda = g->trans_a ? g->m : g->k;
    int min_ldb = g->trans_b ? g->k : g->n;
    if (g->lda < (min_lda > 1 ? min_lda : 1))
        return ZP_FAIL(ZP_EINVAL, "gemm: lda=%d < %d", g->lda, min_lda);
    if (g->ldb < (min_ldb > 1 ? min_ldb : 1))
        return ZP_FAIL(ZP_EINVAL, "gemm: ldb=%d < %d", g->ldb, min_ldb);
    if (g->ldc < (g->n > 1 ? g->n : 1))
        return ZP_FAIL(ZP_EINVAL, "gemm: ldc=%d < n=%d", g->ldc, g->n);
    if ((size_t)g->m * g->n > 0 && !g->c)
        return ZP_FAIL(ZP_EINVAL, "gemm: C is NULL");
    if ((size_t)g->m * g->n * g->k > 0 && (!g->a || !g->b))
        return ZP_FAIL(ZP_EINVAL, "gemm: A or B is NULL");
    if (g->in_dtype != ZP_DT_F32 && g->in_dtype != ZP_DT_F16 && g->in_dtype != ZP_DT_BF16)
        return ZP_FAIL(ZP_EINVAL, "gemm: inputs must be fp32, fp16 or bf16 (got %s)", zp_dtype_name(g->in_dtype));
    return ZP_OK;
}

zp_status zp_count_check(size_t count, zp_dtype dt, const char *what)
{
    if (zp_dtype_size(dt) == 0)
        return ZP_FAIL(ZP_EINVAL, "%s: unknown element type %d", what, (int)dt);
    if (count > (size_t)INT_MAX)
        return ZP_FAIL(ZP_ERANGE, "%s: %zu elements exceed one call's limit (%d)", what, count, INT_MAX);
    return ZP_OK;
}

static const zp_kernels_backend *const g_backends[] = {
    &zp_kernels_cpu,
#if ZP_HAVE_CUDA
    &zp_kernels_cuda,
#endif
    NULL,
};

const zp_kernels_backend *const *zp_kernels_backends(void) { return g_backends; }

zp_status zp_kernels_backend_get(const char *name, const zp_kernels_backend **out)
{
    if (!name || !*name)
        return ZP_FAIL(ZP_EINVAL, "no backend named (expected cpu or cuda)");
    for (int i = 0; g_backends[i]; i++) {
        if (strcmp(g_backends[i]->name, name) == 0) {
            *out = g_backends[i];
            return ZP_OK;
        }
    }
    if (strcmp(name, "cuda") == 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "no CUDA device: this zplan was built without CUDA (nvcc not found at "
                                        "configure time); use --backend cpu");
    return ZP_FAIL(ZP_EINVAL, "unknown backend '%s' (expected cpu%s)", name, ZP_HAVE_CUDA ? " or cuda" : "");
}

void zp_kernels_versions(char *blas, size_t blas_len, char *mpi, size_t mpi_len, char *cuda, size_t cuda_len,
                         char *nccl, size_t nccl_len)
{
    if (blas && blas_len) {
        const char *cfg = openblas_get_config();
        snprintf(blas, blas_len, "%s", cfg ? cfg : "OpenBLAS");
    }
    if (mpi && mpi_len) {
        mpi[0] = '\0';
#if ZP_HAVE_MPI
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
            char *nl = strpbrk(lib, ",\n");
            if (nl)
                *nl = '\0';
            snprintf(mpi, mpi_len, "%s", lib);
        }
#endif
    }
    if (cuda && cuda_len) {
        cuda[0] = '\0';
#if ZP_HAVE_CUDA
        int rt = 0;
        if (cudaRuntimeGetVersion(&rt) == cudaSuccess)
            snprintf(cuda, cuda_len, "CUDA runtime %d.%d", rt / 1000, (rt % 1000) / 10);
#endif
    }
    if (nccl && nccl_len) {
        nccl[0] = '\0';
#if ZP_HAVE_NCCL
        int v = 0;
        if (ncclGetVersion(&v) == ncclSuccess)
            snprintf(nccl, nccl_len, "NCCL %d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
#endif
    }
}
