/* zp_kernels.h — zplan's real kernels behind one backend interface.
 *
 * A backend is a const table of functions (GSL-style strategy table), found by name:
 *     const zp_kernels_backend *be;
 *     zp_status st = zp_kernels_backend_get("cpu", &be);    // or "cuda"
 *     st = be->init();                                       // ZP_ENODEV: "no CUDA device: ..."
 * Backends:
 *   cpu   fused Adam/AdamW (OpenMP, vectorised), GEMM through CBLAS (OpenBLAS, fp32),
 *         collectives through MPI on any communicator (a 1-rank self communicator without MPI);
 *   cuda  the same Adam as one CUDA kernel, GEMM through cublasGemmEx (fp16/bf16 in, fp32
 *         accumulate, tensor ops), collectives through NCCL bootstrapped over MPI, CUDA-event
 *         timing. Built only when the CUDA toolkit is found.
 *
 * Buffers passed to a backend's functions live in that backend's memory (be->alloc): host
 * memory for cpu, device memory for cuda. Every function returns a zp_status; on failure the
 * message (with the failing call and file:line) is recorded with zp_error_set.
 *
 * Kernels take shapes and buffers only: no model, no policy.
 */
#ifndef ZP_KERNELS_H
#define ZP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "zp_config.h"
#include "zp_coll.h"
#include "zp_status.h"
#include "zp_timing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- element types ---- */
typedef enum {
    ZP_DT_F32 = 0, /* IEEE binary32 */
    ZP_DT_F16,     /* IEEE binary16 */
    ZP_DT_BF16,    /* bfloat16 */
    ZP_DT_U8,      /* raw bytes (gathers and broadcasts only) */
    ZP_DT_COUNT
} zp_dtype;

size_t zp_dtype_size(zp_dtype dt);
const char *zp_dtype_name(zp_dtype dt);

/* ---- fused mixed-precision Adam / AdamW ---- */

/* Hyper-parameters of one optimizer step. */
typedef struct {
    double lr;           /* learning rate */
    double beta1;        /* first-moment decay, [0, 1) */
    double beta2;        /* second-moment decay, [0, 1) */
    double eps;          /* > 0 */
    double weight_decay; /* >= 0 */
    int adamw;           /* 1: decoupled weight decay (AdamW); 0: L2 added to the gradient (Adam) */
    int bias_correction; /* 1: divide by 1 - beta^t (PyTorch's default) */
    long step;           /* t, 1-based index of this step (for bias correction) */
    double loss_scale;   /* gradients arrive multiplied by this (1 = fp32 training); > 0 */
    double clip;         /* extra factor applied after unscaling, e.g. max_norm/norm (1 = none); > 0 */
    int grads_checked;   /* 1: the caller already ran zp_adam_grad_check on these gradients (and agreed
                            on overflow across ranks); the step then trusts them and skips its own check */
} zp_adam_hparams;

/* PyTorch defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay, bias correction,
 * step 1, loss scale 1, clip 1, Adam (not AdamW), gradients not pre-checked. */
zp_adam_hparams zp_adam_hparams_default(void);

/* The flat partition of optimizer state that one rank owns. All arrays hold n elements. */
typedef struct {
    size_t n;            /* elements in this partition */
    float *param;        /* (n) fp32 master parameters, updated in place */
    const float *grad;   /* (n) fp32 gradients, multiplied by loss_scale */
    float *m;            /* (n) fp32 first moment (exp_avg) */
    float *v;            /* (n) fp32 second moment (exp_avg_sq) */
    uint16_t *half;      /* (n) 16-bit copy of the updated parameters, or NULL for none */
    zp_dtype half_dtype; /* ZP_DT_F16 or ZP_DT_BF16: the format of `half` */
} zp_adam_buffers;

/* What a step did. */
typedef struct {
    int overflow;        /* 1: some gradient was NaN/inf, the step was skipped, nothing changed */
    size_t nonfinite;    /* number of NaN/inf gradients found (0 when the check was skipped) */
} zp_adam_result;

/* Bytes one step moves per element: reads param, grad, m, v (4 B each), writes param, m, v
 * (4 B each) and the 16-bit copy (2 B, when written) — 30 B with a copy, 28 without. The
 * overflow check, when the step runs it itself, reads the gradients once more (+4 B). */
#define ZP_ADAM_BYTES_PER_PARAM 30

/* Validates the hyper-parameters (ZP_EINVAL naming the bad one). */
zp_status zp_adam_hparams_check(const zp_adam_hparams *hp);
/* Validates the buffers: non-NULL arrays when n > 0, a 16-bit format for `half`. */
zp_status zp_adam_buffers_check(const zp_adam_buffers *buf);

/* ---- GEMM ---- */

/* C = alpha * op(A) * op(B) + beta * C, row-major; op(X) = X or X^T.
 * op(A) is (m, k), op(B) is (k, n), C is (m, n) in fp32. */
typedef struct {
    int trans_a;         /* 1: A is stored (k, m) and transposed */
    int trans_b;         /* 1: B is stored (n, k) and transposed */
    int m, n, k;         /* shape of the product */
    float alpha, beta;
    const void *a;       /* A, leading dimension lda (row stride, in elements) */
    int lda;
    const void *b;       /* B, leading dimension ldb */
    int ldb;
    float *c;            /* (m, n) fp32, leading dimension ldc */
    int ldc;
    zp_dtype in_dtype;   /* type of A and B: ZP_DT_F32 (cpu, cuda), ZP_DT_F16 / ZP_DT_BF16 (cuda) */
} zp_gemm_args;

/* Checks shapes and leading dimensions (ZP_EINVAL naming the bad field). */
zp_status zp_gemm_args_check(const zp_gemm_args *g);
/* gemm_batched's arrays: batch >= 0 and, when batch > 0, the three arrays given (ZP_EINVAL saying which). */
zp_status zp_gemm_batch_check(int batch, const void *a, const void *b, const void *c);

/* ---- collectives ---- */

typedef enum { ZP_OP_SUM = 0, ZP_OP_MAX, ZP_OP_MIN } zp_redop;

/* zp_coll_name and zp_coll_busbw_factor (busbw = algbw * factor): common/zp_coll.h. */

/* A communicator of one backend: wraps an MPI communicator (and, on cuda, an NCCL one).
 * Created from the world (zp_kernels_comm_world), split per node, or from any MPI_Comm
 * (zp_kernels_mpi.h). Free with zp_comm_free (accepts NULL). */
typedef struct zp_comm zp_comm;

typedef struct zp_kernels_backend zp_kernels_backend;

/* Timer on the backend's stream: wall clock on cpu, CUDA events on cuda. */
typedef struct zp_timer zp_timer;

struct zp_kernels_backend {
    const char *name;    /* "cpu", "cuda" */
    const char *description;

    /* Checks that the device is usable (ZP_ENODEV "no CUDA device: <reason>" otherwise). */
    zp_status (*init)(void);
    /* Device name for the profile ("AMD EPYC ..." for cpu, "NVIDIA A100 ..." for cuda). */
    zp_status (*device_name)(char *buf, size_t len);

    /* Memory of the backend, 64-byte aligned, not initialised; free accepts NULL. */
    zp_status (*alloc)(size_t bytes, void **out);
    void (*free)(void *p);
    zp_status (*copy_to_device)(void *dst, const void *src, size_t bytes);
    zp_status (*copy_to_host)(void *dst, const void *src, size_t bytes);
    /* Within the backend's memory (dst and src from alloc; they must not overlap). */
    zp_status (*copy_on_device)(void *dst, const void *src, size_t bytes);
    /* Sets `bytes` bytes of the backend's memory to 0. */
    zp_status (*zero)(void *p, size_t bytes);
    /* Host memory the device copies to and from at full speed, 64-byte aligned, not initialised:
     * pinned (page-locked, cudaMallocHost) on cuda, plain aligned memory on cpu. free_host accepts
     * NULL. ZeRO-Offload keeps the optimizer states there. */
    zp_status (*alloc_host)(size_t bytes, void **out);
    void (*free_host)(void *p);
    /* Waits for all queued work. */
    zp_status (*sync)(void);

    /* STREAM kernels on n floats: a = b (copy), a = b + s*c (triad). */
    zp_status (*stream_copy)(float *a, const float *b, size_t n);
    zp_status (*stream_triad)(float *a, const float *b, const float *c, float s, size_t n);

    /* Finds NaN/inf among n gradients: *nonfinite = how many. */
    zp_status (*grad_check)(const float *grad, size_t n, size_t *nonfinite);
    /* One fused Adam/AdamW step over the partition (NaN/inf policy in zp_elementwise.h). */
    zp_status (*adam_step)(const zp_adam_hparams *hp, const zp_adam_buffers *buf, zp_adam_result *res);

    zp_status (*gemm)(const zp_gemm_args *g);
    /* `batch` GEMMs of g's shape, transposes, leading dimensions, alpha, beta and type, the i-th on a[i], b[i]
     * and c[i] (host arrays of device pointers; g's own a, b, c unused); no c[i] may overlap another. One
     * launch on cuda (cublasGemmBatchedEx: attention's per-sequence, per-head products, which a framework
     * runs as one batched kernel), the same gemm in a loop on cpu (the same arithmetic as `batch` calls). */
    zp_status (*gemm_batched)(const zp_gemm_args *g, int batch, const void *const *a, const void *const *b,
                              float *const *c);

    /* Collectives on `comm`, counts in elements of `dt`; in-place allowed where MPI/NCCL allow
     * (send == recv for all-reduce and broadcast).
     *   allreduce:      send (count) -> recv (count)
     *   reduce_scatter: send (count * nranks) -> recv (count), rank r gets block r
     *   allgather:      send (count) -> recv (count * nranks), block r from rank r
     *   broadcast:      buf (count) from root to all
     *   alltoallv:      rank r sends scount[q] elements from send + sdispl[q] to each rank q and receives
     *                   rcount[q] elements from each q at recv + rdispl[q] (arrays of nranks; element
     *                   counts and offsets; rcount[q] must be what q sends to r): MoE's token exchange */
    zp_status (*allreduce)(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt, zp_redop op);
    zp_status (*reduce_scatter)(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt,
                                zp_redop op);
    zp_status (*allgather)(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt);
    zp_status (*broadcast)(zp_comm *c, void *buf, size_t count, zp_dtype dt, int root);
    zp_status (*alltoallv)(zp_comm *c, const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                           const size_t *rcount, const size_t *rdispl, zp_dtype dt);

    /* Per-communicator set-up once the MPI communicator exists (cuda: the NCCL communicator,
     * bootstrapped over MPI); NULL when the backend needs none. Called by zp_comm_*. */
    zp_status (*comm_attach)(zp_comm *c);
    void (*comm_detach)(zp_comm *c);

    zp_status (*timer_create)(zp_timer **out);
    void (*timer_free)(zp_timer *t);
    zp_status (*timer_start)(zp_timer *t);
    /* Stops and returns the elapsed seconds since timer_start (waits for the work). */
    zp_status (*timer_stop)(zp_timer *t, double *seconds);
};

/* The backends compiled into this build ("cpu", and "cuda" when built with CUDA), NULL-terminated. */
const zp_kernels_backend *const *zp_kernels_backends(void);

/* Finds a backend by name. Unknown name: ZP_EINVAL; "cuda" in a build without CUDA:
 * ZP_EUNSUPPORTED ("this zplan was built without CUDA"). Does not touch the device: call
 * be->init() to know whether it is usable. */
zp_status zp_kernels_backend_get(const char *name, const zp_kernels_backend **out);

/* ---- communicators (MPI when built with it; a 1-rank self communicator otherwise) ---- */

/* Initialises MPI when built with it and not yet initialised (MPI_THREAD_FUNNELED);
 * a no-op otherwise. zp_kernels_mpi_finalize finalises only what this call initialised. */
zp_status zp_kernels_mpi_init(int *argc, char ***argv);
zp_status zp_kernels_mpi_finalize(void);
/* Ends the whole job with exit status `code` (MPI_Abort of the world): for a rank that fails while others
 * may wait for it in a collective. Does not return when built with MPI; without MPI, does nothing (ZP_OK). */
zp_status zp_kernels_mpi_abort(int code);
/* Only when this process has neither started nor ended MPI: starts it, waits for every rank of the world
 * and finalises it, so that ranks refusing a command under mpirun have all printed before any exits (a
 * rank that exits at once makes mpirun tear the job down, losing the others' messages). Otherwise, and
 * without MPI, does nothing (ZP_OK). */
zp_status zp_kernels_mpi_meet(int *argc, char ***argv);

/* All ranks (MPI_COMM_WORLD), for backend `be`. Collective over the world. */
zp_status zp_comm_world(const zp_kernels_backend *be, zp_comm **out);
/* Ranks of `parent` on the same node (MPI_Comm_split_type SHARED). Collective. */
zp_status zp_comm_split_node(const zp_comm *parent, zp_comm **out);
/* Ranks of `parent` with the same node-local rank, one per node (the inter-node scope). Collective. */
zp_status zp_comm_split_cross(const zp_comm *parent, zp_comm **out);
void zp_comm_free(zp_comm *c);
int zp_comm_rank(const zp_comm *c);
int zp_comm_size(const zp_comm *c);
/* Waits until every rank of c arrives. */
zp_status zp_comm_barrier(zp_comm *c);
/* Reduces one double over c to every rank (sum, max or min) — for timings and flags. */
zp_status zp_comm_allreduce_double(zp_comm *c, double *value, zp_redop op);
/* Number of distinct nodes among c's ranks. Collective. */
zp_status zp_comm_node_count(const zp_comm *c, int *nodes);

/* ---- timing kernels with the harness (common/zp_timing.h): calibrate and the benches ---- */

/* A backend's timer as the harness's clock (wall clock on cpu, CUDA events on cuda). */
typedef struct {
    const zp_kernels_backend *be; /* whose timer_start and timer_stop time the samples */
    zp_timer *timer;              /* from be->timer_create */
} zp_kernels_clock;

/* Sets o's clock to `clock` (NULL: the wall clock) and its barrier to zp_comm_barrier of `barrier` (NULL:
 * none); the other fields of o are left as they are. clock and barrier must outlive the runs of o. */
void zp_kernels_timing_hooks(zp_timing_opts *o, zp_kernels_clock *clock, zp_comm *barrier);

/* One fused Adam step as an operation to time: zp_adam_op_run(&op) is a zp_timing_fn. */
typedef struct {
    const zp_kernels_backend *be; /* whose adam_step runs (buffers in its memory) */
    zp_adam_hparams hp;
    zp_adam_buffers b;
} zp_adam_op;

/* Runs one op->be->adam_step; ZP_ERUNTIME when the step overflowed (a timed step must update: its
 * gradients are finite). */
zp_status zp_adam_op_run(void *op);

/* The STREAM kernels as operations to time: zp_stream_copy_run(&op) copies b into a, zp_stream_triad_run(&op)
 * writes a = b + 3 c (the scalar of McCalpin's triad); both are zp_timing_fns. */
typedef struct {
    const zp_kernels_backend *be; /* whose stream kernels run (buffers in its memory) */
    float *a, *b, *c;             /* (n) each */
    size_t n;
} zp_stream_op;

zp_status zp_stream_copy_run(void *op);
zp_status zp_stream_triad_run(void *op);

/* One collective (fp32, sum) over a whole buffer as an operation to time: zp_coll_op_run(&op) is a
 * zp_timing_fn. All-reduce and broadcast move count elements; reduce-scatter and all-gather count / ranks
 * per rank (send count -> recv count / ranks, and back). */
typedef struct {
    const zp_kernels_backend *be; /* whose collectives run (buffers in its memory) */
    zp_comm *comm;
    zp_coll_kind kind;
    void *send, *recv;            /* (count) floats each; broadcast: send from rank 0 */
    size_t count;                 /* the whole buffer's elements, a multiple of the ranks */
} zp_coll_op;

zp_status zp_coll_op_run(void *op);

/* One copy between host and device memory as an operation to time: zp_copy_op_run(&op) is a zp_timing_fn
 * (the PCIe figure of calibrate and bench/gpu_bench). */
typedef struct {
    const zp_kernels_backend *be; /* whose copy_to_device / copy_to_host runs */
    void *host, *dev;             /* (bytes) each: host pinned or pageable, dev from be->alloc */
    size_t bytes;
    int to_device;                /* 1: host -> device, 0: device -> host */
} zp_copy_op;

zp_status zp_copy_op_run(void *op);

/* ---- the cpu backend's functions, callable directly (host memory) ---- */
extern const zp_kernels_backend zp_kernels_cpu;
zp_status zp_adam_step_cpu(const zp_adam_hparams *hp, const zp_adam_buffers *buf, zp_adam_result *res);
zp_status zp_adam_grad_check_cpu(const float *grad, size_t n, size_t *nonfinite);
zp_status zp_gemm_cpu(const zp_gemm_args *g);
zp_status zp_gemm_batched_cpu(const zp_gemm_args *g, int batch, const void *const *a, const void *const *b,
                              float *const *c);
/* Threads the cpu kernels use (OpenMP's), 1 without OpenMP. */
int zp_kernels_cpu_threads(void);
/* Sets the threads of the cpu kernels, OpenMP's and OpenBLAS's, to n >= 1 (for the calling process). */
void zp_kernels_cpu_set_threads(int n);

#if ZP_HAVE_CUDA
extern const zp_kernels_backend zp_kernels_cuda;
#endif

/* Library versions of this build, e.g. "OpenBLAS 0.3.21 ...", "Open MPI v4.1.4", "CUDA 13.0",
 * "NCCL 2.28.3" ("" when absent). */
void zp_kernels_versions(char *blas, size_t blas_len, char *mpi, size_t mpi_len, char *cuda, size_t cuda_len,
                         char *nccl, size_t nccl_len);

#ifdef __cplusplus
}
#endif

#endif
