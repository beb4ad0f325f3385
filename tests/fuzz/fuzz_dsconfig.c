/* fuzz_dsconfig — DeepSpeed JSON through zp_dsconfig_parse against the 100B zoo model. The first byte
 * picks the GPU count and MP degree; an accepted config must leave a request whose fixed options are in
 * range, and zp_search_validate must return (either way) without crashing. */
#include <math.h>

#include "fuzz_common.h"
#include "zp_cluster.h"
#include "zp_dsconfig.h"
#include "zp_zoo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int64_t gpus[] = {1, 2, 16, 400, 1024, 100000000};
    static const int64_t mps[] = {0, 1, 2, 16}; /* 0: not given */
    uint8_t sel = size > 0 ? data[0] : 0;
    char *s = fz_strndup(size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
    const zp_cluster *cl = NULL;
    if (zp_cluster_find("dgx2", &cl) != ZP_OK)
        abort();
    zp_model model = zp_zoo_find("100B")->model;
    zp_search_req r;
    zp_search_req_default(&r, &model, cl, gpus[sel % 6]);
    const int64_t mp = mps[(sel / 6) % 4];
    if (mp) {
        r.base.mp = r.gpus % mp != 0 ? 1 : mp;
        zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    }
    r.checkpoint = (sel / 24) % 2;
    zp_ds_notes notes = {0};
    if (zp_dsconfig_parse(s, "fuzz.json", &r, &notes) == ZP_OK) {
        FZ_ASSERT(r.base.stage >= 0 && r.base.stage <= 3, "stage %d", r.base.stage);
        FZ_ASSERT(zp_search_req_given(&r, ZP_SEARCH_STAGE | ZP_SEARCH_DIM(ZP_DIM_TP)), "stage and MP given");
        FZ_ASSERT(r.base.mp >= 1, "mp %lld", (long long)r.base.mp);
        FZ_ASSERT(zp_search_req_searched(&r, ZP_SEARCH_MICRO_BATCH) || r.base.micro_batch >= 1, "micro %lld",
                  (long long)r.base.micro_batch);
        FZ_ASSERT(zp_search_req_searched(&r, ZP_SEARCH_GLOBAL_BATCH) || r.global_batch >= 1, "global %lld",
                  (long long)r.global_batch);
        FZ_ASSERT(isfinite(r.base.bucket) && r.base.bucket >= 1, "bucket %g", r.base.bucket);
        FZ_ASSERT(r.base.param_bytes == 2 || r.base.param_bytes == 4, "param bytes %g", r.base.param_bytes);
        (void)zp_search_validate(&r);
    }
    FZ_ASSERT(notes.n >= 0 && notes.n <= ZP_DS_MAX_NOTES, "notes %d", notes.n);
    for (int i = 0; i < notes.n; i++)
        FZ_ASSERT(memchr(notes.line[i], '\0', sizeof notes.line[i]) != NULL, "note %d not terminated", i);
    free(s);
    return 0;
}
