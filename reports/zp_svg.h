/* zp_svg.h — charts as inline SVG, written by hand (no dependency, no network): line charts for
 * scaling and model-size views, stacked bars for memory breakdowns. An HTML report embeds them. */
#ifndef ZP_SVG_H
#define ZP_SVG_H

#include <stdio.h>

#include "zp_status.h"

#define ZP_CHART_MAX_SERIES 12
#define ZP_CHART_MAX_POINTS 64

typedef enum { ZP_CHART_LINE, ZP_CHART_STACKED_BAR } zp_chart_kind;

typedef struct {
    zp_chart_kind kind;
    char title[160];
    char xlabel[80], ylabel[80];
    int nseries, npoints;
    char series[ZP_CHART_MAX_SERIES][64];    /* legend */
    char xcat[ZP_CHART_MAX_POINTS][40];      /* label of each point / bar */
    double x[ZP_CHART_MAX_POINTS];           /* line charts: numeric x of each point */
    int logx;                                /* line charts: log2 x axis (GPU counts) */
    double y[ZP_CHART_MAX_SERIES][ZP_CHART_MAX_POINTS]; /* NAN: no value */
    double hline;                            /* a dashed reference line (e.g. GPU memory); NAN: none */
    char hline_label[40];
} zp_chart;

/* A chart with no series, no points and no reference line. */
void zp_chart_init(zp_chart *c, zp_chart_kind kind, const char *title, const char *xlabel, const char *ylabel);

/* Writes one <svg> element (720 x 400 px, viewBox-scaled). */
zp_status zp_svg_write(const zp_chart *c, FILE *f);

#endif
