/* The dimension table on the command line: every row's option parses into its degree (zp_plan.deg, by the
 * row's id, no named member needed) and every row's help is in `zplan --help` (src/zp_cli_opts.c reads both
 * from vocab/zp_dims.c), so a new dimension is a row, not a row plus an option plus a usage line. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_cli.h"
#include "zp_dims.h"

static zp_cli_args g_args; /* large (the search request): not on the stack */

static zp_status parse(int argc, char **argv)
{
    return zp_cli_args_parse(ZP_CMD_WHATIF, "the what-if", argc, argv, &g_args);
}

Test(dims, every_row_option_parses_into_its_degree)
{
    int rows = 0;
    for (int d = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        if (!*t->option) /* DP: what the others leave, no option */
            continue;
        rows++;
        char eq[64];
        snprintf(eq, sizeof eq, "%s=4", t->option);
        char *sep[] = {"zplan", "--model", "1.5B", "--gpus", "8", (char *)t->option, "2", NULL};
        cr_assert_eq(parse(7, sep), ZP_OK, "%s 2: %s", t->option, zp_error_message());
        cr_assert_eq(g_args.r.base.deg[d], 2, "%s 2 lands in deg[%s]", t->option, t->name);
        cr_assert(zp_search_req_given(&g_args.r, ZP_SEARCH_DIM(d)), "%s given: no longer searched", t->option);
        char *joined[] = {"zplan", eq, NULL};
        cr_assert_eq(parse(2, joined), ZP_OK, "%s", eq);
        cr_assert_eq(g_args.r.base.deg[d], 4, "%s", eq);
        cr_assert_eq(zp_cli_args_apply(&g_args, t->option, "8"), ZP_OK, "%s applied", t->option);
        cr_assert_eq(g_args.r.base.deg[d], 8);
        /* a bad degree: the same message as every degree's, naming the option */
        char *zero[] = {"zplan", (char *)t->option, "0", NULL};
        cr_assert_eq(parse(3, zero), ZP_EINVAL);
        char want[64];
        snprintf(want, sizeof want, "%s: '0' must be at least 1", t->option);
        cr_assert_str_eq(zp_error_message(), want);
        char *bare[] = {"zplan", (char *)t->option, NULL};
        cr_assert_eq(parse(2, bare), ZP_EINVAL, "%s needs a value", t->option);
    }
    cr_assert_geq(rows, 4, "TP, EP, PP and CP have options");
    char *unknown[] = {"zplan", "--data", "2", NULL}; /* a row's name is not an option */
    cr_assert_eq(parse(3, unknown), ZP_EINVAL);
}

/* What f received, as a string (the caller frees it). */
static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    char *s = calloc((size_t)n + 1, 1);
    rewind(f);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

Test(dims, every_row_help_is_in_zplan_help_once)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    fflush(stdout);
    const int saved = dup(1);
    dup2(fileno(f), 1);
    const int rc = zp_cli_main(2, (char *[]){"zplan", "--help", NULL});
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    cr_assert_eq(rc, 0);
    char *help = slurp(f);
    fclose(f);
    cr_assert(!strchr(help, '\x1e'), "no marker left in the help");
    for (int d = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        cr_assert_eq(!*t->option, !t->help, "%s: a row with an option has help, one without none", t->name);
        if (!t->help)
            continue;
        cr_assert(strncmp(t->help, "  ", 2) == 0 && strstr(t->help, t->option) == t->help + 2, "%s", t->name);
        cr_assert_eq(t->help[strlen(t->help) - 1], '\n', "%s", t->name);
        cr_assert_eq(count(help, t->help), 1, "%s's help once in zplan --help", t->option);
    }
    free(help);
}

/* A usage that names no row gets every row's help at its rest marker; one it names goes at its own. */
Test(dims, usage_markers_place_the_rows)
{
    FILE *f = tmpfile();
    zp_cli_usage_put("a\n" ZP_CLI_DIM_HELP("pipeline") "b\n" ZP_CLI_DIM_HELP_REST "c\n", f);
    char *s = slurp(f);
    fclose(f);
    const char *pp = zp_dims_get(ZP_DIM_PP)->help, *b = strstr(s, "b\n");
    cr_assert(strncmp(s, "a\n", 2) == 0 && strncmp(s + 2, pp, strlen(pp)) == 0, "%s", s);
    cr_assert_eq(count(s, pp), 1);
    for (int d = 0; d < ZP_NDIMS; d++) {
        const char *h = zp_dims_get((zp_dim_id)d)->help;
        if (h && d != ZP_DIM_PP)
            cr_assert(strstr(s, h) > b, "%s after b", zp_dims_get((zp_dim_id)d)->name);
    }
    cr_assert_str_eq(s + strlen(s) - 2, "c\n");
    free(s);
}
