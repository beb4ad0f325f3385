#include "zp_html.h"

#include "zp_config.h"

void zp_xml_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void zp_html_wrap(FILE *f, const char *open, const char *text, const char *close)
{
    fputs(open, f);
    zp_xml_escape(f, text);
    fputs(close, f);
}

void zp_html_text(FILE *f, const char *text) { zp_html_wrap(f, "<p>", text, "</p>\n"); }

void zp_html_begin(FILE *f, const char *title)
{
    zp_html_wrap(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", title,
                 "</title>\n");
    fputs("<style>\n"
          "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\n"
          "h1{font-size:22px}h2{font-size:17px;margin-top:28px}\n"
          "table{border-collapse:collapse;margin:8px 0 16px 0;font-size:13px}\n"
          "th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f0f0f0}\n"
          "td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
          "p.note{font-size:12px;color:#555}svg.chart{display:block;margin:12px 0;border:1px solid #eee}\n"
          "</style>\n</head>\n<body>\n",
          f);
    zp_html_wrap(f, "<h1>", title, "</h1>\n");
}

void zp_html_end(FILE *f)
{
    fputs("<p class=\"note\">Written by zplan " ZP_VERSION ".</p>\n</body>\n</html>\n", f);
}
