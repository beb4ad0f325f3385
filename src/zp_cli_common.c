#include <stdio.h>
#include <stdlib.h>

#include "zp_cli.h"
#include "zp_config.h"
#include "zp_io.h"
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

int zp_cli_fail_as(const char *name, zp_status st)
{
    const char *msg = zp_error_message();
    fprintf(stderr, "%s: %s\n", name, msg && *msg ? msg : zp_status_name(st));
    return zp_status_exit_code(st);
}

int zp_cli_fail(zp_status st) { return zp_cli_fail_as("zplan", st); }

zp_status zp_cli_out_open(const char *path, zp_cli_out *o)
{
    o->atomic = NULL;
    o->f = stdout;
    if (!path)
        return ZP_OK;
    zp_io_atomic *a;
    ZP_TRY(zp_io_atomic_open(path, &a));
    o->atomic = a;
    o->f = zp_io_atomic_file(a);
    return ZP_OK;
}

zp_status zp_cli_out_close(zp_cli_out *o, zp_status st)
{
    if (!o->atomic) {
        if (fflush(stdout) != 0 && st == ZP_OK)
            return ZP_FAIL(ZP_EIO, "writing to standard output failed");
        return st;
    }
    if (st != ZP_OK) {
        zp_io_atomic_abort(o->atomic);
        return st;
    }
    return zp_io_atomic_commit(o->atomic);
}

int zp_cli_write_table(zp_table *t, zp_format fmt, const char *path)
{
    zp_cli_out o;
    zp_status st = zp_cli_out_open(path, &o);
    if (st == ZP_OK) {
        st = zp_table_write(t, o.f, fmt);
        st = zp_cli_out_close(&o, st);
    }
    zp_table_free(t);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}
