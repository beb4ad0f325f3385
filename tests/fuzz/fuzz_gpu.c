/* fuzz_gpu — GPU spec files (gpus/NAME.gpu, a user's --gpu FILE) through zp_gpu_parse. An accepted spec must
 * hold only what the parser promises (every figure finite, >= 0, within range; a required figure above 0;
 * fractions at most 1; the text fields terminated) and apply onto every cluster row or be refused with a
 * message; a refused one must say why. */
#include <math.h>

#include "fuzz_common.h"
#include "zp_cluster.h"
#include "zp_gpu.h"

static void check_figure(const char *what, double v, int zero_ok)
{
    FZ_ASSERT(isfinite(v) && v >= 0 && v <= 1e30, "%s = %g accepted", what, v);
    FZ_ASSERT(zero_ok || v > 0, "%s = 0 accepted", what);
}

static void check_accepted(const zp_gpu *g)
{
    FZ_ASSERT(memchr(g->name, '\0', sizeof g->name) && memchr(g->description, '\0', sizeof g->description),
              "an unterminated text field");
    check_figure("fp32", g->fp32, 0);
    check_figure("fp16", g->fp16, 0);
    check_figure("bf16", g->bf16, 1);
    check_figure("fp8", g->fp8, 1);
    check_figure("hbm", g->hbm, 0);
    check_figure("hbm_bw", g->hbm_bw, 0);
    check_figure("clock", g->clock, 0);
    check_figure("tdp", g->tdp_w, 0);
    check_figure("nvlink_bw", g->nvlink_bw, 0);
    check_figure("nvlink_latency", g->nvlink_latency, 0);
    check_figure("nic_bw", g->nic_bw, 0);
    check_figure("kernel_launch", g->kernel_launch, 0);
    check_figure("dispatch", g->dispatch, 0);
    check_figure("dispatch_block", g->dispatch_block, 1);
    check_figure("coll_dispatch", g->coll_dispatch, 1);
    check_figure("nccl_ll_base", g->nccl_ll_base, 1);
    check_figure("nccl_ll_hop", g->nccl_ll_hop, 1);
    check_figure("flash_seq_half", g->flash_seq_half, 1);
    check_figure("link_bw", g->link_bw, 1);
    FZ_ASSERT(g->nvlink_efficiency > 0 && g->nvlink_efficiency <= 1, "nvlink_efficiency %g", g->nvlink_efficiency);
    FZ_ASSERT(g->gemm_efficiency > 0 && g->gemm_efficiency <= 1, "gemm_efficiency %g", g->gemm_efficiency);
    FZ_ASSERT(g->flash_efficiency >= 0 && g->flash_efficiency <= 1, "flash_efficiency %g", g->flash_efficiency);
    FZ_ASSERT(g->sms >= 1 && g->nvlink_domain >= 1 && g->nccl_ctas >= 0, "sms %d nvlink_domain %d nccl_ctas %d",
              g->sms, g->nvlink_domain, g->nccl_ctas);
    FZ_ASSERT(g->nccl_ll128 == 0 || g->nccl_ll128 == 1, "nccl_ll128 %d", g->nccl_ll128);
    FZ_ASSERT(!g->intra_mesh || g->link_bw > 0, "a mesh without link_bw");
    FZ_ASSERT((g->fp8_mx == 0 || g->fp8_mx == 1) && (!g->fp8_mx || g->fp8 > 0), "fp8_block_scaled %d, fp8 %g",
              g->fp8_mx, g->fp8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_strndup(data, size);
    zp_gpu g;
    if (zp_gpu_parse(text, "fuzz.gpu", &g) == ZP_OK) {
        check_accepted(&g);
        for (int i = 0; i < zp_cluster_count(); i++) {
            zp_cluster c = *zp_cluster_get(i);
            if (zp_gpu_apply(&g, &c) == ZP_OK)
                FZ_ASSERT(c.gpu_mem == g.hbm && c.nvlink_domain == g.nvlink_domain, "applied figures differ");
            else
                FZ_ASSERT(zp_error_message()[0] != '\0', "apply refused without a message");
        }
    } else {
        FZ_ASSERT(zp_error_message()[0] != '\0', "refused without a message");
    }
    zp_error_clear();
    free(text);
    return 0;
}
