/* zp_html.h — the frame of zplan's HTML pages: escaping, the head with the inline style sheet, the foot,
 * a paragraph. Self-contained pages (no script, no network). Tables (zp_table) and charts (zp_svg) write
 * their own fragments with these; a document (zp_doc) puts them in one page. */
#ifndef ZP_HTML_H
#define ZP_HTML_H

#include <stdio.h>

/* Writes text escaped for XML and HTML (& < > "). */
void zp_xml_escape(FILE *f, const char *s);
/* The page's head (the <title> and an <h1>) with zplan's inline style sheet. */
void zp_html_begin(FILE *f, const char *title);
/* The page's foot: which zplan wrote it. */
void zp_html_end(FILE *f);
/* open, then text escaped, then close: zp_html_wrap(f, "<h2>", title, "</h2>\n"). */
void zp_html_wrap(FILE *f, const char *open, const char *text, const char *close);
/* One paragraph, escaped. */
void zp_html_text(FILE *f, const char *text);

#endif
