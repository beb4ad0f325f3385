/* sim/ sweep: the cells from lists and grid files (bad rows named by file:line, the cell limit), their
 * split over ranks, and a row's round trip (plain bytes). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "zp_sweep.h"
#include "zp_zoo.h"

Test(sweep, cross_orders_model_cluster_gpus)
{
    zp_sweep_cells c;
    cr_assert_eq(zp_sweep_cells_cross("13B, 175B", "dgx2,dgx-h100", "1K,2048", &c), ZP_OK, "%s",
                 zp_error_message());
    cr_assert_eq(c.n, 8);
    cr_expect_str_eq(c.cells[0].model, "13B");
    cr_expect_str_eq(c.cells[0].cluster, "dgx2");
    cr_expect_eq(c.cells[0].gpus, 1000);
    cr_expect_eq(c.cells[1].gpus, 2048);
    cr_expect_str_eq(c.cells[2].cluster, "dgx-h100");
    cr_expect_str_eq(c.cells[4].model, "175B"); /* trimmed */
    cr_expect_eq(c.cells[7].line, 0);
    zp_sweep_cells_free(&c);
    zp_sweep_cells_free(NULL);
}

Test(sweep, cross_bad_entries)
{
    zp_sweep_cells c;
    cr_expect_eq(zp_sweep_cells_cross("13B,,175B", "dgx2", "64", &c), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "--models: entry 2") != NULL, "%s", zp_error_message());
    cr_expect_eq(c.n, 0);
    cr_expect_eq(zp_sweep_cells_cross("13B", "dgx2", "64,0", &c), ZP_EINVAL);
    cr_expect_eq(zp_sweep_cells_cross("13B", "dgx2", "64,many", &c), ZP_EINVAL);
    cr_expect_eq(zp_sweep_cells_cross("13B", "dgx2", "64,1e30", &c) != ZP_OK, 1);
}

/* A list of n GPU counts "1,2,...,n". */
static char *gpu_list(int n)
{
    static char buf[65536];
    int len = 0;
    for (int i = 1; i <= n; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%d", i > 1 ? "," : "", i);
    return buf;
}

Test(sweep, cross_limit)
{
    zp_sweep_cells c;
    cr_expect_eq(zp_sweep_cells_cross("13B", "dgx2", gpu_list(ZP_SWEEP_MAX_CELLS), &c), ZP_OK, "%s",
                 zp_error_message());
    cr_expect_eq(c.n, ZP_SWEEP_MAX_CELLS);
    zp_sweep_cells_free(&c);
    /* 2 models x 2049 counts = 4098 cells: refused before anything is parsed */
    cr_expect_eq(zp_sweep_cells_cross("13B,175B", "dgx2", gpu_list(ZP_SWEEP_MAX_CELLS / 2 + 1), &c), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "limit of 4096") != NULL, "%s", zp_error_message());
    cr_expect_eq(c.n, 0);
}

Test(sweep, grid_rows)
{
    const char *text = "# a comment\n"
                       "\n"
                       "gpus, model ,cluster\r\n"
                       "1K,gpt3-175B,dgx-h100\n"
                       "  # another\n"
                       "512,13B,\n"
                       "64,8B\n";
    zp_sweep_cells c;
    cr_assert_eq(zp_sweep_grid_parse(text, "g.csv", "dgx2", &c), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(c.n, 3);
    cr_expect_str_eq(c.cells[0].model, "gpt3-175B");
    cr_expect_str_eq(c.cells[0].cluster, "dgx-h100");
    cr_expect_eq(c.cells[0].gpus, 1000);
    cr_expect_eq(c.cells[0].line, 4);
    cr_expect_str_eq(c.cells[1].cluster, "dgx2"); /* empty: the default */
    cr_expect_eq(c.cells[1].line, 6);
    cr_expect_str_eq(c.cells[2].cluster, "dgx2"); /* absent at the end of the row */
    cr_expect_eq(c.cells[2].line, 7);
    zp_sweep_cells_free(&c);
}

/* Each bad grid is refused with a message starting "g.csv:LINE: " (or "g.csv: " for the whole file). */
Test(sweep, grid_bad_rows_named_by_line)
{
    static const struct {
        const char *text, *prefix;
    } bad[] = {
        {"model,gpus\n13B,64\n13B,sixty\n", "g.csv:3: "},
        {"model,gpus\n13B,64,dgx2,extra\n", "g.csv:2: "},
        {"model,gpus\n\n# x\n13B\n", "g.csv:4: "},
        {"model,gpus\n,64\n", "g.csv:2: "},
        {"model,gpus\n13B,0\n", "g.csv:2: "},
        {"model,gpus\n\"13B\",64\n", "g.csv:2: "},
        {"model,nodes\n13B,64\n", "g.csv:1: "},
        {"model,model,gpus\n13B,13B,64\n", "g.csv:1: "},
        {"cluster\ndgx2\n", "g.csv:1: "},
        {"13B,64\n", "g.csv:1: "}, /* no header */
        {"model,gpus\n", "g.csv: "},
        {"# only a comment\n", "g.csv: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zp_sweep_cells c;
        cr_expect_eq(zp_sweep_grid_parse(bad[i].text, "g.csv", "dgx2", &c), ZP_EINVAL, "grid %zu", i);
        cr_expect_eq(strncmp(zp_error_message(), bad[i].prefix, strlen(bad[i].prefix)), 0,
                     "grid %zu: '%s' should start with '%s'", i, zp_error_message(), bad[i].prefix);
        cr_expect_eq(c.n, 0);
        cr_expect_null(c.cells);
    }
}

Test(sweep, grid_limit_names_the_line)
{
    static char text[ZP_SWEEP_MAX_CELLS * 12 + 64];
    int len = snprintf(text, sizeof text, "model,gpus\n");
    for (int i = 0; i <= ZP_SWEEP_MAX_CELLS; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "13B,64\n");
    zp_sweep_cells c;
    cr_expect_eq(zp_sweep_grid_parse(text, "g.csv", "dgx2", &c), ZP_EINVAL);
    char want[64];
    snprintf(want, sizeof want, "g.csv:%d: more than %d cells", ZP_SWEEP_MAX_CELLS + 2, ZP_SWEEP_MAX_CELLS);
    cr_expect(strstr(zp_error_message(), want) != NULL, "%s", zp_error_message());
}

Test(sweep, split_covers_every_cell_once)
{
    for (int ranks = 1; ranks <= 5; ranks++)
        for (int n = 0; n <= 13; n++) {
            int total = 0;
            for (int r = 0; r < ranks; r++) {
                int share = zp_sweep_share(n, r, ranks);
                total += share;
                for (int k = 0; k < share; k++)
                    cr_expect_eq(zp_sweep_owner(r + k * ranks, ranks), r);
            }
            cr_expect_eq(total, n, "%d cells on %d ranks", n, ranks);
            /* rank 0 has the most: the gather's slot */
            for (int r = 1; r < ranks; r++)
                cr_expect_leq(zp_sweep_share(n, r, ranks), zp_sweep_share(n, 0, ranks));
        }
}

Test(sweep, row_holds_no_pointers)
{
    const zp_model *m = &zp_zoo_find("1.5B")->model;
    zp_search_result res = {0};
    zp_eval e = {0};
    e.fits = 1;
    e.method = "simgrid";
    e.sim = "reduced";
    e.tflops_per_gpu = 42;
    res.plans = &e;
    res.n = 1;
    res.n_fit = 1;
    zp_sweep_row row, copy;
    zp_sweep_row_fill(&row, 7, m, &res);
    cr_expect_null(row.best.method);
    cr_expect_null(row.best.sim);
    memcpy(&copy, &row, sizeof row); /* as the gather moves it */
    zp_eval back = zp_sweep_row_eval(&copy);
    cr_expect_str_eq(back.method, "simgrid");
    cr_expect_str_eq(back.sim, "reduced");
    cr_expect_eq(back.tflops_per_gpu, 42);
    cr_expect_eq(copy.cell, 7);
    cr_expect(copy.found);
    zp_sweep_row_none(&row, 3, m, "no plan: --mp 3 does not divide 64");
    cr_expect_eq(row.found, 0);
    cr_expect_eq(row.plans, 0);
    cr_expect_str_eq(row.best.reason, "no plan: --mp 3 does not divide 64");
}
