/* zp_cli_sweep.c — `zplan sweep`: the what-if search of every cell (models x clusters x GPU counts, or the
 * rows of a grid file), one row per cell, split over MPI ranks under mpirun.
 *
 * Every rank reads the same options and cells and checks all of them before MPI starts: bad input exits
 * 2 on every rank (rank 0 says why) before any work. Under mpirun (the launcher's environment says more
 * than one rank) the ranks start MPI, a watchdog (kernels/zp_watchdog.h) names a rank that dies or
 * hangs, cell i is computed by rank i % ranks (zp_sweep_owner), each finished row is appended to the
 * partial file, and once every rank is done rank 0 gathers the rows (raw bytes) and writes them in cell
 * order, atomically: the output does not depend on the number of ranks. Without a launcher no MPI is
 * started at all. The simulations fork (zp_simrun): after MPI_Init that is safe as long as the child
 * calls no MPI, which it does not (it runs SimGrid and _exits). */
#include "zp_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zp_config.h"
#include "zp_kernels.h"
#include "zp_progress.h"
#include "zp_sweep.h"
#include "zp_views.h"
#include "zp_watchdog.h"

static const char USAGE[] =
    "Usage: zplan sweep --models LIST --gpus LIST [--cluster LIST] [plan options] [options]\n"
    "       zplan sweep --grid FILE [plan options] [options]\n"
    "       mpirun -np N zplan sweep ...\n"
    "Runs the what-if search of every cell (each model on each GPU count of each cluster, or each row of\n"
    "a grid file) and writes one row per cell: its best plan (stage, MP, DP, batch, ZeRO-R options,\n"
    "memory, step time, throughput), or \"nothing fits\". Under mpirun the cells are split over the ranks\n"
    "(cell i on rank i mod N) and rank 0 writes the rows in cell order: byte for byte the output of the\n"
    "same sweep without mpirun.\n"
    "\n"
    "  --models LIST        models: zoo names, sizes or config.json paths (--model M: one model)\n"
    "  --gpus LIST          GPU counts (K/M suffixes: 1K = 1000), e.g. 1K,2K,4K,8K,16K,32K,64K,100K\n"
    "  --cluster LIST       cluster presets or platform files (default dgx2)\n"
    "  --grid FILE          the cells from a CSV file instead: a header naming the columns model and\n"
    "                       gpus (and cluster: empty or absent is --cluster), then one cell per line;\n"
    "                       blank lines and lines starting with # are skipped\n"
    "  --report scaling     instead of the rows, the scaling report of one model on one cluster, as\n"
    "                       `zplan report scaling` makes it (TFLOPs per GPU and aggregate PFLOPs against\n"
    "                       GPUs; at most 64 GPU counts)\n"
    "  --format F           text (default), md, csv, json or html\n"
    "  -o, --output FILE    write to FILE (atomically) once every cell is done\n"
    "  --partial FILE       append each row to FILE (CSV with its cell number) as soon as it is done;\n"
    "                       default: OUTPUT.partial with -o, none without. Removed when the sweep\n"
    "                       succeeds, kept when it stops early; the sweep refuses to start over one\n"
    "  --jobs N             simulations at once per rank (default: the online CPUs / the ranks on the node)\n"
    "  --timeout S          under mpirun: end the job, naming the rank, when a rank dies or makes no\n"
    "                       progress for S seconds while the others wait (default 600)\n"
    "Plan options are the what-if's (zplan --help), the same constraints for every cell: --stage, --mp,\n"
    "--ep, --micro-batch, --global-batch, --grad-accum, --seq, --pa, --no-pa, --pa-cpu, --offload,\n"
    "--checkpoint/--no-checkpoint, --no-cb, --bucket, --no-md, --overlap-comm, --exact, --gpu-mem,\n"
    "--preset, --profile, --oversubscription, --capacity-factor, --moe-imbalance, --analytic, --sim.\n"
    "A sweep has at most 4096 cells. Bad input exits 2 before any cell runs: a model, cluster or option\n"
    "a cell cannot take, a GPU count the cluster's fabric cannot hold, a bad grid row (file:line), too\n"
    "many cells. A cell whose options leave no plan is a row saying so. A rank that dies or hangs ends the\n"
    "job (the watchdog names it): the output is not written, the rows done are kept in the partial file.\n"
    "Exit status: 0 ok, 1 run-time failure, 2 bad usage or input.\n";

/* The sweep as every rank sees it. */
typedef struct {
    const char *name;      /* the command: "zplan sweep" or "zplan report scaling" */
    const char *who;       /* the prefix of its error messages: "zplan sweep", or "zplan" as every report's */
    zp_cli_plan base;      /* the options, common to every cell */
    zp_sweep_cells cells;
    int rank, ranks;
    const char *partial;   /* the partial file, or NULL */
    char partial_buf[4096];
    int partial_fd;
} sweep;

/* Resolves cell i into o: the base options with the cell's model, cluster and GPU count, checked. */
static zp_status cell_resolve(const sweep *s, int i, zp_cli_plan *o)
{
    const zp_sweep_cell *c = &s->cells.cells[i];
    *o = s->base;
    o->a.model = c->model;
    o->a.cluster = c->cluster;
    o->a.gpus = NULL;
    o->a.r.gpus = c->gpus;
    zp_status st = zp_cli_plan_resolve(o, 1, 0);
    if (st == ZP_OK)
        st = zp_search_validate(&o->a.r);
    if (st == ZP_OK)
        return ZP_OK;
    if (c->line > 0)
        return ZP_FAIL(st, "%s:%d: %s", s->base.a.grid, c->line, zp_error_message());
    return ZP_FAIL(st, "cell %d (%s on %lld GPUs of %s): %s", i + 1, c->model, (long long)c->gpus, c->cluster,
                   zp_error_message());
}

/* The GPU counts of a scaling report without --gpus: the ZeRO paper's Figure 3 on its cluster, and the
 * 1K-100K GPUs of today's frontier runs on any other (the last row: every cluster). */
static const struct {
    const char *cluster, *gpus;
} g_scaling_gpus[] = {
    {"dgx2", "64,128,256,400"},
    {"", "1024,2048,4096,8192,16384,32768,65536,102400"},
};

static const char *scaling_gpus(const char *cluster)
{
    const int n = (int)(sizeof g_scaling_gpus / sizeof g_scaling_gpus[0]);
    for (int i = 0; i < n - 1; i++)
        if (strcmp(cluster, g_scaling_gpus[i].cluster) == 0)
            return g_scaling_gpus[i].gpus;
    return g_scaling_gpus[n - 1].gpus;
}

/* The cells, from the lists or the grid file, each checked; and what the output is made of. */
static zp_status sweep_cells(sweep *s)
{
    zp_cli_args *a = &s->base.a;
    const char *models = a->models ? a->models : a->model;
    if (a->model && a->models)
        return ZP_FAIL(ZP_EINVAL, "give --models LIST or --model M, not both");
    if (a->sweep_report && !a->gpus && !a->grid)
        a->gpus = scaling_gpus(a->cluster);
    if (a->grid) {
        if (models || a->gpus)
            return ZP_FAIL(ZP_EINVAL, "--grid FILE lists the cells: drop --models/--model and --gpus");
        if (strchr(a->cluster, ','))
            return ZP_FAIL(ZP_EINVAL, "--cluster: with --grid, one cluster (the default of the grid's rows)");
        ZP_TRY(zp_sweep_grid_read(a->grid, a->cluster, &s->cells));
    } else {
        if (!models || !a->gpus)
            return ZP_FAIL(ZP_EINVAL, "--models LIST and --gpus LIST are required, or --grid FILE (see zplan "
                                      "sweep --help)");
        ZP_TRY(zp_sweep_cells_cross(models, a->cluster, a->gpus, &s->cells));
    }
    if (a->sweep_report) { /* scaling: one model on one cluster */
        const zp_sweep_cells *c = &s->cells;
        for (int i = 1; i < c->n; i++)
            if (strcmp(c->cells[i].model, c->cells[0].model) || strcmp(c->cells[i].cluster, c->cells[0].cluster))
                return ZP_FAIL(ZP_EINVAL, "--report scaling: the report of one model on one cluster (cells %d and %d "
                                          "differ)", 1, i + 1);
        if (c->n > ZP_CHART_MAX_POINTS)
            return ZP_FAIL(ZP_EINVAL, "--report scaling: at most %d GPU counts (got %d)", ZP_CHART_MAX_POINTS, c->n);
    }
    zp_cli_plan *o = malloc(sizeof *o);
    if (!o)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
    for (int i = 0; i < s->cells.n && st == ZP_OK; i++)
        st = cell_resolve(s, i, o);
    free(o);
    return st;
}

/* A hash of what every rank must agree on: the command line and the cells (a grid file read alike). */
static uint64_t sweep_hash(const sweep *s, int argc, char **argv)
{
    uint64_t h = 0;
    for (int i = 1; i < argc; i++)
        h = zp_config_hash(argv[i], strlen(argv[i]) + 1, h);
    for (int i = 0; i < s->cells.n; i++) {
        const zp_sweep_cell *c = &s->cells.cells[i];
        h = zp_config_hash(c->model, strlen(c->model) + 1, h);
        h = zp_config_hash(c->cluster, strlen(c->cluster) + 1, h);
        h = zp_config_hash(&c->gpus, sizeof c->gpus, h);
    }
    return h;
}

/* ---- the partial file: rows appended as they finish, by every rank (O_APPEND: one write a row) ---- */

static zp_status write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return ZP_FAIL(ZP_EIO, "writing the partial file failed: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return ZP_OK;
}

/* The CSV of the sweep's table with `row` (the header alone when NULL): its header line or its row, with
 * every column (the pipeline ones too), so that each row lines up with the header written first. */
static zp_status partial_write(const sweep *s, const zp_sweep_row *row)
{
    zp_table *t;
    ZP_TRY(zp_view_sweep_table(s->cells.cells, row, row ? 1 : 0, 1, &t));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    zp_status st = f ? zp_table_write(t, f, ZP_FMT_CSV) : ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (f && fclose(f) != 0 && st == ZP_OK)
        st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_table_free(t);
    if (st == ZP_OK) {
        const char *nl = strchr(text, '\n');
        const char *line = row && nl ? nl + 1 : text; /* a row: without the header */
        st = write_all(s->partial_fd, line, len - (size_t)(line - text));
    }
    free(text);
    return st;
}

/* Rank 0 creates the partial file with its header; the others append to it once it exists. */
static zp_status partial_open(sweep *s, int create)
{
    if (!s->partial)
        return ZP_OK;
    int flags = create ? O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC : O_WRONLY | O_APPEND | O_CLOEXEC;
    s->partial_fd = open(s->partial, flags, 0666);
    if (s->partial_fd < 0)
        return ZP_FAIL(ZP_EIO, "--partial: cannot %s %s: %s", create ? "create" : "open", s->partial,
                       strerror(errno));
    return create ? partial_write(s, NULL) : ZP_OK;
}

static void partial_close(sweep *s)
{
    if (s->partial_fd >= 0)
        close(s->partial_fd);
    s->partial_fd = -1;
}

/* ---- a rank stopped by a signal (mpirun ends the job when a rank dies; ^C) says what is kept ---- */

static char g_stop_msg[1024];
static pid_t g_stop_pid; /* the rank's process: a simulation it forked inherits the handler, and is quiet */

static void on_stop(int sig)
{
    if (getpid() == g_stop_pid && write(STDERR_FILENO, g_stop_msg, strlen(g_stop_msg)) < 0) {
        /* nothing more to do: the process ends */
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void stop_handlers(const sweep *s)
{
    const char *out = s->base.a.out;
    if (s->partial)
        snprintf(g_stop_msg, sizeof g_stop_msg, "%s: rank %d stopped by a signal; the rows done so far are "
                                                "in %s%s%s\n", s->name, s->rank, s->partial, out ? ", and " : "",
                 out ? "the output was not written" : "");
    else
        snprintf(g_stop_msg, sizeof g_stop_msg, "%s: rank %d stopped by a signal; nothing written (-o or "
                                                "--partial keep the rows done as they finish)\n", s->name, s->rank);
    g_stop_pid = getpid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* ---- the work ---- */

/* A search progressed: a sign of life for the watchdog. */
static void on_progress(void *ctx, int done, int total)
{
    (void)ctx;
    (void)done;
    (void)total;
    zp_comm_watchdog_beat("simulating a cell's plans");
}

/* Computes this rank's cells (rank, rank + ranks, ...) into rows[0..share), appending each to the
 * partial file. */
static zp_status sweep_compute(sweep *s, int jobs, zp_sweep_row *rows)
{
    const int share = zp_sweep_share(s->cells.n, s->rank, s->ranks);
    zp_cli_plan *o = malloc(sizeof *o);
    if (!o)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_progress bar;
    zp_progress_init(&bar, "sweep");
    if (s->rank != 0)
        bar.enabled = 0;
    zp_status st = ZP_OK;
    for (int k = 0; k < share && st == ZP_OK; k++) {
        const int i = s->rank + k * s->ranks;
        /* the watchdog keeps the phase's pointer: two buffers in turn, the one it holds is not rewritten */
        static char phase[2][64];
        snprintf(phase[k & 1], sizeof phase[k & 1], "cell %d", i + 1);
        zp_comm_watchdog_beat(phase[k & 1]);
        st = cell_resolve(s, i, o);
        if (st != ZP_OK)
            break;
        o->a.r.jobs = jobs;
        o->a.r.progress = on_progress;
        zp_search_result res;
        st = zp_search_run(&o->a.r, &res);
        if (st == ZP_EINVAL) { /* the options leave this cell no plan: a row that says so */
            zp_sweep_row_none(&rows[k], i, &o->model, zp_error_message());
            st = ZP_OK;
        } else if (st == ZP_OK) {
            zp_sweep_row_fill(&rows[k], i, &o->model, &res);
            zp_search_result_free(&res);
        } else {
            const zp_sweep_cell *c = &s->cells.cells[i];
            st = ZP_FAIL(st, "cell %d (%s on %lld GPUs of %s): %s", i + 1, c->model, (long long)c->gpus, c->cluster,
                         zp_error_message());
        }
        if (st == ZP_OK && s->partial)
            st = partial_write(s, &rows[k]);
        zp_progress_update(&bar, k + 1, share);
    }
    zp_progress_done(&bar);
    free(o);
    return st;
}

/* The document of the rows, in cell order. */
static zp_status sweep_doc(sweep *s, const zp_sweep_row *rows, zp_doc **d)
{
    const int n = s->cells.n;
    if (!s->base.a.sweep_report)
        return zp_view_sweep(s->cells.cells, rows, n, d);
    /* scaling: one model on one cluster, as `zplan report scaling` makes it */
    zp_cli_plan *o = malloc(sizeof *o);
    zp_eval *best = calloc((size_t)n, sizeof *best);
    int *found = calloc((size_t)n, sizeof *found);
    int64_t *gpus = calloc((size_t)n, sizeof *gpus);
    zp_status st = o && best && found && gpus ? cell_resolve(s, 0, o) : ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < n && st == ZP_OK; i++) {
        best[i] = zp_sweep_row_eval(&rows[i]);
        found[i] = rows[i].found;
        gpus[i] = s->cells.cells[i].gpus;
    }
    if (st == ZP_OK)
        st = zp_view_scaling_doc(&o->model, o->cluster, gpus, best, found, n, d);
    free(o);
    free(best);
    free(found);
    free(gpus);
    return st;
}

/* Rank 0: the output, atomically; then the partial file is no longer needed. */
static zp_status sweep_write(sweep *s, const zp_sweep_row *rows)
{
    zp_doc *d;
    ZP_TRY(sweep_doc(s, rows, &d));
    zp_cli_out out;
    zp_status st = zp_cli_out_open(s->base.a.out, &out);
    if (st == ZP_OK) {
        st = zp_doc_write(d, out.f, s->base.a.fmt);
        st = zp_cli_out_close(&out, st);
    }
    zp_doc_free(d);
    if (st == ZP_OK && s->partial && unlink(s->partial) != 0)
        st = ZP_FAIL(ZP_EIO, "removing the partial file %s: %s", s->partial, strerror(errno));
    return st;
}

/* Every rank's rows on every rank (rank r's rows are cells r, r + ranks, ...), in cell order into all. */
static zp_status gather(sweep *s, zp_comm *world, const zp_sweep_row *mine, zp_sweep_row *all)
{
    const int slot = zp_sweep_share(s->cells.n, 0, s->ranks); /* rank 0 has the most */
    zp_sweep_row *send = calloc((size_t)slot, sizeof *send);
    zp_sweep_row *recv = calloc((size_t)slot * (size_t)s->ranks, sizeof *recv);
    zp_status st = send && recv ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (st == ZP_OK) {
        memcpy(send, mine, (size_t)zp_sweep_share(s->cells.n, s->rank, s->ranks) * sizeof *send);
        st = zp_kernels_cpu.allgather(world, send, recv, (size_t)slot * sizeof *send, ZP_DT_U8);
    }
    for (int i = 0; i < s->cells.n && st == ZP_OK; i++)
        all[i] = recv[(size_t)zp_sweep_owner(i, s->ranks) * (size_t)slot + (size_t)(i / s->ranks)];
    free(send);
    free(recv);
    return st;
}

/* The default simulations at once of a rank: the node's CPUs shared by its ranks. */
static int rank_jobs(const zp_comm *world)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    zp_comm *node = NULL;
    int local = 1;
    if (zp_comm_split_node(world, &node) == ZP_OK)
        local = zp_comm_size(node);
    zp_comm_free(node);
    long jobs = cpus / (local > 0 ? local : 1);
    return jobs >= 1 ? (int)jobs : 1;
}

/* After the checks: MPI (when launched with several ranks), the cells of this rank, the gather and
 * rank 0's output. */
static int sweep_run(sweep *s, int argc, char **argv)
{
    zp_comm *world = NULL;
    int watching = 0, jobs = s->base.a.r.jobs; /* 0: the search's default, the online CPUs */
    zp_status st = ZP_OK;
    if (s->ranks > 1) {
        int argc2 = argc;
        char **argv2 = argv;
        st = zp_kernels_mpi_init(&argc2, &argv2);
        if (st == ZP_OK)
            st = zp_comm_world(&zp_kernels_cpu, &world);
        if (st == ZP_OK && zp_comm_size(world) != s->ranks)
            st = ZP_FAIL(ZP_ERUNTIME, "the launcher announced %d ranks, MPI has %d", s->ranks, zp_comm_size(world));
        if (st == ZP_OK)
            st = zp_comm_watchdog_start(world, s->base.a.timeout_s, s->name);
        watching = st == ZP_OK;
        if (st == ZP_OK)
            st = zp_comm_check_same_config(world, sweep_hash(s, argc, argv), "sweep (options or cells)");
        if (st == ZP_OK && jobs <= 0)
            jobs = rank_jobs(world);
    }
    if (st == ZP_OK && s->rank == 0)
        st = partial_open(s, 1);
    if (st == ZP_OK && s->ranks > 1)
        st = zp_comm_barrier(world); /* the partial file exists */
    if (st == ZP_OK && s->rank != 0)
        st = partial_open(s, 0);
    stop_handlers(s);
    const int share = zp_sweep_share(s->cells.n, s->rank, s->ranks);
    zp_sweep_row *mine = calloc((size_t)(share > 0 ? share : 1), sizeof *mine);
    zp_sweep_row *all = s->rank == 0 ? calloc((size_t)s->cells.n, sizeof *all) : NULL;
    if (st == ZP_OK && (!mine || (s->rank == 0 && !all)))
        st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (st == ZP_OK)
        st = sweep_compute(s, jobs, mine);
    partial_close(s);
    if (st == ZP_OK && s->ranks > 1) /* every rank has finished its cells; the watchdog sees this one alive */
        st = zp_comm_watchdog_wait_all(world, "waiting for the other ranks' cells");
    if (st == ZP_OK && s->ranks > 1) {
        zp_sweep_row *every = s->rank == 0 ? all : calloc((size_t)s->cells.n, sizeof *every);
        st = every ? gather(s, world, mine, every) : ZP_FAIL(ZP_ENOMEM, "out of memory");
        if (every != all)
            free(every);
    } else if (st == ZP_OK) {
        memcpy(all, mine, (size_t)s->cells.n * sizeof *all);
    }
    const int gathered = st == ZP_OK; /* no rank waits for another any more */
    if (watching)
        zp_comm_watchdog_stop();
    if (st == ZP_OK && s->rank == 0)
        st = sweep_write(s, all);
    int rc = 0;
    if (st != ZP_OK) {
        char who[32] = "";
        if (s->ranks > 1)
            snprintf(who, sizeof who, "rank %d: ", s->rank);
        fprintf(stderr, "%s: %s%s%s%s%s\n", s->who, who, zp_error_message(),
                s->partial ? "; the rows done so far are in " : "", s->partial ? s->partial : "",
                s->base.a.out ? " (the output was not written)" : "");
        rc = zp_status_exit_code(st);
    }
    free(mine);
    free(all);
    if (rc != 0 && s->ranks > 1 && !gathered)
        zp_kernels_mpi_abort(rc); /* the others may wait in a collective: end the job */
    zp_comm_free(world);
    if (s->ranks > 1)
        zp_kernels_mpi_finalize();
    return rc;
}

/* `name` runs the sweep (report: NULL, the rows; or the report it makes of them, as --report KIND). */
static int sweep_main(int argc, char **argv, const char *name, const char *report, const char *usage)
{
    const char *prefix = report ? "zplan" : name;
    sweep *s = calloc(1, sizeof *s);
    if (!s)
        return zp_cli_fail_as(prefix, ZP_FAIL(ZP_ENOMEM, "out of memory"));
    s->name = name;
    s->who = prefix;
    s->rank = zp_cli_launch_rank();
    s->ranks = zp_cli_launch_size();
    s->partial_fd = -1;
    const int speak = s->rank == 0; /* bad input: every rank finds it, rank 0 says it */
    zp_status st = zp_cli_plan_parse(ZP_CMD_SWEEP, name, argc, argv, &s->base);
    if (st == ZP_OK && s->base.a.help) {
        if (speak)
            fputs(usage, stdout);
        free(s);
        return 0;
    }
    if (st == ZP_OK && report && s->base.a.sweep_report)
        st = ZP_FAIL(ZP_EINVAL, "--report: %s makes its report already", name);
    if (st == ZP_OK && report && s->base.a.models)
        st = ZP_FAIL(ZP_EINVAL, "report %s takes --model, not --models", report);
    if (st == ZP_OK && report && s->base.a.grid)
        st = ZP_FAIL(ZP_EINVAL, "report %s takes --model and --gpus LIST, not --grid (zplan sweep --grid FILE "
                                "--report %s takes one)", report, report);
    if (st == ZP_OK && report)
        s->base.a.sweep_report = report;
#if !ZP_HAVE_MPI
    if (st == ZP_OK && s->ranks > 1)
        st = ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without MPI: run it without mpirun");
#endif
    if (st == ZP_OK)
        st = sweep_cells(s);
    if (st == ZP_OK) {
        const char *out = s->base.a.out;
        if (s->base.a.partial) {
            s->partial = s->base.a.partial;
        } else if (out) {
            snprintf(s->partial_buf, sizeof s->partial_buf, "%s.partial", out);
            s->partial = s->partial_buf;
        }
        struct stat sb;
        if (s->partial && out && strcmp(s->partial, out) == 0)
            st = ZP_FAIL(ZP_EINVAL, "--partial: %s is the output itself", out);
        else if (s->partial && lstat(s->partial, &sb) == 0)
            st = ZP_FAIL(ZP_EINVAL, "%s exists: the rows of an earlier sweep that stopped early. Keep them elsewhere "
                                    "or remove the file, then run again (or name another with --partial FILE)",
                         s->partial);
    }
    int rc;
    if (st != ZP_OK)
        rc = speak ? zp_cli_fail_as(prefix, st) : zp_status_exit_code(st);
    else
        rc = sweep_run(s, argc, argv);
    zp_sweep_cells_free(&s->cells);
    free(s);
    return rc;
}

int zp_cli_sweep(int argc, char **argv)
{
    return zp_cli_launch_exit(argc, argv, sweep_main(argc, argv, "zplan sweep", NULL, USAGE));
}

int zp_cli_sweep_report(const char *kind, int argc, char **argv, const char *usage)
{
    char name[64];
    snprintf(name, sizeof name, "zplan report %s", kind);
    return zp_cli_launch_exit(argc, argv, sweep_main(argc, argv, name, kind, usage));
}
