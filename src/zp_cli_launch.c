/* zp_cli_launch.c — what the CLI knows of mpirun before MPI starts (zp_cli.h): the rank count and rank
 * of this process from the launcher's environment, and the exit of a multi-rank command refused on every
 * rank. Apart from zp_cli_common.c so that the option code the fuzzers build needs no MPI. */
#include <stdlib.h>

#include "zp_cli.h"
#include "zp_config.h"
#include "zp_kernels.h"

#if ZP_HAVE_MPI
#include <mpi.h>
#endif

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

int zp_cli_launch_exit(int argc, char **argv, int rc)
{
#if ZP_HAVE_MPI
    /* Under mpirun, a rank that exits at once makes mpirun tear the job down, and the other ranks'
     * messages can be lost on the way: meet the others in MPI first, so every rank has printed before
     * any exits. */
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (rc == 2 && zp_cli_launch_size() > 1 && !initialized && !finalized) {
        int argc2 = argc;
        char **argv2 = argv;
        if (zp_kernels_mpi_init(&argc2, &argv2) == ZP_OK) {
            MPI_Barrier(MPI_COMM_WORLD);
            zp_kernels_mpi_finalize();
        }
    }
#else
    (void)argc;
    (void)argv;
#endif
    return rc;
}
