/* fuzz_cli — the what-if's option values: the input is split on newlines into arguments of
 * `zplan ARGS`, parsed and resolved by the CLI's own functions (zp_cli_plan_parse: the option table of
 * zp_cli_opts.c, zp_cli_plan_resolve);
 * an accepted request is searched with the analytic model and reported in every format, and no output
 * may show NaN or infinity. Files are neither written (-o, --report, --emit-ds-config are dropped) nor
 * platforms loaded (fuzz_platform does that). */
#include "fuzz_common.h"
#include "zp_cli.h"

#define MAX_ARGS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048)
        return 0;
    char *s = fz_strndup(data, size);
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "zplan";
    for (char *p = s; argc < MAX_ARGS + 1;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    zp_cli_plan o;
    if (zp_cli_plan_parse(ZP_CMD_WHATIF, "the what-if", argc, argv, &o) != ZP_OK || o.a.help)
        goto done;
    if (strchr(o.a.cluster, '/') || strstr(o.a.cluster, ".xml"))
        goto done;
    o.a.r.simulate = 0;
    o.a.r.trace_path = NULL;
    if (zp_cli_plan_resolve(&o, 1, 1) != ZP_OK)
        goto done;
    o.a.r.simulate = 0;
    zp_search_result res;
    if (zp_search_run(&o.a.r, &res) != ZP_OK)
        goto done;
    zp_whatif w;
    zp_cli_plan_whatif(&o, &res, &w);
    for (int fmt = ZP_FMT_TEXT; fmt <= ZP_FMT_HTML; fmt++) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        if (!f)
            abort();
        zp_status st = zp_report_whatif(f, (zp_format)fmt, &w);
        fclose(f);
        if (st == ZP_OK)
            FZ_ASSERT(!fz_has_nonfinite(out), "format %d shows a non-finite number:\n%s", fmt, out);
        free(out);
    }
    zp_search_result_free(&res);
done:
    free(s);
    return 0;
}
