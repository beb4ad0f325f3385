/* zp_search_eval.c — one plan's figures (zp_search_eval): its memory against the GPU's and the host's, its
 * analytic step, and the throughputs and FLOP/s that follow; a simulated step put in its place. */
#include "zp_search.h"

#include <stdio.h>
#include <string.h>

#include "zp_search_int.h"
#include "zp_units.h"

zp_status zp_search_eval_known(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                              const zp_plan *plan, const zp_memory *known, zp_eval *out)
{
    memset(out, 0, sizeof *out);
    out->plan = *plan;
    if (known)
        out->mem = *known;
    else
        ZP_TRY(zp_memory_estimate(model, plan, &out->mem));
    const double host = zp_cluster_host_per_gpu(cluster, host_mem, zp_plan_gpus(plan));
    out->fits = zp_memory_fits(&out->mem, gpu_mem, host, out->reason, sizeof out->reason);
    const double nvme = zp_cluster_nvme_per_gpu(cluster, zp_plan_gpus(plan));
    if (out->fits && out->mem.nvme > nvme) {
        out->fits = 0;
        snprintf(out->reason, sizeof out->reason, "NVMe %.0f GB > %.0f GB per GPU's share of the node's drives",
                 out->mem.nvme / 1e9, nvme / 1e9);
    }
    ZP_TRY(zp_analytic_step(model, plan, cluster, &out->time));
    out->global_batch = zp_plan_global_batch(plan);
    double gpus = (double)zp_plan_gpus(plan);
    out->samples_per_s = out->global_batch / out->time.total;
    const double flops = zp_analytic_flops_executed(model, plan, out->global_batch);
    out->tflops_per_gpu = flops / (out->time.total * gpus) / 1e12;
    out->pflops = out->tflops_per_gpu * gpus / 1e3;
    out->method = "analytic";
    out->analytic_step_s = out->time.total;
    zp_units_fill(model, cluster, out);
    return ZP_OK;
}

zp_status zp_search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                         const zp_plan *plan, zp_eval *out)
{
    return zp_search_eval_known(model, cluster, gpu_mem, host_mem, plan, NULL, out);
}

void zp_search_eval_simulated(const zp_model *model, zp_eval *e, const zp_sim_result *s)
{
    double gpus = (double)zp_plan_gpus(&e->plan);
    e->time.compute = s->compute;
    e->time.mp_comm = s->mp_comm;
    e->time.dp_comm = s->dp_exposed;
    e->time.optimizer = s->optimizer;
    e->time.offload = s->offload_exposed;
    e->time.pp_comm = s->pp_exposed;
    e->time.host_wait = s->host_wait;
    e->time.total = s->step_time;
    e->samples_per_s = e->global_batch / s->step_time;
    const double flops = zp_analytic_flops_executed(model, &e->plan, e->global_batch);
    e->tflops_per_gpu = flops / (s->step_time * gpus) / 1e12;
    e->pflops = e->tflops_per_gpu * gpus / 1e3;
    e->method = "simgrid";
    e->sim = s->reduced ? "reduced" : "full";
}
