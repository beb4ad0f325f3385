#include "zp_shard.h"

#include <stdlib.h>
#include <string.h>

size_t zp_shard_piece(size_t len, int dp) { return dp > 0 ? (len + (size_t)dp - 1) / (size_t)dp : len; }

void zp_shard_range(size_t lo, size_t hi, int dp, int rank, size_t *offset, size_t *size)
{
    size_t p = zp_shard_piece(hi - lo, dp);
    size_t a = lo + (size_t)rank * p, b = a + p;
    if (a > hi)
        a = hi;
    if (b > hi)
        b = hi;
    *offset = a;
    *size = b - a;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

zp_status zp_units_build(size_t total, const size_t *cuts, int ncuts, int dp, int rank, zp_units *out)
{
    memset(out, 0, sizeof *out);
    if (dp < 1 || rank < 0 || rank >= dp || total == 0)
        return ZP_FAIL(ZP_EINVAL, "shards: dp %d, rank %d, %zu elements", dp, rank, total);
    size_t *c = malloc(((size_t)ncuts + 2) * sizeof *c);
    if (!c)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int n = 0;
    c[n++] = 0;
    c[n++] = total;
    for (int i = 0; i < ncuts; i++)
        if (cuts[i] > 0 && cuts[i] < total)
            c[n++] = cuts[i];
    qsort(c, (size_t)n, sizeof *c, cmp_size);
    out->u = calloc((size_t)n, sizeof *out->u);
    if (!out->u) {
        free(c);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    out->dp = dp;
    out->rank = rank;
    size_t off = 0;
    for (int i = 0; i + 1 < n; i++) {
        if (c[i + 1] == c[i])
            continue;
        zp_unit *u = &out->u[out->n++];
        u->lo = c[i];
        u->hi = c[i + 1];
        u->piece = zp_shard_piece(u->hi - u->lo, dp);
        u->shard_off = off;
        zp_shard_range(u->lo, u->hi, dp, rank, &u->off, &u->size);
        off += u->piece;
        if (u->piece > out->max_piece)
            out->max_piece = u->piece;
    }
    out->shard_size = off;
    free(c);
    return ZP_OK;
}

void zp_units_free(zp_units *u)
{
    if (!u)
        return;
    free(u->u);
    memset(u, 0, sizeof *u);
}

int zp_units_find(const zp_units *u, size_t pos)
{
    int lo = 0, hi = u->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (u->u[mid].lo < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
