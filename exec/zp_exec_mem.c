/* zp_exec_mem.c — the tracking allocator: allocates through the backend (device memory on cuda;
 * ZP_MEM_HOST through its alloc_host: pinned host memory), counts live bytes by category with the replay's
 * own accounting (zp_memcount, sim/zp_memory.h: the device total leaves host memory out) and keeps the
 * blocks it is given back in a small cache for reuse of the same size, as PyTorch's caching allocator
 * does on a GPU: stage 3 gathers and frees a parameter group per block twice a step, and handing those
 * to the C library each time cost page faults on every reuse (16% of a stage-3 step on the CPU, measured
 * with perf), work the real system never does and the schedule does not model. The bookkeeping stays
 * on the host (device memory cannot carry a header the host reads): a table of live blocks, searched
 * from the newest. */
#include <stdlib.h>
#include <string.h>

#include "zp_exec_impl.h"

static int is_host(int cat) { return cat == ZP_MEM_HOST; }

static void release_blk(const zp_exec_mem *t, zp_exec_blk *b)
{
    if (is_host(b->cat))
        t->be->free_host(b->p);
    else
        t->be->free(b->p);
    b->p = NULL;
}

void *zp_exec_mem_alloc(zp_exec_mem *t, zp_mem_cat cat, size_t bytes, int zero)
{
    const size_t cap = ((bytes + 63) / 64) * 64 + 64;
    const int host = is_host((int)cat);
    zp_exec_blk b = {NULL, bytes, cap, (int)cat};
    for (int i = 0; i < ZP_EXEC_MEM_CACHE && !b.p; i++)
        if (t->cache[i].p && t->cache[i].cap == cap && is_host(t->cache[i].cat) == host) {
            b.p = t->cache[i].p;
            t->cache[i].p = NULL;
        }
    if (!b.p && (host ? t->be->alloc_host(cap, &b.p) : t->be->alloc(cap, &b.p)) != ZP_OK)
        return NULL;
    if (t->nlive == t->cap_live) {
        size_t n = t->cap_live ? 2 * t->cap_live : 64;
        zp_exec_blk *nl = realloc(t->live, n * sizeof *nl);
        if (!nl) {
            release_blk(t, &b);
            return NULL;
        }
        t->live = nl;
        t->cap_live = n;
    }
    if (zero && host)
        memset(b.p, 0, bytes);
    else if (zero && t->be->zero(b.p, bytes) != ZP_OK) {
        release_blk(t, &b);
        return NULL;
    }
    t->live[t->nlive++] = b;
    zp_memcount_add(&t->count, cat, (double)bytes);
    return b.p;
}

void zp_exec_mem_free(zp_exec_mem *t, void *p)
{
    if (!p)
        return;
    size_t i = t->nlive;
    while (i > 0 && t->live[i - 1].p != p)
        i--;
    if (i == 0)
        return; /* not the tracker's: nothing to do (never happens for the executor's own pointers) */
    zp_exec_blk b = t->live[i - 1];
    t->live[i - 1] = t->live[--t->nlive];
    zp_memcount_add(&t->count, (zp_mem_cat)b.cat, -(double)b.bytes);
    for (int k = 0; k < ZP_EXEC_MEM_CACHE; k++)
        if (!t->cache[k].p) {
            t->cache[k] = b;
            return;
        }
    release_blk(t, &b);
}

void zp_exec_mem_release(zp_exec_mem *t)
{
    for (int i = 0; i < ZP_EXEC_MEM_CACHE; i++)
        if (t->cache[i].p)
            release_blk(t, &t->cache[i]);
    for (size_t i = 0; i < t->nlive; i++)
        release_blk(t, &t->live[i]);
    free(t->live);
    t->live = NULL;
    t->nlive = t->cap_live = 0;
}
