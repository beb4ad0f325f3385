/* zp_fit.c — GSL least squares for the profile's cost models. */
#include "zp_fit.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>

/* rms of (model - t) / t */
static double rel_rms(const double *x, const double *t, int n, double c0, double c1)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double e = (c0 + c1 * x[i] - t[i]) / t[i];
        s += e * e;
    }
    return n > 0 ? sqrt(s / n) : 0;
}

/* y = c0 + c1 x with weights 1/y^2; c0 clamped to >= 0 (refit through the origin). */
static zp_status fit_line(const double *x, const double *y, int n, double *c0, double *c1, double *residual,
                          const char *what)
{
    if (n < 2)
        return ZP_FAIL(ZP_EINVAL, "%s fit: need at least 2 points (got %d)", what, n);
    double *w = malloc(sizeof(double) * (size_t)n);
    if (!w)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    double xmin = x[0], xmax = x[0];
    for (int i = 0; i < n; i++) {
        if (!(y[i] > 0) || !isfinite(y[i]) || !isfinite(x[i]) || x[i] < 0) {
            free(w);
            return ZP_FAIL(ZP_EINVAL, "%s fit: point %d (x=%g, t=%g) is not a positive finite measurement", what, i,
                           x[i], y[i]);
        }
        w[i] = 1.0 / (y[i] * y[i]);
        xmin = fmin(xmin, x[i]);
        xmax = fmax(xmax, x[i]);
    }
    if (!(xmax > xmin)) {
        free(w);
        return ZP_FAIL(ZP_EINVAL, "%s fit: all points have the same size", what);
    }
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    double a = 0, b = 0, cov00, cov01, cov11, chisq;
    int rc = gsl_fit_wlinear(x, 1, w, 1, y, 1, (size_t)n, &a, &b, &cov00, &cov01, &cov11, &chisq);
    if (rc == GSL_SUCCESS && a < 0) {
        a = 0;
        rc = gsl_fit_wmul(x, 1, w, 1, y, 1, (size_t)n, &b, &cov11, &chisq);
    }
    gsl_set_error_handler(old);
    free(w);
    if (rc != GSL_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "%s fit: %s", what, gsl_strerror(rc));
    if (!(b > 0))
        return ZP_FAIL(ZP_ERANGE, "%s fit: time does not grow with size (slope %g): no bandwidth to fit", what, b);
    *c0 = a;
    *c1 = b;
    *residual = rel_rms(x, y, n, a, b);
    return ZP_OK;
}

zp_status zp_fit_collective(const double *bytes, const double *time_s, int n, double factor, double *latency_s,
                            double *busbw_gbs, double *residual)
{
    if (!(factor > 0))
        return ZP_FAIL(ZP_EINVAL, "collective fit: bus-bandwidth factor must be > 0");
    double a, b;
    ZP_TRY(fit_line(bytes, time_s, n, &a, &b, residual, "collective"));
    *latency_s = a;
    *busbw_gbs = factor / b / 1e9;
    return ZP_OK;
}

zp_status zp_fit_rate(const double *n, const double *time_s, int npoints, double *rate, double *t0, double *residual)
{
    double a, b;
    ZP_TRY(fit_line(n, time_s, npoints, &a, &b, residual, "rate"));
    *rate = 1.0 / b;
    *t0 = a;
    return ZP_OK;
}

/* Weighted fit of t over the chosen columns of {1, flops, bytes}; 0 when it worked and every
 * coefficient is >= 0. */
static int fit_subset(const zp_profile *p, const int use[3], double coef[3], double *resid)
{
    int n = p->ngemm, k = use[0] + use[1] + use[2];
    if (k == 0 || n < k)
        return -1;
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, (size_t)k);
    gsl_vector *y = gsl_vector_alloc((size_t)n), *w = gsl_vector_alloc((size_t)n), *c = gsl_vector_alloc((size_t)k);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)k, (size_t)k);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)n, (size_t)k);
    int rc = -1;
    if (X && y && w && c && cov && ws) {
        for (int i = 0; i < n; i++) {
            const zp_profile_gemm_point *g = &p->gemm[i];
            double flops = 2.0 * g->m * g->n * g->k;
            double t = flops / g->flops_per_s;
            double cols[3] = {1.0, flops, zp_profile_gemm_bytes(p, g->m, g->n, g->k)};
            for (int j = 0, col = 0; j < 3; j++)
                if (use[j])
                    gsl_matrix_set(X, (size_t)i, (size_t)col++, cols[j]);
            gsl_vector_set(y, (size_t)i, t);
            gsl_vector_set(w, (size_t)i, 1.0 / (t * t));
        }
        double chisq;
        if (gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) == GSL_SUCCESS) {
            rc = 0;
            for (int j = 0, col = 0; j < 3; j++) {
                coef[j] = use[j] ? gsl_vector_get(c, (size_t)col++) : 0.0;
                if (coef[j] < 0 || !isfinite(coef[j]))
                    rc = -1;
            }
            if (!(coef[1] > 0))
                rc = -1;
            double s = 0;
            for (int i = 0; i < n; i++) {
                const zp_profile_gemm_point *g = &p->gemm[i];
                double flops = 2.0 * g->m * g->n * g->k, t = flops / g->flops_per_s;
                double model = coef[0] + coef[1] * flops + coef[2] * zp_profile_gemm_bytes(p, g->m, g->n, g->k);
                s += ((model - t) / t) * ((model - t) / t);
            }
            *resid = sqrt(s / n);
        }
    }
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    gsl_vector_free(w);
    gsl_vector_free(y);
    gsl_matrix_free(X);
    return rc;
}

zp_status zp_fit_gemm(zp_profile *p)
{
    if (p->ngemm < 1)
        return ZP_FAIL(ZP_EINVAL, "gemm fit: no measured shapes");
    for (int i = 0; i < p->ngemm; i++) {
        const zp_profile_gemm_point *g = &p->gemm[i];
        if (!(g->flops_per_s > 0) || !(g->m > 0 && g->n > 0 && g->k > 0))
            return ZP_FAIL(ZP_EINVAL, "gemm fit: point %d (%gx%gx%g at %g FLOP/s) is not a measurement", i, g->m,
                           g->n, g->k, g->flops_per_s);
    }
    /* candidate models, richest first: {t0, flops, bytes}, {flops, bytes}, {t0, flops}, {flops} */
    static const int subsets[4][3] = {{1, 1, 1}, {0, 1, 1}, {1, 1, 0}, {0, 1, 0}};
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    double best[3] = {0, 0, 0}, best_res = INFINITY;
    for (int s = 0; s < 4; s++) {
        double coef[3], res;
        if (fit_subset(p, subsets[s], coef, &res) == 0 && res < best_res * 0.999) {
            best_res = res;
            best[0] = coef[0], best[1] = coef[1], best[2] = coef[2];
        }
    }
    gsl_set_error_handler(old);
    if (!isfinite(best_res)) {
        /* one point or degenerate data: pure throughput at the mean measured rate */
        double sum = 0;
        for (int i = 0; i < p->ngemm; i++)
            sum += 1.0 / p->gemm[i].flops_per_s;
        best[0] = 0, best[1] = sum / p->ngemm, best[2] = 0;
        double s = 0;
        for (int i = 0; i < p->ngemm; i++) {
            double e = best[1] * p->gemm[i].flops_per_s - 1.0;
            s += e * e;
        }
        best_res = sqrt(s / p->ngemm);
    }
    p->gemm_t0_s = best[0];
    p->gemm_s_per_flop = best[1];
    p->gemm_s_per_byte = best[2];
    p->gemm_residual = best_res;
    return ZP_OK;
}
