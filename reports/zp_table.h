/* zp_table.h — one table, five renderings: aligned text, Markdown, CSV, JSON and HTML.
 * Every report builds a zp_table and lets this module format it, so the formats never drift.
 *
 * Text, Markdown and HTML are for reading, CSV and JSON are data: a column may be for one side only
 * (zp_col: a plans table shows "2 Pos+g" to readers and gives JSON the stage as a number), and a row may
 * be data only (zp_table_hide_row: readers see the best plans, the data has them all). */
#ifndef ZP_TABLE_H
#define ZP_TABLE_H

#include <stdio.h>

#include <jansson.h>

#include "zp_status.h"

typedef enum { ZP_FMT_TEXT, ZP_FMT_MD, ZP_FMT_CSV, ZP_FMT_JSON, ZP_FMT_HTML } zp_format;

zp_status zp_format_parse(const char *text, zp_format *out);
const char *zp_format_name(zp_format f);

typedef struct zp_table zp_table;

/* `keys` name the columns in CSV and JSON (snake_case, with units: "pos_gb"); `headers` in text and
 * Markdown ("Pos (GB)"). Both arrays have ncols entries; the table keeps copies. */
zp_table *zp_table_new(const char *title, int ncols, const char *const *keys, const char *const *headers);

/* Where a column appears, and under which names. */
typedef struct {
    const char *key;    /* CSV header, and JSON key unless `json` says otherwise; NULL: not in CSV */
    const char *header; /* text, Markdown and HTML header; NULL: not shown there (a data column) */
    const char *json;   /* JSON key when it is not `key` ("a.b": key b of the row's object "a");
                           "": not in JSON; NULL: `key` */
    unsigned flags;     /* ZP_COL_* */
} zp_col;
enum {
    ZP_COL_OMIT_UNSET = 1 << 0, /* JSON leaves the key out of a row whose cell was never set (not null) */
};
/* A table of ncols columns described by cols (the table keeps copies). */
zp_table *zp_table_new_cols(const char *title, int ncols, const zp_col *cols);
void zp_table_free(zp_table *t); /* accepts NULL */

zp_status zp_table_add_row(zp_table *t);
/* The last row is data only: in CSV and JSON, not in text, Markdown or HTML. */
void zp_table_hide_row(zp_table *t);
/* Sets a cell of the last row: a number shown with `display_fmt` (printf, e.g. "%.3g") in text and
 * Markdown and with full precision in CSV and JSON. */
zp_status zp_table_set_num(zp_table *t, int col, double value, const char *display_fmt);
/* A number displayed as `text` in text and Markdown ("7.5B") and exact in CSV and JSON. */
zp_status zp_table_set_num_text(zp_table *t, int col, double value, const char *text);
/* An integer (shown "%lld"; a JSON integer). */
zp_status zp_table_set_int(zp_table *t, int col, long long value);
zp_status zp_table_set_str(zp_table *t, int col, const char *text);
zp_status zp_table_set_bool(zp_table *t, int col, int value);
/* A line printed under the table (text, Markdown) or in "notes" (JSON); CSV omits notes. */
zp_status zp_table_add_note(zp_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ZP_FMT_HTML writes a whole page holding the table. */
zp_status zp_table_write(const zp_table *t, FILE *f, zp_format fmt);
/* The table as an HTML fragment: its title as <h2>, the <table>, its notes as <p class="note">. */
void zp_table_write_html(const zp_table *t, FILE *f);

int zp_table_rows(const zp_table *t);
int zp_table_cols(const zp_table *t);
const char *zp_table_header(const zp_table *t, int col);
const char *zp_table_cell(const zp_table *t, int row, int col);  /* display text */
double zp_table_cell_num(const zp_table *t, int row, int col);   /* NAN when not a number */
int zp_table_cell_is_num(const zp_table *t, int row, int col);
/* The JSON rendering as an object {"title", "rows": [{key: value}], "notes"} (new reference). */
json_t *zp_table_to_json(const zp_table *t);
/* Its rows alone, [{key: value}] (new reference; NULL when out of memory). */
json_t *zp_table_rows_json(const zp_table *t);

#endif
