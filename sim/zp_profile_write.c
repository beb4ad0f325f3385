/* zp_profile_write.c — the device profile's JSON writer (jansson), which zp_profile_read.c reads back. */
#include "zp_profile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_coll.h"
#include "zp_io.h"

/* ---- writing ---- */

static int put(json_t *o, const char *key, json_t *v) { return v ? json_object_set_new(o, key, v) : -1; }

/* The writers of to_json, one per part: each adds its keys to root in the order a profile lists them and
 * returns nonzero when one could not be made (out of memory). */

/* "machine": where and with what the profile was measured. */
static int put_machine(json_t *root, const zp_profile *p)
{
    int bad = 0;
    const zp_profile_machine *m = &p->machine;
    json_t *mach = json_object(), *lib = json_object();
    bad |= put(mach, "cpu_model", json_string(m->cpu_model));
    bad |= put(mach, "cores", json_integer(m->cores));
    bad |= put(mach, "gpu", json_string(m->gpu));
    bad |= put(mach, "gpu_count", json_integer(m->gpu_count));
    bad |= put(mach, "nodes", json_integer(m->nodes));
    bad |= put(mach, "ranks", json_integer(m->ranks));
    bad |= put(mach, "hostname", json_string(m->hostname));
    bad |= put(mach, "measured_at", json_string(m->measured_at));
    bad |= put(mach, "zplan_version", json_string(m->zplan_version));
    if (m->watched)
        bad |= put(mach, "while_calibrating",
                   json_pack("{s:f, s:f}", "others_cores", m->others_cores, "load_1min", m->load1));
    if (m->probe_s > 0)
        bad |= put(mach, "probe", m->probe_sync > 0 ? json_pack("{s:f, s:f, s:f}", "s", m->probe_s, "drift",
                                                                 m->probe_drift, "sync", m->probe_sync)
                                                     : json_pack("{s:f, s:f}", "s", m->probe_s, "drift", m->probe_drift));
    bad |= put(lib, "blas", json_string(m->blas));
    bad |= put(lib, "mpi", json_string(m->mpi));
    bad |= put(lib, "cuda", json_string(m->cuda));
    bad |= put(lib, "nccl", json_string(m->nccl));
    bad |= put(mach, "libraries", lib);
    bad |= put(root, "machine", mach);
    return bad;
}

/* "memory_bw_gbs", "host_device_gbs" (GB/s) and "compute" (peak FLOP/s per precision). */
static int put_rates(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *o = json_object();
    bad |= put(o, "copy", json_real(p->copy_gbs));
    bad |= put(o, "triad", json_real(p->triad_gbs));
    bad |= put(root, "memory_bw_gbs", o);
    o = json_object();
    bad |= put(o, "h2d", json_real(p->h2d_gbs));
    bad |= put(o, "d2h", json_real(p->d2h_gbs));
    bad |= put(root, "host_device_gbs", o);
    o = json_object();
    bad |= put(o, "peak_flops_fp32", json_real(p->peak_flops_fp32));
    bad |= put(o, "peak_flops_fp16", json_real(p->peak_flops_fp16));
    bad |= put(o, "peak_flops_bf16", json_real(p->peak_flops_bf16));
    bad |= put(root, "compute", o);
    return bad;
}

/* "adam": rates and measured points. */
static int put_adam(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *o = json_object();
    bad |= put(o, "params_per_s", json_real(p->adam_params_per_s));
    bad |= put(o, "bytes_per_param", json_real(p->adam_bytes_per_param));
    bad |= put(o, "cpu_params_per_s", json_real(p->cpu_adam_params_per_s));
    json_t *arr = json_array();
    for (int i = 0; i < p->nadam; i++) {
        json_t *e = json_object();
        bad |= put(e, "n", json_real(p->adam[i].n));
        bad |= put(e, "params_per_s", json_real(p->adam[i].params_per_s));
        bad |= put(e, "spread", json_real(p->adam[i].spread));
        bad |= json_array_append_new(arr, e);
    }
    bad |= put(o, "points", arr);
    bad |= put(root, "adam", o);
    return bad;
}

/* "gemm" (the measured shapes) and "gemm_model" (the fit). */
static int put_gemm(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *arr = json_array();
    for (int i = 0; i < p->ngemm; i++) {
        json_t *e = json_object();
        bad |= put(e, "m", json_real(p->gemm[i].m));
        bad |= put(e, "n", json_real(p->gemm[i].n));
        bad |= put(e, "k", json_real(p->gemm[i].k));
        bad |= put(e, "flops_per_s", json_real(p->gemm[i].flops_per_s));
        bad |= put(e, "spread", json_real(p->gemm[i].spread));
        bad |= json_array_append_new(arr, e);
    }
    bad |= put(root, "gemm", arr);
    json_t *o = json_object();
    bad |= put(o, "dtype", json_string(p->gemm_dtype));
    bad |= put(o, "t0_s", json_real(p->gemm_t0_s));
    bad |= put(o, "s_per_flop", json_real(p->gemm_s_per_flop));
    bad |= put(o, "s_per_byte", json_real(p->gemm_s_per_byte));
    bad |= put(o, "residual", json_real(p->gemm_residual));
    if (p->gemm_cold_gbs > 0)
        bad |= put(o, "cold_gbs", json_real(p->gemm_cold_gbs));
    bad |= put(root, "gemm_model", o);
    return bad;
}

/* "collectives": each kind's measured scopes, with their points. */
static int put_collectives(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *colls = json_object();
    for (int c = 0; c < ZP_PROFILE_NCOLL; c++) {
        json_t *kind = json_object();
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            const zp_profile_coll_fit *f = &p->coll[c][s];
            if (!f->measured)
                continue;
            json_t *sc = json_object();
            bad |= put(sc, "nranks", json_integer(f->nranks));
            bad |= put(sc, "latency_s", json_real(f->latency_s));
            bad |= put(sc, "busbw_gbs", json_real(f->busbw_gbs));
            bad |= put(sc, "residual", json_real(f->residual));
            json_t *pts = json_array();
            for (int i = 0; i < f->npoints; i++) {
                json_t *e = json_object();
                bad |= put(e, "bytes", json_real(f->points[i].bytes));
                bad |= put(e, "time_s", json_real(f->points[i].time_s));
                bad |= put(e, "spread", json_real(f->points[i].spread));
                bad |= json_array_append_new(pts, e);
            }
            bad |= put(sc, "points", pts);
            if (f->nhot > 0) {
                json_t *hot = json_array();
                for (int i = 0; i < f->nhot; i++)
                    bad |= json_array_append_new(hot, json_pack("{s:f, s:f, s:f}", "bytes", f->hot[i].bytes,
                                                                "time_s", f->hot[i].time_s, "spread",
                                                                f->hot[i].spread));
                bad |= put(sc, "hot_points", hot);
            }
            bad |= put(kind, zp_profile_scope_name((zp_profile_scope)s), sc);
        }
        bad |= put(colls, zp_coll_name((zp_coll_kind)c), kind);
    }
    bad |= put(root, "collectives", colls);
    return bad;
}

/* "layer_kernels", written only when measured: older readers and diffs see nothing new otherwise. */
static int put_kernels(json_t *root, const zp_profile *p)
{
    int bad = 0, nk = 0;
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++)
        nk += p->kernels[k].measured != 0;
    if (nk == 0)
        return 0;
    json_t *ks = json_object();
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        const zp_profile_kernel_fit *f = &p->kernels[k];
        if (!f->measured)
            continue;
        bad |= put(ks, zp_profile_kernel_name((zp_profile_kernel)k), json_pack("{s:f, s:f, s:f}", "t0_s", f->t0_s, "s_per_elem", f->s_per_elem,
                                                  "elems", f->elems));
    }
    bad |= put(root, "layer_kernels", ks);
    return bad;
}

/* "device_model", "nvme_gbs" and "host_calls", when known. */
static int put_device(json_t *root, const zp_profile *p)
{
    int bad = 0;
    if (p->dev.sms > 0) {
        json_t *d = json_object();
        bad |= put(d, "sms", json_integer(p->dev.sms));
        bad |= put(d, "gemm_max_efficiency", json_real(p->dev.gemm_max_eff));
        bad |= put(d, "k_half", json_real(p->dev.k_half));
        bad |= put(d, "launch_s", json_real(p->dev.launch_s));
        bad |= put(d, "dispatch_s", json_real(p->dev.dispatch_s));
        if (p->dev.unfused_kernels)
            bad |= put(d, "unfused_kernels", json_true());
        if (p->dev.flash_eff > 0)
            bad |= put(d, "flash_efficiency", json_real(p->dev.flash_eff));
        if (p->dev.flash_seq_half > 0)
            bad |= put(d, "flash_seq_half", json_real(p->dev.flash_seq_half));
        if (p->dev.nccl_ctas > 0)
            bad |= put(d, "nccl_ctas", json_integer(p->dev.nccl_ctas));
        if (p->dev.nccl_ll_base_s > 0 || p->dev.nccl_ll_hop_s > 0) {
            bad |= put(d, "nccl_ll_base_s", json_real(p->dev.nccl_ll_base_s));
            bad |= put(d, "nccl_ll_hop_s", json_real(p->dev.nccl_ll_hop_s));
        }
        bad |= put(root, "device_model", d);
    }
    if (p->nvme_read_gbs > 0 || p->nvme_write_gbs > 0) {
        json_t *d = json_object();
        bad |= put(d, "read", json_real(p->nvme_read_gbs));
        bad |= put(d, "write", json_real(p->nvme_write_gbs));
        bad |= put(root, "nvme_gbs", d);
    }
    if (p->host_kernel_s > 0 || p->host_gemm_s > 0) {
        json_t *d = json_object();
        bad |= put(d, "kernel_s", json_real(p->host_kernel_s));
        bad |= put(d, "gemm_s", json_real(p->host_gemm_s));
        bad |= put(root, "host_calls", d);
    }
    return bad;
}

static json_t *to_json(const zp_profile *p)
{
    int bad = 0;
    json_t *root = json_object();
    if (!root)
        return NULL;
    bad |= put(root, "format", json_string(ZP_PROFILE_FORMAT));
    bad |= put(root, "version", json_integer(ZP_PROFILE_VERSION));
    bad |= put_machine(root, p);
    bad |= put(root, "backend", json_string(p->backend));
    bad |= put_rates(root, p);
    bad |= put_adam(root, p);
    bad |= put_gemm(root, p);
    bad |= put_collectives(root, p);
    bad |= put_kernels(root, p);
    bad |= put_device(root, p);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

zp_status zp_profile_to_json(const zp_profile *p, char **out)
{
    if (!p || !out)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    ZP_TRY(zp_profile_validate(p));
    json_t *root = to_json(p);
    if (!root)
        return ZP_FAIL(ZP_ENOMEM, "profile: out of memory building the JSON");
    /* 17 significant digits: doubles round-trip exactly */
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return ZP_FAIL(ZP_ENOMEM, "profile: out of memory serialising the JSON");
    *out = text;
    return ZP_OK;
}

zp_status zp_profile_write(const zp_profile *p, const char *path)
{
    if (!p || !path)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    char *text = NULL;
    ZP_TRY(zp_profile_to_json(p, &text));
    zp_io_atomic *a = NULL;
    zp_status st = zp_io_atomic_open(path, &a);
    if (st != ZP_OK) {
        free(text);
        return st;
    }
    FILE *f = zp_io_atomic_file(a);
    if (fputs(text, f) == EOF || fputc('\n', f) == EOF) {
        free(text);
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "cannot write profile '%s'", path);
    }
    free(text);
    return zp_io_atomic_commit(a);
}
