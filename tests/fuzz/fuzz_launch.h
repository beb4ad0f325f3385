/* fuzz_launch.h — what the launch readers' harnesses (fuzz_megatron_args, fuzz_torchtitan, fuzz_nemo) check:
 * the text through the reader; an accepted launch's notes are terminated and its degrees and batches in
 * range; its model (when it states one, else the zoo's llama-3-8b) and the request it pins are built and
 * validated without crashing, for a GPU count the first byte picks. */
#ifndef ZP_FUZZ_LAUNCH_H
#define ZP_FUZZ_LAUNCH_H

#include "fuzz_common.h"
#include "zp_cluster.h"
#include "zp_launch.h"
#include "zp_zoo.h"

static inline int fz_launch(const uint8_t *data, size_t size,
                            zp_status (*parse)(const char *text, const char *name, zp_launch *l))
{
    static const int64_t gpus[] = {1, 8, 64, 1024, 100000000};
    const uint8_t sel = size > 0 ? data[0] : 0;
    char *s = fz_strndup(size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
    static zp_launch l; /* large (its notes): not on the stack */
    if (parse(s, "fuzz", &l) == ZP_OK) {
        FZ_ASSERT(l.notes.n >= 0 && l.notes.n <= ZP_DS_MAX_NOTES, "notes %d", l.notes.n);
        for (int i = 0; i < l.notes.n; i++)
            FZ_ASSERT(memchr(l.notes.line[i], '\0', sizeof l.notes.line[i]) != NULL, "note %d not terminated", i);
        FZ_ASSERT(l.tp >= 0 && l.pp >= 0 && l.micro_batch >= 0, "tp %lld pp %lld micro %lld", (long long)l.tp,
                  (long long)l.pp, (long long)l.micro_batch);
        zp_model m;
        int stated = 0;
        if (zp_launch_model(&l, &m, &stated) == ZP_OK) {
            if (!stated)
                m = zp_zoo_find("llama-3-8b")->model;
            const zp_cluster *cl = NULL;
            if (zp_cluster_find("dgx-a100", &cl) != ZP_OK)
                abort();
            zp_search_req r;
            zp_search_req_default(&r, &m, cl, gpus[sel % 5]);
            if (zp_launch_request(&l, &r) == ZP_OK) {
                const zp_plan *b = &r.base; /* the launch's plan, given: its bits of the mask clear */
                FZ_ASSERT(zp_search_req_given(&r, ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_DIM(ZP_DIM_PP) |
                                                      ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_GLOBAL_BATCH),
                          "the launch's degrees and batch given");
                FZ_ASSERT(b->mp >= 1 && b->pp >= 1 && r.gpus % (b->mp * b->pp) == 0, "mp %lld pp %lld gpus %lld",
                          (long long)b->mp, (long long)b->pp, (long long)r.gpus);
                FZ_ASSERT(b->micro_batch >= 1 && r.global_batch >= b->micro_batch, "micro %lld global %lld",
                          (long long)b->micro_batch, (long long)r.global_batch);
                (void)zp_search_validate(&r);
            }
        }
    }
    free(s);
    return 0;
}

#endif
