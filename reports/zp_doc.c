#include "zp_doc.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "zp_html.h"

/* A list is an ITEM_LIST (heading) followed by its ITEM_ENTRYs; a block of facts, consecutive ITEM_FACTs. */
typedef enum { ITEM_TEXT, ITEM_FACT, ITEM_LIST, ITEM_ENTRY, ITEM_TABLE, ITEM_CHART } item_kind;

typedef struct {
    item_kind kind;
    unsigned formats; /* ZP_FMT_BIT()s it appears in */
    char *text;       /* TEXT, the FACT's text, the LIST's heading, the ENTRY */
    int strong;       /* TEXT: set off (zp_doc_strong) */
    char *label;      /* FACT */
    int shown;        /* LIST: entries shown in text and Markdown */
    char *more_note;  /* LIST: after "... and N more", or NULL */
    zp_table *table;
    zp_chart *chart;
    char *key;        /* JSON: the document's key for this item, or NULL */
    json_t *value;    /* its value; NULL: the table's rows */
} item;

struct zp_doc {
    char *title;
    item *items;
    int n;
    int json_digits;
};

#define ALL_FORMATS                                                                                     \
    (ZP_FMT_BIT(ZP_FMT_TEXT) | ZP_FMT_BIT(ZP_FMT_MD) | ZP_FMT_BIT(ZP_FMT_CSV) | ZP_FMT_BIT(ZP_FMT_JSON) | \
     ZP_FMT_BIT(ZP_FMT_HTML))

zp_doc *zp_doc_new(const char *title)
{
    zp_doc *d = calloc(1, sizeof *d);
    if (d && !(d->title = strdup(title ? title : ""))) {
        free(d);
        d = NULL;
    }
    if (d)
        d->json_digits = 10;
    return d;
}

void zp_doc_free(zp_doc *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->n; i++) {
        item *it = &d->items[i];
        free(it->text);
        free(it->label);
        free(it->more_note);
        zp_table_free(it->table);
        free(it->chart);
        free(it->key);
        json_decref(it->value);
    }
    free(d->items);
    free(d->title);
    free(d);
}

static item *push(zp_doc *d, item_kind kind)
{
    item *n = realloc(d->items, (size_t)(d->n + 1) * sizeof *n);
    if (!n)
        return NULL;
    d->items = n;
    memset(&d->items[d->n], 0, sizeof(item));
    d->items[d->n].kind = kind;
    d->items[d->n].formats = ALL_FORMATS;
    return &d->items[d->n++];
}

static item *last(const zp_doc *d) { return d->n > 0 ? &d->items[d->n - 1] : NULL; }

/* A paragraph-like item holding formatted text. */
static zp_status add_vtext(zp_doc *d, item_kind kind, const char *fmt, va_list ap)
{
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    item *it = push(d, kind);
    if (!it || !(it->text = strdup(buf)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    return ZP_OK;
}

zp_status zp_doc_add_text(zp_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zp_status st = add_vtext(d, ITEM_TEXT, fmt, ap);
    va_end(ap);
    return st;
}

void zp_doc_strong(zp_doc *d)
{
    if (d->n > 0 && d->items[d->n - 1].kind == ITEM_TEXT)
        d->items[d->n - 1].strong = 1;
}

zp_status zp_doc_add_fact(zp_doc *d, const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    zp_status st = add_vtext(d, ITEM_FACT, fmt, ap);
    va_end(ap);
    if (st == ZP_OK && !(last(d)->label = strdup(label)))
        st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    return st;
}

zp_status zp_doc_add_list(zp_doc *d, const char *heading, int shown, const char *more_note)
{
    item *it = push(d, ITEM_LIST);
    if (!it || !(it->text = strdup(heading)) || (more_note && !(it->more_note = strdup(more_note))))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    it->shown = shown;
    return ZP_OK;
}

zp_status zp_doc_add_entry(zp_doc *d, const char *fmt, ...)
{
    const item *it = last(d);
    if (!it || (it->kind != ITEM_LIST && it->kind != ITEM_ENTRY))
        return ZP_FAIL(ZP_ERUNTIME, "a list entry without a list");
    va_list ap;
    va_start(ap, fmt);
    zp_status st = add_vtext(d, ITEM_ENTRY, fmt, ap);
    va_end(ap);
    return st;
}

/* The number of entries of the list at items[i]. */
static int entries(const zp_doc *d, int i)
{
    int n = 0;
    while (i + 1 + n < d->n && d->items[i + 1 + n].kind == ITEM_ENTRY)
        n++;
    return n;
}

zp_status zp_doc_add_table(zp_doc *d, zp_table *t)
{
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    item *it = push(d, ITEM_TABLE);
    if (!it) {
        zp_table_free(t);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    it->table = t;
    return ZP_OK;
}

zp_status zp_doc_add_chart(zp_doc *d, const zp_chart *c)
{
    item *it = push(d, ITEM_CHART);
    if (!it || !(it->chart = malloc(sizeof *c)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    *it->chart = *c;
    return ZP_OK;
}

zp_status zp_doc_set_key(zp_doc *d, const char *key, json_t *value)
{
    item *it = last(d);
    if (!it || (!value && it->kind != ITEM_TABLE)) {
        json_decref(value);
        return ZP_FAIL(ZP_ERUNTIME, "JSON key '%s': no table to take the value from", key);
    }
    free(it->key);
    json_decref(it->value);
    it->value = value;
    if (!(it->key = strdup(key)))
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    return ZP_OK;
}

void zp_doc_only(zp_doc *d, unsigned formats)
{
    if (d->n > 0)
        d->items[d->n - 1].formats = formats;
}

void zp_doc_set_json_digits(zp_doc *d, int digits) { d->json_digits = digits; }

static int in(const item *it, zp_format fmt) { return (it->formats & ZP_FMT_BIT(fmt)) != 0; }

static json_t *chart_json(const zp_chart *c)
{
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
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "type", "chart", "kind",
                     c->kind == ZP_CHART_LINE ? "line" : "stacked_bar", "title", c->title, "x_label", c->xlabel,
                     "y_label", c->ylabel, "x", xs, "series", series);
}

/* The object of the items with a key. */
static json_t *keyed_json(const zp_doc *d)
{
    json_t *root = json_object();
    for (int i = 0; root && i < d->n; i++) {
        const item *it = &d->items[i];
        if (!it->key || !in(it, ZP_FMT_JSON))
            continue;
        json_t *v = it->value ? json_incref(it->value) : zp_table_rows_json(it->table);
        if (json_object_set_new(root, it->key, v) != 0) {
            json_decref(root);
            root = NULL;
        }
    }
    return root;
}

json_t *zp_doc_to_json(const zp_doc *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->items[i].key)
            return keyed_json(d);
    json_t *secs = json_array();
    for (int i = 0; i < d->n; i++) {
        const item *it = &d->items[i];
        if (!in(it, ZP_FMT_JSON))
            continue;
        json_t *o;
        switch (it->kind) {
        case ITEM_TEXT: o = json_pack("{s:s, s:s}", "type", "text", "text", it->text); break;
        case ITEM_FACT: o = json_pack("{s:s, s:s, s:s}", "type", "fact", "label", it->label, "text", it->text); break;
        case ITEM_LIST: {
            json_t *es = json_array();
            for (int k = 0, n = entries(d, i); k < n; k++)
                json_array_append_new(es, json_string(d->items[i + 1 + k].text));
            o = json_pack("{s:s, s:s, s:o}", "type", "list", "heading", it->text, "entries", es);
            break;
        }
        case ITEM_ENTRY: continue; /* in its list */
        case ITEM_TABLE:
            o = zp_table_to_json(it->table);
            json_object_set_new(o, "type", json_string("table"));
            break;
        default: o = chart_json(it->chart); break;
        }
        json_array_append_new(secs, o);
    }
    return json_pack("{s:s, s:o}", "title", d->title, "sections", secs);
}

/* The block of facts starting at items[i] (text, Markdown): a line each, texts aligned after the
 * longest label. Returns the index after the block. */
static int write_facts(const zp_doc *d, int i, zp_format fmt, FILE *f)
{
    int end = i, width = 0;
    for (; end < d->n && d->items[end].kind == ITEM_FACT; end++)
        if (in(&d->items[end], fmt) && (int)strlen(d->items[end].label) > width)
            width = (int)strlen(d->items[end].label);
    for (int k = i; k < end; k++) {
        const item *it = &d->items[k];
        if (in(it, fmt))
            fprintf(f, "%s:%*s%s\n", it->label, width + 1 - (int)strlen(it->label), "", it->text);
    }
    fputc('\n', f);
    return end;
}

static zp_status write_html(const zp_doc *d, FILE *f)
{
    zp_html_begin(f, d->title);
    for (int i = 0; i < d->n; i++) {
        const item *it = &d->items[i];
        if (!in(it, ZP_FMT_HTML))
            continue;
        switch (it->kind) {
        case ITEM_TEXT:
            if (it->strong)
                zp_html_wrap(f, "<p><strong>", it->text, "</strong></p>\n");
            else
                zp_html_text(f, it->text);
            break;
        case ITEM_FACT:
            zp_html_wrap(f, "<p><b>", it->label, ":</b> ");
            zp_html_wrap(f, "", it->text, "</p>\n");
            break;
        case ITEM_LIST:
            zp_html_wrap(f, "<h2>", it->text, "</h2>\n<ul>\n");
            for (int k = 0, n = entries(d, i); k < n; k++)
                zp_html_wrap(f, "<li>", d->items[i + 1 + k].text, "</li>\n");
            fputs("</ul>\n", f);
            break;
        case ITEM_ENTRY: break; /* in its list */
        case ITEM_TABLE: zp_table_write_html(it->table, f); break;
        case ITEM_CHART: ZP_TRY(zp_svg_write(it->chart, f)); break;
        }
    }
    zp_html_end(f);
    return ZP_OK;
}

/* Text and Markdown: every item followed by a blank line, but a list's only when something follows. */
static zp_status write_text(const zp_doc *d, FILE *f, zp_format fmt)
{
    const int md = fmt == ZP_FMT_MD;
    fprintf(f, md ? "## %s\n\n" : "%s\n\n", d->title);
    int blank_due = 0;
    for (int i = 0; i < d->n;) {
        const item *it = &d->items[i];
        if (!in(it, fmt) || it->kind == ITEM_ENTRY) { /* entries: with their list */
            i++;
            continue;
        }
        if (blank_due)
            fputc('\n', f);
        blank_due = 0;
        switch (it->kind) {
        case ITEM_TEXT: fprintf(f, md && it->strong ? "**%s**\n\n" : "%s\n\n", it->text); break;
        case ITEM_FACT: i = write_facts(d, i, fmt, f) - 1; break;
        case ITEM_LIST: {
            const int n = entries(d, i);
            fprintf(f, md ? "## %s\n" : "%s\n", it->text);
            for (int k = 0; k < n && k < it->shown; k++)
                fprintf(f, "  - %s\n", d->items[i + 1 + k].text);
            if (n > it->shown)
                fprintf(f, "  ... and %d more%s%s%s\n", n - it->shown, it->more_note ? " (" : "",
                        it->more_note ? it->more_note : "", it->more_note ? ")" : "");
            blank_due = 1;
            i += n;
            break;
        }
        case ITEM_ENTRY: break;
        case ITEM_TABLE:
            ZP_TRY(zp_table_write(it->table, f, fmt));
            fputc('\n', f);
            break;
        case ITEM_CHART: fprintf(f, "(chart: %s — drawn in --format html)\n\n", it->chart->title); break;
        }
        i++;
    }
    return ZP_OK;
}

zp_status zp_doc_write(const zp_doc *d, FILE *f, zp_format fmt)
{
    switch (fmt) {
    case ZP_FMT_JSON: {
        json_t *j = zp_doc_to_json(d);
        int rc = j ? json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(d->json_digits))
                   : -1;
        json_decref(j);
        fputc('\n', f);
        if (rc != 0)
            return ZP_FAIL(ZP_EIO, "writing JSON failed");
        break;
    }
    case ZP_FMT_CSV:
        for (int i = 0; i < d->n; i++)
            if (d->items[i].kind == ITEM_TABLE && in(&d->items[i], fmt))
                return zp_table_write(d->items[i].table, f, fmt);
        return ZP_FAIL(ZP_EINVAL, "this report has no table to write as CSV");
    case ZP_FMT_HTML: ZP_TRY(write_html(d, f)); break;
    default: ZP_TRY(write_text(d, f, fmt)); break;
    }
    return ferror(f) ? ZP_FAIL(ZP_EIO, "write failed") : ZP_OK;
}
