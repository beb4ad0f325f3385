/* zp_cli_plan.c — what the plan options resolve to (the model, the cluster, the costs) and the search
 * the what-if, `report` and `schedule` share. */
#include <stdio.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_dsconfig.h"
#include "zp_engine.h"
#include "zp_progress.h"
#include "zp_size.h"

zp_status zp_cli_plan_parse(zp_cli_cmd cmd, const char *name, int argc, char **argv, zp_cli_plan *o)
{
    memset(o, 0, sizeof *o);
    ZP_TRY(zp_cli_args_parse(cmd, name, argc, argv, &o->a));
    o->a.r.model = &o->model;
    return o->a.help ? ZP_OK : zp_cli_args_check_plan(&o->a);
}

int zp_cli_plan_main(zp_cli_cmd cmd, const char *name, const char *fail_as, const char *usage, int argc, char **argv,
                     int (*body)(zp_cli_plan *o))
{
    zp_cli_plan o;
    zp_status st = zp_cli_plan_parse(cmd, name, argc, argv, &o);
    if (st != ZP_OK)
        return zp_cli_fail_as(fail_as, st);
    if (o.a.help) {
        zp_cli_usage_put(usage, stdout);
        return 0;
    }
    return body(&o);
}

/* A profile prices the cluster's GPUs: one measured on the cpu backend would price each GPU as this CPU
 * (0.0 TFLOPs) and is refused; one of another GPU is used with a warning that says so. */
static zp_status check_profile(const char *path, const zp_profile *p, const zp_cluster *c)
{
    if (strcmp(p->backend, "cpu") == 0)
        return ZP_FAIL(ZP_EINVAL,
                       "--profile %s was calibrated on the cpu backend (%s, %d rank%s): it would price each %s as "
                       "this CPU. Calibrate on the GPUs (zplan calibrate --backend cuda on a node of the cluster) or "
                       "drop --profile for the preset's costs; cpu profiles go with `zplan exec --validate`",
                       path, p->machine.cpu_model[0] ? p->machine.cpu_model : "a CPU", p->machine.ranks,
                       p->machine.ranks == 1 ? "" : "s", c->gpu_name);
    if (p->machine.gpu[0] && strstr(p->machine.gpu, c->gpu_name) == NULL && strstr(c->gpu_name, p->machine.gpu) == NULL)
        fprintf(stderr, "zplan: warning: --profile %s was measured on %s, the cluster %s has %s: its GPUs are priced "
                        "as the profile's\n",
                path, p->machine.gpu, c->name, c->gpu_name);
    return ZP_OK;
}

/* --gpu: the cluster's GPU figures replaced by the preset's or the file's; named "CLUSTER with GPU". */
static zp_status with_gpu(zp_cli_plan *o)
{
    ZP_TRY(zp_gpu_find(o->a.gpu, &o->gpu));
    o->gpu_cluster = *o->cluster;
    ZP_TRY(zp_gpu_apply(&o->gpu, &o->gpu_cluster));
    snprintf(o->gpu_cluster_name, sizeof o->gpu_cluster_name, "%s with %s", o->cluster->name, o->gpu.name);
    o->gpu_cluster.name = o->gpu_cluster_name;
    o->cluster = &o->gpu_cluster;
    return ZP_OK;
}

zp_status zp_cli_plan_resolve(zp_cli_plan *o, int need_model, int need_gpus)
{
    zp_cli_args *a = &o->a;
    zp_search_req *r = &a->r;
    if (need_model && !a->model)
        return ZP_FAIL(ZP_EINVAL, "--model is required (e.g. --model 100B; see zplan models)");
    if (need_gpus && !a->gpus)
        return ZP_FAIL(ZP_EINVAL, "--gpus is required (e.g. --gpus 400)");
    /* --cluster takes a preset name or a SimGrid platform file (whose GPUs are --preset's, dgx2 by default) */
    if (strchr(a->cluster, '/') || strstr(a->cluster, ".xml")) {
        int gpn, nodes;
        ZP_TRY(zp_engine_check_platform(a->cluster, &gpn, &nodes));
        r->platform_file = a->cluster;
        ZP_TRY(zp_cluster_find(a->preset ? a->preset : "dgx2", &o->cluster));
    } else {
        if (a->preset)
            return ZP_FAIL(ZP_EINVAL, "--preset applies to a --cluster platform file");
        ZP_TRY(zp_cluster_find(a->cluster, &o->cluster));
    }
    if (a->gpu)
        ZP_TRY(with_gpu(o));
    if (a->profile) {
        ZP_TRY(zp_profile_read(a->profile, &o->profile));
        ZP_TRY(check_profile(a->profile, &o->profile, o->cluster));
        r->profile = &o->profile;
        snprintf(o->profile_note, sizeof o->profile_note, "costs from profile %s", a->profile);
    }
    if (r->trace_path && !r->simulate)
        return ZP_FAIL(ZP_EINVAL, "--trace needs the simulation (drop --analytic)");
    ZP_TRY(zp_cli_check_output("--output", a->out));
    ZP_TRY(zp_cli_check_output("--trace", r->trace_path));
    ZP_TRY(zp_cli_check_output("--report", a->report_html));
    ZP_TRY(zp_cli_check_output("--emit-ds-config", a->emit_ds));
    ZP_TRY(zp_cli_check_output("--emit-megatron-args", a->emit_megatron));
    ZP_TRY(zp_cli_check_output("--emit-torchtitan", a->emit_torchtitan));
    if (need_gpus == 1)
        ZP_TRY(zp_size_parse_int(a->gpus, "--gpus", 1, ZP_MAX_GPUS, &r->gpus));
    o->gpu_mem = o->cluster->gpu_mem;
    if (a->gpu_mem)
        o->gpu_mem = a->gpu_mem_bytes; /* checked by the option's setter */
    if (a->model) {
        ZP_TRY(zp_model_resolve(a->model, a->seq, &o->model, &o->origin));
        if (o->origin == ZP_MODEL_FROM_SIZE)
            snprintf(o->model_note, sizeof o->model_note, "generated from the size '%s': %lld layers x hidden %lld",
                     a->model, (long long)o->model.layers, (long long)o->model.hidden);
        else if (o->origin == ZP_MODEL_FROM_FILE) /* and which sequence, and why */
            snprintf(o->model_note, sizeof o->model_note, "read from %.250s; %s%s", a->model, o->model.seq_note,
                     a->seq > 0 ? "" : " (--seq sets another)");
        if (a->mtp >= 0)
            o->model.mtp_layers = a->mtp;
    }
    r->model = &o->model;
    r->cluster = o->cluster;
    r->gpu_mem = o->gpu_mem;
    /* this era's default: FlashAttention where the GPU, the framework and the heads allow it */
    if (!a->flash_given && (a->cmd & (ZP_CMD_WHATIF | ZP_CMD_VIEW | ZP_CMD_COMPARE | ZP_CMD_SWEEP | ZP_CMD_SCHEDULE)))
        r->base.flash_attn = zp_search_flash_default(r);
    return ZP_OK;
}

void zp_cli_plan_whatif(zp_cli_plan *o, const zp_search_result *res, zp_whatif *w)
{
    *w = (zp_whatif){.model = &o->model,
                     .model_note = o->model_note[0] ? o->model_note : NULL,
                     .cluster = o->cluster,
                     .gpus = o->a.r.gpus,
                     .gpu_mem = o->gpu_mem,
                     .reserve = o->a.r.reserve,
                     .result = res,
                     .top = o->a.top,
                     .framework = o->a.r.framework,
                     .train_tokens = o->a.train_tokens,
                     .gpu_hour_price = o->a.gpu_hour_price,
                     .profile_note = o->profile_note[0] ? o->profile_note : NULL};
}

/* A launch file (--megatron-args, --torchtitan, --nemo): read, its GPUs and model taken where the options
 * leave them, and the request pinned to exactly its plan; what it resolved is noted on stderr. */
static zp_status prepare_launch(zp_cli_plan *o)
{
    zp_cli_args *a = &o->a;
    zp_launch *l = &o->launch;
    ZP_TRY(zp_launch_read(a->launch, (zp_launch_kind)a->launch_kind, l));
    const int64_t gpus = zp_launch_gpus(l);
    if (!a->gpus && gpus > 0) {
        snprintf(o->gpus_buf, sizeof o->gpus_buf, "%lld", (long long)gpus);
        a->gpus = o->gpus_buf;
        zp_launch_note(l, "GPUs: %lld, as the file states them (--gpus sets them)", (long long)gpus);
    } else if (a->gpus && gpus > 0) {
        zp_launch_note(l, "GPUs: --gpus %s (the file states %lld)", a->gpus, (long long)gpus);
    }
    zp_model m;
    int stated = 0;
    ZP_TRY(zp_launch_model(l, &m, &stated));
    if (stated && a->model)
        return ZP_FAIL(ZP_EINVAL, "%s %s states the model's shape: drop --model", a->launch_opt, a->launch);
    if (a->mtp >= 0)
        return ZP_FAIL(ZP_EINVAL, "%s %s states the model's multi-token prediction (Megatron-LM's --mtp-num-layers; "
                                  "torchtitan's deepseek_v3 has none): drop --mtp-layers",
                       a->launch_opt, a->launch);
    if (!stated && !a->model) {
        if (!l->zoo[0])
            return ZP_FAIL(ZP_EINVAL, "%s %s names no model zplan knows: give --model", a->launch_opt, a->launch);
        a->model = l->zoo;
        zp_launch_note(l, "model: %s (the file's model name and flavor)", l->zoo);
    }
    if (!stated && l->seq > 0 && !a->seq)
        a->seq = l->seq;
    ZP_TRY(zp_cli_plan_resolve(o, !stated, 1));
    if (!stated && l->no_mtp && o->model.mtp_layers > 0) {
        o->model.mtp_layers = 0;
        zp_launch_note(l, "model: %s without its multi-token prediction module (torchtitan's deepseek_v3 has none)",
                       o->model.name);
    }
    if (stated) {
        o->model = m;
        o->origin = ZP_MODEL_FROM_FILE;
        snprintf(o->model_note, sizeof o->model_note, "read from %s", a->launch);
    }
    return zp_launch_request(l, &a->r);
}

zp_status zp_cli_plan_prepare(zp_cli_plan *o)
{
    if (o->a.launch) {
        zp_status st = prepare_launch(o);
        for (int i = 0; i < o->launch.notes.n; i++)
            fprintf(stderr, "zplan: %s: %s\n", o->a.launch_opt + 2, o->launch.notes.line[i]);
        ZP_TRY(st);
    } else {
        ZP_TRY(zp_cli_plan_resolve(o, 1, 1));
    }
    if (o->a.ds_config) {
        zp_ds_notes notes = {0};
        zp_status st = zp_dsconfig_read(o->a.ds_config, &o->a.r, &notes);
        for (int i = 0; i < notes.n; i++)
            fprintf(stderr, "zplan: ds-config: %s\n", notes.line[i]);
        ZP_TRY(st);
    }
    ZP_TRY(zp_search_validate(&o->a.r));
    o->prepared = 1;
    return ZP_OK;
}

zp_status zp_cli_plan_search(zp_cli_plan *o, zp_search_result *res)
{
    if (!o->prepared)
        ZP_TRY(zp_cli_plan_prepare(o));
    zp_progress bar;
    zp_progress_init(&bar, "simulating plans");
    o->a.r.progress = zp_progress_cb;
    o->a.r.progress_ctx = &bar;
    zp_status st = zp_search_run(&o->a.r, res);
    if (st == ZP_OK) {
        char summary[160];
        const int ruled = res->n_pruned + res->n_dominated;
        snprintf(summary, sizeof summary, "%d plan%s simulated, %d ruled out by their bound", res->n_simulated,
                 res->n_simulated == 1 ? "" : "s", ruled);
        zp_progress_finish(&bar, summary);
    } else {
        zp_progress_done(&bar);
    }
    return st;
}
