/* zp_doc.h — a report: a title, paragraphs, tables and charts in order, rendered to any format.
 * text and md: paragraphs and tables (charts are listed by title: see the html); csv: the first table;
 * json: {"title", "sections": [{"type": "text"|"table"|"chart", ...}]}; html: one self-contained page
 * (inline CSS and SVG, no script, no network). */
#ifndef ZP_DOC_H
#define ZP_DOC_H

#include <stdio.h>

#include "zp_svg.h"
#include "zp_table.h"

typedef struct zp_doc zp_doc;

zp_doc *zp_doc_new(const char *title);
void zp_doc_free(zp_doc *d); /* accepts NULL */
zp_status zp_doc_add_text(zp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of the table (freed with the doc, also on failure). */
zp_status zp_doc_add_table(zp_doc *d, zp_table *t);
zp_status zp_doc_add_chart(zp_doc *d, const zp_chart *c);
zp_status zp_doc_write(const zp_doc *d, FILE *f, zp_format fmt);
/* The JSON rendering (new reference). */
json_t *zp_doc_to_json(const zp_doc *d);

#endif
