/* zp_probe.h — a fixed piece of reference work, timed the same way wherever it runs, so that a measurement
 * can be set beside a calibration taken at another time: this machine's speed then and now.
 *
 * A shared virtual machine changes speed in spells that neither the load nor the other processes' CPU time
 * show (a neighbour on the same physical cores: this 2-core VM ran a 4-layer GPT-2 step in 315 ms for seconds
 * on end, against 175-197 ms before and after, with "others 0.01 cores" and no steal). A prediction calibrated
 * in one spell and measured in another compares two machines. `zplan calibrate` times the probe between its
 * parts and keeps the median (machine.probe_s in the profile) and how far the probes spread
 * (machine.probe_drift); `zplan exec --validate` times it before the first step and after the last, and the
 * judge (common/zp_quiet.h) calls a run whose speed moved too far from the calibration's not quiet.
 *
 *     zp_probe *p;
 *     zp_status st = zp_probe_open(be, nn, &p);       // buffers in be's memory
 *     double s;
 *     st = zp_probe_time(p, world, &s, NULL, NULL);  // every rank of world at once; s: the slowest rank's
 *     zp_probe_close(p);
 *
 * The work of one sample, each part of a kind a training step is made of: two 256 x 256 x 256 fp32 GEMMs
 * (compute), a SwiGLU over 256 x 512 outputs (transcendentals), a STREAM triad over 3 x 1M floats (memory);
 * about 2.5 ms on one core of this machine. 21 samples after 3 warm-up ones, each after a barrier (~60 ms); per
 * rank the median, then the slowest rank's (the ranks of a step meet at every collective). */
#ifndef ZP_PROBE_H
#define ZP_PROBE_H

#include "zp_kernels.h"
#include "zp_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zp_probe zp_probe;

/* The probe's buffers in be's memory; nn: be's layer kernels (zp_nn_ops_get). ZP_ENOMEM, or the backend's
 * failure. */
zp_status zp_probe_open(const zp_kernels_backend *be, const zp_nn_ops *nn, zp_probe **out);

/* Times the reference work on every rank of world at once (a collective: every rank calls it); *seconds: one
 * sample's median seconds on the slowest rank, *fastest (NULL: not wanted) on the fastest, the same on every
 * rank: ranks running the same work at different speeds share their cores with something else. *sync (NULL:
 * not wanted): over the samples, each started by every rank together, the slowest rank's time less the ranks'
 * mean, summed, over the ranks' mean summed: how long the average rank of a collective waits for the last
 * one, per second of the work since they met (0 on one rank). */
zp_status zp_probe_time(zp_probe *p, zp_comm *world, double *seconds, double *fastest, double *sync);

void zp_probe_close(zp_probe *p);

#ifdef __cplusplus
}
#endif

#endif
