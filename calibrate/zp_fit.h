/* zp_fit.h — least-squares fits of the cost models (GSL), on measured points.
 * All fits weight each point by 1/t^2, i.e. minimise relative errors, so that microsecond
 * latencies and second-long transfers count alike; residuals are rms relative errors. */
#ifndef ZP_FIT_H
#define ZP_FIT_H

#include "zp_profile.h"
#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective: time = latency + bytes * factor / (busbw_gbs * 1e9), factor the bus-bandwidth
 * factor of the collective. A negative fitted latency is clamped to 0 (refit through the
 * origin). Needs n >= 2 points with distinct sizes; ZP_ERANGE when the data show no bandwidth. */
zp_status zp_fit_collective(const double *bytes, const double *time_s, int n, double factor, double *latency_s,
                            double *busbw_gbs, double *residual);

/* GEMM: time = t0 + s_per_flop * 2mnk + s_per_byte * bytes(m, n, k) over the profile's points
 * (p->gemm, p->gemm_dtype); fills p->gemm_t0_s, gemm_s_per_flop, gemm_s_per_byte,
 * gemm_residual. Coefficients are kept >= 0: terms that would fit negative are dropped and the
 * best remaining fit is kept. Needs ngemm >= 1. */
zp_status zp_fit_gemm(zp_profile *p);

/* Adam: time = t0 + n / rate over (n, time) points; *rate in parameters per second. */
zp_status zp_fit_rate(const double *n, const double *time_s, int npoints, double *rate, double *t0, double *residual);

#ifdef __cplusplus
}
#endif

#endif
