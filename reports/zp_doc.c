#include "zp_doc.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "zp_html.h"

typedef enum { ITEM_TEXT, ITEM_TABLE, ITEM_CHART } item_kind;

typedef struct {
    item_kind kind;
    char *text;
    zp_table *table;
    zp_chart *chart;
} item;

struct zp_doc {
    char *title;
    item *items;
    int n;
};

zp_doc *zp_doc_new(const char *title)
{
    zp_doc *d = calloc(1, sizeof *d);
    if (d && !(d->title = strdup(title ? title : ""))) {
        free(d);
        d = NULL;
    }
    return d;
}

void zp_doc_free(zp_doc *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++) {
        free(d->items[i].text);
        zp_table_free(d->items[i].table);
        free(d->items[i].chart);
    }
    free(d->items);
    free(d->title);
    free(d);
}

static item *push(zp_doc *d)
{
    item *n = realloc(d->items, (size_t)(d->n + 1) * sizeof *n);
    if (!n)
        return NULL;
    d->items = n;
    memset(&d->items[d->n], 0, sizeof(item));
    return &d->items[d->n++];
}

zp_status zp_doc_add_text(zp_doc *d, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    item *it = push(d);
    if (!it || !(it->text = strdup(buf)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    it->kind = ITEM_TEXT;
    return ZP_OK;
}

zp_status zp_doc_add_table(zp_doc *d, zp_table *t)
{
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    item *it = push(d);
    if (!it) {
        zp_table_free(t);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    it->kind = ITEM_TABLE;
    it->table = t;
    return ZP_OK;
}

zp_status zp_doc_add_chart(zp_doc *d, const zp_chart *c)
{
    item *it = push(d);
    if (!it || !(it->chart = malloc(sizeof *c)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    it->kind = ITEM_CHART;
    *it->chart = *c;
    return ZP_OK;
}

json_t *zp_doc_to_json(const zp_doc *d)
{
    json_t *secs = json_array();
    for (int i = 0; i < d->n; i++) {
        const item *it = &d->items[i];
        json_t *o;
        if (it->kind == ITEM_TEXT) {
            o = json_pack("{s:s, s:s}", "type", "text", "text", it->text);
        } else if (it->kind == ITEM_TABLE) {
            o = zp_table_to_json(it->table);
            json_object_set_new(o, "type", json_string("table"));
        } else {
            const zp_chart *c = it->chart;
            json_t *series = json_array();
            for (int s = 0; s < c->nseries; s++) {
                json_t *ys = json_array();
                for (int p = 0; p < c->npoints; p++)
                    json_array_append_new(ys, isfinite(c->y[s][p]) ? json_real(c->y[s][p]) : json_null());
                json_array_append_new(series, json_pack("{s:s, s:o}", "name", c->series[s], "y", ys));
            }
            json_t *xs = json_array();
            for (int p = 0; p < c->npoints; p++)
                json_array_append_new(xs, json_string(c->xcat[p]));
            o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "type", "chart", "kind",
                          c->kind == ZP_CHART_LINE ? "line" : "stacked_bar", "title", c->title, "x_label", c->xlabel,
                          "y_label", c->ylabel, "x", xs, "series", series);
        }
        json_array_append_new(secs, o);
    }
    return json_pack("{s:s, s:o}", "title", d->title, "sections", secs);
}

zp_status zp_doc_write(const zp_doc *d, FILE *f, zp_format fmt)
{
    switch (fmt) {
    case ZP_FMT_JSON: {
        json_t *j = zp_doc_to_json(d);
        int rc = j ? json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) : -1;
        json_decref(j);
        fputc('\n', f);
        if (rc != 0)
            return ZP_FAIL(ZP_EIO, "writing JSON failed");
        break;
    }
    case ZP_FMT_CSV:
        for (int i = 0; i < d->n; i++)
            if (d->items[i].kind == ITEM_TABLE)
                return zp_table_write(d->items[i].table, f, fmt);
        return ZP_FAIL(ZP_EINVAL, "this report has no table to write as CSV");
    case ZP_FMT_HTML:
        zp_html_begin(f, d->title);
        for (int i = 0; i < d->n; i++) {
            const item *it = &d->items[i];
            if (it->kind == ITEM_TEXT)
                zp_html_text(f, it->text);
            else if (it->kind == ITEM_TABLE)
                zp_table_write_html(it->table, f);
            else
                ZP_TRY(zp_svg_write(it->chart, f));
        }
        zp_html_end(f);
        break;
    default:
        fprintf(f, fmt == ZP_FMT_MD ? "## %s\n\n" : "%s\n\n", d->title);
        for (int i = 0; i < d->n; i++) {
            const item *it = &d->items[i];
            if (it->kind == ITEM_TEXT) {
                fprintf(f, "%s\n\n", it->text);
            } else if (it->kind == ITEM_TABLE) {
                ZP_TRY(zp_table_write(it->table, f, fmt));
                fputc('\n', f);
            } else {
                fprintf(f, "(chart: %s — drawn in --format html)\n\n", it->chart->title);
            }
        }
        break;
    }
    return ferror(f) ? ZP_FAIL(ZP_EIO, "write failed") : ZP_OK;
}
