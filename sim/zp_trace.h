/* zp_trace.h — one simulated step as Chrome trace-event JSON (chrome://tracing, Perfetto): per pipeline
 * stage a process, per stream a track (and a track of its waits below it), and node 0's memory curve as a
 * counter track. The engine records events as its actors run them; the trace is best effort (an event
 * that finds no memory is dropped, the simulation goes on). */
#ifndef ZP_TRACE_H
#define ZP_TRACE_H

#include "zp_memory.h"
#include "zp_ops.h"

typedef struct {
    double ts, dur; /* s of simulated time */
    int stream, stage;
    const zp_op *op; /* NULL: a wait of no op */
    const char *label;
} zp_trace_ev;

typedef struct {
    zp_trace_ev *ev;   /* [n] (capacity cap) */
    int n, cap;
    zp_memcount memc;  /* node 0's live bytes (the memory curve) */
    struct {
        double ts, device, host; /* s; bytes per GPU */
    } *mem;            /* [nmem] (capacity capmem) */
    int nmem, capmem;
} zp_trace;

/* An op (or wait) of `dur` s from `ts` on a stream of a pipeline stage's first node. */
void zp_trace_add(zp_trace *t, int stage, int stream, double ts, double dur, const zp_op *op, const char *label);
/* An alloc (alloc = 1) or free of node 0 at time ts: a point of the memory curve. */
void zp_trace_mem(zp_trace *t, double ts, const zp_op *op, int alloc);
/* Writes the trace of `stages` pipeline stages to `path` (atomically). */
zp_status zp_trace_write(const zp_trace *t, int stages, const char *path);
/* The track id (tid) of a stream's ops (wait 0) or of its waits (wait 1). */
int zp_trace_track(int stream, int wait);
/* Frees the events (the struct itself is the caller's); accepts an empty trace. */
void zp_trace_free(zp_trace *t);

#endif
