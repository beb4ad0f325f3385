/* Device profiles: exact round-trip, atomic writes, and rejection of malformed, truncated,
 * incomplete or out-of-range files with a message naming the key. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "zp_profile.h"

static zp_profile sample(void)
{
    zp_profile p;
    zp_profile_init(&p);
    snprintf(p.machine.cpu_model, sizeof p.machine.cpu_model, "Test CPU \"quoted\" \\ é");
    p.machine.cores = 2;
    p.machine.nodes = 1;
    p.machine.ranks = 4;
    snprintf(p.machine.hostname, sizeof p.machine.hostname, "host");
    snprintf(p.machine.measured_at, sizeof p.machine.measured_at, "2024-01-02T03:04:05Z");
    snprintf(p.machine.zplan_version, sizeof p.machine.zplan_version, "0.1.0");
    snprintf(p.machine.blas, sizeof p.machine.blas, "OpenBLAS 0.3.21");
    snprintf(p.backend, sizeof p.backend, "cpu");
    p.copy_gbs = 1.0 / 3.0 * 50;
    p.triad_gbs = 55.123456789012345;
    p.peak_flops_fp32 = p.peak_flops_fp16 = p.peak_flops_bf16 = 2.0e11 / 7;
    p.adam_params_per_s = 1.5e9 + 0.1;
    p.adam_bytes_per_param = 30;
    p.cpu_adam_params_per_s = 1.5e9;
    p.nadam = 2;
    p.adam[0] = (zp_profile_adam_point){1 << 20, 1.2e9, 0.05};
    p.adam[1] = (zp_profile_adam_point){4 << 20, 1.4e9, 1e-300};
    p.ngemm = 3;
    p.gemm[0] = (zp_profile_gemm_point){512, 1536, 512, 1.1e11, 0.02};
    p.gemm[1] = (zp_profile_gemm_point){512, 2048, 512, 1.3e11, 0.03};
    p.gemm[2] = (zp_profile_gemm_point){512, 512, 2048, 1.2e11, 0.0};
    snprintf(p.gemm_dtype, sizeof p.gemm_dtype, "fp32");
    p.gemm_t0_s = 1.234e-5;
    p.gemm_s_per_flop = 1.0 / 1.7e11;
    p.gemm_s_per_byte = 0;
    p.gemm_residual = 0.031;
    zp_profile_coll_fit *f = &p.coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    f->measured = 1;
    f->nranks = 4;
    f->latency_s = 4.5e-6;
    f->busbw_gbs = 3.25;
    f->residual = 0.2;
    f->npoints = 2;
    f->points[0] = (zp_profile_coll_point){1024, 6e-6, 0.1};
    f->points[1] = (zp_profile_coll_point){1 << 30, 0.5, 0.01};
    f = &p.coll[ZP_PROFILE_BROADCAST][ZP_PROFILE_INTER_NODE];
    f->measured = 1;
    f->nranks = 2;
    f->latency_s = 0;
    f->busbw_gbs = 12.5;
    p.kernels[ZP_KERNEL_GELU_FWD] = (zp_profile_kernel_fit){1, 2.5e-6, 3.125e-10, 262144};
    p.kernels[ZP_KERNEL_XENT_BWD] = (zp_profile_kernel_fit){1, 0, 1.0 / 3e9, 1048576};
    return p;
}

static char *tmp_dir(void)
{
    char *d = strdup("/tmp/zp_profile_testXXXXXX");
    cr_assert(mkdtemp(d));
    return d;
}

static void rm_dir(char *d)
{
    DIR *dir = opendir(d);
    struct dirent *e;
    char path[512];
    while (dir && (e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", d, e->d_name);
        unlink(path);
    }
    if (dir)
        closedir(dir);
    rmdir(d);
    free(d);
}

static void assert_same(const zp_profile *a, const zp_profile *b)
{
    cr_assert_str_eq(a->machine.cpu_model, b->machine.cpu_model);
    cr_assert_str_eq(a->machine.measured_at, b->machine.measured_at);
    cr_assert_eq(a->machine.ranks, b->machine.ranks);
    cr_assert_str_eq(a->backend, b->backend);
    cr_assert_eq(a->copy_gbs, b->copy_gbs);
    cr_assert_eq(a->triad_gbs, b->triad_gbs);
    cr_assert_eq(a->peak_flops_fp16, b->peak_flops_fp16);
    cr_assert_eq(a->adam_params_per_s, b->adam_params_per_s);
    cr_assert_eq(a->nadam, b->nadam);
    cr_assert_eq(a->adam[1].spread, b->adam[1].spread);
    cr_assert_eq(a->ngemm, b->ngemm);
    for (int i = 0; i < a->ngemm; i++) {
        cr_assert_eq(a->gemm[i].m, b->gemm[i].m);
        cr_assert_eq(a->gemm[i].flops_per_s, b->gemm[i].flops_per_s);
    }
    cr_assert_eq(a->gemm_s_per_flop, b->gemm_s_per_flop);
    cr_assert_eq(a->gemm_t0_s, b->gemm_t0_s);
    for (int k = 0; k < ZP_PROFILE_NCOLL; k++)
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            const zp_profile_coll_fit *x = &a->coll[k][s], *y = &b->coll[k][s];
            cr_assert_eq(x->measured, y->measured, "%d %d", k, s);
            if (!x->measured)
                continue;
            cr_assert_eq(x->nranks, y->nranks);
            cr_assert_eq(x->latency_s, y->latency_s);
            cr_assert_eq(x->busbw_gbs, y->busbw_gbs);
            cr_assert_eq(x->npoints, y->npoints);
            for (int i = 0; i < x->npoints; i++)
                cr_assert_eq(x->points[i].time_s, y->points[i].time_s);
        }
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        const zp_profile_kernel_fit *x = &a->kernels[k], *y = &b->kernels[k];
        cr_assert_eq(x->measured, y->measured, "kernel %s", zp_profile_kernel_name(k));
        cr_assert_eq(x->t0_s, y->t0_s);
        cr_assert_eq(x->s_per_elem, y->s_per_elem);
        cr_assert_eq(x->elems, y->elems);
    }
}

Test(profile, round_trip_is_exact)
{
    char *d = tmp_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/p.json", d);
    zp_profile p = sample(), q;
    cr_assert_eq(zp_profile_write(&p, path), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_profile_read(path, &q), ZP_OK, "%s", zp_error_message());
    assert_same(&p, &q);
    /* and the text is stable: writing what was read gives the same bytes */
    char *t1, *t2;
    cr_assert_eq(zp_profile_to_json(&p, &t1), ZP_OK);
    cr_assert_eq(zp_profile_to_json(&q, &t2), ZP_OK);
    cr_assert_str_eq(t1, t2);
    free(t1);
    free(t2);
    rm_dir(d);
}

/* A device backend's host calls (calibrate --backend cuda) are written and read back exactly; a profile
 * without them (the cpu backend's, older ones) writes no "host_calls" and reads 0. */
Test(profile, host_calls_optional_round_trip)
{
    zp_profile p = sample(), q;
    char *t;
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_null(strstr(t, "host_calls"));
    free(t);
    p.host_kernel_s = 5.5e-6, p.host_gemm_s = 1.7e-5;
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_eq(zp_profile_parse(t, strlen(t), "t.json", &q), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(q.host_kernel_s, 5.5e-6);
    cr_assert_eq(q.host_gemm_s, 1.7e-5);
    free(t);
    p.host_gemm_s = -1;
    cr_assert_eq(zp_profile_validate(&p), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "host_calls.gemm_s"), "%s", zp_error_message());
}

/* The cold operands' rate of a cpu calibration (gemm_model.cold_gbs) round-trips; absent, it reads 0; negative,
 * the key is named. */
Test(profile, gemm_cold_gbs_optional_round_trip)
{
    zp_profile p = sample(), q;
    char *t;
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_null(strstr(t, "cold_gbs"));
    cr_assert_eq(zp_profile_parse(t, strlen(t), "t.json", &q), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(q.gemm_cold_gbs, 0.0);
    free(t);
    p.gemm_cold_gbs = 16.049129194732885;
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_eq(zp_profile_parse(t, strlen(t), "t.json", &q), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(q.gemm_cold_gbs, p.gemm_cold_gbs);
    free(t);
    p.gemm_cold_gbs = -1;
    cr_assert_eq(zp_profile_validate(&p), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "gemm_model.cold_gbs"), "%s", zp_error_message());
}

/* A collective's hot points (back to back: tensor parallelism's, zp_op_info.warm) round-trip, absent read 0,
 * price only within their sizes and rank count, and a negative one is named. */
Test(profile, collective_hot_points)
{
    zp_profile p = sample(), q;
    char *t;
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_null(strstr(t, "hot_points"));
    free(t);
    zp_profile_coll_fit *f = &p.coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    cr_assert_lt(zp_profile_collective_time_hot(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 65536, 4), 0.0);
    f->nhot = 2;
    f->hot[0] = (zp_profile_coll_point){1024, 2e-6, 0.1};
    f->hot[1] = (zp_profile_coll_point){1 << 20, 130e-6, 0.05};
    cr_assert_eq(zp_profile_to_json(&p, &t), ZP_OK);
    cr_assert_eq(zp_profile_parse(t, strlen(t), "t.json", &q), ZP_OK, "%s", zp_error_message());
    free(t);
    const zp_profile_coll_fit *g = &q.coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    cr_assert_eq(g->nhot, 2);
    cr_assert_eq(g->hot[1].time_s, 130e-6);
    cr_assert_float_eq(zp_profile_collective_time_hot(&q, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1024, 4), 2e-6,
                       1e-15);
    const double mid = zp_profile_collective_time_hot(&q, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 32768, 4);
    cr_assert(mid > 2e-6 && mid < 130e-6, "%g", mid);
    cr_assert_lt(zp_profile_collective_time_hot(&q, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1 << 22, 4), 0.0,
                 "past the last hot point: the cold points decide");
    cr_assert_lt(zp_profile_collective_time_hot(&q, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1024, 8), 0.0);
    f->hot[0].time_s = -1;
    cr_assert_eq(zp_profile_validate(&p), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "hot_points[0]"), "%s", zp_error_message());
}

/* sample() as the JSON tree the writer makes of it, for the tests that edit a profile's text. */
static json_t *sample_json(void)
{
    zp_profile p = sample();
    char *text;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    cr_assert(root, "%s", err.text);
    free(text);
    return root;
}

/* A profile written before "layer_kernels" existed still loads, with no kernel measured; a kernel
 * that is there is checked like every other number. */
Test(profile, layer_kernels_optional_and_checked)
{
    zp_profile p = sample();
    json_t *root = sample_json();
    char *text;
    cr_assert(json_object_get(root, "layer_kernels"));
    json_t *ks = json_incref(json_object_get(root, "layer_kernels"));
    json_object_del(root, "layer_kernels");
    text = json_dumps(root, 0);
    zp_profile q;
    cr_assert_eq(zp_profile_parse(text, strlen(text), "old.json", &q), ZP_OK, "%s", zp_error_message());
    free(text);
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++)
        cr_assert_eq(q.kernels[k].measured, 0);
    cr_assert_eq(zp_profile_kernel_time(&q, ZP_KERNEL_GELU_FWD, 1000), -1);
    /* the writer leaves the key out when nothing was measured */
    cr_assert_eq(zp_profile_to_json(&q, &text), ZP_OK);
    cr_assert_null(strstr(text, "layer_kernels"));
    free(text);
    /* negative rate rejected, naming the kernel */
    json_object_set_new(json_object_get(ks, "gelu_fwd"), "s_per_elem", json_real(-1e-9));
    json_object_set_new(root, "layer_kernels", ks);
    text = json_dumps(root, 0);
    cr_assert_eq(zp_profile_parse(text, strlen(text), "bad.json", &q), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "gelu_fwd"), "%s", zp_error_message());
    free(text);
    /* a kernel the cost model does not know would be silently unused: refused, naming it */
    json_object_set_new(json_object_get(ks, "gelu_fwd"), "s_per_elem", json_real(1e-9));
    json_object_set_new(ks, "flash_attention_fwd", json_pack("{s:f, s:f, s:f}", "t0_s", 1e-6, "s_per_elem", 1e-9, "elems", 1e6));
    text = json_dumps(root, 0);
    cr_assert_eq(zp_profile_parse(text, strlen(text), "unknown.json", &q), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "layer_kernels.flash_attention_fwd is not a kernel"), "%s", zp_error_message());
    free(text);
    json_decref(root);
    /* time = t0 + elems * s_per_elem */
    cr_assert_float_eq(zp_profile_kernel_time(&p, ZP_KERNEL_GELU_FWD, 1e6), 2.5e-6 + 3.125e-4, 1e-15);
}

/* Measured GEMM points are used near them (exactly at a measured shape), the fit far away; measured
 * collective points are interpolated on their rank count. */
Test(profile, measured_points_used)
{
    zp_profile p = sample();
    p.ngemm = 1;
    p.gemm[0] = (zp_profile_gemm_point){256, 384, 128, 10e9, 0};
    double f = 2.0 * 256 * 384 * 128;
    cr_assert_float_eq(zp_profile_gemm_time(&p, 256, 384, 128), f / 10e9, 1e-12);
    cr_assert_eq(zp_profile_gemm_time(&p, 8192, 8192, 8192), zp_profile_gemm_fit_time(&p, 8192, 8192, 8192));
    /* all-reduce intra-node: points at 1 KiB (6 us) and 1 GiB (0.5 s) on 4 ranks */
    const zp_profile_coll_fit *c = &p.coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    cr_assert_eq(c->nranks, 4);
    cr_assert_float_eq(zp_profile_collective_time_measured(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1024, 4),
                       6e-6, 1e-15);
    double mid = zp_profile_collective_time_measured(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1 << 20, 4);
    cr_assert(mid > 6e-6 && mid < 0.5, "%g", mid);
    /* other rank counts: the fit */
    cr_assert_eq(zp_profile_collective_time_measured(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1 << 20, 8),
                 zp_profile_collective_time(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1 << 20, 8));
    /* scaling the compute doubles kernel and GEMM times, leaves collectives */
    zp_profile q = p;
    cr_assert_eq(zp_profile_scale_compute(&q, 2.0), ZP_OK);
    cr_assert_float_eq(zp_profile_gemm_time(&q, 256, 384, 128), 2 * f / 10e9, 1e-12);
    cr_assert_float_eq(zp_profile_kernel_time(&q, ZP_KERNEL_GELU_FWD, 10), 2 * zp_profile_kernel_time(&p, ZP_KERNEL_GELU_FWD, 10), 1e-15);
    cr_assert_eq(q.coll[0][0].busbw_gbs, p.coll[0][0].busbw_gbs);
    cr_assert_eq(zp_profile_scale_compute(&q, 0), ZP_EINVAL);
}

/* Shapes between measured ones: the measured rates nearest in log space, inverse-square-distance weighted in
 * log rate (a shape as far from two points has their geometric mean); Adam's rate by partition size,
 * interpolated in log size among the measured points, the fit beyond them. */
Test(profile, interpolation_between_measured_points)
{
    zp_profile p = sample();
    p.ngemm = 2;
    p.gemm[0] = (zp_profile_gemm_point){256, 256, 256, 4e9, 0};
    p.gemm[1] = (zp_profile_gemm_point){256, 256, 1024, 16e9, 0};
    double f = 2.0 * 256 * 256 * 512; /* k = 512: ln 2 from both */
    cr_assert_float_eq(zp_profile_gemm_time(&p, 256, 256, 512), f / 8e9, 1e-9 * f / 8e9);
    /* nearer the first: closer to its rate */
    double t = zp_profile_gemm_time(&p, 256, 256, 300), r = 2.0 * 256 * 256 * 300 / t;
    cr_assert(r > 4e9 && r < 8e9, "rate %g", r);
    p.nadam = 3;
    p.adam[0] = (zp_profile_adam_point){1e5, 2e9, 0};
    p.adam[1] = (zp_profile_adam_point){1e6, 1e9, 0};
    p.adam[2] = (zp_profile_adam_point){1e7, 0.9e9, 0};
    p.adam_params_per_s = 0.8e9;
    p.cpu_adam_params_per_s = 0.8e9;
    cr_assert_float_eq(zp_profile_adam_time(&p, 1e4, 0), 1e4 / 2e9, 1e-18);
    cr_assert_float_eq(zp_profile_adam_time(&p, sqrt(1e11), 0), sqrt(1e11) / sqrt(2e18), 1e-12);
    cr_assert_float_eq(zp_profile_adam_time(&p, 1e8, 0), 1e8 / 0.8e9, 1e-12);
    cr_assert_float_eq(zp_profile_adam_time(&p, 1e6, 1), 1e6 / 1e9, 1e-15, "the host's Adam on the cpu backend");
}

Test(profile, models)
{
    zp_profile p = sample();
    double t = zp_profile_collective_time(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1e9, 4);
    cr_assert(fabs(t - (4.5e-6 + 1e9 * 1.5 / 3.25e9)) < 1e-12, "t %g", t);
    /* latency grows with the ring: 8 ranks = 7/3 of the 4-rank latency */
    double t8 = zp_profile_collective_time(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 0, 8);
    cr_assert(fabs(t8 - 4.5e-6 * 7 / 3) < 1e-15);
    cr_assert_eq(zp_profile_collective_time(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 1e9, 1), 0.0);
    cr_assert_eq(zp_profile_collective_time(&p, ZP_PROFILE_ALLGATHER, ZP_PROFILE_INTRA_NODE, 1e9, 4), -1.0);
    double e = zp_profile_gemm_efficiency(&p, 2048, 8192, 2048);
    cr_assert(e > 0.5 && e <= 1.0, "efficiency %g", e);
    cr_assert(zp_profile_gemm_efficiency(&p, 8, 8, 8) < e);
    cr_assert(fabs(zp_profile_adam_time(&p, 1.5e9, 1) - 1.0) < 1e-12);
}

/* parse must fail with EINVAL and a message containing `needle` */
static void rejects(const char *text, const char *needle)
{
    zp_profile q;
    zp_status st = zp_profile_parse(text, strlen(text), "t.json", &q);
    cr_assert_eq(st, ZP_EINVAL, "accepted (status %d): %.200s", st, text);
    if (needle)
        cr_assert(strstr(zp_error_message(), needle), "message '%s' lacks '%s'", zp_error_message(), needle);
}

Test(profile, truncated_files_rejected)
{
    zp_profile p = sample();
    char *text;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    size_t n = strlen(text);
    for (size_t len = 0; len + 2 < n; len++) {
        zp_profile q;
        cr_assert_eq(zp_profile_parse(text, len, "t.json", &q), ZP_EINVAL, "prefix of %zu bytes accepted", len);
    }
    rejects("", "invalid JSON");
    rejects("{\"format\": \"zplan-profile\"", "line 1");
    free(text);
}

/* Deletes, one at a time, every key of every object (recursively) and expects rejection naming
 * the key, except the optional ones (the collectives' scopes). */
static void delete_each(json_t *root, json_t *obj, const char *path)
{
    /* the keys first: deleting and re-adding a key moves it to the end of the object */
    char names[64][64];
    int nkeys = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        if (nkeys < 64)
            snprintf(names[nkeys++], sizeof names[0], "%.63s", k);
    }
    for (int i = 0; i < nkeys; i++) {
        const char *key = names[i];
        json_t *val = json_object_get(obj, key);
        char sub[384];
        snprintf(sub, sizeof sub, "%.300s%s%.63s", path, *path ? "." : "", key);
        /* optional: the collectives' scopes, "layer_kernels" and each kernel in it */
        int optional = strcmp(key, "intra_node") == 0 || strcmp(key, "inter_node") == 0 ||
                       strcmp(key, "layer_kernels") == 0 || strcmp(path, "layer_kernels") == 0;
        json_incref(val);
        json_object_del(obj, key);
        char *text = json_dumps(root, 0);
        zp_profile q;
        zp_status st = zp_profile_parse(text, strlen(text), "t.json", &q);
        if (optional) {
            cr_assert_eq(st, ZP_OK, "optional %s: %s", sub, zp_error_message());
        } else {
            cr_assert_eq(st, ZP_EINVAL, "missing %s accepted", sub);
            cr_assert(strstr(zp_error_message(), key), "missing %s: message '%s'", sub, zp_error_message());
        }
        free(text);
        json_object_set_new(obj, key, val);
        if (json_is_object(val))
            delete_each(root, val, sub);
        if (json_is_array(val) && json_array_size(val) > 0 && json_is_object(json_array_get(val, 0))) {
            char el[400];
            snprintf(el, sizeof el, "%s[0]", sub);
            delete_each(root, json_array_get(val, 0), el);
        }
    }
}

Test(profile, every_missing_key_rejected)
{
    json_t *root = sample_json();
    delete_each(root, root, "");
    json_decref(root);
}

/* A key zplan does not read is refused, naming it: a misspelling (device_model.nccl_channels for nccl_ctas)
 * would otherwise leave the preset's figure in place without a word. Each checked object, and the top level. */
Test(profile, every_unknown_key_rejected)
{
    json_t *root = sample_json();
    json_object_set_new(root, "device_model",
                        json_pack("{s:i, s:f, s:f, s:f, s:f, s:b, s:f, s:i}", "sms", 108, "gemm_max_efficiency", 0.87,
                                  "k_half", 64.0, "launch_s", 3e-6, "dispatch_s", 1e-5, "unfused_kernels", 0,
                                  "flash_efficiency", 0.6, "nccl_ctas", 24));
    json_object_set_new(root, "nvme_gbs", json_pack("{s:f, s:f}", "read", 52.0, "write", 28.0));
    json_object_set_new(root, "host_calls", json_pack("{s:f, s:f}", "kernel_s", 6e-6, "gemm_s", 1.2e-5));
    char *text = json_dumps(root, 0);
    zp_profile q;
    cr_assert_eq(zp_profile_parse(text, strlen(text), "t.json", &q), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(q.dev.nccl_ctas, 24);
    cr_assert_float_eq(q.host_kernel_s, 6e-6, 1e-18);
    cr_assert_float_eq(q.host_gemm_s, 1.2e-5, 1e-18);
    free(text);
    static const char *const objs[] = {"",        "device_model", "nvme_gbs",   "memory_bw_gbs", "host_device_gbs",
                                       "compute", "adam",         "gemm_model", "host_calls"};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        json_t *o = *objs[i] ? json_object_get(root, objs[i]) : root;
        cr_assert(json_is_object(o), "%s", objs[i]);
        const char *typo = strcmp(objs[i], "device_model") == 0 ? "nccl_channels" : "zz_typo";
        json_object_set_new(o, typo, json_integer(1));
        text = json_dumps(root, 0);
        cr_assert_eq(zp_profile_parse(text, strlen(text), "t.json", &q), ZP_EINVAL, "%s.%s accepted", objs[i], typo);
        char want[96];
        snprintf(want, sizeof want, "unknown key '%s%s%s'", objs[i], *objs[i] ? "." : "", typo);
        cr_assert(strstr(zp_error_message(), want), "%s", zp_error_message());
        free(text);
        json_object_del(o, typo);
    }
    json_decref(root);
}

static char *with(const char *key_path, json_t *value)
{
    json_t *root = sample_json();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", key_path);
    json_t *obj = root;
    char *save = NULL, *tok = strtok_r(buf, ".", &save), *next;
    while ((next = strtok_r(NULL, ".", &save))) {
        obj = json_is_array(json_object_get(obj, tok)) ? json_array_get(json_object_get(obj, tok), 0)
                                                        : json_object_get(obj, tok);
        tok = next;
    }
    json_object_set_new(obj, tok, value);
    char *out = json_dumps(root, 0);
    json_decref(root);
    return out;
}

Test(profile, bad_values_rejected)
{
    struct {
        const char *key;
        json_t *val;
        const char *needle;
    } cases[] = {
        {"memory_bw_gbs.copy", json_real(-1.0), "memory_bw_gbs.copy"},
        {"memory_bw_gbs.triad", json_string("fast"), "memory_bw_gbs.triad"},
        {"adam.params_per_s", json_real(-5), "adam.params_per_s"},
        {"gemm.flops_per_s", json_real(-1), "gemm[0].flops_per_s"},
        {"machine.cores", json_real(2.5), "machine.cores"},
        {"machine.cpu_model", json_integer(3), "machine.cpu_model"},
        {"backend", json_string("tpu"), "backend"},
        {"format", json_string("other"), "format"},
        {"version", json_integer(99), "version"},
        {"gemm_model.dtype", json_string("int8"), "dtype"},
        {"gemm", json_array(), "gemm"},
        {"collectives.allreduce", json_string("x"), NULL},
        {"memory_bw_gbs", json_array(), "memory_bw_gbs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = with(cases[i].key, cases[i].val);
        rejects(t, cases[i].needle);
        free(t);
    }
    /* a measured scope with a bad field */
    char *t = with("collectives.allreduce.intra_node.busbw_gbs", json_real(0));
    rejects(t, "busbw_gbs");
    free(t);
    t = with("collectives.allreduce.intra_node.nranks", json_integer(1));
    rejects(t, "nranks");
    free(t);
    /* NaN and Infinity are not JSON; duplicate keys and trailing garbage neither */
    rejects("{\"format\": NaN}", "invalid JSON");
    rejects("{\"format\": Infinity}", "invalid JSON");
    rejects("{\"format\": \"zplan-profile\", \"format\": \"zplan-profile\"}", "invalid JSON");
    rejects("[]", "top level");
    zp_profile p = sample();
    char *text;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    size_t n = strlen(text);
    text = realloc(text, n + 8);
    strcpy(text + n, " {}");
    rejects(text, "invalid JSON");
    free(text);
}

Test(profile, writes_are_atomic_and_validated)
{
    char *d = tmp_dir();
    char path[256];
    snprintf(path, sizeof path, "%s/p.json", d);
    zp_profile p = sample(), q;
    cr_assert_eq(zp_profile_write(&p, path), ZP_OK);
    /* an invalid profile is never written, the old file stays */
    zp_profile bad = sample();
    bad.triad_gbs = NAN;
    cr_assert_eq(zp_profile_write(&bad, path), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "memory_bw_gbs.triad"));
    cr_assert_eq(zp_profile_read(path, &q), ZP_OK);
    assert_same(&p, &q);
    /* a directory that does not exist: an error, nothing written */
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/missing/p.json", d);
    cr_assert_neq(zp_profile_write(&p, nodir), ZP_OK);
    /* no temporary file left over */
    DIR *dir = opendir(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dir)))
        files += e->d_name[0] != '.';
    closedir(dir);
    cr_assert_eq(files, 1);
    cr_assert_eq(zp_profile_read("/nonexistent/p.json", &q), ZP_ENOENT);
    rm_dir(d);
}

/* The machine watched while calibrating (issue #31): optional (older profiles have no reading: watched 0),
 * kept exactly through a round trip, and checked when present. */
Test(profile, while_calibrating_optional_kept_and_checked)
{
    zp_profile p = sample(), q;
    cr_assert_eq(p.machine.watched, 0);
    char *text;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    cr_expect_null(strstr(text, "while_calibrating"), "nothing said when nothing was watched");
    free(text);
    p.machine.watched = 1;
    p.machine.others_cores = 0.8125;
    p.machine.load1 = 3.5;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    cr_assert_eq(zp_profile_parse(text, strlen(text), "t.json", &q), ZP_OK, "%s", zp_error_message());
    free(text);
    cr_expect_eq(q.machine.watched, 1);
    cr_expect_eq(q.machine.others_cores, 0.8125);
    cr_expect_eq(q.machine.load1, 3.5);
    char *bad = with("machine.while_calibrating", json_pack("{s:f}", "others_cores", 0.1));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "load_1min missing accepted");
    free(bad);
    bad = with("machine.while_calibrating", json_integer(1));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "a number accepted");
    free(bad);
}

/* The reference work's time while calibrating (kernels/zp_probe.h): optional, kept through a round trip, checked
 * (s > 0, drift >= 0, no other key). */
Test(profile, machine_probe_optional_kept_and_checked)
{
    zp_profile p = sample(), q;
    char *text;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    cr_expect_null(strstr(text, "\"probe\""), "nothing said when nothing was timed");
    free(text);
    p.machine.probe_s = 0.00259765625;
    p.machine.probe_drift = 0.1875;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    cr_assert_eq(zp_profile_parse(text, strlen(text), "t.json", &q), ZP_OK, "%s", zp_error_message());
    free(text);
    cr_expect_eq(q.machine.probe_s, 0.00259765625);
    cr_expect_eq(q.machine.probe_drift, 0.1875);
    char *bad = with("machine.probe", json_pack("{s:f, s:f}", "s", 0.0, "drift", 0.1));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "s 0 accepted");
    free(bad);
    bad = with("machine.probe", json_pack("{s:f, s:f, s:f}", "s", 0.002, "drift", 0.1, "speed", 1.0));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "an unknown key accepted");
    free(bad);
    bad = with("machine.probe", json_pack("{s:f}", "s", 0.002));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "drift missing accepted");
    free(bad);
    /* the ranks' lag (optional): kept, and within [0, 1) */
    cr_expect_eq(q.machine.probe_sync, 0.0);
    p.machine.probe_sync = 0.046875;
    cr_assert_eq(zp_profile_to_json(&p, &text), ZP_OK);
    cr_assert_eq(zp_profile_parse(text, strlen(text), "t.json", &q), ZP_OK, "%s", zp_error_message());
    free(text);
    cr_expect_eq(q.machine.probe_sync, 0.046875);
    bad = with("machine.probe", json_pack("{s:f, s:f, s:f}", "s", 0.002, "drift", 0.1, "sync", 1.5));
    cr_expect_eq(zp_profile_parse(bad, strlen(bad), "t.json", &q), ZP_EINVAL, "a lag of 150% accepted");
    free(bad);
}
