/* zp_comm.c — communicators (MPI, or a 1-rank self communicator in a build without MPI) and
 * the cpu backend's collectives over MPI. fp16/bf16 reductions use user-defined MPI
 * operations that accumulate each pair in fp32 and round back (round to nearest even). */
#include "zp_kernels_impl.h"
#include "zp_kernels_mpi.h"

#include <stdlib.h>
#include <string.h>

static zp_status comm_alloc(const zp_kernels_backend *be, zp_comm **out)
{
    if (!be || !out)
        return ZP_FAIL(ZP_EINVAL, "communicator: NULL backend or output");
    zp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    c->be = be;
#if ZP_HAVE_MPI
    c->mpi = MPI_COMM_NULL;
#endif
    *out = c;
    return ZP_OK;
}

/* Runs the backend's per-communicator set-up; frees c on failure. */
static zp_status comm_attach(zp_comm *c, zp_comm **out)
{
    if (c->be->comm_attach) {
        zp_status st = c->be->comm_attach(c);
        if (st != ZP_OK) {
            c->be = &zp_kernels_cpu; /* nothing of the backend's to detach */
            zp_comm_free(c);
            return st;
        }
    }
    *out = c;
    return ZP_OK;
}

void zp_comm_free(zp_comm *c)
{
    if (!c)
        return;
    if (c->be && c->be->comm_detach)
        c->be->comm_detach(c);
    free(c->scratch);
#if ZP_HAVE_MPI
    int fin = 1;
    MPI_Finalized(&fin);
    if (c->mpi != MPI_COMM_NULL && !fin)
        MPI_Comm_free(&c->mpi);
#endif
    free(c);
}

int zp_comm_rank(const zp_comm *c) { return c ? c->rank : 0; }
int zp_comm_size(const zp_comm *c) { return c ? c->size : 0; }

/* A collective over one rank is a copy (none in place). Done here rather than by MPI, whose one-rank
 * reduce-scatter took twice as long as memcpy (16 MB: 4.0 ms against 2.0 ms, measured): the step's
 * model prices it as one copy at the calibrated bandwidth (sim/zp_collcost.c). */
static zp_status self_copy(const void *send, void *recv, size_t count, zp_dtype dt, const char *what)
{
    ZP_TRY(zp_count_check(count, dt, what));
    if (send != recv && count > 0)
        memmove(recv, send, count * zp_dtype_size(dt));
    return ZP_OK;
}

/* The one-rank all-to-all: what rank 0 sends to itself, checked against what it expects. */
static zp_status self_alltoallv(const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                                const size_t *rcount, const size_t *rdispl, zp_dtype dt)
{
    if (scount[0] != rcount[0])
        return ZP_FAIL(ZP_EINVAL, "alltoallv: sends %zu elements to itself and expects %zu", scount[0], rcount[0]);
    const size_t es = zp_dtype_size(dt);
    return self_copy((const char *)send + sdispl[0] * es, (char *)recv + rdispl[0] * es, scount[0], dt, "alltoallv");
}

#if ZP_HAVE_MPI

static int g_we_initialised;

/* Under AddressSanitizer (the sanitizer build, scripts/sanitize-test), what Open MPI allocates inside
 * MPI_Init and MPI_Finalize and keeps to the end (its components, unloaded at finalize, whose frames
 * LeakSanitizer can no longer name) is not reported as zplan's leak. Memory errors are still caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <fcntl.h>
#include <sanitizer/lsan_interface.h>
#include <sys/syscall.h>
#include <unistd.h>
#define LSAN_OFF() __lsan_disable()
#define LSAN_ON() __lsan_enable()
/* A rank started by mpirun also runs Open MPI's progress threads (PMIx, libevent), whose allocations
 * cannot be told apart: leak checking is off in such ranks (ASAN_OPTIONS=detect_leaks=1 forces it on);
 * their memory errors and undefined behaviour are still reported. Processes outside mpirun, every test
 * and zplan command among them, keep it. */
const char *__asan_default_options(void);
/* Runs inside ASan's start-up, before libc's getenv and ASan's shadow memory work: raw system calls,
 * no instrumentation. */
__attribute__((no_sanitize_address)) const char *__asan_default_options(void)
{
    static char buf[1 << 16];
    static const char key[] = "OMPI_COMM_WORLD_SIZE=";
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return "";
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    for (long i = 0; i < n;) {
        long k = 0;
        while (key[k] && i + k < n && buf[i + k] == key[k])
            k++;
        if (!key[k])
            return "detect_leaks=0";
        while (i < n && buf[i])
            i++;
        i++;
    }
    return "";
}
#else
#define LSAN_OFF() ((void)0)
#define LSAN_ON() ((void)0)
#endif

static void free_half_ops(void);

zp_status zp_mpi_fail(int rc, const char *call, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        strcpy(msg, "unknown MPI error");
    return zp_error_set(ZP_ERUNTIME, file, line, "%s failed: %s", call, msg);
}

zp_status zp_kernels_mpi_init(int *argc, char ***argv)
{
    int inited = 0;
    ZP_MPI_CHECK(MPI_Initialized(&inited));
    if (inited)
        return ZP_OK;
    int provided = 0;
    LSAN_OFF();
    /* MULTIPLE: the watchdog thread (zp_watchdog.h) exchanges heartbeats while the main thread computes
     * and communicates; everything else is called from the main thread only. */
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    LSAN_ON();
    if (rc != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Init_thread failed (code %d)", rc);
    g_we_initialised = 1;
    return ZP_OK;
}

zp_status zp_kernels_mpi_finalize(void)
{
    if (!g_we_initialised)
        return ZP_OK;
    int fin = 0;
    ZP_MPI_CHECK(MPI_Finalized(&fin));
    g_we_initialised = 0;
    if (!fin) {
        free_half_ops();
        LSAN_OFF();
        int rc = MPI_Finalize();
        LSAN_ON();
        ZP_MPI_CHECK(rc);
    }
    return ZP_OK;
}

zp_status zp_kernels_mpi_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
    return ZP_FAIL(ZP_ERUNTIME, "MPI_Abort returned"); /* it does not */
}

zp_status zp_kernels_mpi_meet(int *argc, char ***argv)
{
    int initialized = 0, finalized = 0;
    ZP_MPI_CHECK(MPI_Initialized(&initialized));
    ZP_MPI_CHECK(MPI_Finalized(&finalized));
    if (initialized || finalized)
        return ZP_OK;
    ZP_TRY(zp_kernels_mpi_init(argc, argv));
    zp_status st = ZP_OK;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        st = zp_mpi_fail(rc, "MPI_Barrier", __FILE__, __LINE__);
    zp_status fin = zp_kernels_mpi_finalize();
    return st != ZP_OK ? st : fin;
}

static zp_status comm_wrap(const zp_kernels_backend *be, MPI_Comm src, int dup, zp_comm **out)
{
    zp_comm *c = NULL;
    ZP_TRY(comm_alloc(be, &c));
    int rc = dup ? MPI_Comm_dup(src, &c->mpi) : MPI_SUCCESS;
    if (!dup)
        c->mpi = src;
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(c->mpi, &c->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(c->mpi, &c->size);
    if (rc != MPI_SUCCESS) {
        zp_status st = zp_mpi_fail(rc, "creating a communicator", __FILE__, __LINE__);
        zp_comm_free(c);
        return st;
    }
    return comm_attach(c, out);
}

zp_status zp_comm_from_mpi(const zp_kernels_backend *be, MPI_Comm mpi, zp_comm **out)
{
    return comm_wrap(be, mpi, 1, out);
}

MPI_Comm zp_comm_mpi(const zp_comm *c) { return c->mpi; }

zp_status zp_comm_world(const zp_kernels_backend *be, zp_comm **out)
{
    ZP_TRY(zp_kernels_mpi_init(NULL, NULL));
    return comm_wrap(be, MPI_COMM_WORLD, 1, out);
}

zp_status zp_comm_split_node(const zp_comm *parent, zp_comm **out)
{
    if (!parent || !out)
        return ZP_FAIL(ZP_EINVAL, "split: NULL communicator");
    MPI_Comm sub;
    ZP_MPI_CHECK(MPI_Comm_split_type(parent->mpi, MPI_COMM_TYPE_SHARED, parent->rank, MPI_INFO_NULL, &sub));
    return comm_wrap(parent->be, sub, 0, out);
}

/* This rank's index among the ranks of c on its node (those that share its memory). */
static zp_status node_rank(const zp_comm *c, int *local)
{
    MPI_Comm node;
    ZP_MPI_CHECK(MPI_Comm_split_type(c->mpi, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node));
    *local = 0;
    int rc = MPI_Comm_rank(node, local);
    MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS)
        return zp_mpi_fail(rc, "MPI_Comm_rank", __FILE__, __LINE__);
    return ZP_OK;
}

zp_status zp_comm_split_cross(const zp_comm *parent, zp_comm **out)
{
    if (!parent || !out)
        return ZP_FAIL(ZP_EINVAL, "split: NULL communicator");
    int local;
    ZP_TRY(node_rank(parent, &local));
    MPI_Comm sub;
    ZP_MPI_CHECK(MPI_Comm_split(parent->mpi, local, parent->rank, &sub));
    return comm_wrap(parent->be, sub, 0, out);
}

zp_status zp_comm_node_count(const zp_comm *c, int *nodes)
{
    if (!c || !nodes)
        return ZP_FAIL(ZP_EINVAL, "node_count: NULL argument");
    int local;
    ZP_TRY(node_rank(c, &local));
    int leader = local == 0, count = 0;
    ZP_MPI_CHECK(MPI_Allreduce(&leader, &count, 1, MPI_INT, MPI_SUM, c->mpi));
    *nodes = count;
    return ZP_OK;
}

zp_status zp_comm_barrier(zp_comm *c)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "barrier: NULL communicator");
    ZP_MPI_CHECK(MPI_Barrier(c->mpi));
    return ZP_OK;
}

static MPI_Op mpi_op(zp_redop op)
{
    switch (op) {
    case ZP_OP_MAX: return MPI_MAX;
    case ZP_OP_MIN: return MPI_MIN;
    default: return MPI_SUM;
    }
}

zp_status zp_comm_allreduce_double(zp_comm *c, double *value, zp_redop op)
{
    if (!c || !value)
        return ZP_FAIL(ZP_EINVAL, "allreduce_double: NULL argument");
    ZP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE, mpi_op(op), c->mpi));
    return ZP_OK;
}

/* ---- 16-bit reductions: user-defined ops, fp32 accumulation of each pair ---- */

#define ZP_DEF_HALF_OP(name, to32, from32, expr)                                      \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt)               \
    {                                                                                 \
        (void)dt;                                                                     \
        const uint16_t *x = in;                                                       \
        uint16_t *y = inout;                                                          \
        for (int i = 0; i < *len; i++) {                                              \
            float a = to32(x[i]), b = to32(y[i]);                                     \
            y[i] = from32(expr);                                                      \
        }                                                                             \
    }
ZP_DEF_HALF_OP(op_f16_sum, zp_f16_to_f32, zp_f32_to_f16, a + b)
ZP_DEF_HALF_OP(op_f16_max, zp_f16_to_f32, zp_f32_to_f16, a > b ? a : b)
ZP_DEF_HALF_OP(op_f16_min, zp_f16_to_f32, zp_f32_to_f16, a < b ? a : b)
ZP_DEF_HALF_OP(op_bf16_sum, zp_bf16_to_f32, zp_f32_to_bf16, a + b)
ZP_DEF_HALF_OP(op_bf16_max, zp_bf16_to_f32, zp_f32_to_bf16, a > b ? a : b)
ZP_DEF_HALF_OP(op_bf16_min, zp_bf16_to_f32, zp_f32_to_bf16, a < b ? a : b)

static MPI_Op g_half_ops[2][3];
static int g_half_ops_made;

static void free_half_ops(void)
{
    if (!g_half_ops_made)
        return;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            if (g_half_ops[i][j] != MPI_OP_NULL)
                MPI_Op_free(&g_half_ops[i][j]);
    g_half_ops_made = 0;
}

static zp_status reduction_type(zp_dtype dt, zp_redop op, MPI_Datatype *type, MPI_Op *mop)
{
    if ((unsigned)op > ZP_OP_MIN)
        return ZP_FAIL(ZP_EINVAL, "unknown reduction %d", (int)op);
    switch (dt) {
    case ZP_DT_F32:
        *type = MPI_FLOAT;
        *mop = mpi_op(op);
        return ZP_OK;
    case ZP_DT_F16:
    case ZP_DT_BF16:
        if (!g_half_ops_made) {
            MPI_User_function *fns[2][3] = {{op_f16_sum, op_f16_max, op_f16_min},
                                            {op_bf16_sum, op_bf16_max, op_bf16_min}};
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    ZP_MPI_CHECK(MPI_Op_create(fns[i][j], 1, &g_half_ops[i][j]));
            g_half_ops_made = 1;
        }
        *type = MPI_UINT16_T;
        *mop = g_half_ops[dt == ZP_DT_BF16][op];
        return ZP_OK;
    default:
        return ZP_FAIL(ZP_EINVAL, "cannot reduce elements of type %s", zp_dtype_name(dt));
    }
}

static MPI_Datatype raw_type(zp_dtype dt)
{
    switch (dt) {
    case ZP_DT_F32: return MPI_FLOAT;
    case ZP_DT_F16:
    case ZP_DT_BF16: return MPI_UINT16_T;
    default: return MPI_BYTE;
    }
}

/* What a reduction (`what`, for the messages) checks before it runs: a communicator, a count MPI can take, and
 * an element type and operation it reduces (*type and *mop). */
static zp_status reduction_check(const zp_comm *c, size_t count, zp_dtype dt, zp_redop op, const char *what,
                                 MPI_Datatype *type, MPI_Op *mop)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "%s: NULL communicator", what);
    ZP_TRY(zp_count_check(count, dt, what));
    *type = MPI_DATATYPE_NULL;
    *mop = MPI_OP_NULL;
    return reduction_type(dt, op, type, mop);
}

zp_status zp_cpu_allreduce(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt, zp_redop op)
{
    MPI_Datatype type;
    MPI_Op mop;
    ZP_TRY(reduction_check(c, count, dt, op, "allreduce", &type, &mop));
    if (c->size == 1)
        return self_copy(send, recv, count, dt, "allreduce");
    ZP_MPI_CHECK(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, type, mop, c->mpi));
    return ZP_OK;
}

/* fp32 reduce-scatter as NCCL runs it: a ring of size - 1 steps, each sending one block (count floats)
 * to the next rank and receiving one from the previous, which the receiver combines with its own
 * block; after the last step rank r holds block r reduced over every rank. Open MPI 4.1's
 * MPI_Reduce_scatter_block was 3-4x slower than this ring on the 2-core machine the executor is
 * validated on (16 MB: 23 ms against 5.7 ms on 2 ranks, 54 ms against 19 ms on 4; the ring is then
 * about half an all-reduce, as its traffic is), so the executor and the calibration both use the ring.
 * Rank r's block is summed in the order r + 1, r + 2, ..., r (mod size): deterministic, not MPI's.
 * recv may be send's own block r (in place, as NCCL allows). */
static zp_status ring_reduce_scatter(zp_comm *c, const void *send, void *recv, size_t count, zp_redop op)
{
    const float *in = send;
    float *out = recv;
    const int n = c->size, r = c->rank, next = (r + 1) % n, prev = (r + n - 1) % n;
    if (c->scratch_n < 2 * count) {
        float *s = realloc(c->scratch, 2 * count * sizeof(float));
        if (!s)
            return ZP_FAIL(ZP_ENOMEM, "reduce_scatter: out of memory for %zu floats", 2 * count);
        c->scratch = s;
        c->scratch_n = 2 * count;
    }
    /* step s sends the partial sum of block (r - s - 1) and receives that of block (r - s - 2) */
    const float *sending = in + (size_t)((r + n - 1) % n) * count;
    for (int s = 0; s < n - 1; s++) {
        int blk = (r - s - 2 + 2 * n) % n;
        float *got = c->scratch + (size_t)(s % 2) * count;
        ZP_MPI_CHECK(MPI_Sendrecv(sending, (int)count, MPI_FLOAT, next, 0x5a5, got, (int)count, MPI_FLOAT, prev,
                                  0x5a5, c->mpi, MPI_STATUS_IGNORE));
        const float *mine = in + (size_t)blk * count;
        float *dst = s == n - 2 ? out : got; /* the last step lands in recv (may alias mine: same index) */
        switch (op) {
        case ZP_OP_SUM:
            for (size_t i = 0; i < count; i++)
                dst[i] = got[i] + mine[i];
            break;
        case ZP_OP_MAX:
            for (size_t i = 0; i < count; i++)
                dst[i] = got[i] > mine[i] ? got[i] : mine[i];
            break;
        default:
            for (size_t i = 0; i < count; i++)
                dst[i] = got[i] < mine[i] ? got[i] : mine[i];
            break;
        }
        sending = dst;
    }
    return ZP_OK;
}

zp_status zp_cpu_reduce_scatter(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt,
                                zp_redop op)
{
    MPI_Datatype type;
    MPI_Op mop;
    ZP_TRY(reduction_check(c, count, dt, op, "reduce_scatter", &type, &mop));
    if (c->size == 1)
        return self_copy(send, recv, count, dt, "reduce_scatter");
    if (dt == ZP_DT_F32)
        return ring_reduce_scatter(c, send, recv, count, op);
    /* 16-bit: MPI's own; MPI forbids recv inside send, so the in-place form goes through a copy */
    size_t es = zp_dtype_size(dt);
    const char *s0 = send, *s1 = s0 + count * (size_t)c->size * es;
    if ((const char *)recv >= s0 && (const char *)recv < s1) {
        void *tmp = malloc(count * es + 1);
        if (!tmp)
            return ZP_FAIL(ZP_ENOMEM, "reduce_scatter: out of memory");
        int rc = MPI_Reduce_scatter_block(send, tmp, (int)count, type, mop, c->mpi);
        if (rc == MPI_SUCCESS)
            memcpy(recv, tmp, count * es);
        free(tmp);
        ZP_MPI_CHECK(rc);
        return ZP_OK;
    }
    ZP_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, (int)count, type, mop, c->mpi));
    return ZP_OK;
}

zp_status zp_cpu_allgather(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "allgather: NULL communicator");
    ZP_TRY(zp_count_check(count, dt, "allgather"));
    ZP_TRY(zp_count_check(count * (size_t)c->size, dt, "allgather"));
    MPI_Datatype type = raw_type(dt);
    const char *mine = (const char *)recv + (size_t)c->rank * count * zp_dtype_size(dt);
    if (c->size == 1)
        return self_copy(send, recv, count, dt, "allgather");
    ZP_MPI_CHECK(MPI_Allgather(send == mine ? MPI_IN_PLACE : send, (int)count, type, recv, (int)count, type,
                               c->mpi));
    return ZP_OK;
}

zp_status zp_cpu_broadcast(zp_comm *c, void *buf, size_t count, zp_dtype dt, int root)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "broadcast: NULL communicator");
    ZP_TRY(zp_count_check(count, dt, "broadcast"));
    if (root < 0 || root >= c->size)
        return ZP_FAIL(ZP_EINVAL, "broadcast: root %d outside 0..%d", root, c->size - 1);
    ZP_MPI_CHECK(MPI_Bcast(buf, (int)count, raw_type(dt), root, c->mpi));
    return ZP_OK;
}

zp_status zp_cpu_alltoallv(zp_comm *c, const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                           const size_t *rcount, const size_t *rdispl, zp_dtype dt)
{
    if (!c || !scount || !sdispl || !rcount || !rdispl)
        return ZP_FAIL(ZP_EINVAL, "alltoallv: NULL communicator or count array");
    if (c->size == 1)
        return self_alltoallv(send, scount, sdispl, recv, rcount, rdispl, dt);
    const int n = c->size;
    int *v = malloc(4 * (size_t)n * sizeof *v); /* MPI counts and displacements are ints */
    if (!v)
        return ZP_FAIL(ZP_ENOMEM, "alltoallv: out of memory");
    zp_status st = ZP_OK;
    for (int q = 0; q < n && st == ZP_OK; q++) {
        const size_t x[4] = {scount[q], sdispl[q], rcount[q], rdispl[q]};
        for (int k = 0; k < 4; k++) {
            if (x[k] > (size_t)INT32_MAX) {
                st = ZP_FAIL(ZP_ERANGE, "alltoallv: %zu elements exceed MPI's int counts", x[k]);
                break;
            }
            v[k * n + q] = (int)x[k];
        }
    }
    if (st == ZP_OK) {
        MPI_Datatype type = raw_type(dt);
        int rc = MPI_Alltoallv(send, v, v + n, type, recv, v + 2 * n, v + 3 * n, type, c->mpi);
        if (rc != MPI_SUCCESS)
            st = zp_mpi_fail(rc, "MPI_Alltoallv", __FILE__, __LINE__);
    }
    free(v);
    return st;
}

#else /* no MPI: one rank */

zp_status zp_kernels_mpi_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return ZP_OK;
}

zp_status zp_kernels_mpi_finalize(void) { return ZP_OK; }

zp_status zp_kernels_mpi_abort(int code)
{
    (void)code;
    return ZP_OK;
}

zp_status zp_kernels_mpi_meet(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return ZP_OK;
}

static zp_status self_comm(const zp_kernels_backend *be, zp_comm **out)
{
    zp_comm *c = NULL;
    ZP_TRY(comm_alloc(be, &c));
    c->rank = 0;
    c->size = 1;
    return comm_attach(c, out);
}

zp_status zp_comm_world(const zp_kernels_backend *be, zp_comm **out) { return self_comm(be, out); }

zp_status zp_comm_split_node(const zp_comm *parent, zp_comm **out)
{
    if (!parent)
        return ZP_FAIL(ZP_EINVAL, "split: NULL communicator");
    return self_comm(parent->be, out);
}

zp_status zp_comm_split_cross(const zp_comm *parent, zp_comm **out)
{
    return zp_comm_split_node(parent, out);
}

zp_status zp_comm_node_count(const zp_comm *c, int *nodes)
{
    (void)c;
    *nodes = 1;
    return ZP_OK;
}

zp_status zp_comm_barrier(zp_comm *c)
{
    (void)c;
    return ZP_OK;
}

zp_status zp_comm_allreduce_double(zp_comm *c, double *value, zp_redop op)
{
    (void)c;
    (void)value;
    (void)op;
    return ZP_OK;
}

zp_status zp_cpu_allreduce(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt, zp_redop op)
{
    (void)c;
    (void)op;
    if (dt == ZP_DT_U8)
        return ZP_FAIL(ZP_EINVAL, "cannot reduce elements of type u8");
    return self_copy(send, recv, count, dt, "allreduce");
}

zp_status zp_cpu_reduce_scatter(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt,
                                zp_redop op)
{
    (void)c;
    (void)op;
    if (dt == ZP_DT_U8)
        return ZP_FAIL(ZP_EINVAL, "cannot reduce elements of type u8");
    return self_copy(send, recv, count, dt, "reduce_scatter");
}

zp_status zp_cpu_allgather(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt)
{
    (void)c;
    return self_copy(send, recv, count, dt, "allgather");
}

zp_status zp_cpu_broadcast(zp_comm *c, void *buf, size_t count, zp_dtype dt, int root)
{
    (void)c;
    (void)buf;
    if (root != 0)
        return ZP_FAIL(ZP_EINVAL, "broadcast: root %d outside 0..0", root);
    return zp_count_check(count, dt, "broadcast");
}

zp_status zp_cpu_alltoallv(zp_comm *c, const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                           const size_t *rcount, const size_t *rdispl, zp_dtype dt)
{
    (void)c;
    if (!scount || !sdispl || !rcount || !rdispl)
        return ZP_FAIL(ZP_EINVAL, "alltoallv: NULL count array");
    return self_alltoallv(send, scount, sdispl, recv, rcount, rdispl, dt);
}

#endif
