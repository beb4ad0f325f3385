#include "zp_table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "zp_html.h"

typedef enum { CELL_EMPTY, CELL_NUM, CELL_STR, CELL_BOOL } cell_kind;

typedef struct {
    cell_kind kind;
    double num;
    char *text; /* display text (numbers formatted with their display format) */
} cell;

struct zp_table {
    char *title;
    int ncols;
    char **keys;    /* owned copies */
    char **headers;
    cell *cells; /* rows x ncols */
    int rows, cap;
    char **notes;
    int nnotes;
};

static const char *const g_fmt_names[] = {"text", "md", "csv", "json", "html"};

zp_status zp_format_parse(const char *text, zp_format *out)
{
    const char *const *names = g_fmt_names;
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(text, names[i]) == 0) {
            *out = (zp_format)i;
            return ZP_OK;
        }
    }
    if (strcasecmp(text, "markdown") == 0) {
        *out = ZP_FMT_MD;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "--format: unknown format '%s' (use text, md, csv, json or html)", text);
}

const char *zp_format_name(zp_format f) { return g_fmt_names[f]; }

zp_table *zp_table_new(const char *title, int ncols, const char *const *keys, const char *const *headers)
{
    zp_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->title = strdup(title ? title : "");
    t->ncols = ncols;
    t->keys = calloc((size_t)ncols, sizeof *t->keys);
    t->headers = calloc((size_t)ncols, sizeof *t->headers);
    int ok = t->title && t->keys && t->headers;
    for (int c = 0; ok && c < ncols; c++)
        ok = (t->keys[c] = strdup(keys[c])) && (t->headers[c] = strdup(headers[c]));
    if (!ok) {
        zp_table_free(t);
        return NULL;
    }
    return t;
}

void zp_table_free(zp_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->rows * t->ncols; i++)
        free(t->cells[i].text);
    for (int i = 0; i < t->nnotes; i++)
        free(t->notes[i]);
    free(t->notes);
    free(t->cells);
    for (int c = 0; c < t->ncols; c++) {
        if (t->keys)
            free(t->keys[c]);
        if (t->headers)
            free(t->headers[c]);
    }
    free(t->keys);
    free(t->headers);
    free(t->title);
    free(t);
}

int zp_table_rows(const zp_table *t) { return t->rows; }
int zp_table_cols(const zp_table *t) { return t->ncols; }
const char *zp_table_header(const zp_table *t, int col) { return t->headers[col]; }

const char *zp_table_cell(const zp_table *t, int row, int col)
{
    const char *s = t->cells[row * t->ncols + col].text;
    return s ? s : "";
}

double zp_table_cell_num(const zp_table *t, int row, int col)
{
    const cell *c = &t->cells[row * t->ncols + col];
    return c->kind == CELL_NUM ? c->num : NAN;
}

int zp_table_cell_is_num(const zp_table *t, int row, int col) { return t->cells[row * t->ncols + col].kind == CELL_NUM; }

zp_status zp_table_add_row(zp_table *t)
{
    if (t->rows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        cell *nc = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *nc);
        if (!nc)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        t->cells = nc;
        t->cap = cap;
    }
    memset(&t->cells[t->rows * t->ncols], 0, (size_t)t->ncols * sizeof(cell));
    t->rows++;
    return ZP_OK;
}

static cell *last_cell(zp_table *t, int col)
{
    if (t->rows == 0 || col < 0 || col >= t->ncols)
        return NULL;
    return &t->cells[(t->rows - 1) * t->ncols + col];
}

static zp_status set_text(cell *c, const char *text)
{
    free(c->text);
    c->text = strdup(text);
    return c->text ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
}

zp_status zp_table_set_num(zp_table *t, int col, double value, const char *display_fmt)
{
    cell *c = last_cell(t, col);
    if (!c)
        return ZP_FAIL(ZP_ERUNTIME, "table cell out of range");
    char buf[64];
    if (isfinite(value))
        snprintf(buf, sizeof buf, display_fmt, value);
    else
        snprintf(buf, sizeof buf, "-");
    c->kind = isfinite(value) ? CELL_NUM : CELL_EMPTY;
    c->num = value;
    return set_text(c, buf);
}

zp_status zp_table_set_num_text(zp_table *t, int col, double value, const char *text)
{
    ZP_TRY(zp_table_set_num(t, col, value, "%g"));
    return set_text(last_cell(t, col), text);
}

zp_status zp_table_set_str(zp_table *t, int col, const char *text)
{
    cell *c = last_cell(t, col);
    if (!c)
        return ZP_FAIL(ZP_ERUNTIME, "table cell out of range");
    c->kind = CELL_STR;
    return set_text(c, text ? text : "");
}

zp_status zp_table_set_bool(zp_table *t, int col, int value)
{
    cell *c = last_cell(t, col);
    if (!c)
        return ZP_FAIL(ZP_ERUNTIME, "table cell out of range");
    c->kind = CELL_BOOL;
    c->num = value ? 1 : 0;
    return set_text(c, value ? "yes" : "no");
}

zp_status zp_table_add_note(zp_table *t, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **nn = realloc(t->notes, (size_t)(t->nnotes + 1) * sizeof *nn);
    if (!nn)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    t->notes = nn;
    t->notes[t->nnotes] = strdup(buf);
    if (!t->notes[t->nnotes])
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    t->nnotes++;
    return ZP_OK;
}

static const char *cell_text(const zp_table *t, int r, int c)
{
    const char *s = t->cells[r * t->ncols + c].text;
    return s ? s : "";
}

static int is_numeric_col(const zp_table *t, int c)
{
    for (int r = 0; r < t->rows; r++)
        if (t->cells[r * t->ncols + c].kind == CELL_STR)
            return 0;
    return 1;
}

static void write_text_raw(const zp_table *t, FILE *f);

/* Aligned text without trailing blanks (golden files and diffs stay clean). */
static void write_text(const zp_table *t, FILE *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    write_text_raw(t, m);
    fclose(m);
    char *line = buf;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        size_t k = n;
        while (k > 0 && line[k - 1] == ' ')
            k--;
        fwrite(line, 1, k, f);
        if (nl)
            fputc('\n', f);
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
}

static void write_text_raw(const zp_table *t, FILE *f)
{
    int *w = calloc((size_t)t->ncols, sizeof *w);
    if (!w)
        return;
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->headers[c]);
        for (int r = 0; r < t->rows; r++) {
            int n = (int)strlen(cell_text(t, r, c));
            if (n > w[c])
                w[c] = n;
        }
    }
    if (t->title[0])
        fprintf(f, "%s\n", t->title);
    for (int c = 0; c < t->ncols; c++) {
        int right = is_numeric_col(t, c);
        if (c == t->ncols - 1 && !right)
            fprintf(f, "%s%s", c ? "  " : "", t->headers[c]);
        else
            fprintf(f, "%s%*s", c ? "  " : "", right ? w[c] : -w[c], t->headers[c]);
    }
    fputc('\n', f);
    for (int c = 0; c < t->ncols; c++) {
        fprintf(f, "%s", c ? "  " : "");
        for (int i = 0; i < w[c]; i++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            int right = is_numeric_col(t, c);
            /* trailing spaces are noise in golden files: pad the last column only when right-aligned */
            if (c == t->ncols - 1 && !right)
                fprintf(f, "%s%s", c ? "  " : "", cell_text(t, r, c));
            else
                fprintf(f, "%s%*s", c ? "  " : "", right ? w[c] : -w[c], cell_text(t, r, c));
        }
        fputc('\n', f);
    }
    for (int i = 0; i < t->nnotes; i++)
        fprintf(f, "%s\n", t->notes[i]);
    free(w);
}

static void write_md(const zp_table *t, FILE *f)
{
    if (t->title[0])
        fprintf(f, "### %s\n\n", t->title);
    fputc('|', f);
    for (int c = 0; c < t->ncols; c++)
        fprintf(f, " %s |", t->headers[c]);
    fputs("\n|", f);
    for (int c = 0; c < t->ncols; c++)
        fputs(is_numeric_col(t, c) ? " ---: |" : " --- |", f);
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        fputc('|', f);
        for (int c = 0; c < t->ncols; c++)
            fprintf(f, " %s |", cell_text(t, r, c));
        fputc('\n', f);
    }
    if (t->nnotes)
        fputc('\n', f);
    for (int i = 0; i < t->nnotes; i++)
        fprintf(f, "%s\n", t->notes[i]);
}

static void csv_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
}

static void write_csv(const zp_table *t, FILE *f)
{
    for (int c = 0; c < t->ncols; c++) {
        if (c)
            fputc(',', f);
        csv_field(f, t->keys[c]);
    }
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c)
                fputc(',', f);
            const cell *x = &t->cells[r * t->ncols + c];
            if (x->kind == CELL_NUM)
                fprintf(f, "%.10g", x->num);
            else if (x->kind == CELL_BOOL)
                fputs(x->num != 0 ? "true" : "false", f);
            else
                csv_field(f, x->text ? x->text : "");
        }
        fputc('\n', f);
    }
}

void zp_table_write_html(const zp_table *t, FILE *f)
{
    if (t->title[0]) {
        fputs("<h2>", f);
        zp_xml_escape(f, t->title);
        fputs("</h2>\n", f);
    }
    fputs("<table>\n<tr>", f);
    for (int c = 0; c < t->ncols; c++) {
        fputs("<th>", f);
        zp_xml_escape(f, t->headers[c]);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (int r = 0; r < t->rows; r++) {
        fputs("<tr>", f);
        for (int c = 0; c < t->ncols; c++) {
            fputs(t->cells[r * t->ncols + c].kind == CELL_NUM ? "<td class=\"num\">" : "<td>", f);
            zp_xml_escape(f, cell_text(t, r, c));
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    for (int i = 0; i < t->nnotes; i++) {
        fputs("<p class=\"note\">", f);
        zp_xml_escape(f, t->notes[i]);
        fputs("</p>\n", f);
    }
}

json_t *zp_table_to_json(const zp_table *t)
{
    json_t *root = json_object();
    json_object_set_new(root, "title", json_string(t->title));
    json_t *rows = json_array();
    for (int r = 0; r < t->rows; r++) {
        json_t *o = json_object();
        for (int c = 0; c < t->ncols; c++) {
            const cell *x = &t->cells[r * t->ncols + c];
            json_t *v;
            switch (x->kind) {
            case CELL_NUM: v = json_real(x->num); break;
            case CELL_BOOL: v = json_boolean(x->num != 0); break;
            case CELL_STR: v = json_string(x->text); break;
            default: v = json_null(); break;
            }
            json_object_set_new(o, t->keys[c], v);
        }
        json_array_append_new(rows, o);
    }
    json_object_set_new(root, "rows", rows);
    json_t *notes = json_array();
    for (int i = 0; i < t->nnotes; i++)
        json_array_append_new(notes, json_string(t->notes[i]));
    json_object_set_new(root, "notes", notes);
    return root;
}

zp_status zp_table_write(const zp_table *t, FILE *f, zp_format fmt)
{
    switch (fmt) {
    case ZP_FMT_TEXT: write_text(t, f); break;
    case ZP_FMT_MD: write_md(t, f); break;
    case ZP_FMT_CSV: write_csv(t, f); break;
    case ZP_FMT_HTML: {
        char *title = t->title;
        zp_html_begin(f, title[0] ? title : "zplan");
        zp_table_write_html(t, f);
        zp_html_end(f);
        break;
    }
    case ZP_FMT_JSON: {
        json_t *j = zp_table_to_json(t);
        if (!j || json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) != 0) {
            json_decref(j);
            return ZP_FAIL(ZP_EIO, "writing JSON failed");
        }
        fputc('\n', f);
        json_decref(j);
        break;
    }
    }
    return ferror(f) ? ZP_FAIL(ZP_EIO, "write failed") : ZP_OK;
}
