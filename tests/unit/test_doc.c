/* reports/: one document, every format — facts, lists, data-only rows and columns, JSON keys. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_doc.h"

/* The document rendered in fmt (caller frees). */
static char *render(const zp_doc *d, zp_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(zp_doc_write(d, f, fmt), ZP_OK, "%s", zp_error_message());
    fclose(f);
    return buf;
}

/* A small what-if-like document: facts with JSON keys, a table of plans whose second plan is data only,
 * a paragraph for readers, an HTML-only chart and a list. */
static zp_doc *sample(void)
{
    zp_doc *d = zp_doc_new("Sample");
    cr_assert_not_null(d);
    cr_assert_eq(zp_doc_add_fact(d, "Model", "tiny, %d layers", 2), ZP_OK);
    cr_assert_eq(zp_doc_set_key(d, "model", json_pack("{s:s, s:i}", "name", "tiny", "layers", 2)), ZP_OK);
    cr_assert_eq(zp_doc_add_fact(d, "Cluster", "two GPUs"), ZP_OK);
    static const zp_col cols[] = {
        {.key = "stage", .header = "Stage", .json = ""}, /* readers and CSV */
        {.json = "stage"},                                /* JSON only */
        {.key = "mp", .header = "MP"},                    /* everywhere */
        {.key = "gb", .header = "GB", .json = "memory_gb.total"}, /* nested in JSON */
        {.json = "memory_gb.params"},
        {.json = "reason", .flags = ZP_COL_OMIT_UNSET},
    };
    zp_table *t = zp_table_new_cols("Plans", 6, cols);
    cr_assert_not_null(t);
    cr_assert_eq(zp_table_add_row(t), ZP_OK);
    zp_table_set_str(t, 0, "2 Pos+g");
    zp_table_set_int(t, 1, 2);
    zp_table_set_int(t, 2, 4);
    zp_table_set_num(t, 3, 12.5, "%.1f");
    zp_table_set_num(t, 4, 1.25, "%g");
    cr_assert_eq(zp_table_add_row(t), ZP_OK);
    zp_table_hide_row(t);
    zp_table_set_str(t, 0, "0 baseline");
    zp_table_set_int(t, 1, 0);
    zp_table_set_int(t, 2, 1);
    zp_table_set_num(t, 3, 99.5, "%.1f");
    zp_table_set_num(t, 4, 9.5, "%g");
    zp_table_set_str(t, 5, "too big");
    cr_assert_eq(zp_doc_add_table(d, t), ZP_OK);
    cr_assert_eq(zp_doc_set_key(d, "plans", NULL), ZP_OK);
    cr_assert_eq(zp_doc_add_text(d, "Prose for readers."), ZP_OK);
    zp_chart c;
    zp_chart_init(&c, ZP_CHART_STACKED_BAR, "Memory", "plan", "GB");
    c.nseries = c.npoints = 1;
    snprintf(c.series[0], sizeof c.series[0], "params");
    snprintf(c.xcat[0], sizeof c.xcat[0], "#1");
    c.y[0][0] = 12.5;
    cr_assert_eq(zp_doc_add_chart(d, &c), ZP_OK);
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_HTML));
    cr_assert_eq(zp_doc_add_text(d, "Recommended: %s", "the first"), ZP_OK);
    zp_doc_strong(d);
    cr_assert_eq(zp_doc_set_key(d, "best", json_integer(0)), ZP_OK);
    cr_assert_eq(zp_doc_add_list(d, "Does not fit:", 2, "see --format json"), ZP_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(zp_doc_add_entry(d, "plan %d", i), ZP_OK);
    return d;
}

/* Renders d in fmt, compares with want, frees d. */
static void expect_render(zp_doc *d, zp_format fmt, const char *want)
{
    char *s = render(d, fmt);
    cr_expect_str_eq(s, want);
    free(s);
    zp_doc_free(d);
}

Test(doc, text_shows_what_readers_see)
{
    zp_doc *d = sample();
    char *s = render(d, ZP_FMT_TEXT);
    const char *want = "Sample\n"
                       "\n"
                       "Model:   tiny, 2 layers\n"
                       "Cluster: two GPUs\n"
                       "\n"
                       "Plans\n"
                       "Stage    MP    GB\n"
                       "-------  --  ----\n"
                       "2 Pos+g   4  12.5\n"
                       "\n"
                       "Prose for readers.\n"
                       "\n"
                       "Recommended: the first\n"
                       "\n"
                       "Does not fit:\n"
                       "  - plan 0\n"
                       "  - plan 1\n"
                       "  ... and 1 more (see --format json)\n";
    cr_expect_str_eq(s, want);
    free(s);
    s = render(d, ZP_FMT_MD);
    cr_expect(strstr(s, "**Recommended: the first**\n") != NULL, "%s", s);
    cr_expect(strstr(s, "## Does not fit:\n") != NULL, "%s", s);
    cr_expect(strstr(s, "baseline") == NULL, "a data-only row shown: %s", s);
    free(s);
    zp_doc_free(d);
}

Test(doc, a_list_gets_its_blank_line_when_something_follows)
{
    zp_doc *d = zp_doc_new("T");
    zp_doc_add_list(d, "L:", 5, NULL);
    zp_doc_add_entry(d, "a");
    zp_doc_add_text(d, "after");
    expect_render(d, ZP_FMT_TEXT, "T\n\nL:\n  - a\n\nafter\n\n");
}

Test(doc, csv_is_the_first_table_with_every_row)
{
    expect_render(sample(), ZP_FMT_CSV, "stage,mp,gb\n2 Pos+g,4,12.5\n0 baseline,1,99.5\n");
}

Test(doc, json_of_a_keyed_document_is_its_keyed_items)
{
    zp_doc *d = sample();
    json_t *j = zp_doc_to_json(d);
    cr_assert_not_null(j);
    cr_expect_eq(json_object_size(j), 3, "model, plans, best; no prose");
    const char *order[] = {"model", "plans", "best"};
    int k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v)
        cr_expect_str_eq(key, order[k++]);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "model"), "layers")), 2);
    json_t *plans = json_object_get(j, "plans");
    cr_assert_eq(json_array_size(plans), 2, "data-only rows are data");
    json_t *p0 = json_array_get(plans, 0), *p1 = json_array_get(plans, 1);
    cr_expect(json_is_integer(json_object_get(p0, "stage")), "the number, not the readers' text");
    cr_expect_eq(json_integer_value(json_object_get(p1, "stage")), 0);
    cr_expect(json_is_integer(json_object_get(p0, "mp")));
    cr_expect_eq(json_real_value(json_object_get(json_object_get(p0, "memory_gb"), "total")), 12.5);
    cr_expect_eq(json_real_value(json_object_get(json_object_get(p0, "memory_gb"), "params")), 1.25);
    cr_expect_null(json_object_get(p0, "reason"), "an unset optional key is left out");
    cr_expect_str_eq(json_string_value(json_object_get(p1, "reason")), "too big");
    cr_expect_eq(json_integer_value(json_object_get(j, "best")), 0);
    json_decref(j);
    zp_doc_free(d);
}

Test(doc, json_without_keys_is_the_sections)
{
    zp_doc *d = zp_doc_new("T");
    zp_doc_add_text(d, "p");
    zp_doc_add_fact(d, "A", "b");
    json_t *j = zp_doc_to_json(d);
    cr_expect_str_eq(json_string_value(json_object_get(j, "title")), "T");
    json_t *secs = json_object_get(j, "sections");
    cr_assert_eq(json_array_size(secs), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(secs, 1), "type")), "fact");
    json_decref(j);
    zp_doc_free(d);
}

Test(doc, html_shows_everything_for_readers)
{
    zp_doc *d = sample();
    char *s = render(d, ZP_FMT_HTML);
    cr_expect(strstr(s, "<p><b>Model:</b> tiny, 2 layers</p>") != NULL);
    cr_expect(strstr(s, "<svg") != NULL, "the HTML-only chart");
    cr_expect(strstr(s, "<li>plan 2</li>") != NULL, "every list entry");
    cr_expect(strstr(s, "<p><strong>Recommended: the first</strong></p>") != NULL);
    cr_expect(strstr(s, "baseline") == NULL, "a data-only row shown");
    cr_expect(strstr(s, "<th>MP</th><th>GB</th></tr>") != NULL, "data-only columns not shown");
    free(s);
    zp_doc_free(d);
}
