/* zp_cuda.c — the cuda backend: device selection, memory, the Adam and STREAM kernels
 * (zp_cuda_kernels.cu), GEMM through cublasGemmEx (fp16/bf16 in, fp32 accumulate and out,
 * tensor ops chosen by cuBLAS), NCCL collectives bootstrapped over MPI, CUDA-event timers.
 * Every CUDA, cuBLAS, NCCL and MPI call goes through a checker that records the failing
 * call, its error string and file:line. */
#include "zp_kernels_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#if ZP_HAVE_NCCL
#include <nccl.h>
#endif

#include "zp_cuda_kernels.h"

#define ZP_CUDA_CHECK(call)                                                                          \
    do {                                                                                             \
        cudaError_t zp_e_ = (call);                                                                  \
        if (zp_e_ != cudaSuccess)                                                                    \
            return zp_error_set(ZP_ERUNTIME, __FILE__, __LINE__, "%s failed: %s", #call,             \
                                cudaGetErrorString(zp_e_));                                          \
    } while (0)

#define ZP_CUBLAS_CHECK(call)                                                                        \
    do {                                                                                             \
        cublasStatus_t zp_s_ = (call);                                                               \
        if (zp_s_ != CUBLAS_STATUS_SUCCESS)                                                          \
            return zp_error_set(ZP_ERUNTIME, __FILE__, __LINE__, "%s failed: %s", #call,             \
                                cublasGetStatusString(zp_s_));                                       \
    } while (0)

#if ZP_HAVE_NCCL
#define ZP_NCCL_CHECK(call)                                                                          \
    do {                                                                                             \
        ncclResult_t zp_r_ = (call);                                                                 \
        if (zp_r_ != ncclSuccess)                                                                    \
            return zp_error_set(ZP_ERUNTIME, __FILE__, __LINE__, "%s failed: %s", #call,             \
                                ncclGetErrorString(zp_r_));                                          \
    } while (0)
#endif

static int g_device = -1;            /* selected device, -1 before init */
static cublasHandle_t g_cublas;      /* created on first GEMM */
static void **g_batch_ptrs;          /* gemm_batched's device pointer arrays (A, B, C), grown as needed */
static size_t g_batch_cap;           /* pointers g_batch_ptrs holds */
static unsigned long long *g_count;  /* device counter of the overflow check */

/* The node-local rank from the launcher's environment, to spread ranks over the GPUs. */
static int local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                       "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

static zp_status cuda_init(void)
{
    if (g_device >= 0)
        return ZP_OK;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return ZP_FAIL(ZP_ENODEV, "no CUDA device: %s", cudaGetErrorString(e));
    if (n <= 0)
        return ZP_FAIL(ZP_ENODEV, "no CUDA device: cudaGetDeviceCount found none");
    int dev = local_rank() % n;
    ZP_CUDA_CHECK(cudaSetDevice(dev));
    g_device = dev;
    return ZP_OK;
}

static zp_status ready(void)
{
    if (g_device < 0)
        return cuda_init();
    return ZP_OK;
}

static zp_status cuda_device_name(char *buf, size_t len)
{
    ZP_TRY(ready());
    struct cudaDeviceProp prop;
    ZP_CUDA_CHECK(cudaGetDeviceProperties(&prop, g_device));
    snprintf(buf, len, "%s", prop.name);
    return ZP_OK;
}

static zp_status cuda_alloc(size_t bytes, void **out)
{
    ZP_TRY(ready());
    ZP_CUDA_CHECK(cudaMalloc(out, bytes ? bytes : 64));
    return ZP_OK;
}

static void cuda_free(void *p)
{
    if (p)
        cudaFree(p);
}

static zp_status cuda_copy(void *dst, const void *src, size_t bytes)
{
    ZP_TRY(ready());
    if (bytes)
        ZP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
    return ZP_OK;
}

static zp_status cuda_copy_on_device(void *dst, const void *src, size_t bytes)
{
    ZP_TRY(ready());
    if (bytes)
        ZP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    return ZP_OK;
}

static zp_status cuda_zero(void *p, size_t bytes)
{
    ZP_TRY(ready());
    if (bytes)
        ZP_CUDA_CHECK(cudaMemset(p, 0, bytes));
    return ZP_OK;
}

/* Pinned host memory: DMA to and from the device without a staging copy (cudaMallocHost pages are
 * page-aligned, so 64-byte aligned too). */
static zp_status cuda_alloc_host(size_t bytes, void **out)
{
    ZP_TRY(ready());
    ZP_CUDA_CHECK(cudaMallocHost(out, bytes ? bytes : 64));
    return ZP_OK;
}

static void cuda_free_host(void *p)
{
    if (p)
        cudaFreeHost(p);
}

static zp_status cuda_sync(void)
{
    ZP_TRY(ready());
    ZP_CUDA_CHECK(cudaDeviceSynchronize());
    return ZP_OK;
}

static zp_status cuda_stream_copy(float *a, const float *b, size_t n)
{
    ZP_TRY(ready());
    ZP_CUDA_CHECK((cudaError_t)zp_cuda_launch_copy(a, b, n, NULL));
    return ZP_OK;
}

static zp_status cuda_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
    ZP_TRY(ready());
    ZP_CUDA_CHECK((cudaError_t)zp_cuda_launch_triad(a, b, c, s, n, NULL));
    return ZP_OK;
}

static zp_status cuda_grad_check(const float *grad, size_t n, size_t *nonfinite)
{
    ZP_TRY(ready());
    if (!g_count)
        ZP_CUDA_CHECK(cudaMalloc((void **)&g_count, sizeof *g_count));
    ZP_CUDA_CHECK(cudaMemset(g_count, 0, sizeof *g_count));
    ZP_CUDA_CHECK((cudaError_t)zp_cuda_launch_count_nonfinite(grad, n, g_count, NULL));
    unsigned long long host = 0;
    ZP_CUDA_CHECK(cudaMemcpy(&host, g_count, sizeof host, cudaMemcpyDeviceToHost));
    *nonfinite = (size_t)host;
    return ZP_OK;
}

static zp_status cuda_adam_step(const zp_adam_hparams *hp, const zp_adam_buffers *b, zp_adam_result *res)
{
    ZP_TRY(zp_adam_hparams_check(hp));
    ZP_TRY(zp_adam_buffers_check(b));
    ZP_TRY(ready());
    zp_adam_result r = {0, 0};
    if (!hp->grads_checked) {
        ZP_TRY(cuda_grad_check(b->grad, b->n, &r.nonfinite));
        if (r.nonfinite) {
            r.overflow = 1; /* same policy as the cpu backend: skip, touch nothing */
            if (res)
                *res = r;
            return ZP_OK;
        }
    }
    int kind = !b->half ? 0 : b->half_dtype == ZP_DT_F16 ? 1 : 2;
    ZP_CUDA_CHECK((cudaError_t)zp_cuda_launch_adam(zp_adam_coeffs_make(hp), b->param, b->grad, b->m, b->v, b->half,
                                                   kind, b->n, NULL));
    if (res)
        *res = r;
    return ZP_OK;
}

static zp_status cuda_gemm(const zp_gemm_args *g)
{
    ZP_TRY(zp_gemm_args_check(g));
    ZP_TRY(ready());
    if (g->m == 0 || g->n == 0)
        return ZP_OK;
    if (!g_cublas)
        ZP_CUBLAS_CHECK(cublasCreate(&g_cublas));
    cudaDataType_t in = g->in_dtype == ZP_DT_F16 ? CUDA_R_16F : g->in_dtype == ZP_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute = g->in_dtype == ZP_DT_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    /* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands */
    ZP_CUBLAS_CHECK(cublasGemmEx(g_cublas, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 g->n, g->m, g->k, &g->alpha, g->b, in, g->ldb, g->a, in, g->lda, &g->beta, g->c,
                                 CUDA_R_32F, g->ldc, compute, CUBLAS_GEMM_DEFAULT));
    return ZP_OK;
}

/* The pointer arrays travel to the device by a copy on the default stream, ordered before the GEMM that
 * reads them and after the last that read the previous ones; from pageable memory the copy has taken the
 * host's arrays before it returns, so the caller may reuse them at once. */
static zp_status cuda_gemm_batched(const zp_gemm_args *g, int batch, const void *const *a, const void *const *b,
                                   float *const *c)
{
    ZP_TRY(zp_gemm_batch_check(batch, a, b, c));
    if (batch == 0)
        return ZP_OK;
    zp_gemm_args first = *g; /* the shape checked on the first item's operands, as the cpu backend checks each */
    first.a = a[0], first.b = b[0], first.c = c[0];
    ZP_TRY(zp_gemm_args_check(&first));
    ZP_TRY(ready());
    if (g->m == 0 || g->n == 0)
        return ZP_OK;
    if (!g_cublas)
        ZP_CUBLAS_CHECK(cublasCreate(&g_cublas));
    const size_t need = 3 * (size_t)batch;
    if (need > g_batch_cap) {
        if (g_batch_ptrs)
            cudaFree(g_batch_ptrs);
        g_batch_ptrs = NULL, g_batch_cap = 0;
        ZP_CUDA_CHECK(cudaMalloc((void **)&g_batch_ptrs, need * sizeof(void *)));
        g_batch_cap = need;
    }
    void **host = malloc(need * sizeof(void *));
    if (!host)
        return ZP_FAIL(ZP_ENOMEM, "out of memory (%d GEMM pointers)", batch);
    memcpy(host, a, batch * sizeof(void *));
    memcpy(host + batch, b, batch * sizeof(void *));
    memcpy(host + 2 * batch, c, batch * sizeof(void *));
    cudaError_t e = cudaMemcpyAsync(g_batch_ptrs, host, need * sizeof(void *), cudaMemcpyHostToDevice, 0);
    free(host);
    if (e != cudaSuccess)
        return ZP_FAIL(ZP_ERUNTIME, "cudaMemcpyAsync of the GEMM pointers failed: %s", cudaGetErrorString(e));
    cudaDataType_t in = g->in_dtype == ZP_DT_F16 ? CUDA_R_16F : g->in_dtype == ZP_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute = g->in_dtype == ZP_DT_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    void *const *A = g_batch_ptrs, *const *B = g_batch_ptrs + batch, *const *C = g_batch_ptrs + 2 * batch;
    /* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands (as cuda_gemm) */
    ZP_CUBLAS_CHECK(cublasGemmBatchedEx(g_cublas, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g->n, g->m, g->k, &g->alpha,
                                        (const void *const *)B, in, g->ldb, (const void *const *)A, in, g->lda,
                                        &g->beta, (void *const *)C, CUDA_R_32F, g->ldc, batch, compute,
                                        CUBLAS_GEMM_DEFAULT));
    return ZP_OK;
}

/* ---- collectives (NCCL) ---- */

#if ZP_HAVE_NCCL
static zp_status nccl_type(zp_dtype dt, ncclDataType_t *t)
{
    switch (dt) {
    case ZP_DT_F32: *t = ncclFloat32; return ZP_OK;
    case ZP_DT_F16: *t = ncclFloat16; return ZP_OK;
    case ZP_DT_BF16: *t = ncclBfloat16; return ZP_OK;
    case ZP_DT_U8: *t = ncclUint8; return ZP_OK;
    default: return ZP_FAIL(ZP_EINVAL, "unknown element type %d", (int)dt);
    }
}

static ncclRedOp_t nccl_op(zp_redop op) { return op == ZP_OP_MAX ? ncclMax : op == ZP_OP_MIN ? ncclMin : ncclSum; }

static zp_status cuda_comm_attach(zp_comm *c)
{
    ZP_TRY(ready());
    ncclUniqueId id;
    if (c->rank == 0)
        ZP_NCCL_CHECK(ncclGetUniqueId(&id));
#if ZP_HAVE_MPI
    ZP_MPI_CHECK(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->mpi));
#endif
    cudaStream_t s;
    ZP_CUDA_CHECK(cudaStreamCreate(&s));
    ncclComm_t comm;
    ncclResult_t r = ncclCommInitRank(&comm, c->size, id, c->rank);
    if (r != ncclSuccess) {
        cudaStreamDestroy(s);
        return ZP_FAIL(ZP_ERUNTIME, "ncclCommInitRank failed: %s", ncclGetErrorString(r));
    }
    c->nccl = comm;
    c->stream = s;
    return ZP_OK;
}

static void cuda_comm_detach(zp_comm *c)
{
    if (c->nccl)
        ncclCommDestroy((ncclComm_t)c->nccl);
    if (c->stream)
        cudaStreamDestroy((cudaStream_t)c->stream);
    c->nccl = NULL;
    c->stream = NULL;
}

static zp_status coll_begin(zp_comm *c, size_t count, zp_dtype dt, const char *what, ncclDataType_t *t)
{
    if (!c || !c->nccl)
        return ZP_FAIL(ZP_EINVAL, "%s: not a cuda communicator", what);
    ZP_TRY(zp_count_check(count, dt, what));
    return nccl_type(dt, t);
}

static zp_status cuda_allreduce(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt, zp_redop op)
{
    ncclDataType_t t = ncclFloat32;
    ZP_TRY(coll_begin(c, count, dt, "allreduce", &t));
    ZP_NCCL_CHECK(ncclAllReduce(send, recv, count, t, nccl_op(op), (ncclComm_t)c->nccl, (cudaStream_t)c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)c->stream));
    return ZP_OK;
}

static zp_status cuda_reduce_scatter(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt,
                                     zp_redop op)
{
    ncclDataType_t t = ncclFloat32;
    ZP_TRY(coll_begin(c, count, dt, "reduce_scatter", &t));
    ZP_NCCL_CHECK(
        ncclReduceScatter(send, recv, count, t, nccl_op(op), (ncclComm_t)c->nccl, (cudaStream_t)c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)c->stream));
    return ZP_OK;
}

static zp_status cuda_allgather(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt)
{
    ncclDataType_t t = ncclFloat32;
    ZP_TRY(coll_begin(c, count, dt, "allgather", &t));
    ZP_NCCL_CHECK(ncclAllGather(send, recv, count, t, (ncclComm_t)c->nccl, (cudaStream_t)c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)c->stream));
    return ZP_OK;
}

static zp_status cuda_broadcast(zp_comm *c, void *buf, size_t count, zp_dtype dt, int root)
{
    ncclDataType_t t = ncclFloat32;
    ZP_TRY(coll_begin(c, count, dt, "broadcast", &t));
    if (root < 0 || root >= c->size)
        return ZP_FAIL(ZP_EINVAL, "broadcast: root %d outside 0..%d", root, c->size - 1);
    ZP_NCCL_CHECK(ncclBroadcast(buf, buf, count, t, root, (ncclComm_t)c->nccl, (cudaStream_t)c->stream));
    ZP_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)c->stream));
    return ZP_OK;
}
/* Grouped point-to-point sends and receives (NCCL has no all-to-all-v): one group, so they progress
 * together. */
static zp_status cuda_alltoallv(zp_comm *c, const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                                const size_t *rcount, const size_t *rdispl, zp_dtype dt)
{
    ncclDataType_t t = ncclFloat32;
    ZP_TRY(coll_begin(c, 0, dt, "alltoallv", &t));
    if (!scount || !sdispl || !rcount || !rdispl)
        return ZP_FAIL(ZP_EINVAL, "alltoallv: NULL count array");
    const size_t es = zp_dtype_size(dt);
    ZP_NCCL_CHECK(ncclGroupStart());
    for (int q = 0; q < c->size; q++) {
        if (scount[q] > 0)
            ZP_NCCL_CHECK(ncclSend((const char *)send + sdispl[q] * es, scount[q], t, q, (ncclComm_t)c->nccl,
                                   (cudaStream_t)c->stream));
        if (rcount[q] > 0)
            ZP_NCCL_CHECK(ncclRecv((char *)recv + rdispl[q] * es, rcount[q], t, q, (ncclComm_t)c->nccl,
                                   (cudaStream_t)c->stream));
    }
    ZP_NCCL_CHECK(ncclGroupEnd());
    ZP_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)c->stream));
    return ZP_OK;
}
#else
static zp_status no_nccl(void)
{
    return ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without NCCL: no collectives on the cuda backend");
}
static zp_status cuda_allreduce(zp_comm *c, const void *s, void *r, size_t n, zp_dtype dt, zp_redop op)
{
    (void)c, (void)s, (void)r, (void)n, (void)dt, (void)op;
    return no_nccl();
}
static zp_status cuda_reduce_scatter(zp_comm *c, const void *s, void *r, size_t n, zp_dtype dt, zp_redop op)
{
    (void)c, (void)s, (void)r, (void)n, (void)dt, (void)op;
    return no_nccl();
}
static zp_status cuda_allgather(zp_comm *c, const void *s, void *r, size_t n, zp_dtype dt)
{
    (void)c, (void)s, (void)r, (void)n, (void)dt;
    return no_nccl();
}
static zp_status cuda_broadcast(zp_comm *c, void *b, size_t n, zp_dtype dt, int root)
{
    (void)c, (void)b, (void)n, (void)dt, (void)root;
    return no_nccl();
}
static zp_status cuda_alltoallv(zp_comm *c, const void *s, const size_t *sc, const size_t *sd, void *r,
                                const size_t *rc, const size_t *rd, zp_dtype dt)
{
    (void)c, (void)s, (void)sc, (void)sd, (void)r, (void)rc, (void)rd, (void)dt;
    return no_nccl();
}
#endif

/* ---- timers: CUDA events on the default stream ---- */

struct zp_timer {
    cudaEvent_t start, stop;
};

static zp_status cuda_timer_create(zp_timer **out)
{
    ZP_TRY(ready());
    zp_timer *t = calloc(1, sizeof *t);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    cudaError_t e = cudaEventCreate(&t->start);
    if (e == cudaSuccess && (e = cudaEventCreate(&t->stop)) != cudaSuccess)
        cudaEventDestroy(t->start);
    if (e != cudaSuccess) {
        free(t);
        return ZP_FAIL(ZP_ERUNTIME, "cudaEventCreate failed: %s", cudaGetErrorString(e));
    }
    *out = t;
    return ZP_OK;
}

static void cuda_timer_free(zp_timer *t)
{
    if (!t)
        return;
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
    free(t);
}

static zp_status cuda_timer_start(zp_timer *t)
{
    ZP_CUDA_CHECK(cudaEventRecord(t->start, NULL));
    return ZP_OK;
}

static zp_status cuda_timer_stop(zp_timer *t, double *seconds)
{
    ZP_CUDA_CHECK(cudaEventRecord(t->stop, NULL));
    ZP_CUDA_CHECK(cudaEventSynchronize(t->stop));
    float ms = 0;
    ZP_CUDA_CHECK(cudaEventElapsedTime(&ms, t->start, t->stop));
    *seconds = ms * 1e-3;
    return ZP_OK;
}

const zp_kernels_backend zp_kernels_cuda = {
    .name = "cuda",
    .description = "NVIDIA GPU: CUDA fused Adam, cuBLAS GEMM (tensor ops), NCCL collectives",
    .init = cuda_init,
    .device_name = cuda_device_name,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy_to_device = cuda_copy,
    .copy_to_host = cuda_copy,
    .copy_on_device = cuda_copy_on_device,
    .zero = cuda_zero,
    .alloc_host = cuda_alloc_host,
    .free_host = cuda_free_host,
    .sync = cuda_sync,
    .stream_copy = cuda_stream_copy,
    .stream_triad = cuda_stream_triad,
    .grad_check = cuda_grad_check,
    .adam_step = cuda_adam_step,
    .gemm = cuda_gemm,
    .gemm_batched = cuda_gemm_batched,
    .allreduce = cuda_allreduce,
    .reduce_scatter = cuda_reduce_scatter,
    .allgather = cuda_allgather,
    .broadcast = cuda_broadcast,
    .alltoallv = cuda_alltoallv,
#if ZP_HAVE_NCCL
    .comm_attach = cuda_comm_attach,
    .comm_detach = cuda_comm_detach,
#else
    .comm_attach = NULL,
    .comm_detach = NULL,
#endif
    .timer_create = cuda_timer_create,
    .timer_free = cuda_timer_free,
    .timer_start = cuda_timer_start,
    .timer_stop = cuda_timer_stop,
};
