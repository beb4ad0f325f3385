/* zp_watchdog.c — configuration check and heartbeat watchdog for multi-rank runs (see zp_watchdog.h). */
#include "zp_watchdog.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zp_kernels_impl.h"
#include "zp_time.h"

uint64_t zp_config_hash(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

#define PHASE_LEN 64

typedef struct {
    uint64_t step;
    int32_t done;
    char phase[PHASE_LEN];
} heartbeat;

static struct {
    int running;
    pthread_t thread;
    atomic_int stop;
    double timeout, period;
    int rank, size;
    atomic_int multi; /* heartbeats are exchanged (set once the peers' tables and the communicator exist) */
    char who[64];
    atomic_uint_fast64_t step;
    _Atomic double last_beat;
    pthread_mutex_t lock; /* phase */
    char phase[PHASE_LEN];
    pthread_mutex_t wake_lock; /* the thread waits a period on `wake` (CLOCK_MONOTONIC), which stop signals: */
    pthread_cond_t wake;       /* stopping takes no period */
    int wake_ready;
#if ZP_HAVE_MPI
    MPI_Comm comm;
    heartbeat *out;       /* [size]: what is being sent to each peer (kept until the sends complete) */
    MPI_Request *req;     /* [size] */
    heartbeat *peer;      /* [size]: last heard */
    double *heard, *since; /* [size]: when last heard; since when its step is unchanged */
#endif
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake_lock = PTHREAD_MUTEX_INITIALIZER};

void zp_comm_watchdog_beat(const char *phase)
{
    if (!W.running)
        return;
    pthread_mutex_lock(&W.lock);
    snprintf(W.phase, sizeof W.phase, "%s", phase ? phase : "");
    pthread_mutex_unlock(&W.lock);
    atomic_fetch_add(&W.step, 1);
    atomic_store(&W.last_beat, zp_time_now_s());
}

static void my_phase(char *buf)
{
    pthread_mutex_lock(&W.lock);
    memcpy(buf, W.phase, PHASE_LEN);
    pthread_mutex_unlock(&W.lock);
    buf[PHASE_LEN - 1] = '\0';
}

/* The job is lost: say why, once, and end it. */
static void give_up(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void give_up(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s; ending the job (watchdog: %.0f s without progress)\n", W.who, msg, W.timeout);
    fflush(stderr);
#if ZP_HAVE_MPI
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin)
        MPI_Abort(MPI_COMM_WORLD, 3);
#endif
    _exit(3);
}

#if ZP_HAVE_MPI
enum { TAG_HB = 7301 };

/* Sends this rank's step and phase (and whether it is done) to every other rank, each from its own
 * buffer W.out[r]. */
static void send_heartbeats(int done)
{
    heartbeat mine = {.step = atomic_load(&W.step), .done = done};
    my_phase(mine.phase);
    for (int r = 0; r < W.size; r++) {
        if (r == W.rank)
            continue;
        int flag = 1;
        if (W.req[r] != MPI_REQUEST_NULL)
            MPI_Test(&W.req[r], &flag, MPI_STATUS_IGNORE);
        if (!flag)
            continue; /* the previous heartbeat is still on its way (a stopped peer): send no more */
        W.out[r] = mine;
        MPI_Isend(&W.out[r], (int)sizeof mine, MPI_BYTE, r, TAG_HB, W.comm, &W.req[r]);
    }
}

static void exchange(double t)
{
    send_heartbeats(0);
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_HB, W.comm, &flag, &st) != MPI_SUCCESS || !flag)
            break;
        heartbeat h;
        int r = st.MPI_SOURCE;
        if (MPI_Recv(&h, (int)sizeof h, MPI_BYTE, r, TAG_HB, W.comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            break;
        h.phase[PHASE_LEN - 1] = '\0';
        if (r < 0 || r >= W.size)
            continue;
        if (h.step != W.peer[r].step || W.heard[r] == 0)
            W.since[r] = t;
        W.heard[r] = t;
        W.peer[r] = h;
    }
}

/* Names the rank(s) the job waits for, if the job is lost. */
static void diagnose(double t, double idle)
{
    for (int r = 0; r < W.size; r++) {
        if (r == W.rank || W.peer[r].done)
            continue;
        if (t - W.heard[r] > W.timeout)
            give_up("rank %d has not been heard from for %.0f s (killed, stopped, or its node is gone); its last "
                    "phase: %s", r, t - W.heard[r], W.peer[r].phase[0] ? W.peer[r].phase : "start");
    }
    if (idle <= W.timeout)
        return;
    /* This rank has not progressed. A rank that already left (failed, or finished) cannot answer it: */
    char here[PHASE_LEN];
    my_phase(here);
    for (int r = 0; r < W.size; r++)
        if (r != W.rank && W.peer[r].done)
            give_up("rank %d left the run (it failed or finished early, after phase '%s') while rank %d waits in "
                    "phase '%s'", r, W.peer[r].phase[0] ? W.peer[r].phase : "start", W.rank, here);
    /* ... nor can a rank whose heartbeats stopped (it is about to pass the timeout above) */
    int late = -1;
    for (int r = 0; r < W.size; r++)
        if (r != W.rank && !W.peer[r].done && t - W.heard[r] > 2 * W.period + 0.5 &&
            (late < 0 || W.heard[r] < W.heard[late]))
            late = r;
    if (late >= 0)
        give_up("rank %d has not been heard from for %.0f s (killed, stopped, or its node is gone) while rank %d "
                "waits in phase '%s'; its last phase: %s", late, t - W.heard[late], W.rank, here,
                W.peer[late].phase[0] ? W.peer[late].phase : "start");
    /* otherwise the laggards are the live ranks with the fewest steps */
    uint64_t mine = atomic_load(&W.step), low = mine;
    for (int r = 0; r < W.size; r++)
        if (r != W.rank && !W.peer[r].done && W.peer[r].step < low)
            low = W.peer[r].step;
    char who[160] = "", ph[PHASE_LEN] = "";
    int n = 0, len = 0;
    for (int r = 0; r < W.size; r++) {
        int lag = r == W.rank ? mine == low : (!W.peer[r].done && W.peer[r].step == low);
        if (!lag)
            continue;
        if (!ph[0])
            snprintf(ph, sizeof ph, "%s", r == W.rank ? here : W.peer[r].phase);
        if (n < 8 && len < (int)sizeof who - 16)
            len += snprintf(who + len, sizeof who - (size_t)len, "%s%d", n ? ", " : "", r);
        n++;
    }
    if (n == W.size)
        give_up("no rank has progressed for %.0f s (all %d ranks wait in phase '%s'): a deadlock or a hung "
                "device", idle, W.size, ph);
    give_up("rank%s %s made no progress for %.0f s in phase '%s' while rank %d waits for %s", n > 1 ? "s" : "",
            who, idle, ph, W.rank, n > 1 ? "them" : "it");
}
#endif

static void *watch(void *arg)
{
    (void)arg;
    double last_loop = zp_time_now_s();
    while (!atomic_load(&W.stop)) {
        double t = zp_time_now_s();
        if (t - last_loop > 2 * W.period + 1.0) {
            /* this process itself was stopped (SIGSTOP, a suspended VM): what it knows of the others is
             * stale, so it starts counting again rather than blame them */
            atomic_store(&W.last_beat, t);
#if ZP_HAVE_MPI
            for (int r = 0; atomic_load(&W.multi) && r < W.size; r++)
                W.heard[r] = W.since[r] = t;
#endif
        }
        last_loop = t;
        double idle = t - atomic_load(&W.last_beat);
#if ZP_HAVE_MPI
        if (atomic_load(&W.multi)) {
            exchange(t);
            diagnose(t, idle);
        } else
#endif
            if (idle > W.timeout) {
            char ph[PHASE_LEN];
            my_phase(ph);
            give_up("rank %d made no progress for %.0f s in phase '%s' (it waits for another rank that died or "
                    "hangs%s, or hangs itself)", W.rank, idle, ph,
                    W.size > 1 && strcmp(ph, "start") == 0 ? " before the watchdog started" : "");
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)W.period;
        until.tv_nsec += (long)((W.period - floor(W.period)) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&W.wake_lock);
        while (!atomic_load(&W.stop) && pthread_cond_timedwait(&W.wake, &W.wake_lock, &until) == 0) {
            /* woken early without a stop (spurious): wait out the period */
        }
        pthread_mutex_unlock(&W.wake_lock);
    }
    return NULL;
}

zp_status zp_comm_watchdog_start(const zp_comm *c, double timeout_s, const char *who)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "watchdog: no communicator");
    if (!(timeout_s >= 1 && timeout_s <= 1e6))
        return ZP_FAIL(ZP_EINVAL, "watchdog: the timeout must be between 1 s and 1e6 s (got %g)", timeout_s);
    if (W.running)
        return ZP_FAIL(ZP_EINVAL, "watchdog: already running");
    if (!W.wake_ready) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        int rc = pthread_cond_init(&W.wake, &ca);
        pthread_condattr_destroy(&ca);
        if (rc != 0)
            return ZP_FAIL(ZP_ERUNTIME, "watchdog: cannot make its condition variable");
        W.wake_ready = 1;
    }
    W.timeout = timeout_s;
    W.period = timeout_s / 4 < 1.0 ? timeout_s / 4 : 1.0;
    W.rank = c->rank;
    W.size = c->size;
    atomic_store(&W.multi, 0);
    snprintf(W.who, sizeof W.who, "%s", who ? who : "zplan");
    snprintf(W.phase, sizeof W.phase, "start");
    atomic_store(&W.step, 0);
    atomic_store(&W.stop, 0);
    atomic_store(&W.last_beat, zp_time_now_s());
    /* the thread first watches this rank alone: the collective set-up below is covered too */
    W.running = 1;
    if (pthread_create(&W.thread, NULL, watch, NULL) != 0) {
        W.running = 0;
        return ZP_FAIL(ZP_ERUNTIME, "watchdog: cannot start its thread");
    }
#if ZP_HAVE_MPI
    int level = MPI_THREAD_SINGLE, inited = 0, multi = 0;
    MPI_Initialized(&inited);
    if (inited && c->mpi != MPI_COMM_NULL && c->size > 1) {
        MPI_Query_thread(&level);
        multi = level == MPI_THREAD_MULTIPLE;
    }
    if (multi) {
        size_t n = (size_t)c->size;
        W.out = calloc(n, sizeof *W.out);
        W.req = malloc(n * sizeof *W.req);
        W.peer = calloc(n, sizeof *W.peer);
        W.heard = calloc(n, sizeof *W.heard);
        W.since = calloc(n, sizeof *W.since);
        int rc = MPI_ERR_NO_MEM;
        if (W.out && W.req && W.peer && W.heard && W.since)
            rc = MPI_Comm_dup(c->mpi, &W.comm);
        if (rc != MPI_SUCCESS) {
            zp_comm_watchdog_stop();
            free(W.out), free(W.req), free(W.peer), free(W.heard), free(W.since);
            W.out = NULL, W.req = NULL, W.peer = NULL, W.heard = NULL, W.since = NULL;
            return rc == MPI_ERR_NO_MEM ? ZP_FAIL(ZP_ENOMEM, "out of memory")
                                        : zp_mpi_fail(rc, "MPI_Comm_dup (watchdog)", __FILE__, __LINE__);
        }
        double t = zp_time_now_s();
        for (size_t r = 0; r < n; r++) {
            W.req[r] = MPI_REQUEST_NULL;
            W.heard[r] = t; /* a peer gets the full timeout to send its first heartbeat */
            W.since[r] = t;
        }
        atomic_store(&W.multi, 1);
    }
#endif
    return ZP_OK;
}

void zp_comm_watchdog_stop(void)
{
    if (!W.running)
        return;
    pthread_mutex_lock(&W.wake_lock);
    atomic_store(&W.stop, 1);
    pthread_cond_signal(&W.wake);
    pthread_mutex_unlock(&W.wake_lock);
    pthread_join(W.thread, NULL);
    W.running = 0;
#if ZP_HAVE_MPI
    if (atomic_load(&W.multi)) {
        atomic_store(&W.multi, 0);
        /* tell the others this rank is done (it will not be heard from again), then let go of the sends:
         * a send to a peer that is gone never completes, so its buffer is kept (W.out is not freed then) */
        int pending = 0;
        send_heartbeats(1);
        double until = zp_time_now_s() + 1.0;
        for (int r = 0; r < W.size; r++) {
            int flag = W.req[r] == MPI_REQUEST_NULL;
            while (!flag && zp_time_now_s() < until)
                MPI_Test(&W.req[r], &flag, MPI_STATUS_IGNORE);
            if (!flag) {
                MPI_Request_free(&W.req[r]);
                pending = 1;
            }
        }
        MPI_Comm_free(&W.comm);
        free(W.req), free(W.peer), free(W.heard), free(W.since);
        W.req = NULL, W.peer = NULL, W.heard = NULL, W.since = NULL;
        if (!pending) {
            free(W.out);
            W.out = NULL;
        }
    }
#endif
}

zp_status zp_comm_watchdog_wait_all(zp_comm *c, const char *phase)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "wait: NULL communicator");
#if ZP_HAVE_MPI
    MPI_Request req;
    int rc = MPI_Ibarrier(c->mpi, &req);
    if (rc != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Ibarrier failed (error %d)", rc);
    for (;;) {
        int done = 0;
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return ZP_FAIL(ZP_ERUNTIME, "MPI_Test failed (error %d)", rc);
        if (done)
            return ZP_OK;
        zp_comm_watchdog_beat(phase);
        struct timespec ts = {0, 20 * 1000 * 1000}; /* 20 ms: a wait costs no core */
        nanosleep(&ts, NULL);
    }
#else
    (void)phase;
    return ZP_OK; /* one rank */
#endif
}

zp_status zp_comm_check_same_config(const zp_comm *c, uint64_t hash, const char *what)
{
    if (!c)
        return ZP_FAIL(ZP_EINVAL, "configuration check: no communicator");
#if ZP_HAVE_MPI
    if (c->size <= 1 || c->mpi == MPI_COMM_NULL)
        return ZP_OK;
    uint64_t *all = calloc((size_t)c->size, sizeof *all);
    if (!all)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int rc = MPI_Allgather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, c->mpi);
    if (rc != MPI_SUCCESS) {
        free(all);
        return zp_mpi_fail(rc, "MPI_Allgather (configuration check)", __FILE__, __LINE__);
    }
    char list[128] = "";
    int n = 0, len = 0;
    for (int r = 1; r < c->size; r++) {
        if (all[r] == all[0])
            continue;
        if (n < 8)
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", n ? ", " : "", r);
        n++;
    }
    free(all);
    if (n)
        return ZP_FAIL(ZP_EINVAL, "rank%s %s%s started with a different %s than rank 0: every rank must get the same "
                       "options; refused", n > 1 ? "s" : "", list, n > 8 ? ", ..." : "", what ? what : "configuration");
#else
    (void)hash;
    (void)what;
#endif
    return ZP_OK;
}
