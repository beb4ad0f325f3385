/* zp_engine.c — the engine's run: which simulation (full or reduced), the state set up (groups and the
 * fabric: zp_fabric.c; the platform: zp_platform.c), the stream actors run (zp_actors.c) and the result
 * and trace (zp_trace.c) collected; and the stream bounds of the search (zp_collcost.c). */
#include "zp_engine.h"

#include <math.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>

#include "zp_collcost.h"
#include "zp_eng.h"
#include "zp_pipeline.h"

static zp_status pick_mode(const zp_sim_input *in, const zp_net *N, zp_sim_mode *mode)
{
    if (in->sim == ZP_SIM_REDUCED && in->platform_file)
        return ZP_FAIL(ZP_EINVAL, "--sim reduced: a user platform (--cluster FILE) is simulated in full (its nodes "
                                  "need not be alike)");
    if (in->sim == ZP_SIM_FULL || in->sim == ZP_SIM_REDUCED)
        *mode = in->sim;
    else
        *mode = N->exact && N->period < N->nodes ? ZP_SIM_REDUCED : ZP_SIM_FULL;
    return ZP_OK;
}

zp_status zp_engine_pick(const zp_sim_input *in, zp_sim_mode *mode, char *why, size_t len)
{
    zp_net N;
    if (why && len)
        why[0] = '\0';
    if (in->platform_file) {
        /* the platform's own node size does not change whether it is symmetric: not read here */
        memset(&N, 0, sizeof N);
        snprintf(N.why, sizeof N.why, "a user platform need not be symmetric");
    } else {
        ZP_TRY(zp_fabric_setup(in, 0, &N));
    }
    ZP_TRY(pick_mode(in, &N, mode));
    if (why && len && (in->platform_file || !N.exact))
        snprintf(why, len, "%s", N.why);
    return ZP_OK;
}

const char *zp_sim_mode_name(zp_sim_mode m)
{
    static const char *const names[] = {"auto", "full", "reduced"};
    return (unsigned)m < sizeof names / sizeof names[0] ? names[m] : "?";
}

zp_status zp_sim_mode_parse(const char *s, zp_sim_mode *out)
{
    for (int m = ZP_SIM_AUTO; m <= ZP_SIM_REDUCED; m++)
        if (s && strcmp(s, zp_sim_mode_name((zp_sim_mode)m)) == 0) {
            *out = (zp_sim_mode)m;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--sim: '%s' is not full, reduced or auto", s ? s : "");
}

static zp_status run_schedules(const zp_sim_input *in, const zp_schedule *scheds, int nstages, zp_sim_result *out);

zp_status zp_engine_run(const zp_sim_input *in, zp_sim_result *out)
{
    const int P = in->plan->pp > 1 ? (int)in->plan->pp : 1;
    zp_schedule *sc = calloc((size_t)P, sizeof *sc);
    if (!sc)
        return ZP_FAIL(ZP_ENOMEM, "out of memory building the schedules");
    zp_status st = ZP_OK;
    for (int s = 0; s < P && st == ZP_OK; s++)
        st = zp_schedule_build_stage(in->model, in->plan, s, &sc[s]);
    if (st == ZP_OK)
        st = run_schedules(in, sc, P, out);
    for (int s = 0; s < P; s++)
        zp_schedule_free(&sc[s]);
    free(sc);
    return st;
}

zp_status zp_engine_stream_bounds(const zp_sim_input *in, const zp_schedule *sc, double *compute_colls_s,
                                  double *comm_s)
{
    *compute_colls_s = *comm_s = 0.0;
    if (in->platform_file || in->plan->pp > 1)
        return ZP_OK; /* a user's links, a pipeline's stages: not bounded here */
    zp_net n;
    ZP_TRY(zp_fabric_setup(in, 0, &n));
    *compute_colls_s = zp_collcost_stream_least(&n, sc, ZP_STREAM_COMPUTE);
    /* the comm stream and the EP overlap's stream each run their collectives one after another */
    *comm_s = fmax(zp_collcost_stream_least(&n, sc, ZP_STREAM_COMM), zp_collcost_stream_least(&n, sc, ZP_STREAM_EP));
    return ZP_OK;
}

zp_status zp_engine_op_least(const zp_sim_input *in, const zp_schedule *sc, zp_stream s, double *least)
{
    for (int i = 0; i < sc->n[s]; i++)
        least[i] = 0.0;
    if (in->platform_file)
        return ZP_OK; /* a user's links: not bounded here */
    zp_net n;
    ZP_TRY(zp_fabric_setup(in, 0, &n));
    /* a collective's least time depends on its kind and bytes alone (zp_collcost_stream_least): the few
     * a block repeats are kept */
    enum { SEEN = 8 };
    struct {
        int type;
        double bytes, t;
    } seen[SEEN];
    int nseen = 0;
    for (int i = 0; i < sc->n[s]; i++) {
        const zp_op *op = &sc->ops[s][i];
        if (zp_op_table[op->type].cls != ZP_OPC_COLL)
            continue;
        int k = 0;
        while (k < nseen && (seen[k].type != op->type || seen[k].bytes != op->bytes))
            k++;
        if (k == nseen) {
            k = nseen < SEEN ? nseen++ : SEEN - 1;
            seen[k].type = op->type;
            seen[k].bytes = op->bytes;
            seen[k].t = zp_collcost_least_time(&n, op);
        }
        least[i] = seen[k].t;
    }
    return ZP_OK;
}

zp_status zp_engine_run_schedule(const zp_sim_input *in, const zp_schedule *sched, zp_sim_result *out)
{
    if (in->plan->pp > 1)
        return ZP_FAIL(ZP_EINVAL, "a plan of %lld pipeline stages has one schedule per stage",
                       (long long)in->plan->pp);
    return run_schedules(in, sched, 1, out);
}

/* Every op of the schedules has a valid kind. */
static zp_status check_schedules(const zp_schedule *scheds, int nstages)
{
    for (int st = 0; st < nstages; st++)
        for (int s = 0; s < ZP_NSTREAMS; s++)
            for (int i = 0; i < scheds[st].n[s]; i++)
                if (!zp_op_info_get(scheds[st].ops[s][i].type))
                    return ZP_FAIL(ZP_EINVAL, "schedule op %d of the %s stream has no valid kind", i,
                                   zp_stream_name((zp_stream)s));
    return ZP_OK;
}

/* The simulation's shape: groups and fabric, pipeline placement, full or reduced, the nodes instantiated
 * (E->per_stage per stage); checked against a user platform's nodes. */
static zp_status shape_run(zp_eng *E, const zp_sim_input *in, int nstages)
{
    const zp_plan *p = in->plan;
    int64_t gpus = zp_plan_gpus(p);
    int platform_gpn = 0, platform_nodes = 0;
    if (in->platform_file)
        ZP_TRY(zp_engine_check_platform(in->platform_file, &platform_gpn, &platform_nodes));
    ZP_TRY(zp_fabric_setup(in, platform_gpn, &E->n));
    E->stages_per_node = 1;
    if (nstages > 1) {
        zp_pp_place pl;
        ZP_TRY(zp_pp_place_get(p, platform_gpn > 0 ? platform_gpn : zp_cluster_domain(in->cluster), &pl));
        E->stages_per_node = pl.stages_per_node;
        if (in->platform_file && E->stages_per_node > 1)
            return ZP_FAIL(ZP_EINVAL, "--cluster %s: pipeline stages sharing a node are simulated on the presets only",
                           in->platform_file);
    }
    const int64_t phys_nodes = (int64_t)E->n.nodes * nstages / E->stages_per_node;
    if (in->platform_file && phys_nodes > platform_nodes) {
        return ZP_FAIL(ZP_EINVAL, "--cluster %s has %d nodes of %d GPUs: too few for %lld GPUs", in->platform_file,
                       platform_nodes, platform_gpn, (long long)gpus);
    }
    if (in->no_overlap && (E->n.grp[ZP_GROUP_MP].k > 1 || E->n.grp[ZP_GROUP_EP].k > 1))
        return ZP_FAIL(ZP_EINVAL, "the no-overlap mode needs MP and EP within a node");
    zp_sim_mode mode = ZP_SIM_FULL;
    ZP_TRY(pick_mode(in, &E->n, &mode));
    E->reduced = mode == ZP_SIM_REDUCED;
    E->per_stage = !E->reduced ? E->n.nodes : (E->n.exact ? (E->n.period < E->n.nodes ? E->n.period : E->n.nodes) : 1);
    if (nstages > 1 && E->reduced)
        E->per_stage = 1;
    if ((int64_t)E->per_stage * nstages > INT32_MAX / (ZP_NCHANNELS + ZP_NXS + ZP_NPPMB))
        return ZP_FAIL(ZP_ERANGE, "%lld nodes are beyond the simulator", (long long)E->per_stage * nstages);
    E->nsim = E->per_stage * nstages;
    return ZP_OK;
}

/* Starts SimGrid on the platform: the user's file, or the one written for E into a memory file (*fd, to
 * close after the run). */
static zp_status load_platform(const zp_eng *E, int *fd)
{
    zp_platform_simgrid_start();
    if (E->in->platform_file) {
        simgrid_load_platform(E->in->platform_file);
        return ZP_OK;
    }
    *fd = memfd_create("zplan-platform.xml", 0);
    FILE *f = *fd >= 0 ? fdopen(dup(*fd), "w") : NULL;
    if (!f)
        return ZP_FAIL(ZP_ERUNTIME, "cannot create the platform file: %s", strerror(errno));
    zp_platform_write(f, E);
    fclose(f);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", *fd);
    simgrid_load_platform(path);
    return ZP_OK;
}

/* Node n's hosts, channels and mailboxes, by their names in the platform. */
static zp_status find_node(zp_eng *E, size_t n)
{
    char name[64];
    snprintf(name, sizeof name, "gpu-%zu-0", n);
    E->gpu0[n] = sg_host_by_name(name);
    snprintf(name, sizeof name, "cpu-%zu", n);
    E->cpu[n] = sg_host_by_name(name);
    if (!E->gpu0[n] || !E->cpu[n])
        return ZP_FAIL(ZP_EINVAL, "platform: host gpu-%zu-0 or cpu-%zu is missing", n, n);
    snprintf(name, sizeof name, "gpu-%zu-1", n);
    E->gpu1[n] = sg_host_by_name(name);
    if (E->n.intra_flows && !E->gpu1[n])
        return ZP_FAIL(ZP_EINVAL, "platform: host %s is missing", name);
    for (int k = 0; k < ZP_NCHANNELS; k++)
        E->ch[n * ZP_NCHANNELS + (size_t)k] = sg_sem_init(0);
    for (size_t x = 0; x < ZP_NXS; x++) {
        snprintf(name, sizeof name, "mb-%zu-%zu", n, x);
        E->mb[n * ZP_NXS + x] = sg_mailbox_by_name(name);
    }
    for (size_t x = 0; x < ZP_NPPMB; x++) {
        snprintf(name, sizeof name, "pp-%zu-%zu", n, x);
        E->ppmb[n * ZP_NPPMB + x] = sg_mailbox_by_name(name);
    }
    for (int xs = 0; E->reduced && E->per_stage == 1 && xs < ZP_NXS; xs++) {
        if (E->nsim == 1)
            snprintf(name, sizeof name, "peer-%d", xs);
        else
            snprintf(name, sizeof name, "peer-%zu-%d", n, xs);
        E->peer[n * ZP_NXS + (size_t)xs] = sg_host_by_name(name);
    }
    return ZP_OK;
}

/* The per-node tables of the loaded platform, and what a collective holds of a GPU's SMs. */
static zp_status find_nodes(zp_eng *E)
{
    const zp_sim_input *in = E->in;
    size_t N = (size_t)E->nsim;
    E->gpu0 = calloc(N, sizeof *E->gpu0);
    E->gpu1 = calloc(N, sizeof *E->gpu1);
    E->cpu = calloc(N, sizeof *E->cpu);
    E->ch = calloc(N * ZP_NCHANNELS, sizeof *E->ch);
    E->mb = calloc(N * ZP_NXS, sizeof *E->mb);
    E->ppmb = calloc(N * ZP_NPPMB, sizeof *E->ppmb);
    E->peer = calloc(N * ZP_NXS, sizeof *E->peer);
    {
        const zp_profile_device *d = &in->profile->dev;
        E->nccl_frac = !in->no_overlap && d->sms > 0 && d->nccl_ctas > 0 ? (double)d->nccl_ctas / d->sms : 0.0;
    }
    E->sync_frac = in->profile->machine.probe_sync;
    if (E->sync_frac > 0 && !(E->since = calloc(N * ZP_NGROUPS, sizeof *E->since)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
    if (in->no_overlap) {
        E->busy = calloc(N, sizeof *E->busy);
        if (!E->busy)
            return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
        for (size_t n = 0; n < N; n++)
            E->busy[n] = sg_mutex_init();
    }
    if (!E->gpu0 || !E->gpu1 || !E->cpu || !E->ch || !E->mb || !E->ppmb || !E->peer)
        return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
    for (size_t n = 0; n < N; n++)
        ZP_TRY(find_node(E, n));
    return ZP_OK;
}

/* The step once every actor ended: node 0's breakdown with the tail after its compute stream, the
 * executed FLOPs, the simulation's size; the trace written. */
static zp_status collect(zp_eng *E, zp_sim_result *out)
{
    const int nstages = E->stages;
    int expected = E->nsim * ZP_NSTREAMS;
    if (E->streams_finished != expected) {
        return ZP_FAIL(ZP_ERUNTIME,
                       "the simulation deadlocked at t = %.6g s: %d of %d stream actors finished (schedule bug)",
                       simgrid_get_clock(), E->streams_finished, expected);
    }
    E->res.dp_exposed += E->end_time - E->res.step_time; /* the tail after the compute stream ended */
    E->res.phase[ZP_PHASE_OPTIMIZER] += E->end_time - E->res.step_time;
    E->res.step_time = E->end_time;
    for (int st = 0; st < nstages; st++)
        E->res.flops_per_gpu += E->sc[st].flops / nstages;
    E->res.activities = E->activities;
    E->res.reduced = E->reduced;
    E->res.nodes_simulated = E->nsim;
    E->res.stages = nstages;
    zp_status st = ZP_OK;
    if (E->err[0])
        st = ZP_FAIL(ZP_ERUNTIME, "%s", E->err);
    if (st == ZP_OK && E->in->trace_path)
        st = zp_trace_write(&E->tr, nstages, E->in->trace_path);
    *out = E->res;
    return st;
}

/* One simulation of the stages' schedules in state E (zeroed, freed by the caller). */
static zp_status run_in(zp_eng *E, const zp_sim_input *in, const zp_schedule *scheds, int nstages,
                        zp_sim_result *out)
{
    E->in = in;
    E->sc = scheds;
    E->stages = nstages;
    ZP_TRY(check_schedules(scheds, nstages));
    ZP_TRY(shape_run(E, in, nstages));
    /* the resident memory (setup) is live from the start */
    for (int i = 0; in->trace_path && i < scheds[0].nsetup; i++)
        zp_trace_mem(&E->tr, 0.0, &scheds[0].setup[i], zp_op_table[scheds[0].setup[i].type].cls == ZP_OPC_ALLOC);
    int fd = -1;
    zp_status st = load_platform(E, &fd);
    if (st == ZP_OK)
        st = find_nodes(E);
    if (st == ZP_OK) {
        zp_actors_create(E);
        simgrid_run();
    }
    if (fd >= 0)
        close(fd);
    return st == ZP_OK ? collect(E, out) : st;
}

static zp_status run_schedules(const zp_sim_input *in, const zp_schedule *scheds, int nstages, zp_sim_result *out)
{
    zp_eng *E = calloc(1, sizeof *E);
    if (!E)
        return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
    zp_status st = run_in(E, in, scheds, nstages, out);
    zp_trace_free(&E->tr);
    void *tables[] = {E->gpu0, E->gpu1, E->cpu, E->peer, E->ch, E->busy, E->mb, E->ppmb, E->since}; /* per node */
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        free(tables[i]);
    free(E);
    return st;
}
