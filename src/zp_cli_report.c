/* `zplan report table1|table2`, `zplan models`, `zplan clusters`, `zplan gpus [NAME]`. */
#include <stdio.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_gpu.h"
#include "zp_plan.h"
#include "zp_progress.h"
#include "zp_report.h"
#include "zp_size.h"
#include "zp_views.h"
#include "zp_zoo.h"

static const char REPORT_USAGE[] =
    "Usage: zplan report KIND [options]\n"
    "  scaling  the best plan of --model on each of --gpus LIST: TFLOPs per GPU and aggregate PFLOPs (the\n"
    "           ZeRO paper's Figure 3 view); default GPUs 64,128,256,400 on dgx2 (the paper's), and\n"
    "           1024,2048,...,65536,102400 on other clusters; takes every what-if option; made by a sweep\n"
    "           (zplan sweep --help: --jobs, --timeout, --partial), also under mpirun -np N\n"
    "  models   TFLOPs per GPU against model size for ZeRO (--gpus, default 400) and the Megatron-LM\n"
    "           baseline (stage 0, MP across nodes, on the largest multiple of 128 GPUs <= --gpus)\n"
    "           --models LIST (default 1.5B,8B,20B,40B,60B,80B,100B,120B,140B,170B) (Figure 2's view)\n"
    "  configs  C1-C5 (Pos+CB+MD, +Pa, Pos+g+CB+MD, +Pa, +Pa+cpu) on --gpus (400) with --mp (16): largest\n"
    "           model, memory of the first of --models (100B) at --micro-batch (16), throughput of the\n"
    "           second (60B) (Figures 6-8's view)\n"
    "  memory   the per-category memory of the recommended plan of --model on --gpus (what-if options)\n"
    "  table1   model-state memory per GPU by ZeRO stage and DP degree (the ZeRO paper's Table 1)\n"
    "           --models LIST   sizes or zoo names (default 7.5B,128B,1T; a size is taken as exactly that\n"
    "                           many parameters)\n"
    "           --dp LIST       DP degrees (default 1,4,16,64,256,1024)\n"
    "  table2   largest model whose model states fit, by MP degree (the ZeRO paper's Table 2)\n"
    "           --gpu-mem SIZE  memory per GPU (default 32G = 32e9 bytes)\n"
    "           --mp LIST       MP degrees (default 1,2,4,8,16)\n"
    "           --dp N          DP degree (default 64)\n"
    "  validation  runs `mpirun -np N zplan exec --validate` over models, ranks and stages on this machine\n"
    "           and tabulates predicted against measured step time and memory (`zplan report validation\n"
    "           --help` for its options; as root it passes mpirun --allow-run-as-root itself, which a\n"
    "           `mpirun ... zplan exec` or `calibrate` of your own needs too)\n"
    "  common:  --k K           optimizer bytes per parameter (default 12: mixed-precision Adam)\n"
    "           --format F      text (default), md, csv, json, html (tables and SVG charts, one file)\n"
    "           -o FILE         write to FILE atomically\n";

static const char LIST_USAGE[] =
    "Usage: zplan models|clusters|gpus [--format text|md|csv|json] [-o FILE]\n"
    "       zplan gpus NAME\n"
    "  models     the model zoo: layers, hidden, heads, sequence, vocabulary, parameters, source\n"
    "  clusters   the cluster presets with their hardware figures\n"
    "  gpus       the GPU presets (--gpu NAME) with their key figures; with NAME, its spec file: every\n"
    "             figure with its source, the format a --gpu FILE takes (README, \"GPU spec files\")\n";

/* `zplan gpus NAME`: the preset's spec file as embedded. */
static int show_gpu(const char *name)
{
    zp_gpu g;
    zp_status st = zp_gpu_find(name, &g);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    for (int i = 0; i < zp_gpu_preset_count(); i++) {
        zp_gpu p;
        if (zp_gpu_preset(i, &p) == ZP_OK && strcmp(p.name, g.name) == 0 && strcmp(g.origin, "preset") == 0) {
            fputs(zp_gpu_preset_text(i), stdout);
            return 0;
        }
    }
    return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "zplan gpus: '%s' is not a preset (see zplan gpus)", name));
}

int zp_cli_list(int argc, char **argv)
{
    zp_cli_args a;
    char name[32];
    if (strcmp(argv[0], "gpus") == 0 && argc == 2 && argv[1][0] != '-')
        return show_gpu(argv[1]);
    snprintf(name, sizeof name, "zplan %s", argv[0]);
    zp_status st = zp_cli_args_parse(ZP_CMD_LIST, name, argc, argv, &a);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (a.help) {
        fputs(LIST_USAGE, stdout);
        return 0;
    }
    zp_table *t;
    st = strcmp(argv[0], "models") == 0 ? zp_report_models(&t)
         : strcmp(argv[0], "gpus") == 0  ? zp_report_gpus(&t)
                                         : zp_report_clusters(&t);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    return zp_cli_write_table(t, a.fmt, a.out);
}

/* Resolves a Table-1 model: a size is exactly that many parameters; otherwise a zoo name. */
static zp_status table1_model(const char *name, double *psi)
{
    const zp_zoo_entry *e = zp_zoo_find(name);
    if (zp_size_parse(name, "--models", psi) == ZP_OK) {
        if (*psi <= 0 || *psi > ZP_MODEL_MAX_PARAMS)
            return ZP_FAIL(ZP_ERANGE, "--models: '%s' must be between 1 and %.0e parameters", name, ZP_MODEL_MAX_PARAMS);
        return ZP_OK;
    }
    if (e) {
        *psi = zp_model_params(&e->model);
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "--models: '%s' is neither a size (e.g. 7.5B) nor a zoo model", name);
}

/* Resolves a comma-separated list of models (zoo names, sizes, config.json paths). */
static zp_status model_list(const char *text, int64_t seq, zp_model *out, int cap, int *n)
{
    char buf[1024];
    if (strlen(text) >= sizeof buf)
        return ZP_FAIL(ZP_EINVAL, "--models: list too long");
    strcpy(buf, text);
    char *save = NULL;
    *n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap)
            return ZP_FAIL(ZP_EINVAL, "--models: at most %d models", cap);
        ZP_TRY(zp_model_resolve(tok, seq, &out[*n], NULL));
        (*n)++;
    }
    if (*n == 0)
        return ZP_FAIL(ZP_EINVAL, "--models: empty list");
    return ZP_OK;
}

static int report_plan_view(const char *kind, int argc, char **argv)
{
    zp_cli_plan o;
    char name[32];
    snprintf(name, sizeof name, "zplan report %s", kind);
    zp_status st = zp_cli_plan_parse(ZP_CMD_VIEW, name, argc, argv, &o);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (o.a.help) {
        fputs(REPORT_USAGE, stdout);
        return 0;
    }
    int sizes = strcmp(kind, "models") == 0;
    int configs = strcmp(kind, "configs") == 0, memory = strcmp(kind, "memory") == 0;
    if (o.a.models && memory)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "report %s takes --model, not --models", kind));
    if (o.a.model && (sizes || configs))
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "report %s takes --models LIST, not --model", kind));
    if (!o.a.gpus)
        o.a.gpus = "400";
    if ((st = zp_cli_plan_resolve(&o, memory, 1)) != ZP_OK)
        return zp_cli_fail(st);
    zp_doc *d = NULL;
    zp_progress bar;
    zp_progress_init(&bar, kind);
    o.a.r.progress = zp_progress_cb;
    o.a.r.progress_ctx = &bar;
    if (memory) {
        st = zp_view_memory(&o.a.r, o.a.top, &d);
    } else {
        static zp_model models[32];
        int n = 0;
        const char *def = sizes ? "1.5B,8B,20B,40B,60B,80B,100B,120B,140B,170B" : "100B,60B";
        if ((st = model_list(o.a.models ? o.a.models : def, o.a.seq, models, 32, &n)) != ZP_OK)
            return zp_cli_fail(st);
        if (sizes) {
            int64_t base_gpus = o.a.r.gpus >= 128 ? o.a.r.gpus / 128 * 128 : o.a.r.gpus;
            st = zp_view_sizes(&o.a.r, models, n, base_gpus, &d);
        } else {
            if (n != 2)
                return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "report configs: --models takes two models: the one whose "
                                                      "memory is shown and the one whose throughput is"));
            int64_t b = zp_search_req_given(&o.a.r, ZP_SEARCH_MICRO_BATCH) ? o.a.r.base.micro_batch : 16;
            zp_search_req_open(&o.a.r, ZP_SEARCH_MICRO_BATCH);
            st = zp_view_configs(&o.a.r, &models[0], b, &models[1], &d);
        }
    }
    zp_progress_done(&bar);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    zp_cli_out out;
    st = zp_cli_out_open(o.a.out, &out);
    if (st == ZP_OK) {
        st = zp_doc_write(d, out.f, o.a.fmt);
        st = zp_cli_out_close(&out, st);
    }
    zp_doc_free(d);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}

int zp_cli_report_validation(int argc, char **argv); /* zp_cli_validation.c */

int zp_cli_report(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            fputs(REPORT_USAGE, stdout);
            return 0;
        }
        fputs(REPORT_USAGE, stderr);
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "report: which report? (table1 or table2)"));
    }
    const char *kind = argv[1];
    if (strcmp(kind, "validation") == 0) /* zp_cli_validation.c: runs zplan exec under mpirun */
        return zp_cli_report_validation(argc - 1, argv + 1);
    int is1 = strcmp(kind, "table1") == 0, is2 = strcmp(kind, "table2") == 0;
    if (strcmp(kind, "scaling") == 0) /* zp_cli_sweep.c: the best plan per GPU count, over MPI ranks too */
        return zp_cli_sweep_report(kind, argc - 1, argv + 1, REPORT_USAGE);
    if (strcmp(kind, "models") == 0 || strcmp(kind, "configs") == 0 || strcmp(kind, "memory") == 0)
        return report_plan_view(kind, argc - 1, argv + 1);
    if (!is1 && !is2)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "report: unknown report '%s' (table1, table2, scaling, models, "
                                              "configs or memory)", kind));

    zp_cli_args a;
    char name[32];
    snprintf(name, sizeof name, "zplan report %s", kind);
    zp_status pst = zp_cli_args_parse(ZP_CMD_TABLE, name, argc - 1, argv + 1, &a);
    if (pst != ZP_OK)
        return zp_cli_fail(pst);
    if (a.help) {
        fputs(REPORT_USAGE, stdout);
        return 0;
    }
    char models_buf[1024] = "7.5B,128B,1T";
    double dp[64] = {1, 4, 16, 64, 256, 1024}, mp[64] = {1, 2, 4, 8, 16};
    int ndp = 6, nmp = 5;
    double gpu_mem = 32e9, k = a.k;
    if (a.models && (!is1 || strlen(a.models) >= sizeof models_buf))
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--models applies to table1 (a comma-separated list)"));
    if (a.models)
        strcpy(models_buf, a.models);
    if (a.dp_list && (pst = zp_size_parse_list(a.dp_list, "--dp", dp, 64, &ndp)) != ZP_OK)
        return zp_cli_fail(pst);
    if (a.dp_list && is2 && ndp != 1)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--dp: table2 takes one DP degree"));
    if (a.mp_list && !is2)
        return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--mp applies to table2"));
    if (a.mp_list && (pst = zp_size_parse_list(a.mp_list, "--mp", mp, 64, &nmp)) != ZP_OK)
        return zp_cli_fail(pst);
    if (a.gpu_mem)
        gpu_mem = a.gpu_mem_bytes; /* checked by the option's setter, as for every command */
    double *lists[] = {dp, mp};
    int counts[] = {ndp, nmp};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++)
            if (lists[l][i] < 1 || lists[l][i] > 1e8 || lists[l][i] != (double)(long long)lists[l][i])
                return zp_cli_fail(ZP_FAIL(ZP_EINVAL, "--%s: degrees must be whole numbers from 1 to 1e8",
                                           l == 0 ? "dp" : "mp"));

    zp_table *t = NULL;
    zp_status st;
    if (is1) {
        double psi[32];
        const char *names[32];
        char *save = NULL;
        int n = 0;
        st = ZP_OK;
        for (char *tok = strtok_r(models_buf, ",", &save); tok && st == ZP_OK; tok = strtok_r(NULL, ",", &save)) {
            if (n == 32) {
                st = ZP_FAIL(ZP_EINVAL, "--models: at most 32 models");
                break;
            }
            names[n] = tok;
            st = table1_model(tok, &psi[n]);
            n++;
        }
        if (st == ZP_OK && n == 0)
            st = ZP_FAIL(ZP_EINVAL, "--models: empty list");
        if (st == ZP_OK)
            st = zp_report_table1(psi, names, n, dp, ndp, k, &t);
    } else {
        st = zp_report_table2(gpu_mem, mp, nmp, dp[0] == 1 && ndp == 6 ? 64 : dp[0], k, &t);
    }
    if (st != ZP_OK)
        return zp_cli_fail(st);
    return zp_cli_write_table(t, a.fmt, a.out);
}
