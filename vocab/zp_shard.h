/* zp_shard.h — the one place that computes which part of a flat parameter range a
 * data-parallel rank owns (llm.c's rule: one helper owns shard arithmetic).
 *
 * The flat layout of one MP rank's parameters is cut into units: at every parameter group boundary
 * (what stage 3 gathers) and every gradient bucket boundary (what a reduction covers). Each unit is
 * split into dp equal pieces of ceil(len / dp) elements (the last rank's piece is padded), so that a
 * unit's pieces concatenated in rank order are the unit itself: one reduce-scatter or all-gather of
 * `piece` elements per unit, with no packing. A rank's shard storage is its pieces of every unit in
 * order (shard_off), padding included. */
#ifndef ZP_SHARD_H
#define ZP_SHARD_H

#include <stddef.h>

#include "zp_status.h"

/* Piece of [lo, hi) that `rank` of `dp` owns: offset (absolute) and size (0 past the end). */
void zp_shard_range(size_t lo, size_t hi, int dp, int rank, size_t *offset, size_t *size);
/* Elements per piece of a range of len: ceil(len / dp). */
size_t zp_shard_piece(size_t len, int dp);

typedef struct {
    size_t lo, hi;     /* flat range */
    size_t piece;      /* zp_shard_piece(hi - lo, dp) */
    size_t shard_off;  /* where this rank's piece starts in its shard storage */
    size_t off, size;  /* this rank's piece: [off, off + size) in flat coordinates */
} zp_unit;

typedef struct {
    zp_unit *u;
    int n;
    size_t shard_size; /* sum of pieces (padded) */
    size_t max_piece;
    int dp, rank;
} zp_units;

/* Units of [0, total) cut at `cuts` (any order, duplicates and out-of-range values ignored). */
zp_status zp_units_build(size_t total, const size_t *cuts, int ncuts, int dp, int rank, zp_units *out);
void zp_units_free(zp_units *u);
/* First unit with lo >= pos (n when none). */
int zp_units_find(const zp_units *u, size_t pos);

#endif
