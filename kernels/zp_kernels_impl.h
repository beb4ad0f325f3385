/* zp_kernels_impl.h — private to kernels/: the communicator's layout, checker macros and
 * helpers shared by the backends. Not installed, not included outside kernels/. */
#ifndef ZP_KERNELS_IMPL_H
#define ZP_KERNELS_IMPL_H

#include "zp_elementwise.h"
#include "zp_kernels.h"

#if ZP_HAVE_MPI
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct zp_comm {
    const zp_kernels_backend *be; /* the backend whose collectives run on it */
    int rank;                     /* this process's rank in the communicator */
    int size;                     /* ranks in the communicator */
#if ZP_HAVE_MPI
    MPI_Comm mpi;                 /* duplicated communicator, errors returned (not fatal) */
#endif
    void *nccl;                   /* cuda: ncclComm_t, NULL otherwise */
    void *stream;                 /* cuda: cudaStream_t the collectives run on */
    float *scratch;               /* cpu: the ring reduce-scatter's receive buffer (scratch_n floats) */
    size_t scratch_n;
};

/* Per-step scalars of the element update from validated hyper-parameters. */
zp_adam_coeffs zp_adam_coeffs_make(const zp_adam_hparams *hp);

#if ZP_HAVE_MPI
/* Turns an MPI error code into a recorded failure naming the call. */
zp_status zp_mpi_fail(int rc, const char *call, const char *file, int line);
#define ZP_MPI_CHECK(call)                                                   \
    do {                                                                     \
        int zp_mpi_rc_ = (call);                                             \
        if (zp_mpi_rc_ != MPI_SUCCESS)                                       \
            return zp_mpi_fail(zp_mpi_rc_, #call, __FILE__, __LINE__);       \
    } while (0)
#endif

/* Rejects counts MPI/NCCL cannot take in one call. */
zp_status zp_count_check(size_t count, zp_dtype dt, const char *what);

#ifdef __cplusplus
}
#endif

#endif
