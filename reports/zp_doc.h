/* zp_doc.h — a report: a title, then paragraphs, facts, lists, tables and charts in order, rendered to any
 * format from that one description, so that what is added to it appears in every format at once.
 *
 * text and md: everything but charts (listed by title: see the html); csv: the first table; html: one
 * self-contained page (inline CSS and SVG, no script, no network); json: {"title", "sections":
 * [{"type": "text"|"table"|"chart"|"facts"|"list", ...}]} — or, when items carry JSON keys
 * (zp_doc_set_key), the object of those items alone, in order: a data contract such as the what-if's,
 * where the prose without a key is for readers. */
#ifndef ZP_DOC_H
#define ZP_DOC_H

#include <stdio.h>

#include "zp_svg.h"
#include "zp_table.h"

typedef struct zp_doc zp_doc;

/* A set of formats, for zp_doc_only: ZP_FMT_BIT(ZP_FMT_CSV) | ZP_FMT_BIT(ZP_FMT_JSON). */
#define ZP_FMT_BIT(f) (1u << (f))

zp_doc *zp_doc_new(const char *title);
void zp_doc_free(zp_doc *d); /* accepts NULL */
zp_status zp_doc_add_text(zp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A fact, "Label: text"; consecutive facts make one block: in text and Markdown a line each with the
 * texts aligned after the longest label, in HTML a paragraph each. */
zp_status zp_doc_add_fact(zp_doc *d, const char *label, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A list under a heading, its entries added with zp_doc_add_entry. Text and Markdown show the first
 * `shown` entries, then "... and N more (more_note)" (no parenthesis when more_note is NULL); HTML shows
 * them all. In text a list ends without a blank line unless something follows it. */
zp_status zp_doc_add_list(zp_doc *d, const char *heading, int shown, const char *more_note);
zp_status zp_doc_add_entry(zp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of the table (freed with the doc, also on failure). */
zp_status zp_doc_add_table(zp_doc *d, zp_table *t);
zp_status zp_doc_add_chart(zp_doc *d, const zp_chart *c);

/* The last item (of a block of facts, the last fact) appears in JSON as the key `key` of the document's
 * object, with `value` (taken, also on failure) or, for a table and a NULL value, the table's rows. */
zp_status zp_doc_set_key(zp_doc *d, const char *key, json_t *value);
/* The last paragraph is set off: bold in Markdown, <strong> in HTML, as it is in text. */
void zp_doc_strong(zp_doc *d);
/* The last item appears only in these formats (ZP_FMT_BIT()s); every format by default. */
void zp_doc_only(zp_doc *d, unsigned formats);
/* Significant digits of reals in the JSON rendering (default 10). */
void zp_doc_set_json_digits(zp_doc *d, int digits);

zp_status zp_doc_write(const zp_doc *d, FILE *f, zp_format fmt);
/* The JSON rendering (new reference). */
json_t *zp_doc_to_json(const zp_doc *d);

#endif
