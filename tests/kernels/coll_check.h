/* coll_check.h — what the plain-program collective tests share (test_coll_mpi.c for the cpu backend,
 * test_cuda_coll.c for NCCL): pass/fail counters with file:line (nccl-tests' TESTCHECK), and values that
 * are exact in fp32, fp16 and bf16 and in every partial sum. Each test defines g_pass, g_fail and g_rank. */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "zp_elementwise.h"
#include "zp_kernels.h"

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            g_pass++;                                                        \
        } else {                                                             \
            g_fail++;                                                        \
            fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

#define OK(expr) CHECK((expr) == ZP_OK, "%s: %s", #expr, zp_error_message())

static inline void put(void *buf, zp_dtype dt, size_t i, double x)
{
    if (dt == ZP_DT_F32)
        ((float *)buf)[i] = (float)x;
    else if (dt == ZP_DT_F16)
        ((uint16_t *)buf)[i] = zp_f32_to_f16((float)x);
    else
        ((uint16_t *)buf)[i] = zp_f32_to_bf16((float)x);
}

static inline double get(const void *buf, zp_dtype dt, size_t i)
{
    if (dt == ZP_DT_F32)
        return ((const float *)buf)[i];
    if (dt == ZP_DT_F16)
        return zp_f16_to_f32(((const uint16_t *)buf)[i]);
    return zp_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* small integers: exact in every type and in every partial sum */
static inline double val(int rank, size_t i) { return (double)(rank + (int)(i % 7)); }

/* The all-to-all-v test's layout: rank r sends a2a_count(r, q, k) elements to rank q, in rank order of q,
 * element i of them a2a_val(r, q, i); recv from q at the offsets of the counts in rank order. */
static inline size_t a2a_count(int r, int q, size_t k) { return (size_t)((r + 2 * q) % 3) * k + (size_t)(q == r); }
static inline double a2a_val(int r, int q, size_t i) { return (double)(4 * r + q + (int)(i % 3)); }

/* Fills counts and displacements of rank r among n (arrays of n) and the send buffer (host, dt); returns the
 * elements received. */
static inline size_t a2a_layout(int r, int n, size_t k, zp_dtype dt, void *send, size_t *sc, size_t *sd, size_t *rc,
                                size_t *rd)
{
    size_t so = 0, ro = 0;
    for (int q = 0; q < n; q++) {
        sc[q] = a2a_count(r, q, k);
        sd[q] = so;
        for (size_t i = 0; send && i < sc[q]; i++)
            put(send, dt, so + i, a2a_val(r, q, i));
        so += sc[q];
        rc[q] = a2a_count(q, r, k);
        rd[q] = ro;
        ro += rc[q];
    }
    return ro;
}

/* Wrong elements of what rank r received (host). */
static inline int a2a_wrong(int r, int n, zp_dtype dt, const void *recv, const size_t *rc, const size_t *rd)
{
    int bad = 0;
    for (int q = 0; q < n; q++)
        for (size_t i = 0; i < rc[q]; i++)
            bad += get(recv, dt, rd[q] + i) != a2a_val(q, r, i);
    return bad;
}

#endif
