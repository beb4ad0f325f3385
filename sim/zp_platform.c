/* zp_platform.c — the SimGrid platform of a simulation, written as XML from the engine's state (full,
 * reduced to one node per stage, or to a period of a fat tree's nodes; see zp_engine.h), and a user's
 * platform file checked in a child process. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <xbt/log.h>

#include "zp_child.h"
#include "zp_eng.h"

/* One node's hosts and links: its GPUs, its CPU, PCIe, the NVSwitch ports of its two representative GPUs
 * and rail 0's NIC (the only rail simulated: the others carry the same flows). */
static void write_node(FILE *f, const zp_eng *E, int n, double speed)
{
    for (int i = 0; i < E->n.gpn; i++)
        fprintf(f, "<host id=\"gpu-%d-%d\" speed=\"%.6gf\"/>\n", n, i, speed);
    fprintf(f, "<host id=\"cpu-%d\" speed=\"1e12f\"/>\n", n);
    fprintf(f, "<link id=\"pcie-%d\" bandwidth=\"%.6gBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n", n,
            E->in->profile->h2d_gbs > 0 ? E->in->profile->h2d_gbs * 1e9 : 16e9);
    for (int i = 0; i < 2 && i < E->n.gpn; i++)
        fprintf(f, "<link id=\"nvs-%d-%d\" bandwidth=\"%.6gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                n, i, E->n.nv_bw);
    fprintf(f, "<link id=\"rail-%d-0\" bandwidth=\"%.6gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n", n,
            E->n.rail_bw);
}

/* Its routes inside: PCIe, and NVSwitch between the representative GPUs (SimGrid wants every host and
 * link of a zone before its routes). */
static void write_node_routes(FILE *f, const zp_eng *E, int n)
{
    fprintf(f, "<route src=\"gpu-%d-0\" dst=\"cpu-%d\" symmetrical=\"NO\"><link_ctn id=\"pcie-%d\" direction=\"UP\"/></route>\n", n, n, n);
    fprintf(f, "<route src=\"cpu-%d\" dst=\"gpu-%d-0\" symmetrical=\"NO\"><link_ctn id=\"pcie-%d\" direction=\"DOWN\"/></route>\n", n, n, n);
    if (E->n.gpn > 1)
        fprintf(f, "<route src=\"gpu-%d-0\" dst=\"gpu-%d-1\"><link_ctn id=\"nvs-%d-0\" direction=\"UP\"/>"
                   "<link_ctn id=\"nvs-%d-1\" direction=\"DOWN\"/></route>\n", n, n, n, n);
}

/* The route of a flow from node n's rail 0 (up) to node m's (down): through the non-blocking core, and
 * through both leaves' uplinks when `cross` (a rail-optimized fat tree, different leaves). */
static void write_route(FILE *f, const char *src, const char *dst, int n, int m, int cross, int leaf_n, int leaf_m)
{
    fprintf(f, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"rail-%d-0\" direction=\"UP\"/>", src,
            dst, n);
    if (cross)
        fprintf(f, "<link_ctn id=\"leaf-%d\" direction=\"UP\"/>", leaf_n);
    fprintf(f, "<link_ctn id=\"core\"/>");
    if (cross)
        fprintf(f, "<link_ctn id=\"leaf-%d\" direction=\"DOWN\"/>", leaf_m);
    fprintf(f, "<link_ctn id=\"rail-%d-0\" direction=\"DOWN\"/></route>\n", m);
}

/* The physical node of simulated node n (leaves are physical): stages sharing a node have one each. */
static int physical(const zp_eng *E, int n)
{
    return E->stages_per_node > 1 ? zp_eng_stage_of(E, n) / E->stages_per_node : n;
}

/* Routes of pipeline point-to-point flows from node n to its neighbours' nodes (next and previous stage,
 * and the other end of the pipeline for the tied embedding): over NVSwitch inside a physical node, over
 * the rails across nodes. */
static void write_pp_routes(FILE *f, const zp_eng *E, int n)
{
    const int P = E->stages, st = zp_eng_stage_of(E, n), L = E->n.leaf;
    int peers[3] = {(st + 1) % P, (st + P - 1) % P, st == 0 ? P - 1 : (st == P - 1 ? 0 : -1)};
    for (int i = 0; i < 3; i++) {
        if (peers[i] < 0 || peers[i] == st || (i == 2 && (peers[2] == peers[0] || peers[2] == peers[1])))
            continue;
        if (i == 1 && peers[1] == peers[0])
            continue;
        const int m = zp_eng_node_at(E, peers[i], n);
        char src[32], dst[32];
        snprintf(src, sizeof src, "gpu-%d-0", n);
        snprintf(dst, sizeof dst, "gpu-%d-0", m);
        if (zp_eng_same_physical(E, st, peers[i])) {
            fprintf(f, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"nvs-%d-0\" direction=\"UP\"/>"
                       "<link_ctn id=\"nvs-%d-0\" direction=\"DOWN\"/></route>\n", src, dst, n, m);
        } else {
            const int pn = physical(E, n), pm = physical(E, m);
            int cross = L > 0 && pn / L != pm / L;
            write_route(f, src, dst, n, m, cross, L > 0 ? pn / L : 0, L > 0 ? pm / L : 0);
        }
    }
}

/* Full: every node, and the routes to its ring successors (DP and MP groups); on a rail-optimized fat
 * tree, one uplink per leaf (rail 0's), of the leaf's down bandwidth / oversubscription.
 * Reduced to one node per stage: those nodes alone, and per node and stream a peer host reached through
 * the node's own rail up and down directions (and its leaf-uplink share, of capacity uplink / leaf when
 * that stream's flows cross). Reduced to a period of T nodes: the first T nodes and their leaves, each ring
 * closed modulo T (a successor m >= T is node m mod T), a flow crossing leaves when it does in the whole
 * cluster. Pipeline stages add their point-to-point routes. */
void zp_platform_write(FILE *f, const zp_eng *E)
{
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n<zone id=\"cluster\" routing=\"Full\">\n");
    double speed = E->in->profile->peak_flops_fp16 > 0 ? E->in->profile->peak_flops_fp16 : 1e12;
    const int L = E->n.leaf;
    fprintf(f, "<link id=\"core\" bandwidth=\"1e18Bps\" latency=\"0us\" sharing_policy=\"FATPIPE\"/>\n");
    if (E->reduced && E->per_stage == 1) {
        for (int n = 0; n < E->nsim; n++)
            write_node(f, E, n, speed);
        if (E->n.rep_cross[ZP_XS_COMPUTE] || E->n.rep_cross[ZP_XS_COMM])
            fprintf(f, "<link id=\"leaf-0\" bandwidth=\"%.17gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    E->n.rep_up_bw);
        for (int n = 0; n < E->nsim; n++)
            for (int xs = 0; xs < ZP_NXS; xs++) {
                if (E->nsim == 1)
                    fprintf(f, "<host id=\"peer-%d\" speed=\"1e12f\"/>\n", xs);
                else
                    fprintf(f, "<host id=\"peer-%d-%d\" speed=\"1e12f\"/>\n", n, xs);
            }
        for (int n = 0; n < E->nsim; n++) {
            write_node_routes(f, E, n);
            for (int xs = 0; xs < ZP_NXS; xs++) {
                char src[32], peer[32];
                snprintf(src, sizeof src, "gpu-%d-0", n);
                if (E->nsim == 1)
                    snprintf(peer, sizeof peer, "peer-%d", xs);
                else
                    snprintf(peer, sizeof peer, "peer-%d-%d", n, xs);
                write_route(f, src, peer, n, n, E->n.rep_cross[xs], 0, 0);
            }
            if (E->stages > 1)
                write_pp_routes(f, E, n);
        }
    } else {
        for (int n = 0; n < E->nsim; n++)
            write_node(f, E, n, speed);
        for (int j = 0; L > 0 && j < (physical(E, E->nsim - 1) + L) / L; j++)
            fprintf(f, "<link id=\"leaf-%d\" bandwidth=\"%.17gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    j, E->n.up_bw);
        for (int n = 0; n < E->nsim; n++) {
            write_node_routes(f, E, n);
            /* the ring successors of every group that spans nodes (DP, MP, EP, EDP), each route once; in
             * the stage's own numbering (ln), the stages side by side in the cluster's */
            const int ln = zp_eng_local_of(E, n), base = n - ln;
            int succ[ZP_NGROUPS];
            for (int gi = 0; gi < ZP_NGROUPS; gi++) {
                const zp_group_shape *gs = &E->n.grp[gi];
                succ[gi] = gs->k > 1 ? zp_fabric_successor(&E->n, gs, ln) : -1;
                for (int j = 0; j < gi; j++)
                    if (succ[j] == succ[gi])
                        succ[gi] = -1;
            }
            for (int j = 0; j < ZP_NGROUPS; j++) {
                int m = succ[j];
                if (m < 0 || m == ln)
                    continue;
                int cross = L > 0 && (base + ln) / L != (base + m) / L; /* in the whole cluster's numbering */
                m = base + m % E->per_stage;
                char src[32], dst[32];
                snprintf(src, sizeof src, "gpu-%d-0", n);
                snprintf(dst, sizeof dst, "gpu-%d-0", m);
                write_route(f, src, dst, n, m, cross, L > 0 ? (base + ln) / L : 0, L > 0 ? (base + m - base) / L : 0);
            }
            if (E->stages > 1)
                write_pp_routes(f, E, n);
        }
    }
    fprintf(f, "</zone>\n</platform>\n");
}

void zp_platform_simgrid_start(void)
{
    static char *args[] = {"zplan", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                           "--cfg=contexts/stack-size:256", "--log=root.thres:critical",
                           "--log=xbt_cfg.thres:critical", NULL};
    int argc = 6;
    xbt_log_control_set("xbt_cfg.thres:critical");
    simgrid_init(&argc, args);
}


/* A platform that has not loaded within this time is refused (the child is killed), s. */
#define ZP_PLATFORM_CHECK_TIMEOUT_S 120.0
static double g_platform_timeout_s = ZP_PLATFORM_CHECK_TIMEOUT_S;

void zp_engine_set_platform_timeout(double seconds)
{
    g_platform_timeout_s = seconds > 0 ? seconds : ZP_PLATFORM_CHECK_TIMEOUT_S;
}

/* The disposable loader, in a child process (SimGrid may abort on a bad file and allows one platform
 * per process): into `result` (int[2]) the GPUs of node 0 and the nodes. */
static int load_platform(void *ctx, void *result)
{
    const char *path = ctx;
    int *counts = result;
    static char *args[] = {"zplan", "--log=root.thres:error", "--log=xbt_cfg.thres:critical", NULL};
    int argc = 3;
    simgrid_init(&argc, args);
    simgrid_load_platform(path);
    char name[64];
    while (counts[0] < 1000000) {
        snprintf(name, sizeof name, "gpu-0-%d", counts[0]);
        if (!sg_host_by_name(name))
            break;
        counts[0]++;
    }
    while (counts[1] < 100000000) {
        snprintf(name, sizeof name, "cpu-%d", counts[1]);
        if (!sg_host_by_name(name))
            break;
        snprintf(name, sizeof name, "gpu-%d-0", counts[1]);
        if (!sg_host_by_name(name))
            break;
        counts[1]++;
    }
    return 0;
}

zp_status zp_engine_check_platform(const char *path, int *gpus_per_node, int *nodes)
{
    if (path == NULL || *path == '\0')
        return ZP_FAIL(ZP_EINVAL, "--cluster: empty platform file name");
    if (access(path, R_OK) != 0)
        return ZP_FAIL(ZP_ENOENT, "--cluster: cannot read '%s': %s", path, strerror(errno));
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ZP_FAIL(ZP_EINVAL, "--cluster: '%s' is a directory, not a platform file", path);
    /* The loader dies of its own faults with the default action (not through handlers the parent
     * installed, e.g. a fuzzer's), and with the parent. Its stderr is read together with the counts
     * (SimGrid may write more than a pipe holds before the counts), within the time limit: a platform
     * that takes longer to load (or a child that hangs) is killed. */
    int counts[2] = {0, 0};
    zp_child c = {.fn = load_platform, .ctx = (void *)path, .result = counts, .result_size = sizeof counts,
                  .flags = ZP_CHILD_STDOUT_NULL | ZP_CHILD_CAPTURE_STDERR | ZP_CHILD_DEFAULT_FAULTS |
                           ZP_CHILD_DIE_WITH_PARENT,
                  .timeout_s = g_platform_timeout_s};
    ZP_TRY(zp_child_run(&c));
    if (c.timed_out)
        return ZP_FAIL(ZP_EINVAL, "--cluster: loading '%s' took more than %.0f s: refused (is it that large?)", path,
                       g_platform_timeout_s);
    if (!zp_child_ok(&c)) {
        /* keep SimGrid's own explanation: its first error line, without the log prefix */
        char *line = c.err, *best = NULL;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            char *tag = strstr(line, "ERROR] ");
            char *text = tag ? tag + 7 : line;
            if (*text && !strstr(text, "Exiting now")) {
                best = text;
                break;
            }
            line = nl ? nl + 1 : NULL;
        }
        return ZP_FAIL(ZP_EINVAL, "--cluster: '%s' is not a valid SimGrid platform%s%.300s", path,
                       best ? ": " : "", best ? best : "");
    }
    if (counts[0] < 1 || counts[1] < 1)
        return ZP_FAIL(ZP_EINVAL,
                       "--cluster: '%s' loads, but does not follow zplan's naming: GPU hosts gpu-<node>-<i> and "
                       "CPU hosts cpu-<node>, from 0 (see README)",
                       path);
    *gpus_per_node = counts[0];
    *nodes = counts[1];
    return ZP_OK;
}
