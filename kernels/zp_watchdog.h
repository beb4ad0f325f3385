/* zp_watchdog.h — distributed faults in multi-rank runs (zplan calibrate, zplan exec).
 *
 * 1. zp_comm_check_same_config: at start, every rank hashes its configuration (the options that must agree,
 *    e.g. the canonical command line) and the hashes are all-gathered; ranks that differ from rank 0 are
 *    named and the run is refused on every rank (ZP_EINVAL), before any work.
 * 2. zp_comm_watchdog_start: a thread per rank that (a) exchanges heartbeats with every other rank over its
 *    own duplicate of the communicator and (b) watches this rank's progress, which the main thread reports
 *    with zp_comm_watchdog_beat("phase") at every step that completes. When a rank has not been heard from
 *    for `timeout_s` (killed, stopped, its node lost) or has not progressed for `timeout_s` while the others
 *    wait (hung), the first rank to see it prints one line naming that rank and its last phase on stderr
 *    and calls MPI_Abort: the whole job ends within timeout_s + 2 heartbeat periods (period = min(1 s,
 *    timeout_s / 4)). A rank killed outright (kill -9) is also reported by mpirun itself, at once.
 *    Needs MPI_THREAD_MULTIPLE (zp_kernels_mpi_init asks for it); with less, or without MPI, the watchdog
 *    only watches its own rank's progress. One watchdog per process.
 * Printing and aborting are the point of a watchdog: they happen only when the job is already lost. */
#ifndef ZP_WATCHDOG_H
#define ZP_WATCHDOG_H

#include <stddef.h>
#include <stdint.h>

#include "zp_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 64-bit FNV-1a of `len` bytes (for zp_comm_check_same_config). */
uint64_t zp_config_hash(const void *data, size_t len, uint64_t seed);

/* Collective over c. ZP_OK when every rank passed the same hash; otherwise ZP_EINVAL on every rank with a
 * message naming the ranks (up to 8) whose `what` differs from rank 0's. */
zp_status zp_comm_check_same_config(const zp_comm *c, uint64_t hash, const char *what);

/* Starts the watchdog of this rank over c (collective: duplicates the communicator). `who` prefixes the
 * message ("zplan calibrate"). timeout_s in [1, 1e6]. */
zp_status zp_comm_watchdog_start(const zp_comm *c, double timeout_s, const char *who);
/* The main thread progressed; `phase` (a string that stays valid, e.g. a literal) names what it starts. */
void zp_comm_watchdog_beat(const char *phase);
/* Waits until every rank of c arrives (a barrier, collective over c) without keeping a core busy: polls
 * every 20 ms, beating this rank's watchdog with `phase` meanwhile (a rank that dies or hangs is named by
 * the watchdog, or by mpirun). */
zp_status zp_comm_watchdog_wait_all(zp_comm *c, const char *phase);
/* Stops the watchdog (tells the other ranks this one is done, then joins the thread). Not collective. */
void zp_comm_watchdog_stop(void);

#ifdef __cplusplus
}
#endif

#endif
