/* zp_kernels_mpi.h — communicators from any MPI communicator (builds with MPI only). */
#ifndef ZP_KERNELS_MPI_H
#define ZP_KERNELS_MPI_H

#include "zp_kernels.h"

#if ZP_HAVE_MPI
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A communicator over the ranks of `mpi` (duplicated: the caller keeps its own) for backend
 * `be`; errors of calls on it are returned, not fatal. Collective over `mpi`. */
zp_status zp_comm_from_mpi(const zp_kernels_backend *be, MPI_Comm mpi, zp_comm **out);
/* The (duplicated) MPI communicator inside c. */
MPI_Comm zp_comm_mpi(const zp_comm *c);

#ifdef __cplusplus
}
#endif

#endif
#endif
