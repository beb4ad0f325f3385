/* `zplan --model M --gpus N ...`: the what-if search, and the plan options every plan-based report shares. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_dsconfig.h"
#include "zp_progress.h"
#include "zp_engine.h"
#include "zp_report.h"
#include "zp_search.h"
#include "zp_size.h"
#include "zp_zoo.h"

enum {
    OPT_MODEL = 256, OPT_GPUS, OPT_CLUSTER, OPT_GPU_MEM, OPT_STAGE, OPT_MP, OPT_MICRO, OPT_GLOBAL, OPT_SEQ, OPT_PA,
    OPT_NO_PA, OPT_PA_CPU, OPT_OFFLOAD, OPT_NO_CKPT, OPT_NO_CB, OPT_BUCKET, OPT_NO_MD, OPT_FORMAT, OPT_TOP, OPT_HELP,
    OPT_TRACE, OPT_ANALYTIC, OPT_JOBS, OPT_PROFILE, OPT_PRESET, OPT_MODELS, OPT_REPORT, OPT_DS_CONFIG, OPT_EMIT_DS,
    OPT_SIM, OPT_OVERSUB,
};

static const struct option g_opts[] = {
    {"model", required_argument, 0, OPT_MODEL},
    {"gpus", required_argument, 0, OPT_GPUS},
    {"cluster", required_argument, 0, OPT_CLUSTER},
    {"gpu-mem", required_argument, 0, OPT_GPU_MEM},
    {"stage", required_argument, 0, OPT_STAGE},
    {"mp", required_argument, 0, OPT_MP},
    {"micro-batch", required_argument, 0, OPT_MICRO},
    {"global-batch", required_argument, 0, OPT_GLOBAL},
    {"seq", required_argument, 0, OPT_SEQ},
    {"pa", no_argument, 0, OPT_PA},
    {"no-pa", no_argument, 0, OPT_NO_PA},
    {"pa-cpu", no_argument, 0, OPT_PA_CPU},
    {"offload", required_argument, 0, OPT_OFFLOAD},
    {"no-checkpoint", no_argument, 0, OPT_NO_CKPT},
    {"no-cb", no_argument, 0, OPT_NO_CB},
    {"bucket", required_argument, 0, OPT_BUCKET},
    {"no-md", no_argument, 0, OPT_NO_MD},
    {"format", required_argument, 0, OPT_FORMAT},
    {"top", required_argument, 0, OPT_TOP},
    {"output", required_argument, 0, 'o'},
    {"help", no_argument, 0, OPT_HELP},
    {"trace", required_argument, 0, OPT_TRACE},
    {"analytic", no_argument, 0, OPT_ANALYTIC},
    {"jobs", required_argument, 0, OPT_JOBS},
    {"profile", required_argument, 0, OPT_PROFILE},
    {"preset", required_argument, 0, OPT_PRESET},
    {"models", required_argument, 0, OPT_MODELS},
    {"report", required_argument, 0, OPT_REPORT},
    {"ds-config", required_argument, 0, OPT_DS_CONFIG},
    {"emit-ds-config", required_argument, 0, OPT_EMIT_DS},
    {"sim", required_argument, 0, OPT_SIM},
    {"oversubscription", required_argument, 0, OPT_OVERSUB},
    {0, 0, 0, 0},
};

/* The option as the user typed it, for messages. */
static const char *opt_name(int c)
{
    for (const struct option *o = g_opts; o->name; o++)
        if (o->val == c)
            return o->name;
    return "?";
}

zp_status zp_cli_plan_parse(int argc, char **argv, zp_cli_plan *o)
{
    memset(o, 0, sizeof *o);
    o->cluster_name = "dgx2";
    o->fmt = ZP_FMT_TEXT;
    o->top = 5;
    zp_search_req_default(&o->r, &o->model, NULL, 0);
    o->r.simulate = 1;
    zp_search_req *r = &o->r;
    opterr = 0;
    optind = 1;
    int c;
    int64_t v;
    while ((c = getopt_long(argc, argv, ":o:", g_opts, NULL)) != -1) {
        char what[40];
        snprintf(what, sizeof what, "--%s", opt_name(c));
        switch (c) {
        case OPT_MODEL: o->model_spec = optarg; break;
        case OPT_GPUS: o->gpus_text = optarg; break;
        case OPT_CLUSTER: o->cluster_name = optarg; break;
        case OPT_GPU_MEM: o->gpu_mem_text = optarg; break;
        case OPT_STAGE:
            ZP_TRY(zp_size_parse_int(optarg, what, 0, 1000, &v));
            if (v > 3)
                return ZP_FAIL(ZP_EINVAL, "--stage: %s is not a ZeRO stage (use 0, 1, 2 or 3)", optarg);
            r->stage = (int)v;
            break;
        case OPT_MP: ZP_TRY(zp_size_parse_int(optarg, what, 1, ZP_MAX_GPUS, &r->mp)); break;
        case OPT_MICRO: ZP_TRY(zp_size_parse_int(optarg, what, 1, ZP_MAX_MICRO_BATCH, &r->micro_batch)); break;
        case OPT_GLOBAL: ZP_TRY(zp_size_parse_int(optarg, what, 1, INT64_C(1) << 50, &r->global_batch)); break;
        case OPT_SEQ: ZP_TRY(zp_size_parse_int(optarg, what, 1, INT64_C(1) << 30, &o->seq)); break;
        case OPT_PA: r->pa = 1; break;
        case OPT_NO_PA: r->pa = 0; r->pa_cpu = 0; break;
        case OPT_PA_CPU: r->pa_cpu = 1; r->pa = 1; break;
        case OPT_OFFLOAD: {
            zp_offload off;
            ZP_TRY(zp_offload_parse(optarg, &off));
            r->offload = (int)off;
            break;
        }
        case OPT_NO_CKPT: r->checkpoint = 0; break;
        case OPT_NO_CB: r->cb = 0; break;
        case OPT_BUCKET: ZP_TRY(zp_size_parse(optarg, what, &r->bucket)); break;
        case OPT_NO_MD: r->md = 0; break;
        case OPT_FORMAT:
            ZP_TRY(zp_format_parse(optarg, &o->fmt));
            o->fmt_given = 1;
            break;
        case OPT_TOP:
            ZP_TRY(zp_size_parse_int(optarg, what, 1, 100000, &v));
            o->top = (int)v;
            break;
        case 'o': o->out = optarg; break;
        case OPT_HELP: o->help = 1; return ZP_OK;
        case OPT_TRACE: r->trace_path = optarg; break;
        case OPT_ANALYTIC: r->simulate = 0; break;
        case OPT_JOBS:
            ZP_TRY(zp_size_parse_int(optarg, what, 1, 1024, &v));
            r->jobs = (int)v;
            break;
        case OPT_PROFILE: o->profile_path = optarg; break;
        case OPT_PRESET: o->preset = optarg; break;
        case OPT_MODELS: o->models_list = optarg; break;
        case OPT_REPORT: o->report_html = optarg; break;
        case OPT_DS_CONFIG: o->ds_config = optarg; break;
        case OPT_EMIT_DS: o->emit_ds = optarg; break;
        case OPT_SIM: ZP_TRY(zp_sim_mode_parse(optarg, &r->sim)); break;
        case OPT_OVERSUB: ZP_TRY(zp_size_parse_range(optarg, what, 1, 1e6, &r->oversubscription)); break;
        case ':': return ZP_FAIL(ZP_EINVAL, "option %s needs a value (see zplan --help)", argv[optind - 1]);
        default: return ZP_FAIL(ZP_EINVAL, "unknown option '%s' (see zplan --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ZP_FAIL(ZP_EINVAL, "unexpected argument '%s' (see zplan --help)", argv[optind]);
    return ZP_OK;
}

zp_status zp_cli_plan_resolve(zp_cli_plan *o, int need_model, int need_gpus)
{
    zp_search_req *r = &o->r;
    if (need_model && !o->model_spec)
        return ZP_FAIL(ZP_EINVAL, "--model is required (e.g. --model 100B; see zplan models)");
    if (need_gpus && !o->gpus_text)
        return ZP_FAIL(ZP_EINVAL, "--gpus is required (e.g. --gpus 400)");
    /* --cluster takes a preset name or a SimGrid platform file (whose GPUs are --preset's, dgx2 by default) */
    if (strchr(o->cluster_name, '/') || strstr(o->cluster_name, ".xml")) {
        int gpn, nodes;
        ZP_TRY(zp_engine_check_platform(o->cluster_name, &gpn, &nodes));
        r->platform_file = o->cluster_name;
        ZP_TRY(zp_cluster_find(o->preset ? o->preset : "dgx2", &o->cluster));
    } else {
        if (o->preset)
            return ZP_FAIL(ZP_EINVAL, "--preset applies to a --cluster platform file");
        ZP_TRY(zp_cluster_find(o->cluster_name, &o->cluster));
    }
    if (o->profile_path) {
        ZP_TRY(zp_profile_read(o->profile_path, &o->profile));
        r->profile = &o->profile;
        snprintf(o->profile_note, sizeof o->profile_note, "costs from profile %s", o->profile_path);
    }
    if (r->trace_path && !r->simulate)
        return ZP_FAIL(ZP_EINVAL, "--trace needs the simulation (drop --analytic)");
    if (need_gpus == 1)
        ZP_TRY(zp_size_parse_int(o->gpus_text, "--gpus", 1, ZP_MAX_GPUS, &r->gpus));
    o->gpu_mem = o->cluster->gpu_mem;
    if (o->gpu_mem_text)
        ZP_TRY(zp_size_parse(o->gpu_mem_text, "--gpu-mem", &o->gpu_mem));
    if (o->model_spec) {
        ZP_TRY(zp_model_resolve(o->model_spec, o->seq, &o->model, &o->origin));
        if (o->origin == ZP_MODEL_FROM_SIZE)
            snprintf(o->model_note, sizeof o->model_note, "generated from the size '%s': %lld layers x hidden %lld",
                     o->model_spec, (long long)o->model.layers, (long long)o->model.hidden);
        else if (o->origin == ZP_MODEL_FROM_FILE)
            snprintf(o->model_note, sizeof o->model_note, "read from %s", o->model_spec);
    }
    r->model = &o->model;
    r->cluster = o->cluster;
    r->gpu_mem = o->gpu_mem;
    return ZP_OK;
}

void zp_cli_plan_whatif(zp_cli_plan *o, const zp_search_result *res, zp_whatif *w)
{
    *w = (zp_whatif){.model = &o->model,
                     .model_note = o->model_note[0] ? o->model_note : NULL,
                     .cluster = o->cluster,
                     .gpus = o->r.gpus,
                     .gpu_mem = o->gpu_mem,
                     .result = res,
                     .top = o->top,
                     .profile_note = o->profile_note[0] ? o->profile_note : NULL};
}

int zp_cli_whatif(int argc, char **argv, const char *usage)
{
    zp_cli_plan o;
    zp_status st = zp_cli_plan_parse(argc, argv, &o);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (o.help) {
        fputs(usage, stdout);
        return 0;
    }
    if (o.models_list)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--models applies to `zplan report models|configs`"));
    if ((st = zp_cli_plan_resolve(&o, 1, 1)) != ZP_OK)
        return zp_cli_fail(st);
    if (o.ds_config) {
        zp_ds_notes notes = {0};
        st = zp_dsconfig_read(o.ds_config, &o.r, &notes);
        for (int i = 0; i < notes.n; i++)
            fprintf(stderr, "zplan: ds-config: %s\n", notes.line[i]);
        if (st != ZP_OK)
            return zp_cli_fail(st);
    }

    zp_search_result res;
    zp_progress bar;
    zp_progress_init(&bar, "simulating plans");
    o.r.progress = zp_progress_cb;
    o.r.progress_ctx = &bar;
    st = zp_search_run(&o.r, &res);
    zp_progress_done(&bar);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (o.emit_ds) {
        if (res.n_fit == 0) {
            zp_search_result_free(&res);
            return zp_cli_fail(ZP_FAIL(ZP_ERUNTIME, "no plan fits: no DeepSpeed config written to %s", o.emit_ds));
        }
        const zp_eval *best = NULL;
        for (int i = 0; i < res.n && !best; i++)
            if (res.plans[i].fits)
                best = &res.plans[i];
        if ((st = zp_dsconfig_write(&best->plan, o.model.layers, o.emit_ds)) != ZP_OK) {
            zp_search_result_free(&res);
            return zp_cli_fail(st);
        }
        if (best->plan.mp > 1)
            fprintf(stderr, "zplan: wrote %s; run it with Megatron model parallelism %lld "
                            "(--tensor-model-parallel-size %lld)\n",
                    o.emit_ds, (long long)best->plan.mp, (long long)best->plan.mp);
    }
    zp_whatif w;
    zp_cli_plan_whatif(&o, &res, &w);
    zp_cli_out out;
    st = zp_cli_out_open(o.out, &out);
    if (st == ZP_OK) {
        st = zp_report_whatif(out.f, o.fmt, &w);
        st = zp_cli_out_close(&out, st);
    }
    if (st == ZP_OK && o.report_html) {
        st = zp_cli_out_open(o.report_html, &out);
        if (st == ZP_OK) {
            st = zp_report_whatif(out.f, ZP_FMT_HTML, &w);
            st = zp_cli_out_close(&out, st);
        }
    }
    zp_search_result_free(&res);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}
