/* exec_world.h — the Criterion fixture of the exec tests that run in one process: MPI up (one rank)
 * and its world communicator on the cpu backend in `world`. Included by one test file each. */
#ifndef ZP_TEST_EXEC_WORLD_H
#define ZP_TEST_EXEC_WORLD_H

#include <criterion/criterion.h>

#include "zp_kernels.h"

static zp_comm *world;

static void setup(void)
{
    int argc = 0;
    char **argv = NULL;
    cr_assert_eq(zp_kernels_mpi_init(&argc, &argv), ZP_OK);
    cr_assert_eq(zp_comm_world(&zp_kernels_cpu, &world), ZP_OK);
}

static void teardown(void)
{
    zp_comm_free(world);
    zp_kernels_mpi_finalize();
}

#endif
