/* zp_cli_launch.c — what the CLI knows of mpirun before MPI starts (zp_cli.h): the rank count and rank
 * of this process from the launcher's environment, and the exit of a multi-rank command refused on every
 * rank. Apart from zp_cli_common.c so that the option code the fuzzers build needs no MPI. */
#include <stdlib.h>
#include <unistd.h>

#include "zp_cli.h"
#include "zp_kernels.h"

/* Open MPI's variable, or the PMI one of MPICH and Slurm. */
static int launch_env(const char *ompi, const char *pmi, int dflt)
{
    const char *v = getenv(ompi);
    if (!v)
        v = getenv(pmi);
    return v ? atoi(v) : dflt;
}

int zp_cli_launch_size(void) { return launch_env("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", 1); }

int zp_cli_launch_rank(void) { return launch_env("OMPI_COMM_WORLD_RANK", "PMI_RANK", 0); }

int zp_cli_launch_local_size(int dflt) { return launch_env("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", dflt); }

int zp_cli_launch_threads(void)
{
    const int local = zp_cli_launch_local_size(1);
    if (local < 2)
        return 0;
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    if (getenv("OMP_NUM_THREADS") || getenv("OPENBLAS_NUM_THREADS"))
        return 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = cores > local ? (int)(cores / local) : 1;
    zp_kernels_cpu_set_threads(t);
    return t;
}

int zp_cli_launch_exit(int argc, char **argv, int rc)
{
    /* Under mpirun, a rank that exits at once makes mpirun tear the job down, and the other ranks'
     * messages can be lost on the way: meet the others in MPI first (when MPI never started), so every
     * rank has printed before any exits. */
    if (rc == 2 && zp_cli_launch_size() > 1) {
        int argc2 = argc;
        char **argv2 = argv;
        (void)zp_kernels_mpi_meet(&argc2, &argv2);
    }
    return rc;
}
