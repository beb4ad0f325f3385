/* `zplan --model M --gpus N ...`: the what-if search. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_engine.h"
#include "zp_report.h"
#include "zp_search.h"
#include "zp_size.h"
#include "zp_zoo.h"

enum {
    OPT_MODEL = 256, OPT_GPUS, OPT_CLUSTER, OPT_GPU_MEM, OPT_STAGE, OPT_MP, OPT_MICRO, OPT_GLOBAL, OPT_SEQ, OPT_PA,
    OPT_NO_PA, OPT_PA_CPU, OPT_OFFLOAD, OPT_NO_CKPT, OPT_NO_CB, OPT_BUCKET, OPT_NO_MD, OPT_FORMAT, OPT_TOP, OPT_HELP,
    OPT_TRACE, OPT_ANALYTIC, OPT_JOBS, OPT_PROFILE, OPT_PRESET,
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

typedef struct {
    const char *profile, *preset;
} extra_opts;

static zp_status parse_args(int argc, char **argv, const char **model, const char **cluster, const char **gpus,
                            const char **gpu_mem, int64_t *seq, zp_search_req *r, zp_format *fmt, int *top,
                            const char **out, int *help, extra_opts *x)
{
    opterr = 0;
    optind = 1;
    int c;
    int64_t v;
    while ((c = getopt_long(argc, argv, ":o:", g_opts, NULL)) != -1) {
        char what[40];
        snprintf(what, sizeof what, "--%s", opt_name(c));
        switch (c) {
        case OPT_MODEL: *model = optarg; break;
        case OPT_GPUS: *gpus = optarg; break;
        case OPT_CLUSTER: *cluster = optarg; break;
        case OPT_GPU_MEM: *gpu_mem = optarg; break;
        case OPT_STAGE:
            ZP_TRY(zp_size_parse_int(optarg, what, 0, 1000, &v));
            if (v > 3)
                return ZP_FAIL(ZP_EINVAL, "--stage: %s is not a ZeRO stage (use 0, 1, 2 or 3)", optarg);
            r->stage = (int)v;
            break;
        case OPT_MP: ZP_TRY(zp_size_parse_int(optarg, what, 1, ZP_MAX_GPUS, &r->mp)); break;
        case OPT_MICRO: ZP_TRY(zp_size_parse_int(optarg, what, 1, ZP_MAX_MICRO_BATCH, &r->micro_batch)); break;
        case OPT_GLOBAL: ZP_TRY(zp_size_parse_int(optarg, what, 1, INT64_C(1) << 50, &r->global_batch)); break;
        case OPT_SEQ: ZP_TRY(zp_size_parse_int(optarg, what, 1, INT64_C(1) << 30, seq)); break;
        case OPT_PA: r->pa = 1; break;
        case OPT_NO_PA: r->pa = 0; r->pa_cpu = 0; break;
        case OPT_PA_CPU: r->pa_cpu = 1; r->pa = 1; break;
        case OPT_OFFLOAD: {
            zp_offload o;
            ZP_TRY(zp_offload_parse(optarg, &o));
            r->offload = (int)o;
            break;
        }
        case OPT_NO_CKPT: r->checkpoint = 0; break;
        case OPT_NO_CB: r->cb = 0; break;
        case OPT_BUCKET: ZP_TRY(zp_size_parse(optarg, what, &r->bucket)); break;
        case OPT_NO_MD: r->md = 0; break;
        case OPT_FORMAT: ZP_TRY(zp_format_parse(optarg, fmt)); break;
        case OPT_TOP:
            ZP_TRY(zp_size_parse_int(optarg, what, 1, 100000, &v));
            *top = (int)v;
            break;
        case 'o': *out = optarg; break;
        case OPT_HELP: *help = 1; return ZP_OK;
        case OPT_TRACE: r->trace_path = optarg; break;
        case OPT_ANALYTIC: r->simulate = 0; break;
        case OPT_JOBS:
            ZP_TRY(zp_size_parse_int(optarg, what, 1, 1024, &v));
            r->jobs = (int)v;
            break;
        case OPT_PROFILE: x->profile = optarg; break;
        case OPT_PRESET: x->preset = optarg; break;
        case ':': return ZP_FAIL(ZP_EINVAL, "option %s needs a value (see zplan --help)", argv[optind - 1]);
        default: return ZP_FAIL(ZP_EINVAL, "unknown option '%s' (see zplan --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ZP_FAIL(ZP_EINVAL, "unexpected argument '%s' (see zplan --help)", argv[optind]);
    return ZP_OK;
}

int zp_cli_whatif(int argc, char **argv, const char *usage)
{
    const char *model_spec = NULL, *cluster_name = "dgx2", *gpus_text = NULL, *gpu_mem_text = NULL, *out = NULL;
    int64_t seq = 0;
    zp_search_req r;
    zp_model model;
    memset(&model, 0, sizeof model);
    zp_search_req_default(&r, &model, NULL, 0);
    zp_format fmt = ZP_FMT_TEXT;
    int top = 5, help = 0;
    extra_opts x = {0};
    r.simulate = 1;

    zp_status st = parse_args(argc, argv, &model_spec, &cluster_name, &gpus_text, &gpu_mem_text, &seq, &r, &fmt,
                              &top, &out, &help, &x);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (help) {
        fputs(usage, stdout);
        return 0;
    }
    if (!model_spec)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--model is required (e.g. --model 100B; see zplan models)"));
    if (!gpus_text)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--gpus is required (e.g. --gpus 400)"));

    const zp_cluster *cluster;
    /* --cluster takes a preset name or a SimGrid platform file (whose GPUs are --preset's, dgx2 by default) */
    if (strchr(cluster_name, '/') || strstr(cluster_name, ".xml")) {
        int gpn, nodes;
        if ((st = zp_engine_check_platform(cluster_name, &gpn, &nodes)) != ZP_OK)
            return zp_cli_fail(st);
        r.platform_file = cluster_name;
        if ((st = zp_cluster_find(x.preset ? x.preset : "dgx2", &cluster)) != ZP_OK)
            return zp_cli_fail(st);
    } else {
        if (x.preset)
            return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--preset applies to a --cluster platform file"));
        if ((st = zp_cluster_find(cluster_name, &cluster)) != ZP_OK)
            return zp_cli_fail(st);
    }
    zp_profile profile;
    if (x.profile) {
        if ((st = zp_profile_read(x.profile, &profile)) != ZP_OK)
            return zp_cli_fail(st);
        r.profile = &profile;
    }
    if (r.trace_path && !r.simulate)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--trace needs the simulation (drop --analytic)"));
    if ((st = zp_size_parse_int(gpus_text, "--gpus", 1, ZP_MAX_GPUS, &r.gpus)) != ZP_OK)
        return zp_cli_fail(st);
    double gpu_mem = cluster->gpu_mem;
    if (gpu_mem_text && (st = zp_size_parse(gpu_mem_text, "--gpu-mem", &gpu_mem)) != ZP_OK)
        return zp_cli_fail(st);
    zp_model_origin origin;
    if ((st = zp_model_resolve(model_spec, seq, &model, &origin)) != ZP_OK)
        return zp_cli_fail(st);
    r.model = &model;
    r.cluster = cluster;
    r.gpu_mem = gpu_mem;

    zp_search_result res;
    if ((st = zp_search_run(&r, &res)) != ZP_OK)
        return zp_cli_fail(st);

    char note[160] = "";
    if (origin == ZP_MODEL_FROM_SIZE)
        snprintf(note, sizeof note, "generated from the size '%s': %lld layers x hidden %lld", model_spec,
                 (long long)model.layers, (long long)model.hidden);
    else if (origin == ZP_MODEL_FROM_FILE)
        snprintf(note, sizeof note, "read from %s", model_spec);
    zp_whatif w = {.model = &model,
                   .model_note = note[0] ? note : NULL,
                   .cluster = cluster,
                   .gpus = r.gpus,
                   .gpu_mem = gpu_mem,
                   .result = &res,
                   .top = top};
    char pnote[300];
    if (x.profile) {
        snprintf(pnote, sizeof pnote, "costs from profile %s", x.profile);
        w.profile_note = pnote;
    }
    zp_cli_out o;
    st = zp_cli_out_open(out, &o);
    if (st == ZP_OK) {
        st = zp_report_whatif(o.f, fmt, &w);
        st = zp_cli_out_close(&o, st);
    }
    zp_search_result_free(&res);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}
