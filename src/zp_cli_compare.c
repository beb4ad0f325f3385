/* `zplan compare`: the best plan of each of several choices (ZeRO stage, MP degree, offload,
 * micro-batch), side by side. Each choice is a what-if search with that option fixed; the options not
 * listed are the what-if's (given: fixed; not given: searched). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_framework.h"
#include "zp_nearmiss.h"
#include "zp_progress.h"

static const char COMPARE_USAGE[] =
    "Usage: zplan compare --model M --gpus N [--stage LIST] [--mp LIST] [--offload LIST] [--micro-batch LIST]\n"
    "                     [what-if options] [--format text|md|csv|json|html] [-o FILE]\n"
    "The best plan of each choice, side by side: every combination of the lists (comma-separated) is one\n"
    "what-if search with those options fixed, the others as given or searched; each row shows the plan,\n"
    "its memory, its simulated step and the DeepSpeed keys that select it, or, when it does not fit, the\n"
    "plan nearest to fitting and why. Without a list, the four ZeRO stages are compared (--stage 0,1,2,3; with\n"
    "--framework, the stages it runs).\n"
    "  --stage LIST        e.g. 1,2,3\n"
    "  --mp LIST           e.g. 1,2,4,8\n"
    "  --offload LIST      of none, optimizer, params\n"
    "  --micro-batch LIST  e.g. 1,4,16\n"
    "Every what-if option applies to all rows (zplan --help): --cluster, --gpu-mem, --reserve, --seq,\n"
    "--global-batch, --pa, --pa-cpu, --no-pa, --checkpoint, --bucket, --analytic, --profile, --ds-config ...\n"
    "At most 64 combinations. Exit status: 0 when at least one choice fits, 3 when none does, 2 bad input.\n";

#define MAX_ITEMS 16
#define MAX_COMBOS 64

typedef struct {
    char buf[256];
    char *item[MAX_ITEMS];
    int n;
} list;

static zp_status split(const char *opt, const char *text, list *l)
{
    l->n = 0;
    if (!text)
        return ZP_OK;
    snprintf(l->buf, sizeof l->buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(l->buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (l->n == MAX_ITEMS)
            return ZP_FAIL(ZP_EINVAL, "--%s: at most %d values", opt, MAX_ITEMS);
        l->item[l->n++] = tok;
    }
    return ZP_OK;
}

static int zp_cli_compare_body(zp_cli_plan *op)
{
    zp_cli_plan o = *op; /* by value: the request points at o.model */
    o.a.r.model = &o.model;
    if (!o.a.cmp_list[0] && !o.a.cmp_list[1] && !o.a.cmp_list[2] && !o.a.cmp_list[3]) {
        /* no list: the ZeRO stages the framework runs (all four without --framework) */
        static const char *const stages[4] = {"0", "0,1", "0,1,2", "0,1,2,3"};
        const zp_framework *fw = zp_framework_get(o.a.r.framework);
        o.a.cmp_list[0] = stages[fw ? fw->max_stage : 3]; /* max_stage: 0-3 (zp_framework.c) */
    }
    zp_status st = ZP_OK;
    list lists[4];
    int combos = 1;
    for (int k = 0; k < 4 && st == ZP_OK; k++) {
        st = split(zp_cli_compare_opts[k], o.a.cmp_list[k], &lists[k]);
        if (lists[k].n > 0)
            combos *= lists[k].n;
    }
    if (st == ZP_OK && combos > MAX_COMBOS)
        st = ZP_FAIL(ZP_EINVAL, "%d combinations: at most %d (shorten a list)", combos, MAX_COMBOS);
    if (st == ZP_OK)
        st = zp_cli_plan_prepare(&o);
    if (st != ZP_OK)
        return zp_cli_fail_as("zplan compare", st);
    zp_compare_entry *entries = calloc((size_t)combos, sizeof *entries);
    if (!entries)
        return zp_cli_fail_as("zplan compare", ZP_FAIL(ZP_ENOMEM, "out of memory"));
    zp_progress bar;
    zp_progress_init(&bar, "comparing");
    int nfound = 0;
    for (int c = 0; c < combos && st == ZP_OK; c++) {
        zp_cli_args a = o.a; /* this combination: the lists' items applied over the options given */
        a.r.progress = NULL;
        char *label = entries[c].label;
        size_t len = 0;
        label[0] = '\0';
        for (int k = 0, rest = c; k < 4 && st == ZP_OK; k++) {
            if (lists[k].n == 0)
                continue;
            const char *item = lists[k].item[rest % lists[k].n];
            rest /= lists[k].n;
            char opt[32];
            snprintf(opt, sizeof opt, "--%s", zp_cli_compare_opts[k]);
            st = zp_cli_args_apply(&a, opt, item);
            len += (size_t)snprintf(label + len, sizeof entries[c].label - len, "%s%s %s", len ? " " : "", opt, item);
            if (len >= sizeof entries[c].label)
                len = sizeof entries[c].label - 1;
        }
        zp_search_result res;
        if (st == ZP_OK)
            st = zp_search_run(&a.r, &res);
        if (st != ZP_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", zp_error_message());
            st = ZP_FAIL(st, "%s: %s", label, why);
            break;
        }
        entries[c].found = res.n_fit > 0;
        nfound += entries[c].found;
        if (res.n > 0)
            entries[c].plan = res.plans[0]; /* the best, or the nearest to fitting (sorted by memory) */
        zp_search_result_free(&res);
        zp_progress_update(&bar, c + 1, combos);
    }
    if (st == ZP_OK) {
        char summary[96];
        snprintf(summary, sizeof summary, "%d choice%s searched, %d with a plan that fits", combos,
                 combos == 1 ? "" : "s", nfound);
        zp_progress_finish(&bar, summary);
    } else {
        zp_progress_done(&bar);
    }
    if (st == ZP_OK) {
        zp_compare cmp = {.model = &o.model, .cluster = o.cluster, .gpus = o.a.r.gpus, .gpu_mem = o.gpu_mem,
                          .reserve = o.a.r.reserve, .n = combos, .entries = entries};
        zp_doc *d;
        st = zp_report_compare_doc(&cmp, &d);
        if (st == ZP_OK) {
            zp_cli_out out;
            st = zp_cli_out_open(o.a.out, &out);
            if (st == ZP_OK)
                st = zp_cli_out_close(&out, zp_doc_write(d, out.f, o.a.fmt));
            zp_doc_free(d);
        }
    }
    free(entries);
    if (st != ZP_OK)
        return zp_cli_fail_as("zplan compare", st);
    return nfound > 0 ? 0 : zp_status_exit_code(ZP_ENOFIT);
}

int zp_cli_compare(int argc, char **argv)
{
    return zp_cli_plan_main(ZP_CMD_COMPARE, "zplan compare", "zplan compare", COMPARE_USAGE, argc, argv, zp_cli_compare_body);
}
