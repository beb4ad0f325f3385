/* zp_simrun.h — runs simulations in child processes (SimGrid allows one per process), several at
 * once on the available cores, and brings their results back through pipes. */
#ifndef ZP_SIMRUN_H
#define ZP_SIMRUN_H

#include "zp_engine.h"

typedef struct {
    zp_sim_input in;   /* what to simulate (pointers must stay valid until the run returns) */
    zp_sim_result res; /* filled on success */
    zp_status st;      /* ZP_OK, or why this simulation failed */
    char err[256];     /* the failure's message */
} zp_sim_job;

/* Runs every job, at most `parallel` at a time (<= 0: the number of online CPUs). Returns ZP_OK when
 * the jobs ran (each job has its own status); an error only when processes could not be created. */
zp_status zp_simrun_many(zp_sim_job *jobs, int n, int parallel);

/* One job, in a child process. */
zp_status zp_simrun_one(zp_sim_job *job);

#endif
