/* zp_coll.h — the collective kinds and their facts, shared by the schedule and the simulator (sim/),
 * the kernels that run them (kernels/), calibration and the profile: one definition, in the layer all
 * of them may use (nccl-tests' conventions).
 *
 * A ring collective over n ranks of a buffer of S bytes (nccl-tests' "size": the all-reduced buffer,
 * the gathered output, the reduce-scattered input) moves passes·(n-1)/n·S bytes through each rank's link:
 * passes = 2 for all-reduce (reduce-scatter then all-gather), 1 for reduce-scatter and all-gather; an
 * all-to-all of S bytes per rank sends (n-1)/n of them. That factor is also nccl-tests' busbw/algbw; a
 * broadcast's is 1. */
#ifndef ZP_COLL_H
#define ZP_COLL_H

#include <stdint.h>

typedef enum {
    ZP_COLL_ALLREDUCE = 0,
    ZP_COLL_REDUCE_SCATTER,
    ZP_COLL_ALLGATHER,
    ZP_COLL_BROADCAST,
    ZP_COLL_ALLTOALL, /* every rank sends 1/n of its buffer to each rank (MoE's token dispatch and combine) */
    ZP_COLL_COUNT
} zp_coll_kind;

/* The kinds `zplan calibrate` measures and a device profile holds (its "collectives" keys), in this
 * order: all but the all-to-all, which the simulator costs from the same link figures. */
#define ZP_COLL_MEASURED ZP_COLL_ALLTOALL

typedef struct {
    const char *name;  /* "allreduce", "reduce_scatter", "allgather", "broadcast" (profile JSON keys) */
    double passes;     /* ring passes over the buffer: 2 for all-reduce, 1 otherwise */
    int ring;          /* 1: the (n-1)/n ring factor applies; 0: broadcast (factor 1) */
} zp_coll_info;

/* The row of a kind; NULL outside the table. */
const zp_coll_info *zp_coll_get(zp_coll_kind kind);
/* "allreduce", ...; "?" outside the table. */
const char *zp_coll_name(zp_coll_kind kind);
/* Bytes through each rank's link per buffer byte (= busbw / algbw): passes·(n-1)/n, 1 for a broadcast; 0
 * for n < 1. */
double zp_coll_busbw_factor(zp_coll_kind kind, int nranks);

/* The closed forms of a collective's time, one definition for the analytic bound, a calibrated profile and
 * the engine (sim/zp_collcost.c). */
/* A ring over n ranks, `passes` passes over `bytes` (2: all-reduce, 1: reduce-scatter, all-gather,
 * all-to-all) at bw B/s with lat s per step: steps / n x bytes / bw + steps x lat, steps = passes (n-1);
 * 0 for n <= 1. */
double zp_coll_ring_time(double bytes, int64_t n, double bw, double lat, double passes);
/* The bandwidth term of a fitted collective: bytes x busbw_factor / (busbw_gbs x 1e9), s. */
double zp_coll_bus_time(double bytes, double busbw_factor, double busbw_gbs);
/* A fitted latency measured on fit_nranks ranks, scaled to nranks by ring steps: latency_s x (nranks - 1)
 * / (fit_nranks - 1), s. */
double zp_coll_fit_latency(double latency_s, int fit_nranks, int nranks);

#endif
