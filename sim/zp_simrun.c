#include "zp_simrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_child.h"

/* What a simulation process sends back. */
typedef struct {
    zp_status st;
    zp_sim_result res;
    char err[256];
} wire;

/* Runs in the child. SimGrid writes to stdout and stderr on its own: the child's go to /dev/null, so
 * that the parent's output stays clean. */
static int run_child(void *ctx, void *result)
{
    zp_sim_job *job = ctx;
    wire *w = result;
    w->st = zp_engine_run(&job->in, &w->res);
    if (w->st != ZP_OK)
        snprintf(w->err, sizeof w->err, "%s", zp_error_message());
    return 0;
}

static void finish(zp_sim_job *job, const zp_child *c, const wire *w)
{
    if (c->result_len == sizeof *w) {
        job->st = w->st;
        job->res = w->res;
        snprintf(job->err, sizeof job->err, "%s", w->err);
    } else {
        char how[128];
        zp_child_describe(c, how, sizeof how);
        job->st = ZP_ERUNTIME;
        snprintf(job->err, sizeof job->err, "the simulation process %s", how);
    }
}

zp_status zp_simrun_many(zp_sim_job *jobs, int n, int parallel)
{
    if (parallel <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        parallel = cpus > 0 ? (int)cpus : 1;
    }
    if (parallel > n)
        parallel = n;
    if (parallel > 64)
        parallel = 64;
    if (parallel < 1)
        parallel = 1;
    /* slot i runs job slot_job[i] (-1: free) in kids[i], whose result arrives in wires[i] */
    zp_child *kids = calloc((size_t)parallel, sizeof *kids);
    wire *wires = calloc((size_t)parallel, sizeof *wires);
    int *slot_job = malloc((size_t)parallel * sizeof *slot_job);
    if (!kids || !wires || !slot_job) {
        free(kids);
        free(wires);
        free(slot_job);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < parallel; i++)
        slot_job[i] = -1;
    int next = 0, running = 0;
    zp_status st = ZP_OK;
    while ((next < n && st == ZP_OK) || running > 0) {
        for (int i = 0; i < parallel && next < n && st == ZP_OK; i++) {
            if (slot_job[i] >= 0)
                continue;
            kids[i] = (zp_child){.fn = run_child, .ctx = &jobs[next], .result = &wires[i],
                                 .result_size = sizeof wires[i],
                                 .flags = ZP_CHILD_STDOUT_NULL | ZP_CHILD_STDERR_NULL | ZP_CHILD_DIE_WITH_PARENT};
            st = zp_child_start(&kids[i]);
            if (st == ZP_OK) {
                slot_job[i] = next++;
                running++;
            }
        }
        if (running == 0)
            break;
        /* collect whichever child has written its result (or died: its pipe closes) */
        int i;
        zp_status ws = zp_child_wait_any(kids, parallel, &i);
        if (ws != ZP_OK) {
            st = ws;
            break;
        }
        finish(&jobs[slot_job[i]], &kids[i], &wires[i]);
        slot_job[i] = -1;
        running--;
    }
    for (int i = 0; i < parallel; i++)
        zp_child_kill(&kids[i]); /* none left running unless waiting failed */
    free(kids);
    free(wires);
    free(slot_job);
    return st;
}

zp_status zp_simrun_one(zp_sim_job *job)
{
    ZP_TRY(zp_simrun_many(job, 1, 1));
    if (job->st != ZP_OK)
        return ZP_FAIL(job->st, "%s", job->err);
    return ZP_OK;
}
