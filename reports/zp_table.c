#include "zp_table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "zp_html.h"

/* CELL_UNSET: never set (JSON null, or left out in a ZP_COL_OMIT_UNSET column); CELL_EMPTY: a number that
 * was not finite (shown "-", JSON null). */
typedef enum { CELL_UNSET, CELL_EMPTY, CELL_NUM, CELL_INT, CELL_STR, CELL_BOOL } cell_kind;

typedef struct {
    cell_kind kind;
    double num;
    long long inum; /* CELL_INT */
    char *text;     /* display text (numbers formatted with their display format) */
} cell;

typedef struct {
    char *key;    /* CSV header; NULL: not in CSV */
    char *header; /* text, Markdown and HTML header; NULL: not shown there */
    char *json;   /* JSON key, "a.b" nested; NULL: not in JSON */
    unsigned flags;
} column;

struct zp_table {
    char *title;
    int ncols;
    column *cols;         /* owned copies of the names */
    cell *cells;          /* rows x ncols */
    unsigned char *hidden; /* per row: 1 = in CSV and JSON only */
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

/* A copy of s, or NULL for NULL; *ok = 0 when the copy failed. */
static char *dup_or_null(const char *s, int *ok)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *ok = 0;
    return d;
}

zp_table *zp_table_new_cols(const char *title, int ncols, const zp_col *cols)
{
    zp_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->title = strdup(title ? title : "");
    t->ncols = ncols;
    t->cols = calloc((size_t)ncols, sizeof *t->cols);
    int ok = t->title && t->cols;
    for (int c = 0; ok && c < ncols; c++) {
        const char *json = cols[c].json ? (cols[c].json[0] ? cols[c].json : NULL) : cols[c].key;
        t->cols[c].key = dup_or_null(cols[c].key, &ok);
        t->cols[c].header = dup_or_null(cols[c].header, &ok);
        t->cols[c].json = dup_or_null(json, &ok);
        t->cols[c].flags = cols[c].flags;
    }
    if (!ok) {
        zp_table_free(t);
        return NULL;
    }
    return t;
}

zp_table *zp_table_new(const char *title, int ncols, const char *const *keys, const char *const *headers)
{
    zp_col *cols = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *cols);
    if (!cols)
        return NULL;
    for (int c = 0; c < ncols; c++)
        cols[c] = (zp_col){.key = keys[c], .header = headers[c]};
    zp_table *t = zp_table_new_cols(title, ncols, cols);
    free(cols);
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
    free(t->hidden);
    for (int c = 0; t->cols && c < t->ncols; c++) {
        free(t->cols[c].key);
        free(t->cols[c].header);
        free(t->cols[c].json);
    }
    free(t->cols);
    free(t->title);
    free(t);
}

int zp_table_rows(const zp_table *t) { return t->rows; }
int zp_table_cols(const zp_table *t) { return t->ncols; }
const char *zp_table_header(const zp_table *t, int col) { return t->cols[col].header ? t->cols[col].header : ""; }

const char *zp_table_cell(const zp_table *t, int row, int col)
{
    const char *s = t->cells[row * t->ncols + col].text;
    return s ? s : "";
}

double zp_table_cell_num(const zp_table *t, int row, int col)
{
    const cell *c = &t->cells[row * t->ncols + col];
    return c->kind == CELL_NUM || c->kind == CELL_INT ? c->num : NAN;
}

static int is_num(const cell *c) { return c->kind == CELL_NUM || c->kind == CELL_INT; }

int zp_table_cell_is_num(const zp_table *t, int row, int col) { return is_num(&t->cells[row * t->ncols + col]); }

zp_status zp_table_add_row(zp_table *t)
{
    if (t->rows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        cell *nc = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *nc);
        if (!nc)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        t->cells = nc;
        unsigned char *nh = realloc(t->hidden, (size_t)cap);
        if (!nh)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        t->hidden = nh;
        t->cap = cap;
    }
    memset(&t->cells[t->rows * t->ncols], 0, (size_t)t->ncols * sizeof(cell));
    t->hidden[t->rows] = 0;
    t->rows++;
    return ZP_OK;
}

void zp_table_hide_row(zp_table *t)
{
    if (t->rows > 0)
        t->hidden[t->rows - 1] = 1;
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

zp_status zp_table_set_int(zp_table *t, int col, long long value)
{
    cell *c = last_cell(t, col);
    if (!c)
        return ZP_FAIL(ZP_ERUNTIME, "table cell out of range");
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", value);
    c->kind = CELL_INT;
    c->num = (double)value;
    c->inum = value;
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

/* Text, Markdown and HTML show the columns with a header and the rows not hidden. */
static int shown_col(const zp_table *t, int c) { return t->cols[c].header != NULL; }
static int shown_row(const zp_table *t, int r) { return !t->hidden[r]; }

/* Right-aligned: no shown cell is a string. */
static int is_numeric_col(const zp_table *t, int c)
{
    for (int r = 0; r < t->rows; r++)
        if (shown_row(t, r) && t->cells[r * t->ncols + c].kind == CELL_STR)
            return 0;
    return 1;
}

static int last_shown_col(const zp_table *t)
{
    int last = -1;
    for (int c = 0; c < t->ncols; c++)
        if (shown_col(t, c))
            last = c;
    return last;
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
        if (!shown_col(t, c))
            continue;
        w[c] = (int)strlen(t->cols[c].header);
        for (int r = 0; r < t->rows; r++) {
            int n = shown_row(t, r) ? (int)strlen(cell_text(t, r, c)) : 0;
            if (n > w[c])
                w[c] = n;
        }
    }
    const int last = last_shown_col(t);
    if (t->title[0])
        fprintf(f, "%s\n", t->title);
    const char *sep = "";
    for (int c = 0; c < t->ncols; c++) {
        if (!shown_col(t, c))
            continue;
        int right = is_numeric_col(t, c);
        if (c == last && !right)
            fprintf(f, "%s%s", sep, t->cols[c].header);
        else
            fprintf(f, "%s%*s", sep, right ? w[c] : -w[c], t->cols[c].header);
        sep = "  ";
    }
    fputc('\n', f);
    sep = "";
    for (int c = 0; c < t->ncols; c++) {
        if (!shown_col(t, c))
            continue;
        fputs(sep, f);
        for (int i = 0; i < w[c]; i++)
            fputc('-', f);
        sep = "  ";
    }
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        if (!shown_row(t, r))
            continue;
        sep = "";
        for (int c = 0; c < t->ncols; c++) {
            if (!shown_col(t, c))
                continue;
            int right = is_numeric_col(t, c);
            /* trailing spaces are noise in golden files: pad the last column only when right-aligned */
            if (c == last && !right)
                fprintf(f, "%s%s", sep, cell_text(t, r, c));
            else
                fprintf(f, "%s%*s", sep, right ? w[c] : -w[c], cell_text(t, r, c));
            sep = "  ";
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
        if (shown_col(t, c))
            fprintf(f, " %s |", t->cols[c].header);
    fputs("\n|", f);
    for (int c = 0; c < t->ncols; c++)
        if (shown_col(t, c))
            fputs(is_numeric_col(t, c) ? " ---: |" : " --- |", f);
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        if (!shown_row(t, r))
            continue;
        fputc('|', f);
        for (int c = 0; c < t->ncols; c++)
            if (shown_col(t, c))
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

/* CSV: the columns with a key, every row. */
static void write_csv(const zp_table *t, FILE *f)
{
    const char *sep = "";
    for (int c = 0; c < t->ncols; c++) {
        if (!t->cols[c].key)
            continue;
        fputs(sep, f);
        csv_field(f, t->cols[c].key);
        sep = ",";
    }
    fputc('\n', f);
    for (int r = 0; r < t->rows; r++) {
        sep = "";
        for (int c = 0; c < t->ncols; c++) {
            if (!t->cols[c].key)
                continue;
            fputs(sep, f);
            sep = ",";
            const cell *x = &t->cells[r * t->ncols + c];
            if (x->kind == CELL_NUM)
                fprintf(f, "%.10g", x->num);
            else if (x->kind == CELL_INT)
                fprintf(f, "%lld", x->inum);
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
    if (t->title[0])
        zp_html_wrap(f, "<h2>", t->title, "</h2>\n");
    fputs("<table>\n<tr>", f);
    for (int c = 0; c < t->ncols; c++) {
        if (!shown_col(t, c))
            continue;
        zp_html_wrap(f, "<th>", t->cols[c].header, "</th>");
    }
    fputs("</tr>\n", f);
    for (int r = 0; r < t->rows; r++) {
        if (!shown_row(t, r))
            continue;
        fputs("<tr>", f);
        for (int c = 0; c < t->ncols; c++) {
            if (!shown_col(t, c))
                continue;
            zp_html_wrap(f, is_num(&t->cells[r * t->ncols + c]) ? "<td class=\"num\">" : "<td>", cell_text(t, r, c),
                         "</td>");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    for (int i = 0; i < t->nnotes; i++)
        zp_html_wrap(f, "<p class=\"note\">", t->notes[i], "</p>\n");
}

/* Sets o[key], where "a.b" is key b of the object o["a"] (made when absent). -1 on failure. */
static int json_set_path(json_t *o, const char *key, json_t *v)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return json_object_set_new(o, key, v);
    char outer[64];
    snprintf(outer, sizeof outer, "%.*s", (int)(dot - key), key);
    json_t *inner = json_object_get(o, outer);
    if (!inner) {
        inner = json_object();
        if (json_object_set_new(o, outer, inner) != 0) {
            json_decref(v);
            return -1;
        }
    }
    return json_set_path(inner, dot + 1, v);
}

json_t *zp_table_rows_json(const zp_table *t)
{
    json_t *rows = json_array();
    for (int r = 0; rows && r < t->rows; r++) {
        json_t *o = json_object();
        for (int c = 0; o && c < t->ncols; c++) {
            const cell *x = &t->cells[r * t->ncols + c];
            if (!t->cols[c].json || (x->kind == CELL_UNSET && (t->cols[c].flags & ZP_COL_OMIT_UNSET)))
                continue;
            json_t *v;
            switch (x->kind) {
            case CELL_NUM: v = json_real(x->num); break;
            case CELL_INT: v = json_integer(x->inum); break;
            case CELL_BOOL: v = json_boolean(x->num != 0); break;
            case CELL_STR: v = json_string(x->text); break;
            default: v = json_null(); break;
            }
            if (json_set_path(o, t->cols[c].json, v) != 0) {
                json_decref(o);
                o = NULL;
            }
        }
        if (json_array_append_new(rows, o) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    return rows;
}

json_t *zp_table_to_json(const zp_table *t)
{
    json_t *root = json_object();
    json_object_set_new(root, "title", json_string(t->title));
    json_object_set_new(root, "rows", zp_table_rows_json(t));
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
