/* zp_actors.c — the stream actors of a simulation: one per stream (compute, comm, pcie, cpu) of each
 * simulated node, running its stage's schedule on SimGrid (local time coalesced and slept, collectives
 * as NVSwitch and rail flows, copies over PCIe, pipeline point-to-point through mailboxes, channels as
 * semaphores), and node 0's breakdown of the step. Their state is the run's (zp_eng.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>

#include "zp_collcost.h"
#include "zp_device.h"
#include "zp_eng.h"

static const zp_op_info *info_of(const zp_op *op) { return &zp_op_table[op->type]; }

/* One stream actor's place and the time it has coalesced but not yet let pass. */
typedef struct {
    zp_eng *E;
    int node;
    zp_stream s;
    int xs;            /* ZP_XS_COMPUTE or ZP_XS_COMM: its cross-node flows' mailboxes */
    int rec;           /* node 0: records the breakdown */
    double pending;    /* s: coalesced time of consecutive local ops not yet slept */
    double kpending;   /* s: of the compute stream's coalesced kernels, under nccl_frac: run as an execution */
    int kphase;        /* the phase of the last of them */
    double run_start;  /* s: when the coalesced time began */
    double host;       /* s: when the host will have dispatched the stream's ops so far (compute stream) */
    int synced;        /* the host has waited for the GPU before this step's optimizer */
    double *calls;     /* [op of the compute stream]: s of host time the communication stream's collectives it
                          releases cost (comm_calls); NULL: none */
} stream_ctx;

/* An op of node `node` on stream `stream` from ts for dur s, in the trace (a stage's first node only). */
static void trace_op(zp_eng *E, int node, int stream, double ts, double dur, const zp_op *op)
{
    const char *label = zp_op_name(op);
    if (!E->in->trace_path || zp_eng_local_of(E, node) != 0 || dur <= 0)
        return;
    zp_trace_add(&E->tr, zp_eng_stage_of(E, node), stream, ts, dur, op, label);
}

/* An alloc or free of node 0 at time ts: a point of the trace's memory curve. */
static void trace_mem(zp_eng *E, int node, double ts, const zp_op *op, int alloc)
{
    if (!E->in->trace_path || node != 0)
        return;
    zp_trace_mem(&E->tr, ts, op, alloc);
}

/* The flows of a cross-node collective from `node`. Every rail in use carries the same bytes and
 * rail 0 is used by every collective, so rail 0 is the most loaded one and sets the collective's end:
 * the engine simulates the flow on rail 0 (the stream actor's own host, gpu-<n>-0) and the others are
 * identical by symmetry. Full simulation: sending to the ring successor and receiving from the
 * predecessor through mailboxes pairs neighbours as the ring does. Reduced: node 0 stands for every node,
 * which all send and receive alike at the same instants; its flow leaves through its rail's up
 * direction (and its leaf's uplink share when the stream's flows cross leaves) and comes back through
 * the down directions, as its predecessor's flow would: the same links under the same load. */
static void cross_node_flows(zp_eng *E, int node, int xs, const zp_op *op, const zp_group_shape *gs)
{
    static char token; /* a mailbox payload must not be NULL */
    double bytes = zp_collcost_rail_bytes(&E->n, op, gs);
    if (E->reduced && E->per_stage == 1) {
        sg_host_sendto(E->gpu0[node], E->peer[(size_t)node * ZP_NXS + (size_t)xs], bytes > 1 ? bytes : 1);
        E->activities += 1;
        return;
    }
    /* a period's ring closes on itself; a stage's rings stay in its nodes */
    int local_succ = zp_fabric_successor(&E->n, gs, zp_eng_local_of(E, node)) % E->per_stage;
    int succ = zp_eng_node_at(E, zp_eng_stage_of(E, node), local_succ);
    sg_mailbox_t to = E->mb[(size_t)succ * ZP_NXS + (size_t)xs];
    sg_comm_t put = sg_mailbox_put_async(to, &token, (long)(bytes > 1 ? bytes : 1));
    sg_mailbox_get(E->mb[(size_t)node * ZP_NXS + (size_t)xs]);
    sg_comm_wait(put);
    E->activities += 2;
}

/* Adds `dur` seconds of node 0's stream `s` running (or waiting in) `op` to the breakdown: the compute
 * stream's time by phase and by the op's part (a wait's is its channel's), the other streams' busy time, and
 * every stream's time in each kind of op. */
static void account(zp_eng *E, zp_stream s, const zp_op *op, double dur)
{
    zp_sim_result *R = &E->res;
    const zp_opc cls = info_of(op)->cls;
    if (cls != ZP_OPC_WAIT) /* every stream's ops by kind; a wait is no op's time (zp_engine.h) */
        R->kind[op->type] += dur;
    if (s == ZP_STREAM_COMPUTE) {
        R->phase[op->phase] += dur;
        switch (zp_op_part(op)) {
        case ZP_PART_COMPUTE: R->compute += dur; break;
        case ZP_PART_MP_COMM: R->mp_comm += dur; break;
        case ZP_PART_DP_COMM: R->dp_exposed += dur; break; /* DP work the compute stream waits for */
        case ZP_PART_OPTIMIZER: R->optimizer += dur; break;
        case ZP_PART_OFFLOAD: R->offload_exposed += dur; break;
        case ZP_PART_PP_COMM: R->pp_exposed += dur; break;
        default: break;
        }
    } else if (cls != ZP_OPC_WAIT) {
        if (s == ZP_STREAM_COMM)
            R->comm_busy += dur;
        else if (s == ZP_STREAM_PCIE || cls == ZP_OPC_COPY)
            R->pcie_busy += dur;
    }
}

static sg_sem_t channel(const zp_eng *E, int node, zp_channel c) { return E->ch[(size_t)node * ZP_NCHANNELS + c]; }

/* Bytes a point-to-point op puts on its route: each GPU sends its own (Megatron-LM's scatter/gather: 1/t of
 * the activation per MP rank), so rail 0 carries those of the GPUs it serves; NVSwitch ports are per GPU. */
static double p2p_bytes(const zp_eng *E, const zp_op *op, int cross_node)
{
    double b = op->bytes * (cross_node ? (double)E->n.gpr : 1.0);
    return b > 1 ? b : 1;
}

/* A send, receive or exchange with the neighbour node of stage op->item; a receive checks it gets the
 * micro-batch it expects (the two schedules must agree on the order). A send lasts its transfer (the
 * receiver's mailbox takes it at once: stream_actor), unless nowait leaves it to run beside the next ops. */
static void p2p_op(zp_eng *E, int node, const zp_op *op)
{
    const zp_op_info *in = info_of(op);
    const int peer = zp_eng_node_at(E, op->item, node), me = zp_eng_stage_of(E, node);
    const int act = op->type == ZP_OPK_PP_SEND_ACT || op->type == ZP_OPK_PP_RECV_ACT;
    const int k = in->p2p == ZP_P2P_EXCHANGE ? ZP_PP_MB_EMB : (act ? ZP_PP_MB_ACT : ZP_PP_MB_GRAD);
    const double bytes = p2p_bytes(E, op, !zp_eng_same_physical(E, me, op->item));
    sg_comm_t put = NULL;
    if (in->p2p != ZP_P2P_RECV) {
        sg_mailbox_t to = E->ppmb[(size_t)peer * ZP_NPPMB + (size_t)k];
        if (op->nowait) /* detached: it runs beside the stream's next ops */
            sg_comm_detach(sg_mailbox_put_init(to, (void *)op, (long)bytes), NULL);
        else
            put = sg_mailbox_put_async(to, (void *)op, (long)bytes);
        E->activities += 1;
    }
    if (in->p2p != ZP_P2P_SEND) {
        const zp_op *from = sg_mailbox_get(E->ppmb[(size_t)node * ZP_NPPMB + (size_t)k]);
        E->activities += 1;
        if (from && from->micro != op->micro && !E->err[0])
            snprintf(E->err, sizeof E->err,
                     "pipeline stage %d expected micro-batch %d from stage %d and got micro-batch %d (schedule bug)",
                     me, op->micro, op->item, from->micro);
    }
    if (put)
        sg_comm_wait(put);
}

/* NCCL's collective kernels run one CTA per channel, each on an SM of its own, for as long as the collective
 * lasts (NVIDIA's NCCL INFO logs: "24 coll channels" on 8-GPU A100 and H100 NVSwitch nodes; Nsight shows
 * ncclAllGather's 24 blocks beside a GEMM on an H100). Kernels overlapped with a collective get the other
 * SMs. The GPU host's speed stands for its SMs: a compute stream's kernels run as executions on it (their
 * device time x the host's speed, in flops), and each running collective holds a share nccl_ctas / sms of
 * it (an execution bounded to that rate), so SimGrid's sharing slows the kernels by what the collectives
 * hold for exactly as long as they overlap. A collective is not slowed by the kernels: its CTAs are
 * resident. Copies (copy engines) and the CPU hold no SMs. */
/* The share of the GPU's SMs a collective beside the kernels holds while it runs: NCCL's CTAs (nccl_frac), or
 * a TP overlap transfer's own (zp_op_info.comm_sms: Transformer Engine's reduce-scatter kernel; none for a
 * copy-engine copy), modelled where NCCL's are (a device model with nccl_ctas). */
static double sm_frac(const zp_eng *E, const zp_op *op)
{
    const zp_op_info *in = info_of(op);
    if (in->ub == ZP_UB_NONE || !(E->nccl_frac > 0))
        return E->nccl_frac;
    const int sms = E->in->profile->dev.sms;
    return sms > in->comm_sms ? (double)in->comm_sms / sms : 0.0;
}

/* An execution holding a `frac` share of this GPU for `seconds` (started). */
static sg_exec_t nccl_start(zp_eng *E, double frac, double seconds)
{
    const double rate = frac * sg_host_get_speed(sg_host_self());
    sg_exec_t x = sg_actor_exec_init(rate * seconds);
    sg_exec_set_bound(x, rate);
    sg_exec_start(x);
    E->activities += 1;
    return x;
}

/* A collective of flows: its share held until it ends (nccl_release cancels it); NULL when not modelled. */
static sg_exec_t nccl_hold(zp_eng *E, const zp_op *op)
{
    const double frac = sm_frac(E, op);
    return frac > 0 ? nccl_start(E, frac, 1e9) : NULL;
}

static void nccl_release(sg_exec_t x)
{
    if (x)
        sg_exec_cancel(x);
}

/* Let a stream's coalesced time pass: its kernels `kpending` as an execution that collectives running
 * beside it slow down (node 0 records what they lost, in compute and in the phase `kphase` of the last of
 * them), then the rest `pending`. */
static void flush(stream_ctx *c)
{
    zp_eng *E = c->E;
    if (c->kpending > 0) {
        const double t0 = simgrid_get_clock();
        sg_actor_execute(c->kpending * sg_host_get_speed(sg_host_self()));
        E->activities += 1;
        const double lost = simgrid_get_clock() - t0 - c->kpending;
        if (c->rec && lost > 0) {
            E->res.compute += lost;
            E->res.nccl_contention += lost;
            E->res.phase[c->kphase] += lost;
        }
        c->kpending = 0;
    }
    if (c->pending > 0) {
        sg_actor_sleep_for(c->pending);
        E->activities += 1;
        c->pending = 0;
    }
}

/* The time of an op that is pure time on this stream (a kernel; a collective alone in its node, priced
 * without flows), or -1: the op interacts with other actors. */
static double op_local_time(const zp_eng *E, const zp_op *op, const zp_group_shape *gs)
{
    switch (info_of(op)->cls) {
    case ZP_OPC_COMPUTE: return zp_device_op_time(E->in->profile, op, E->n.gpn);
    case ZP_OPC_COLL: return gs->k <= 1 && !E->n.intra_flows ? zp_collcost_local_time(&E->n, op, gs) : -1.0;
    default: return -1.0;
    }
}

/* An op of `local` s of pure time: coalesced with its neighbours (slept at the next interaction), run at
 * once when it needs the node alone (no overlap) or holds SMs beside the kernels (a collective under
 * nccl_frac); traced and accounted. */
static void run_local(stream_ctx *c, const zp_op *op, double local)
{
    zp_eng *E = c->E;
    const zp_op_info *in = info_of(op);
    const zp_stream s = c->s;
    double start = c->run_start + c->pending + c->kpending, frac = 0; /* frac: a collective's SM share */
    if (E->busy) {
        /* no overlap: every op alone on the node, one at a time */
        double asked = simgrid_get_clock();
        sg_mutex_lock(E->busy[c->node]);
        start = simgrid_get_clock();
        if (c->rec && s == ZP_STREAM_COMPUTE) /* waiting for the node: still this phase's time */
            E->res.phase[op->phase] += start - asked;
        if (local > 0)
            sg_actor_sleep_for(local);
        sg_mutex_unlock(E->busy[c->node]);
        E->activities += 1;
        c->run_start = simgrid_get_clock();
    } else if (in->cls == ZP_OPC_COLL && s != ZP_STREAM_COMPUTE && local > 0 && (frac = sm_frac(E, op)) > 0) {
        /* a collective beside the kernels: its CTAs held for its time (not coalesced) */
        flush(c);
        start = simgrid_get_clock();
        sg_exec_wait(nccl_start(E, frac, local));
        c->run_start = simgrid_get_clock();
    } else if (E->nccl_frac > 0 && s == ZP_STREAM_COMPUTE && in->cls == ZP_OPC_COMPUTE) {
        c->kpending += local; /* coalesced kernels: run at the next interaction, beside any collective */
        c->kphase = op->phase;
    } else {
        c->pending += local; /* coalesced: slept at the next interaction */
    }
    trace_op(E, c->node, s, start, local, op);
    if (c->rec)
        account(E, s, op, local);
    const int stage = zp_eng_stage_of(E, c->node);
    if (s == ZP_STREAM_COMPUTE && zp_eng_local_of(E, c->node) == 0 && stage < (int)(sizeof E->res.stage_busy / sizeof E->res.stage_busy[0]) &&
        zp_op_part(op) == ZP_PART_COMPUTE)
        E->res.stage_busy[stage] += local;
}

/* A collective with flows: its latency and intra-node phase (NVSwitch flows between the node's two
 * representative GPUs when MP and DP groups share its ports, so they contend; time otherwise), then its
 * cross-node flows; a comm-stream collective holds its SMs meanwhile. */
static void run_coll(stream_ctx *c, const zp_op *op, const zp_group_shape *gs)
{
    zp_eng *E = c->E;
    const int node = c->node;
    sg_exec_t held = c->s != ZP_STREAM_COMPUTE ? nccl_hold(E, op) : NULL;
    double lat = zp_collcost_choose(&E->n, op, gs).lat, ib = zp_collcost_intra_bytes(&E->n, op, gs);
    if (E->n.intra_flows) {
        if (lat > 0)
            sg_actor_sleep_for(lat);
        /* on a mesh, the bytes that take as long on the node's port (nv_bw) as on the group's g-1 links
         * (zp_collcost_nv_bw): a switch's port is shared, a mesh's links are not, so a mesh's contention
         * between MP and DP flows is overstated here */
        if (ib > 0 && E->n.cluster && E->n.cluster->intra_mesh)
            ib *= E->n.nv_bw / zp_collcost_nv_bw(&E->n, gs);
        if (ib > 0) {
            sg_host_sendto(E->gpu0[node], E->gpu1[node], ib);
            E->activities += 1;
        }
    } else {
        double lt = zp_collcost_profile_time(&E->n, op, gs);
        if (lt < 0)
            lt = ib / zp_collcost_nv_bw(&E->n, gs) + lat;
        if (zp_collcost_pipelined(&E->n, op, gs)) { /* the NVLink forward beside the network's flows */
            const double t0 = simgrid_get_clock();
            cross_node_flows(E, node, c->xs, op, gs);
            const double left = lt - (simgrid_get_clock() - t0);
            if (left > 0)
                sg_actor_sleep_for(left);
            nccl_release(held);
            return;
        }
        if (lt > 0)
            sg_actor_sleep_for(lt);
    }
    if (gs->k > 1) {
        if (c->rec && zp_collcost_choose(&E->n, op, gs).tree)
            E->res.tree_allreduces += 1;
        cross_node_flows(E, node, c->xs, op, gs);
    }
    nccl_release(held);
}

/* The host's time for the communication stream's collectives (ZeRO's gradient buckets, its parameter
 * gathers): each is a torch.distributed call the host makes where the compute stream's program releases it
 * (a backward hook, the prefetcher), so its call time (zp_device_host_time) is charged to the compute
 * stream's op that signals the channel the collective waits behind: the k-th signal of a channel releases
 * the k-th wait of the communication stream on it. Channels the two streams do not pair one to one (another
 * stream signals them too) are left out. Returns an array over the compute stream's ops (NULL: none). */
static double *comm_calls(const zp_profile *prof, const zp_schedule *sc)
{
    const int nc = sc->n[ZP_STREAM_COMPUTE], nm = sc->n[ZP_STREAM_COMM];
    double *calls = calloc((size_t)nc + 1, sizeof *calls);
    double *wait_t = calloc((size_t)nm + 1, sizeof *wait_t); /* [comm op index of a wait]: calls behind it */
    if (!calls || !wait_t) {
        free(calls);
        free(wait_t);
        return NULL;
    }
    int nsig[ZP_NCHANNELS] = {0}, nwait[ZP_NCHANNELS] = {0}, other[ZP_NCHANNELS] = {0}, last = -1;
    for (int i = 0; i < nm; i++) {
        const zp_op *op = &sc->ops[ZP_STREAM_COMM][i];
        const zp_opc cls = zp_op_table[op->type].cls;
        if (cls == ZP_OPC_WAIT) {
            last = i;
            nwait[op->channel]++;
        } else if (cls == ZP_OPC_COLL && last >= 0)
            wait_t[last] += zp_device_host_time(prof, op);
    }
    for (int s = 0; s < ZP_NSTREAMS; s++)
        for (int i = 0; i < sc->n[s]; i++)
            if (zp_op_table[sc->ops[s][i].type].cls == ZP_OPC_SIGNAL) {
                if (s == ZP_STREAM_COMPUTE)
                    nsig[sc->ops[s][i].channel]++;
                else
                    other[sc->ops[s][i].channel] = 1; /* another stream signals it too: never paired */
            }
    int cursor[ZP_NCHANNELS] = {0};
    for (int i = 0; i < nc; i++) {
        const zp_op *op = &sc->ops[ZP_STREAM_COMPUTE][i];
        if (zp_op_table[op->type].cls != ZP_OPC_SIGNAL || other[op->channel] ||
            nsig[op->channel] != nwait[op->channel])
            continue;
        int *w = &cursor[op->channel]; /* the next wait of this channel on the communication stream */
        while (*w < nm && !(zp_op_table[sc->ops[ZP_STREAM_COMM][*w].type].cls == ZP_OPC_WAIT &&
                            sc->ops[ZP_STREAM_COMM][*w].channel == op->channel))
            (*w)++;
        if (*w < nm)
            calls[i] = wait_t[(*w)++];
    }
    free(wait_t);
    return calls;
}

/* The host's dispatch queue ahead of the compute stream (the framework issues every kernel, collective and
 * copy from Python, zp_device_host_time): it runs ahead while the GPU is busy, and an op starts on the GPU
 * only once the host has issued it, so the GPU idles where the host falls behind (small work per GPU: each
 * kernel shorter than its dispatch). Before the optimizer the host waits for the GPU once (Megatron-LM and
 * DeepSpeed read the gradient norm or the loss scaler's found-inf flag with .item()). The communication
 * stream's collectives cost the host their calls where the compute stream releases them (comm_calls). The
 * idle time is the op's part of the breakdown, and of it host_wait; traced as "host dispatch". */
static void host_dispatch(stream_ctx *c, const zp_op *op, int oi)
{
    zp_eng *E = c->E;
    const double gpu_free = c->run_start + c->pending + c->kpending;
    if (zp_op_part(op) == ZP_PART_OPTIMIZER && !c->synced) {
        c->host = fmax(c->host, gpu_free);
        c->synced = 1;
    }
    c->host += zp_device_host_time(E->in->profile, op) + (c->calls ? c->calls[oi] : 0.0);
    const double idle = c->host - gpu_free;
    if (!(idle > 0))
        return;
    c->pending += idle;
    if (E->in->trace_path && zp_eng_local_of(E, c->node) == 0)
        zp_trace_add(&E->tr, zp_eng_stage_of(E, c->node), c->s, gpu_free, idle, op, "host dispatch");
    if (c->rec) {
        account(E, c->s, op, idle);
        E->res.host_wait += idle;
    }
}

/* An op that interacts with other actors (a collective with flows, a copy, a point-to-point op, a
 * channel's signal or wait): the coalesced time passes first; traced and accounted as it lasted. */
static void run_interacting(stream_ctx *c, const zp_op *op, const zp_group_shape *gs)
{
    zp_eng *E = c->E;
    const zp_op_info *in = info_of(op);
    const int node = c->node;
    flush(c);
    double t0 = simgrid_get_clock();
    int locked = E->busy && (in->cls == ZP_OPC_COLL || in->cls == ZP_OPC_COPY);
    if (locked)
        sg_mutex_lock(E->busy[node]);
    switch (in->cls) {
    case ZP_OPC_COLL: run_coll(c, op, gs); break;
    case ZP_OPC_COPY:
        if (in->dir == ZP_COPY_D2H)
            sg_host_sendto(E->gpu0[node], E->cpu[node], op->bytes);
        else
            sg_host_sendto(E->cpu[node], E->gpu0[node], op->bytes);
        E->activities += 1;
        break;
    case ZP_OPC_P2P: p2p_op(E, node, op); break;
    case ZP_OPC_SIGNAL: sg_sem_release(channel(E, node, op->channel)); break;
    case ZP_OPC_WAIT: sg_sem_acquire(channel(E, node, op->channel)); break;
    default: break;
    }
    if (locked)
        sg_mutex_unlock(E->busy[node]);
    double dur = simgrid_get_clock() - t0;
    c->run_start = simgrid_get_clock();
    trace_op(E, node, c->s, t0, dur, op);
    if (c->rec && dur > 0)
        account(E, c->s, op, dur);
}

/* The wait of a collective for the group's slowest rank (a calibrated profile's machine.probe.sync > 0):
 * ranks that start the same work together do not end it together, and a collective ends when its last rank
 * arrives, so the average rank waits the slowest one's lag, sync_frac of the compute since the group last
 * met (the reference work's samples, kernels/zp_probe.c: the slowest of the ranks behind their mean). The
 * compute stream's kernels add to every group's count; a collective of a group of more than one rank takes
 * its group's and levels the groups whose ranks all took part (on 2 cpu ranks at EP 1, tiny-moe's expert
 * gradient all-reduce right after the DP one had waited a whole step's lag again: predicted +144% over
 * bench/validate_readme.sh's runs). The simulation's ranks are identical and never wait otherwise. 0 on the
 * presets. */
static double sync_wait(zp_eng *E, int node, const zp_op *op, const zp_group_shape *gs)
{
    if (!E->since || info_of(op)->cls != ZP_OPC_COLL || (double)gs->g * gs->k <= 1)
        return 0.0;
    double *since = &E->since[(size_t)node * ZP_NGROUPS];
    const double w = E->sync_frac * since[info_of(op)->group];
    /* the ranks that met are level: this group, a group of the same ranks (the expert-data-parallel group at
     * EP 1 is the DP group), and every group when this one holds all of the stage's GPUs */
    const int all = (double)gs->g * gs->k >= (double)E->in->plan->dp * (double)E->in->plan->mp;
    for (int g = 0; g < ZP_NGROUPS; g++)
        if (all || g == (int)info_of(op)->group || memcmp(zp_fabric_group(&E->n, g), gs, sizeof *gs) == 0)
            since[g] = 0;
    return w;
}

static void sync_count(zp_eng *E, int node, zp_stream s, const zp_op *op, double local)
{
    if (!E->since || s != ZP_STREAM_COMPUTE || info_of(op)->cls != ZP_OPC_COMPUTE || !(local > 0))
        return;
    for (int g = 0; g < ZP_NGROUPS; g++)
        E->since[(size_t)node * ZP_NGROUPS + g] += local;
}

/* The actor of stream argv[2] of node argv[1]; its data: the run's state. */
static void stream_actor(int argc, char *argv[])
{
    (void)argc;
    zp_eng *E = sg_actor_self_get_data();
    const int node = atoi(argv[1]);
    const zp_stream s = (zp_stream)atoi(argv[2]);
    /* the EP stream's all-to-alls follow the EP group's ring, as they do on the compute stream */
    stream_ctx c = {.E = E, .node = node, .s = s,
                    .xs = s == ZP_STREAM_COMPUTE || s == ZP_STREAM_EP ? ZP_XS_COMPUTE : ZP_XS_COMM,
                    .rec = node == 0, .run_start = simgrid_get_clock()};
    c.host = c.run_start;
    E->streams_started++;

    const zp_schedule *sc = &E->sc[zp_eng_stage_of(E, node)];
    if (s == ZP_STREAM_COMPUTE)
        for (int k = 0; k < ZP_NPPMB; k++) { /* sends to this node start at once (Megatron's isend) */
            sg_mailbox_t mb = E->ppmb[(size_t)node * ZP_NPPMB + (size_t)k];
            sg_mailbox_set_receiver(sg_mailbox_get_name(mb));
        }
    if (s == ZP_STREAM_COMPUTE)
        c.calls = comm_calls(E->in->profile, sc);
    for (int oi = 0; oi < sc->n[s]; oi++) {
        const zp_op *op = &sc->ops[s][oi];
        const zp_op_info *in = info_of(op);
        if (in->cls == ZP_OPC_ALLOC || in->cls == ZP_OPC_FREE) {
            trace_mem(E, node, c.run_start + c.pending, op, in->cls == ZP_OPC_ALLOC);
            continue;
        }
        const zp_group_shape *gs = zp_fabric_group(&E->n, in->group);
        if (s == ZP_STREAM_COMPUTE)
            host_dispatch(&c, op, oi);
        double local = op_local_time(E, op, gs);
        sync_count(E, node, s, op, local);
        if (local >= 0.0)
            run_local(&c, op, local + sync_wait(E, node, op, gs));
        else
            run_interacting(&c, op, gs);
    }
    flush(&c);
    free(c.calls);
    double now = simgrid_get_clock();
    if (c.rec && s == ZP_STREAM_COMPUTE)
        E->res.step_time = fmax(E->res.step_time, now); /* the tail is added once every stream ended */
    if (now > E->end_time)
        E->end_time = now;
    E->streams_finished++;
}

void zp_actors_create(zp_eng *E)
{
    char name[64];
    for (size_t n = 0; n < (size_t)E->nsim; n++) {
        char a1[24], a2[24];
        snprintf(a1, sizeof a1, "%zu", n);
        for (int s = 0; s < ZP_NSTREAMS; s++) {
            snprintf(a2, sizeof a2, "%d", s);
            char *argv[] = {"stream", a1, a2, NULL};
            snprintf(name, sizeof name, "%s-%zu", zp_stream_name((zp_stream)s), n);
            sg_actor_t a = sg_actor_create(name, s == ZP_STREAM_CPU ? E->cpu[n] : E->gpu0[n], stream_actor, 3, argv);
            sg_actor_set_data(a, E);
        }
    }
}
