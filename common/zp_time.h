/* zp_time.h — the monotonic clock, in seconds: for durations and deadlines (never wall-clock dates). */
#ifndef ZP_TIME_H
#define ZP_TIME_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC: not changed by settimeofday or NTP steps);
 * differences of two calls are elapsed time with nanosecond resolution. */
double zp_time_now_s(void);

#endif
