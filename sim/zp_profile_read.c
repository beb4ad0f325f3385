/* zp_profile_read.c — the device profile's JSON reader (jansson): every key checked, an unknown one refused
 * naming it (it would be silently unused), then zp_profile_validate. */
#include "zp_profile.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_coll.h"
#include "zp_io.h"

#define MAX_PROFILE_BYTES ((size_t)16 << 20)

/* ---- reading ---- */

typedef struct {
    const char *name; /* file name for messages */
} rd;

static zp_status need(const rd *r, json_t *obj, const char *parent, const char *key, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': missing key '%s%s%s'", r->name, parent, *parent ? "." : "", key);
    *out = v;
    return ZP_OK;
}

static zp_status need_object(const rd *r, json_t *obj, const char *parent, const char *key, json_t **out)
{
    ZP_TRY(need(r, obj, parent, key, out));
    if (!json_is_object(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be an object", r->name, parent, *parent ? "." : "",
                       key);
    return ZP_OK;
}

/* The first key of `obj` that is none of names[0..n) (NULL: all are), with the names as "a, b, c" in `list`
 * for the message that refuses it. */
static const char *unknown_key(json_t *obj, const char *const *names, int n, char *list, size_t len)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int known = 0;
        for (int i = 0; i < n && !known; i++)
            known = strcmp(key, names[i]) == 0;
        if (known)
            continue;
        list[0] = '\0';
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), len - strlen(list), "%s%s", i ? ", " : "", names[i]);
        return key;
    }
    return NULL;
}

/* An object's keys must all be ones zplan reads: a misspelled key (e.g. device_model.nccl_channels) would
 * otherwise be dropped silently and the answer computed from the preset's figure instead. names: NULL-ended. */
static zp_status only_keys(const rd *r, json_t *obj, const char *parent, const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    char list[384];
    const char *key = unknown_key(obj, names, n, list, sizeof list);
    if (key)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': unknown key '%s%s%s' (zplan reads %s %s%s); remove or correct it",
                       r->name, parent, *parent ? "." : "", key, list, *parent ? "in " : "at the top level", parent);
    return ZP_OK;
}

static zp_status get_num(const rd *r, json_t *obj, const char *parent, const char *key, double *out)
{
    json_t *v = NULL;
    ZP_TRY(need(r, obj, parent, key, &v));
    if (!json_is_number(v))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a number", r->name, parent, *parent ? "." : "", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a finite number >= 0 (got %g)", r->name, parent,
                       *parent ? "." : "", key, x);
    *out = x;
    return ZP_OK;
}

static zp_status get_int(const rd *r, json_t *obj, const char *parent, const char *key, int *out)
{
    double x;
    ZP_TRY(get_num(r, obj, parent, key, &x));
    if (x != floor(x) || x > 1e9)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a whole number (got %g)", r->name, parent,
                       *parent ? "." : "", key, x);
    *out = (int)x;
    return ZP_OK;
}

static zp_status get_str(const rd *r, json_t *obj, const char *parent, const char *key, char *buf, size_t len)
{
    json_t *v = NULL;
    ZP_TRY(need(r, obj, parent, key, &v));
    if (!json_is_string(v))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a string", r->name, parent, *parent ? "." : "", key);
    /* Keep what fits, cut at a UTF-8 character boundary: the profile must stay writable (jansson refuses
     * invalid UTF-8 when it is written back). */
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    if (n >= len) {
        n = len - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* s[n] is a continuation byte: the character starting before it does not fit */
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ZP_OK;
}

static zp_status get_array(const rd *r, json_t *obj, const char *parent, const char *key, size_t max, json_t **out)
{
    ZP_TRY(need(r, obj, parent, key, out));
    if (!json_is_array(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be an array", r->name, parent, *parent ? "." : "", key);
    if (json_array_size(*out) > max)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' has %zu entries (at most %zu)", r->name, parent,
                       *parent ? "." : "", key, json_array_size(*out), max);
    return ZP_OK;
}

static zp_status element_object(const rd *r, json_t *arr, size_t i, const char *path, json_t **out)
{
    *out = json_array_get(arr, i);
    if (!json_is_object(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s[%zu]' must be an object", r->name, path, i);
    return ZP_OK;
}

static zp_status read_machine(const rd *r, json_t *root, zp_profile_machine *m)
{
    json_t *o = NULL, *lib = NULL;
    ZP_TRY(need_object(r, root, "", "machine", &o));
    ZP_TRY(get_str(r, o, "machine", "cpu_model", m->cpu_model, sizeof m->cpu_model));
    ZP_TRY(get_int(r, o, "machine", "cores", &m->cores));
    ZP_TRY(get_str(r, o, "machine", "gpu", m->gpu, sizeof m->gpu));
    ZP_TRY(get_int(r, o, "machine", "gpu_count", &m->gpu_count));
    ZP_TRY(get_int(r, o, "machine", "nodes", &m->nodes));
    ZP_TRY(get_int(r, o, "machine", "ranks", &m->ranks));
    ZP_TRY(get_str(r, o, "machine", "hostname", m->hostname, sizeof m->hostname));
    ZP_TRY(get_str(r, o, "machine", "measured_at", m->measured_at, sizeof m->measured_at));
    ZP_TRY(get_str(r, o, "machine", "zplan_version", m->zplan_version, sizeof m->zplan_version));
    json_t *w = json_object_get(o, "while_calibrating");
    if (w) {
        if (!json_is_object(w))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.while_calibrating' must be an object", r->name);
        ZP_TRY(get_num(r, w, "machine.while_calibrating", "others_cores", &m->others_cores));
        ZP_TRY(get_num(r, w, "machine.while_calibrating", "load_1min", &m->load1));
        m->watched = 1;
    }
    json_t *pr = json_object_get(o, "probe");
    if (pr) {
        if (!json_is_object(pr))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe' must be an object", r->name);
        ZP_TRY(only_keys(r, pr, "machine.probe", (const char *const[]){"s", "drift", "sync", NULL}));
        ZP_TRY(get_num(r, pr, "machine.probe", "s", &m->probe_s));
        ZP_TRY(get_num(r, pr, "machine.probe", "drift", &m->probe_drift));
        if (json_object_get(pr, "sync")) {
            ZP_TRY(get_num(r, pr, "machine.probe", "sync", &m->probe_sync));
            if (!(m->probe_sync >= 0 && m->probe_sync < 1))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe.sync' must be in [0, 1) (got %g)", r->name,
                               m->probe_sync);
        }
        if (!(m->probe_s > 0) || !(m->probe_drift >= 0) || !isfinite(m->probe_s) || !isfinite(m->probe_drift))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe' needs s > 0 and drift >= 0 (got %g, %g)",
                           r->name, m->probe_s, m->probe_drift);
    }
    ZP_TRY(need_object(r, o, "machine", "libraries", &lib));
    ZP_TRY(get_str(r, lib, "machine.libraries", "blas", m->blas, sizeof m->blas));
    ZP_TRY(get_str(r, lib, "machine.libraries", "mpi", m->mpi, sizeof m->mpi));
    ZP_TRY(get_str(r, lib, "machine.libraries", "cuda", m->cuda, sizeof m->cuda));
    ZP_TRY(get_str(r, lib, "machine.libraries", "nccl", m->nccl, sizeof m->nccl));
    return ZP_OK;
}

/* A collective's array `key` of points ({bytes, time_s, spread}, at most ZP_PROFILE_MAX_POINTS) in scope object
 * sc at `path`, into q[*n]. */
static zp_status read_points(const rd *r, json_t *sc, const char *path, const char *key, zp_profile_coll_point *q,
                             int *n)
{
    json_t *pts = NULL;
    ZP_TRY(get_array(r, sc, path, key, ZP_PROFILE_MAX_POINTS, &pts));
    *n = (int)json_array_size(pts);
    char ppath[128];
    snprintf(ppath, sizeof ppath, "%s.%s", path, key);
    for (int i = 0; i < *n; i++) {
        json_t *e = NULL;
        ZP_TRY(element_object(r, pts, (size_t)i, ppath, &e));
        char epath[160];
        snprintf(epath, sizeof epath, "%s[%d]", ppath, i);
        ZP_TRY(get_num(r, e, epath, "bytes", &q[i].bytes));
        ZP_TRY(get_num(r, e, epath, "time_s", &q[i].time_s));
        ZP_TRY(get_num(r, e, epath, "spread", &q[i].spread));
    }
    return ZP_OK;
}

static zp_status read_collectives(const rd *r, json_t *root, zp_profile *p)
{
    json_t *colls = NULL;
    ZP_TRY(need_object(r, root, "", "collectives", &colls));
    for (int c = 0; c < ZP_PROFILE_NCOLL; c++) {
        json_t *kind = NULL;
        ZP_TRY(need_object(r, colls, "collectives", zp_coll_name((zp_coll_kind)c), &kind));
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            json_t *sc = json_object_get(kind, zp_profile_scope_name((zp_profile_scope)s));
            zp_profile_coll_fit *f = &p->coll[c][s];
            if (!sc)
                continue;
            char path[96];
            snprintf(path, sizeof path, "collectives.%s.%s", zp_coll_name((zp_coll_kind)c), zp_profile_scope_name((zp_profile_scope)s));
            if (!json_is_object(sc))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s' must be an object", r->name, path);
            f->measured = 1;
            ZP_TRY(get_int(r, sc, path, "nranks", &f->nranks));
            if (f->nranks < 2)
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s.nranks' must be >= 2 (got %d)", r->name, path,
                               f->nranks);
            ZP_TRY(get_num(r, sc, path, "latency_s", &f->latency_s));
            ZP_TRY(get_num(r, sc, path, "busbw_gbs", &f->busbw_gbs));
            if (!(f->busbw_gbs > 0))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s.busbw_gbs' must be > 0", r->name, path);
            ZP_TRY(get_num(r, sc, path, "residual", &f->residual));
            ZP_TRY(read_points(r, sc, path, "points", f->points, &f->npoints));
            if (json_object_get(sc, "hot_points"))
                ZP_TRY(read_points(r, sc, path, "hot_points", f->hot, &f->nhot));
        }
    }
    return ZP_OK;
}

/* "layer_kernels": optional, and so is each kernel in it; a kernel that is there must be complete. */
static zp_status read_kernels(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = json_object_get(root, "layer_kernels");
    if (!o)
        return ZP_OK;
    if (!json_is_object(o))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': layer_kernels must be an object", r->name);
    /* a kernel the cost model does not know would be silently unused: refused, naming it */
    char list[256];
    const char *names[ZP_PROFILE_NKERNEL];
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++)
        names[k] = zp_profile_kernel_name((zp_profile_kernel)k);
    const char *key = unknown_key(o, names, ZP_PROFILE_NKERNEL, list, sizeof list);
    if (key)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': layer_kernels.%s is not a kernel zplan knows (%s)", r->name, key,
                       list);
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        json_t *e = json_object_get(o, zp_profile_kernel_name((zp_profile_kernel)k));
        if (!e)
            continue;
        char path[64];
        snprintf(path, sizeof path, "layer_kernels.%s", zp_profile_kernel_name((zp_profile_kernel)k));
        if (!json_is_object(e))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': %s must be an object", r->name, path);
        zp_profile_kernel_fit *f = &p->kernels[k];
        ZP_TRY(get_num(r, e, path, "t0_s", &f->t0_s));
        ZP_TRY(get_num(r, e, path, "s_per_elem", &f->s_per_elem));
        ZP_TRY(get_num(r, e, path, "elems", &f->elems));
        f->measured = 1;
    }
    return ZP_OK;
}

/* "device_model", "nvme_gbs" and "host_calls": optional; complete when there. */
static zp_status read_device(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = json_object_get(root, "device_model");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': device_model must be an object", r->name);
        static const char *const dev_keys[] = {"sms", "gemm_max_efficiency", "k_half", "launch_s", "dispatch_s",
                                               "unfused_kernels", "flash_efficiency", "flash_seq_half", "nccl_ctas",
                                               "nccl_ll_base_s", "nccl_ll_hop_s", NULL};
        ZP_TRY(only_keys(r, o, "device_model", dev_keys));
        ZP_TRY(get_int(r, o, "device_model", "sms", &p->dev.sms));
        ZP_TRY(get_num(r, o, "device_model", "gemm_max_efficiency", &p->dev.gemm_max_eff));
        ZP_TRY(get_num(r, o, "device_model", "k_half", &p->dev.k_half));
        ZP_TRY(get_num(r, o, "device_model", "launch_s", &p->dev.launch_s));
        ZP_TRY(get_num(r, o, "device_model", "dispatch_s", &p->dev.dispatch_s));
        json_t *u = json_object_get(o, "unfused_kernels");
        if (u && !json_is_boolean(u))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': device_model.unfused_kernels must be true or false", r->name);
        p->dev.unfused_kernels = u && json_is_true(u);
        if (json_object_get(o, "flash_efficiency"))
            ZP_TRY(get_num(r, o, "device_model", "flash_efficiency", &p->dev.flash_eff));
        if (json_object_get(o, "flash_seq_half"))
            ZP_TRY(get_num(r, o, "device_model", "flash_seq_half", &p->dev.flash_seq_half));
        if (json_object_get(o, "nccl_ctas"))
            ZP_TRY(get_int(r, o, "device_model", "nccl_ctas", &p->dev.nccl_ctas));
        if (json_object_get(o, "nccl_ll_base_s"))
            ZP_TRY(get_num(r, o, "device_model", "nccl_ll_base_s", &p->dev.nccl_ll_base_s));
        if (json_object_get(o, "nccl_ll_hop_s"))
            ZP_TRY(get_num(r, o, "device_model", "nccl_ll_hop_s", &p->dev.nccl_ll_hop_s));
    }
    o = json_object_get(root, "nvme_gbs");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': nvme_gbs must be an object", r->name);
        static const char *const nvme_keys[] = {"read", "write", NULL};
        ZP_TRY(only_keys(r, o, "nvme_gbs", nvme_keys));
        ZP_TRY(get_num(r, o, "nvme_gbs", "read", &p->nvme_read_gbs));
        ZP_TRY(get_num(r, o, "nvme_gbs", "write", &p->nvme_write_gbs));
    }
    o = json_object_get(root, "host_calls");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': host_calls must be an object", r->name);
        static const char *const host_keys[] = {"kernel_s", "gemm_s", NULL};
        ZP_TRY(only_keys(r, o, "host_calls", host_keys));
        ZP_TRY(get_num(r, o, "host_calls", "kernel_s", &p->host_kernel_s));
        ZP_TRY(get_num(r, o, "host_calls", "gemm_s", &p->host_gemm_s));
    }
    return ZP_OK;
}

/* The header: an object of format ZP_PROFILE_FORMAT, version ZP_PROFILE_VERSION, only the keys a profile has;
 * "machine" and "backend" (cpu or cuda). */
static zp_status read_header(const rd *r, json_t *root, zp_profile *p)
{
    if (!json_is_object(root))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': the top level must be an object", r->name);
    char fmt[32];
    int version = 0;
    ZP_TRY(get_str(r, root, "", "format", fmt, sizeof fmt));
    if (strcmp(fmt, ZP_PROFILE_FORMAT) != 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'format' must be \"%s\" (got \"%s\")", r->name, ZP_PROFILE_FORMAT,
                       fmt);
    ZP_TRY(get_int(r, root, "", "version", &version));
    if (version != ZP_PROFILE_VERSION)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'version' %d is not supported (this zplan reads %d)", r->name,
                       version, ZP_PROFILE_VERSION);
    static const char *const root_keys[] = {"format", "version", "machine", "backend", "memory_bw_gbs",
                                            "host_device_gbs", "compute", "adam", "gemm", "gemm_model",
                                            "collectives", "layer_kernels", "device_model", "nvme_gbs", "host_calls", NULL};
    ZP_TRY(only_keys(r, root, "", root_keys));
    ZP_TRY(read_machine(r, root, &p->machine));
    ZP_TRY(get_str(r, root, "", "backend", p->backend, sizeof p->backend));
    if (strcmp(p->backend, "cpu") != 0 && strcmp(p->backend, "cuda") != 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'backend' must be \"cpu\" or \"cuda\" (got \"%s\")", r->name,
                       p->backend);
    return ZP_OK;
}

/* "memory_bw_gbs", "host_device_gbs" (GB/s) and "compute" (peak FLOP/s per precision). */
static zp_status read_rates(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = NULL;
    ZP_TRY(need_object(r, root, "", "memory_bw_gbs", &o));
    ZP_TRY(only_keys(r, o, "memory_bw_gbs", (const char *const[]){"copy", "triad", NULL}));
    ZP_TRY(get_num(r, o, "memory_bw_gbs", "copy", &p->copy_gbs));
    ZP_TRY(get_num(r, o, "memory_bw_gbs", "triad", &p->triad_gbs));
    ZP_TRY(need_object(r, root, "", "host_device_gbs", &o));
    ZP_TRY(only_keys(r, o, "host_device_gbs", (const char *const[]){"h2d", "d2h", NULL}));
    ZP_TRY(get_num(r, o, "host_device_gbs", "h2d", &p->h2d_gbs));
    ZP_TRY(get_num(r, o, "host_device_gbs", "d2h", &p->d2h_gbs));
    ZP_TRY(need_object(r, root, "", "compute", &o));
    ZP_TRY(only_keys(r, o, "compute",
                     (const char *const[]){"peak_flops_fp32", "peak_flops_fp16", "peak_flops_bf16", NULL}));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_fp32", &p->peak_flops_fp32));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_fp16", &p->peak_flops_fp16));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_bf16", &p->peak_flops_bf16));
    return ZP_OK;
}

/* "adam": the fused Adam's rates (parameters/s, bytes per parameter, the host's) and its measured points. */
static zp_status read_adam(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = NULL;
    ZP_TRY(need_object(r, root, "", "adam", &o));
    ZP_TRY(only_keys(r, o, "adam",
                     (const char *const[]){"params_per_s", "bytes_per_param", "cpu_params_per_s", "points", NULL}));
    ZP_TRY(get_num(r, o, "adam", "params_per_s", &p->adam_params_per_s));
    ZP_TRY(get_num(r, o, "adam", "bytes_per_param", &p->adam_bytes_per_param));
    ZP_TRY(get_num(r, o, "adam", "cpu_params_per_s", &p->cpu_adam_params_per_s));
    json_t *arr = NULL;
    ZP_TRY(get_array(r, o, "adam", "points", ZP_PROFILE_MAX_ADAM, &arr));
    p->nadam = (int)json_array_size(arr);
    for (int i = 0; i < p->nadam; i++) {
        json_t *e = NULL;
        char path[48];
        snprintf(path, sizeof path, "adam.points[%d]", i);
        ZP_TRY(element_object(r, arr, (size_t)i, "adam.points", &e));
        ZP_TRY(get_num(r, e, path, "n", &p->adam[i].n));
        ZP_TRY(get_num(r, e, path, "params_per_s", &p->adam[i].params_per_s));
        ZP_TRY(get_num(r, e, path, "spread", &p->adam[i].spread));
    }
    return ZP_OK;
}

/* "gemm" (at least one measured shape, flop/s each) and "gemm_model" (the fit: t0 s + s/flop + s/byte). */
static zp_status read_gemm(const rd *r, json_t *root, zp_profile *p)
{
    json_t *arr = NULL, *o = NULL;
    ZP_TRY(get_array(r, root, "", "gemm", ZP_PROFILE_MAX_GEMM, &arr));
    p->ngemm = (int)json_array_size(arr);
    if (p->ngemm < 1)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'gemm' must hold at least one measured shape", r->name);
    for (int i = 0; i < p->ngemm; i++) {
        json_t *e = NULL;
        char path[32];
        snprintf(path, sizeof path, "gemm[%d]", i);
        ZP_TRY(element_object(r, arr, (size_t)i, "gemm", &e));
        ZP_TRY(get_num(r, e, path, "m", &p->gemm[i].m));
        ZP_TRY(get_num(r, e, path, "n", &p->gemm[i].n));
        ZP_TRY(get_num(r, e, path, "k", &p->gemm[i].k));
        ZP_TRY(get_num(r, e, path, "flops_per_s", &p->gemm[i].flops_per_s));
        ZP_TRY(get_num(r, e, path, "spread", &p->gemm[i].spread));
    }
    ZP_TRY(need_object(r, root, "", "gemm_model", &o));
    ZP_TRY(only_keys(r, o, "gemm_model",
                     (const char *const[]){"dtype", "t0_s", "s_per_flop", "s_per_byte", "residual", "cold_gbs",
                                           NULL}));
    ZP_TRY(get_str(r, o, "gemm_model", "dtype", p->gemm_dtype, sizeof p->gemm_dtype));
    ZP_TRY(get_num(r, o, "gemm_model", "t0_s", &p->gemm_t0_s));
    ZP_TRY(get_num(r, o, "gemm_model", "s_per_flop", &p->gemm_s_per_flop));
    ZP_TRY(get_num(r, o, "gemm_model", "s_per_byte", &p->gemm_s_per_byte));
    ZP_TRY(get_num(r, o, "gemm_model", "residual", &p->gemm_residual));
    if (json_object_get(o, "cold_gbs"))
        ZP_TRY(get_num(r, o, "gemm_model", "cold_gbs", &p->gemm_cold_gbs));
    return ZP_OK;
}

static zp_status read_root(const rd *r, json_t *root, zp_profile *p)
{
    ZP_TRY(read_header(r, root, p));
    ZP_TRY(read_rates(r, root, p));
    ZP_TRY(read_adam(r, root, p));
    ZP_TRY(read_gemm(r, root, p));
    ZP_TRY(read_collectives(r, root, p));
    ZP_TRY(read_kernels(r, root, p));
    ZP_TRY(read_device(r, root, p));
    zp_status st = zp_profile_validate(p);
    if (st != ZP_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", zp_error_message());
        return ZP_FAIL(st, "profile '%s': %s", r->name, msg);
    }
    return ZP_OK;
}

zp_status zp_profile_parse(const char *text, size_t len, const char *name, zp_profile *out)
{
    if (!text || !out)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    rd r = {.name = name ? name : "<string>"};
    json_error_t err;
    /* JSON_DISABLE_EOF_CHECK off: trailing garbage is an error; NaN/Infinity are not JSON. */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': invalid JSON at line %d column %d: %s", r.name, err.line, err.column,
                       err.text);
    zp_profile p;
    zp_profile_init(&p);
    zp_status st = read_root(&r, root, &p);
    json_decref(root);
    if (st == ZP_OK)
        *out = p;
    return st;
}

zp_status zp_profile_read(const char *path, zp_profile *out)
{
    char *text = NULL;
    size_t len = 0;
    ZP_TRY(zp_io_read_file(path, MAX_PROFILE_BYTES, &text, &len));
    zp_status st = zp_profile_parse(text, len, path, out);
    free(text);
    return st;
}
