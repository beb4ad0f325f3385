#include "zp_svg.h"

#include <math.h>
#include <string.h>

#include "zp_html.h"

#define W 720.0
#define H 400.0
#define ML 70.0  /* margins: left, right, top, bottom (px) */
#define MR 170.0
#define MT 40.0
#define MB 60.0

/* Colour-blind-safe palette (Okabe-Ito), then greys. */
static const char *const PALETTE[ZP_CHART_MAX_SERIES] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                         "#CC79A7", "#56B4E9", "#F0E442", "#000000",
                                                         "#999999", "#666666", "#BBBBBB", "#333333"};

void zp_chart_init(zp_chart *c, zp_chart_kind kind, const char *title, const char *xlabel, const char *ylabel)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    snprintf(c->title, sizeof c->title, "%s", title);
    snprintf(c->xlabel, sizeof c->xlabel, "%s", xlabel);
    snprintf(c->ylabel, sizeof c->ylabel, "%s", ylabel);
    c->hline = NAN;
}

/* A "nice" axis maximum and tick step for values up to vmax. */
static void nice_axis(double vmax, double *top, double *step)
{
    if (!(vmax > 0) || !isfinite(vmax))
        vmax = 1;
    double raw = vmax / 5.0, mag = pow(10, floor(log10(raw))), r = raw / mag;
    double s = r <= 1 ? 1 : r <= 2 ? 2 : r <= 2.5 ? 2.5 : r <= 5 ? 5 : 10;
    *step = s * mag;
    *top = ceil(vmax / *step) * *step;
}

#define PW (W - ML - MR) /* the plot area's width and height (px) */
#define PH (H - MT - MB)

/* The largest value the y axis must show: the tallest stack of a stacked bar chart, else the largest point,
 * and the reference line. */
static double svg_vmax(const zp_chart *c)
{
    double vmax = 0;
    for (int p = 0; p < c->npoints; p++) {
        double stack = 0;
        for (int s = 0; s < c->nseries; s++) {
            double v = c->y[s][p];
            if (!isfinite(v))
                continue;
            if (c->kind == ZP_CHART_STACKED_BAR)
                stack += v > 0 ? v : 0;
            else if (v > vmax)
                vmax = v;
        }
        if (stack > vmax)
            vmax = stack;
    }
    if (isfinite(c->hline) && c->hline > vmax)
        vmax = c->hline;
    return vmax;
}

/* The frame: the <svg> element, the title, the grid with the y ticks up to `top` every `step`, the axes and
 * their labels. */
static void svg_frame(const zp_chart *c, FILE *f, double top, double step)
{
    const double pw = PW, ph = PH;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"",
            W, H, W, H);
    zp_xml_escape(f, c->title);
    fputs("\">\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", f);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" font-size=\"15\" font-weight=\"bold\" font-family=\"sans-serif\">", ML);
    zp_xml_escape(f, c->title);
    fputs("</text>\n", f);
    /* grid and y ticks */
    for (double v = 0; v <= top + step / 2; v += step) {
        double y = MT + ph - v / top * ph;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ML, y, ML + pw, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" font-family=\"sans-serif\">%g</text>\n",
                ML - 6, y + 4, v);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", ML, MT + ph, ML + pw,
            MT + ph);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", ML, MT, ML, MT + ph);
    /* axis labels */
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" font-family=\"sans-serif\">",
            ML + pw / 2, H - 12);
    zp_xml_escape(f, c->xlabel);
    fprintf(f, "</text>\n<text transform=\"translate(16,%.1f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\" "
               "font-family=\"sans-serif\">",
            MT + ph / 2);
    zp_xml_escape(f, c->ylabel);
    fputs("</text>\n", f);
}

/* Each point's x position (px): spread over the x values (log2 with logx) for a line chart of several
 * points, else in the middle of equal slots; the category labels under the axis. */
static void svg_xaxis(const zp_chart *c, FILE *f, double xs[ZP_CHART_MAX_POINTS])
{
    const double pw = PW, ph = PH;
    if (c->kind == ZP_CHART_LINE && c->npoints > 1) {
        double x0 = c->logx ? log2(c->x[0]) : c->x[0], x1 = c->logx ? log2(c->x[c->npoints - 1]) : c->x[c->npoints - 1];
        for (int p = 0; p < c->npoints; p++) {
            double xv = c->logx ? log2(c->x[p]) : c->x[p];
            xs[p] = x1 > x0 ? ML + 20 + (xv - x0) / (x1 - x0) * (pw - 40) : ML + pw / 2;
        }
    } else {
        for (int p = 0; p < c->npoints; p++)
            xs[p] = ML + (p + 0.5) * pw / c->npoints;
    }
    for (int p = 0; p < c->npoints; p++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" font-family=\"sans-serif\">",
                xs[p], MT + ph + 16);
        zp_xml_escape(f, c->xcat[p]);
        fputs("</text>\n", f);
    }
}

/* The data: stacked bars or lines with their points, each with its value as a tooltip. */
static void svg_data(const zp_chart *c, FILE *f, const double *xs, double top)
{
    const double pw = PW, ph = PH;
    if (c->kind == ZP_CHART_STACKED_BAR) {
        double bw = pw / c->npoints * 0.6;
        for (int p = 0; p < c->npoints; p++) {
            double base = 0;
            for (int s = 0; s < c->nseries; s++) {
                double v = c->y[s][p];
                if (!isfinite(v) || v <= 0)
                    continue;
                double y0 = MT + ph - (base + v) / top * ph, hgt = v / top * ph;
                fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                        xs[p] - bw / 2, y0, bw, hgt, PALETTE[s]);
                zp_xml_escape(f, c->series[s]);
                fprintf(f, ": %.3g</title></rect>\n", v);
                base += v;
            }
        }
    } else {
        for (int s = 0; s < c->nseries; s++) {
            fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"", PALETTE[s]);
            for (int p = 0; p < c->npoints; p++)
                if (isfinite(c->y[s][p]))
                    fprintf(f, "%.1f,%.1f ", xs[p], MT + ph - c->y[s][p] / top * ph);
            fputs("\"/>\n", f);
            for (int p = 0; p < c->npoints; p++)
                if (isfinite(c->y[s][p]))
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s: %.3g</title></circle>\n",
                            xs[p], MT + ph - c->y[s][p] / top * ph, PALETTE[s], c->xcat[p], c->y[s][p]);
        }
    }
}

/* The dashed reference line with its label, and the legend. */
static void svg_hline_legend(const zp_chart *c, FILE *f, double top)
{
    const double pw = PW, ph = PH;
    if (isfinite(c->hline)) {
        double y = MT + ph - c->hline / top * ph;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cc0000\" stroke-dasharray=\"6,4\"/>\n",
                ML, y, ML + pw, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#cc0000\" font-family=\"sans-serif\">", ML + 4,
                y - 4);
        zp_xml_escape(f, c->hline_label);
        fputs("</text>\n", f);
    }
    /* legend */
    for (int s = 0; s < c->nseries; s++) {
        double y = MT + 10 + s * 20;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", ML + pw + 16, y - 10,
                PALETTE[s]);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-family=\"sans-serif\">", ML + pw + 34, y);
        zp_xml_escape(f, c->series[s]);
        fputs("</text>\n", f);
    }
}

zp_status zp_svg_write(const zp_chart *c, FILE *f)
{
    if (c->npoints < 1 || c->nseries < 1 || c->npoints > ZP_CHART_MAX_POINTS || c->nseries > ZP_CHART_MAX_SERIES)
        return ZP_FAIL(ZP_EINVAL, "chart '%s' has no data", c->title);
    double top, step;
    nice_axis(svg_vmax(c), &top, &step);
    svg_frame(c, f, top, step);
    double xs[ZP_CHART_MAX_POINTS]; /* each point's x (px) */
    svg_xaxis(c, f, xs);
    svg_data(c, f, xs, top);
    svg_hline_legend(c, f, top);
    fputs("</svg>\n", f);
    return ferror(f) ? ZP_FAIL(ZP_EIO, "writing the chart failed") : ZP_OK;
}
