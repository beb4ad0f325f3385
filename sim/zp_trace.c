/* zp_trace.c — the Chrome/Perfetto trace of a simulated step (zp_trace.h). */
#include "zp_trace.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "zp_io.h"

static const zp_op_info *info_of(const zp_op *op) { return &zp_op_table[op->type]; }

void zp_trace_add(zp_trace *t, int stage, int stream, double ts, double dur, const zp_op *op, const char *label)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 4096;
        zp_trace_ev *n = realloc(t->ev, (size_t)cap * sizeof *n);
        if (!n)
            return; /* the trace is best effort; the simulation goes on */
        t->ev = n;
        t->cap = cap;
    }
    t->ev[t->n++] = (zp_trace_ev){.ts = ts, .dur = dur, .stream = stream, .stage = stage, .op = op, .label = label};
}

void zp_trace_mem(zp_trace *t, double ts, const zp_op *op, int alloc)
{
    zp_memcount_add(&t->memc, op->cat, alloc ? op->bytes : -op->bytes);
    if (t->nmem == t->capmem) {
        int cap = t->capmem ? 2 * t->capmem : 1024;
        void *n = realloc(t->mem, (size_t)cap * sizeof *t->mem);
        if (!n)
            return;
        t->mem = n;
        t->capmem = cap;
    }
    if (t->nmem > 0 && t->mem[t->nmem - 1].ts == ts)
        t->nmem--; /* several changes at one instant: the last value stands */
    t->mem[t->nmem].ts = ts;
    t->mem[t->nmem].device = t->memc.cur_dev;
    t->mem[t->nmem].host = t->memc.cur[ZP_MEM_HOST];
    t->nmem++;
}

/* A stream's track (tid) and its waits' track (zp_trace.h): the first five streams keep the ids traces have always had
 * (stream s, waits ZP_STREAM_TP + s), the TP overlap's stream the two after them, the EP overlap's the two after
 * those. */
int zp_trace_track(int stream, int wait)
{
    if (stream == ZP_STREAM_TP)
        return 2 * ZP_STREAM_TP + wait;
    if (stream == ZP_STREAM_EP)
        return 2 * ZP_STREAM_TP + 2 + wait;
    return wait ? ZP_STREAM_TP + stream : stream;
}

zp_status zp_trace_write(const zp_trace *t, int stages, const char *path)
{
    json_t *events = json_array();
    static const char *const tnames[ZP_NSTREAMS] = {"compute stream", "comm stream (ZeRO-DP)", "PCIe", "CPU",
                                                    "CP ring (context parallelism)",
                                                    "TP overlap (chunks beside their GEMMs)",
                                                    "EP stream (all-to-alls beside compute)"};
    /* one process (track group) per pipeline stage: its first node, every GPU of it. A stream waiting for
     * another (a bucket not yet reduced, a gather not yet done) is idle: its waits go on a track of their
     * own below it (zp_trace_track), so a stream's track shows its work */
    int waits[ZP_NSTREAMS] = {0}, used[ZP_NSTREAMS] = {0};
    for (int i = 0; i < t->n; i++) {
        used[t->ev[i].stream] = 1;
        if (t->ev[i].op && info_of(t->ev[i].op)->cls == ZP_OPC_WAIT)
            waits[t->ev[i].stream] = 1;
    }
    for (int st = 0; st < stages; st++) {
        for (int s = 0; s < ZP_NSTREAMS; s++) {
            if ((s == ZP_STREAM_CP || s == ZP_STREAM_TP || s == ZP_STREAM_EP) && !used[s]) /* only where used */
                continue;
            char wname[64];
            snprintf(wname, sizeof wname, "%s: waiting", tnames[s]);
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                                                    "pid", st, "tid", zp_trace_track(s, 0), "args", "name", tnames[s]));
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index",
                                                    "ph", "M", "pid", st, "tid", zp_trace_track(s, 0), "args", "sort_index", 2 * s));
            if (waits[s]) {
                json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph",
                                                        "M", "pid", st, "tid", zp_trace_track(s, 1), "args", "name", wname));
                json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index",
                                                        "ph", "M", "pid", st, "tid", zp_trace_track(s, 1), "args",
                                                        "sort_index", 2 * s + 1));
            }
        }
        char pname[96];
        if (stages == 1)
            snprintf(pname, sizeof pname, "node 0 (every GPU of the node)");
        else
            snprintf(pname, sizeof pname, "pipeline stage %d (its first node, every GPU of it)", st);
        json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name", "ph", "M", "pid",
                                                st, "args", "name", pname));
        if (stages > 1)
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:{s:i}}", "name", "process_sort_index", "ph",
                                                    "M", "pid", st, "args", "sort_index", st));
    }
    for (int i = 0; i < t->n; i++) {
        const zp_trace_ev *e = &t->ev[i];
        const zp_op *op = e->op;
        json_t *args = json_object();
        if (op) {
            json_object_set_new(args, "layer", json_integer(op->layer));
            json_object_set_new(args, "micro_batch", json_integer(op->micro));
            const zp_op_info *in = info_of(op);
            if (op->flops > 0) {
                json_object_set_new(args, "gemm_mnk_batch",
                                    json_pack("[f,f,f,f]", op->m, op->n, op->k, op->batch));
                json_object_set_new(args, "tflops", json_real(op->flops / e->dur / 1e12));
            } else if (in->cls == ZP_OPC_COLL || in->cls == ZP_OPC_COPY || in->cls == ZP_OPC_P2P) {
                json_object_set_new(args, "bytes", json_real(op->bytes));
                if (in->cls == ZP_OPC_P2P)
                    json_object_set_new(args, "peer_stage", json_integer(op->item));
                if (in->cls == ZP_OPC_COLL)
                    json_object_set_new(args, "group", json_string(zp_group_name(in->group)));
            }
        }
        const int wait = !op || info_of(op)->cls == ZP_OPC_WAIT;
        const char *cat = wait ? "wait" : zp_phase_name(op->phase);
        json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", e->label, "cat",
                                                cat, "ph", "X", "ts", e->ts * 1e6, "dur", e->dur * 1e6, "pid", e->stage,
                                                "tid", zp_trace_track(e->stream, wait), "args", args));
    }
    /* the memory curve: node 0's live bytes as its streams allocate and free (Perfetto counter track) */
    for (int i = 0; i < t->nmem; i++)
        json_array_append_new(events, json_pack("{s:s, s:s, s:f, s:i, s:{s:f, s:f}}", "name", "memory per GPU (GB)",
                                                "ph", "C", "ts", t->mem[i].ts * 1e6, "pid", 0, "args", "device",
                                                t->mem[i].device / 1e9, "host", t->mem[i].host / 1e9));
    json_t *root = json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
    zp_io_atomic *a;
    zp_status st = zp_io_atomic_open(path, &a);
    if (st == ZP_OK) {
        if (json_dumpf(root, zp_io_atomic_file(a), JSON_COMPACT) != 0) {
            zp_io_atomic_abort(a);
            st = ZP_FAIL(ZP_EIO, "writing the trace '%s' failed", path);
        } else {
            st = zp_io_atomic_commit(a);
        }
    }
    json_decref(root);
    return st;
}


void zp_trace_free(zp_trace *t)
{
    free(t->ev);
    free(t->mem);
    t->ev = NULL;
    t->mem = NULL;
    t->n = t->cap = t->nmem = t->capmem = 0;
}
