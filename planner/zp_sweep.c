/* zp_sweep.c — the cells of a sweep (command-line lists or a grid file), their split over ranks, and
 * the row of one cell (see zp_sweep.h). */
#include "zp_sweep.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_io.h"
#include "zp_size.h"

void zp_sweep_cells_free(zp_sweep_cells *c)
{
    if (!c)
        return;
    free(c->cells);
    c->cells = NULL;
    c->n = 0;
}

/* Entries of a comma-separated list (counted before anything is allocated). */
static int list_count(const char *text)
{
    int n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    return n;
}

/* The k-th entry of a comma-separated list, trimmed, into buf; ZP_EINVAL when empty or too long. */
static zp_status list_item(const char *text, int k, const char *what, char *buf, size_t len)
{
    const char *p = text;
    for (int i = 0; i < k; i++)
        p = strchr(p, ',') + 1;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= len)
        return ZP_FAIL(ZP_EINVAL, "%s: entry %d is longer than %zu characters", what, k + 1, len - 1);
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *t = zp_io_trim(buf);
    memmove(buf, t, strlen(t) + 1);
    if (!buf[0])
        return ZP_FAIL(ZP_EINVAL, "%s: entry %d of '%s' is empty", what, k + 1, text);
    return ZP_OK;
}

static zp_status parse_gpus(const char *text, const char *what, int64_t *out)
{
    return zp_size_parse_int(text, what, 1, ZP_MAX_GPUS, out);
}

zp_status zp_sweep_cells_cross(const char *models, const char *clusters, const char *gpus, zp_sweep_cells *out)
{
    out->cells = NULL;
    out->n = 0;
    const int nm = list_count(models), nc = list_count(clusters), ng = list_count(gpus);
    /* each count is at most the text's length: the product fits in 64 bits */
    const int64_t cells = (int64_t)nm * nc * ng;
    if (cells > ZP_SWEEP_MAX_CELLS)
        return ZP_FAIL(ZP_EINVAL,
                       "a sweep of %lld cells (%d models x %d clusters x %d GPU counts) is more than the limit of %d "
                       "(ZP_SWEEP_MAX_CELLS): split it into several sweeps",
                       (long long)cells, nm, nc, ng, ZP_SWEEP_MAX_CELLS);
    /* every entry is checked before any cell is made */
    int64_t *g = malloc((size_t)ng * sizeof *g);
    zp_sweep_cell *c = calloc((size_t)cells, sizeof *c);
    if (!g || !c) {
        free(g);
        free(c);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    char buf[ZP_SWEEP_SPEC_LEN];
    zp_status st = ZP_OK;
    for (int k = 0; k < ng && st == ZP_OK; k++) {
        st = list_item(gpus, k, "--gpus", buf, sizeof buf);
        if (st == ZP_OK)
            st = parse_gpus(buf, "--gpus", &g[k]);
    }
    int i = 0;
    for (int m = 0; m < nm && st == ZP_OK; m++)
        for (int k = 0; k < nc && st == ZP_OK; k++)
            for (int j = 0; j < ng && st == ZP_OK; j++, i++) {
                st = list_item(models, m, "--models", c[i].model, sizeof c[i].model);
                if (st == ZP_OK)
                    st = list_item(clusters, k, "--cluster", c[i].cluster, sizeof c[i].cluster);
                c[i].gpus = g[j];
            }
    free(g);
    if (st != ZP_OK) {
        free(c);
        return st;
    }
    out->cells = c;
    out->n = (int)cells;
    return ZP_OK;
}

enum { COL_MODEL, COL_GPUS, COL_CLUSTER, NCOLS };
static const char *const g_col_names[NCOLS] = {"model", "gpus", "cluster"};

/* The header line: which column each field is (col_of[field]); ZP_EINVAL "path:line: ..." otherwise. */
static zp_status parse_header(char *line, const char *path, int lineno, int *col_of, int *nfields)
{
    int seen[NCOLS] = {0}, n = 0;
    char *copy = strdup(line);
    if (!copy)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
    for (char *f = line;; n++) {
        char *comma = strchr(f, ',');
        if (comma)
            *comma = '\0';
        char *name = zp_io_trim(f);
        int c = -1;
        for (int k = 0; k < NCOLS; k++)
            if (strcasecmp(name, g_col_names[k]) == 0)
                c = k;
        if (c < 0) {
            st = ZP_FAIL(ZP_EINVAL,
                         "%s:%d: the first line must be the header naming the columns, model,gpus and optionally "
                         "cluster (e.g. 'model,gpus,cluster'); '%s' is not one of them (in '%s')",
                         path, lineno, name, copy);
            break;
        }
        if (seen[c]++) {
            st = ZP_FAIL(ZP_EINVAL, "%s:%d: the header names the column '%s' twice", path, lineno, name);
            break;
        }
        if (n < NCOLS)
            col_of[n] = c;
        if (!comma)
            break;
        f = comma + 1;
    }
    if (st == ZP_OK && (!seen[COL_MODEL] || !seen[COL_GPUS]))
        st = ZP_FAIL(ZP_EINVAL, "%s:%d: the header '%s' must name the columns model and gpus (cluster is optional)",
                     path, lineno, copy);
    free(copy);
    *nfields = n + 1;
    return st;
}

/* One data row into *cell. */
static zp_status parse_row(char *line, const char *path, int lineno, const int *col_of, int nfields,
                           const char *default_cluster, zp_sweep_cell *cell)
{
    char *field[NCOLS] = {NULL, NULL, NULL};
    int n = 0;
    for (char *f = line;; n++) {
        char *comma = strchr(f, ',');
        if (comma)
            *comma = '\0';
        if (n < nfields)
            field[col_of[n]] = zp_io_trim(f);
        if (!comma)
            break;
        f = comma + 1;
    }
    n++;
    /* the optional cluster may be left out at the end of a row */
    const int short_ok = n == nfields - 1 && col_of[nfields - 1] == COL_CLUSTER;
    if (n != nfields && !short_ok)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %d field%s where the header has %d", path, lineno, n, n == 1 ? "" : "s",
                       nfields);
    for (int k = 0; k < NCOLS; k++)
        if (field[k] && strchr(field[k], '"'))
            return ZP_FAIL(ZP_EINVAL, "%s:%d: quoted fields are not supported (%s '%s')", path, lineno,
                           g_col_names[k], field[k]);
    if (!field[COL_MODEL][0])
        return ZP_FAIL(ZP_EINVAL, "%s:%d: the model is empty", path, lineno);
    const char *cluster = field[COL_CLUSTER] && field[COL_CLUSTER][0] ? field[COL_CLUSTER] : default_cluster;
    if (strlen(field[COL_MODEL]) >= sizeof cell->model || strlen(cluster) >= sizeof cell->cluster)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: a model or cluster longer than %d characters", path, lineno,
                       ZP_SWEEP_SPEC_LEN - 1);
    if (parse_gpus(field[COL_GPUS], "gpus", &cell->gpus) != ZP_OK)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s", path, lineno, zp_error_message());
    strcpy(cell->model, field[COL_MODEL]);
    strcpy(cell->cluster, cluster);
    cell->line = lineno;
    return ZP_OK;
}

zp_status zp_sweep_grid_parse(const char *text, const char *path, const char *default_cluster, zp_sweep_cells *out)
{
    out->cells = NULL;
    out->n = 0;
    if (!default_cluster || !default_cluster[0] || strlen(default_cluster) >= ZP_SWEEP_SPEC_LEN)
        return ZP_FAIL(ZP_EINVAL, "%s: no default cluster for its rows", path);
    char *buf = strdup(text);
    if (!buf)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int cap = 0, n = 0, lineno = 0, header = 0, col_of[NCOLS] = {0}, nfields = 0;
    zp_sweep_cell *cells = NULL;
    zp_status st = ZP_OK;
    for (char *line = buf; line && st == ZP_OK;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        char *s = zp_io_trim(line); /* also drops a '\r' of CRLF files */
        line = nl ? nl + 1 : NULL;
        if (!s[0] || s[0] == '#')
            continue;
        if (!header) {
            st = parse_header(s, path, lineno, col_of, &nfields);
            header = 1;
            continue;
        }
        if (n == ZP_SWEEP_MAX_CELLS) {
            st = ZP_FAIL(ZP_EINVAL, "%s:%d: more than %d cells, the limit of a sweep (ZP_SWEEP_MAX_CELLS): split the "
                                    "grid into several sweeps", path, lineno, ZP_SWEEP_MAX_CELLS);
            break;
        }
        if (n == cap) {
            int nc = cap ? 2 * cap : 64;
            zp_sweep_cell *nv = realloc(cells, (size_t)nc * sizeof *nv);
            if (!nv) {
                st = ZP_FAIL(ZP_ENOMEM, "out of memory");
                break;
            }
            cells = nv;
            cap = nc;
        }
        memset(&cells[n], 0, sizeof cells[n]);
        st = parse_row(s, path, lineno, col_of, nfields, default_cluster, &cells[n]);
        n += st == ZP_OK;
    }
    free(buf);
    if (st == ZP_OK && n == 0)
        st = ZP_FAIL(ZP_EINVAL, "%s: no cells (%s)", path,
                     header ? "a header and no rows" : "empty: a header line model,gpus[,cluster] and one row per cell");
    if (st != ZP_OK) {
        free(cells);
        return st;
    }
    out->cells = cells;
    out->n = n;
    return ZP_OK;
}

zp_status zp_sweep_grid_read(const char *path, const char *default_cluster, zp_sweep_cells *out)
{
    out->cells = NULL;
    out->n = 0;
    char *text;
    size_t len;
    zp_status st = zp_io_read_file(path, ZP_SWEEP_GRID_MAX_BYTES, &text, &len);
    if (st != ZP_OK)
        return ZP_FAIL(st, "--grid: %s", zp_error_message());
    if (strlen(text) != len)
        st = ZP_FAIL(ZP_EINVAL, "--grid: %s holds a NUL byte: not a text file", path);
    else
        st = zp_sweep_grid_parse(text, path, default_cluster, out);
    free(text);
    return st;
}

int zp_sweep_owner(int cell, int ranks) { return ranks > 1 ? cell % ranks : 0; }

int zp_sweep_share(int ncells, int rank, int ranks)
{
    if (ranks <= 1)
        return rank == 0 ? ncells : 0;
    if (rank < 0 || rank >= ranks || ncells <= rank)
        return 0;
    return (ncells - rank + ranks - 1) / ranks;
}

void zp_sweep_row_fill(zp_sweep_row *row, int cell, const zp_model *model, const zp_search_result *res)
{
    memset(row, 0, sizeof *row);
    row->cell = cell;
    snprintf(row->model, sizeof row->model, "%s", model->name);
    row->plans = res->n;
    row->plans_fit = res->n_fit;
    /* the search puts the fitting plans first, best first; without one, the closest to fitting */
    row->found = res->n > 0 && res->plans[0].fits;
    if (res->n == 0)
        return;
    row->best = res->plans[0];
    snprintf(row->method, sizeof row->method, "%s", row->best.method ? row->best.method : "");
    snprintf(row->sim, sizeof row->sim, "%s", row->best.sim ? row->best.sim : "");
    row->best.method = NULL;
    row->best.sim = NULL;
}

void zp_sweep_row_none(zp_sweep_row *row, int cell, const zp_model *model, const char *why)
{
    zp_search_result none = {0};
    zp_sweep_row_fill(row, cell, model, &none);
    snprintf(row->best.reason, sizeof row->best.reason, "%s", why);
}

zp_eval zp_sweep_row_eval(const zp_sweep_row *row)
{
    zp_eval e = row->best;
    e.method = row->method;
    e.sim = row->sim[0] ? row->sim : NULL;
    return e;
}
