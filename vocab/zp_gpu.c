#include "zp_gpu.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "zp_io.h"

/* The embedded presets: zp_gpu_presets.c, generated from the gpus/ folder by vocab/zp_gpu_embed.py. */
extern const char *const zp_gpu_preset_files[];
extern const char *const zp_gpu_preset_texts[];
extern const int zp_gpu_preset_n;

/* What a value measures, and so which units it may carry (K_TOPO: a word, switch or mesh). */
typedef enum {
    K_TEXT, K_FLOPS, K_BYTES, K_BW, K_TIME, K_POWER, K_CLOCK, K_COUNT, K_FRACTION, K_TOKENS, K_FLAG, K_TOPO
} kind;

typedef struct {
    const char *key;
    kind k;
    size_t off;
    int zero_ok; /* 0 is a meaningful value (not supported, not measured) */
    int optional; /* may be absent (the intra-domain topology: absent, a switch) */
} key_def;

#define D(f) offsetof(zp_gpu, f)
static const key_def g_keys[] = {
    {"name", K_TEXT, D(name), 0, 0},
    {"description", K_TEXT, D(description), 0, 0},
    {"fp32", K_FLOPS, D(fp32), 0, 0},
    {"fp16", K_FLOPS, D(fp16), 0, 0},
    {"bf16", K_FLOPS, D(bf16), 1, 0},
    {"fp8", K_FLOPS, D(fp8), 1, 0},
    {"hbm", K_BYTES, D(hbm), 0, 0},
    {"hbm_bw", K_BW, D(hbm_bw), 0, 0},
    {"sms", K_COUNT, D(sms), 0, 0},
    {"clock", K_CLOCK, D(clock), 0, 0},
    {"tdp", K_POWER, D(tdp_w), 0, 0},
    {"nvlink_domain", K_COUNT, D(nvlink_domain), 0, 0},
    {"nvlink_bw", K_BW, D(nvlink_bw), 0, 0},
    {"nvlink_efficiency", K_FRACTION, D(nvlink_efficiency), 0, 0},
    {"nvlink_latency", K_TIME, D(nvlink_latency), 0, 0},
    {"nic_bw", K_BW, D(nic_bw), 0, 0},
    {"gemm_efficiency", K_FRACTION, D(gemm_efficiency), 0, 0},
    {"kernel_launch", K_TIME, D(kernel_launch), 0, 0},
    {"dispatch", K_TIME, D(dispatch), 0, 0},
    {"dispatch_block", K_TIME, D(dispatch_block), 1, 1},
    {"coll_dispatch", K_TIME, D(coll_dispatch), 1, 1},
    {"nccl_ctas", K_COUNT, D(nccl_ctas), 1, 0},
    {"nccl_ll128", K_FLAG, D(nccl_ll128), 1, 0},
    {"nccl_ll_base", K_TIME, D(nccl_ll_base), 1, 0},
    {"nccl_ll_hop", K_TIME, D(nccl_ll_hop), 1, 0},
    {"flash_efficiency", K_FRACTION, D(flash_efficiency), 1, 0},
    {"flash_seq_half", K_TOKENS, D(flash_seq_half), 1, 0},
    {"intra_topology", K_TOPO, D(intra_mesh), 0, 1},
    {"link_bw", K_BW, D(link_bw), 0, 1},
    {"fp8_block_scaled", K_FLAG, D(fp8_mx), 1, 1},
};
#undef D
enum { NKEYS = (int)(sizeof g_keys / sizeof g_keys[0]) };

/* Units per kind: the decimal exponent appended to the figure's digits before strtod (so "3.35 TB/s" is
 * exactly the double 3350e9, as a C literal would be), then a binary factor (GiB) or divisor (bits). */
typedef struct {
    kind k;
    const char *unit;
    int exp10;
    double mul;
} unit_def;
static const unit_def g_units[] = {
    {K_FLOPS, "FLOP/s", 0, 1},   {K_FLOPS, "TFLOP/s", 12, 1}, {K_FLOPS, "PFLOP/s", 15, 1},
    {K_BYTES, "B", 0, 1},        {K_BYTES, "GB", 9, 1},       {K_BYTES, "TB", 12, 1},
    {K_BYTES, "GiB", 0, 1073741824.0},
    {K_BW, "B/s", 0, 1},         {K_BW, "GB/s", 9, 1},        {K_BW, "TB/s", 12, 1},
    {K_BW, "Gb/s", 9, 0.125},
    {K_TIME, "s", 0, 1},         {K_TIME, "ms", -3, 1},       {K_TIME, "us", -6, 1},       {K_TIME, "ns", -9, 1},
    {K_POWER, "W", 0, 1},        {K_CLOCK, "MHz", 6, 1},      {K_CLOCK, "GHz", 9, 1},
};

static const char *const g_unit_hint[] = {
    [K_TEXT] = "text", [K_FLOPS] = "FLOP/s, TFLOP/s or PFLOP/s", [K_BYTES] = "B, GB, TB or GiB",
    [K_BW] = "B/s, GB/s, TB/s or Gb/s", [K_TIME] = "s, ms, us or ns", [K_POWER] = "W",
    [K_CLOCK] = "MHz or GHz", [K_COUNT] = "a whole number without a unit",
    [K_FRACTION] = "a fraction between 0 and 1 without a unit", [K_TOKENS] = "tokens, without a unit",
    [K_FLAG] = "0 or 1", [K_TOPO] = "switch or mesh"};

/* A number with its unit for key `d`, into *out. */
static zp_status parse_number(const key_def *d, char *val, const char *origin, int line, double *out)
{
    char *end;
    (void)strtod(val, &end); /* where the digits end */
    if (end == val)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is not a number (%s)", origin, line, d->key, val,
                       g_unit_hint[d->k]);
    char digits[64];
    size_t n = (size_t)(end - val);
    if (n >= sizeof digits - 8)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is too long a number", origin, line, d->key, val);
    memcpy(digits, val, n);
    digits[n] = '\0';
    const char *unit = zp_io_trim(end);
    int exp10 = 0;
    double mul = 1;
    /* a plain 0 (not supported, not measured) needs no unit */
    int found = *unit == '\0' && (d->k >= K_COUNT || strtod(digits, NULL) == 0);
    for (size_t i = 0; !found && i < sizeof g_units / sizeof g_units[0]; i++)
        if (g_units[i].k == d->k && strcmp(g_units[i].unit, unit) == 0) {
            exp10 = g_units[i].exp10, mul = g_units[i].mul, found = 1;
        }
    if (!found)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' needs a unit of %s", origin, line, d->key, val, g_unit_hint[d->k]);
    if (exp10 != 0 && strpbrk(digits, "eE") == NULL)
        snprintf(digits + n, sizeof digits - n, "e%d", exp10);
    else if (exp10 != 0)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s': give either an exponent or a unit prefix", origin, line, d->key,
                       val);
    double v = strtod(digits, NULL) * mul;
    if (!(v >= 0) || v > 1e30)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: %s is negative or out of range (a figure is >= 0)", origin, line,
                       d->key, val);
    if (v == 0 && !d->zero_ok)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: 0 is not a valid figure for this key (only bf16, fp8, fp8_block_scaled, "
                                  "dispatch_block, coll_dispatch, nccl_* and flash_* may be 0: not supported or not "
                                  "measured)",
                       origin, line, d->key);
    /* a count goes into an int: compared before the cast (a double beyond int's range is undefined there) */
    if (d->k == K_COUNT && v > ZP_GPU_MAX_COUNT)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: %s is out of range (a count is at most %d)", origin, line, d->key, val,
                       ZP_GPU_MAX_COUNT);
    if ((d->k == K_COUNT || d->k == K_FLAG) && ((d->k == K_FLAG && v > 1) || v != (double)(int)v))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is not %s", origin, line, d->key, val, g_unit_hint[d->k]);
    if (d->k == K_FRACTION && v > 1)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: %s is not %s", origin, line, d->key, val, g_unit_hint[d->k]);
    *out = v;
    return ZP_OK;
}

/* One "key = value # source: text" line into g; seen[] marks the keys met. */
static zp_status parse_line(char *s, const char *origin, int line, zp_gpu *g, int *seen)
{
    char *hash = strchr(s, '#'), *eq = strchr(s, '=');
    if (!eq || (hash && hash < eq))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: '%s' is not 'key = value  # source: ...'", origin, line, zp_io_trim(s));
    *eq = '\0';
    const char *key = zp_io_trim(s);
    const key_def *d = NULL;
    for (int i = 0; i < NKEYS && !d; i++)
        if (strcmp(g_keys[i].key, key) == 0)
            d = &g_keys[i];
    if (!d)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: unknown key '%s' (see the README's \"GPU spec files\" for the keys)",
                       origin, line, key);
    if (seen[d - g_keys]++)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s is given twice", origin, line, d->key);
    const char *src = hash ? zp_io_trim(hash + 1) : "";
    if (strncmp(src, "source:", 7) != 0 || *zp_io_trim((char *)src + 7) == '\0')
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s has no source: end the line with '# source: <datasheet or benchmark>'",
                       origin, line, d->key);
    if (hash)
        *hash = '\0';
    char *val = zp_io_trim(eq + 1);
    if (*val == '\0')
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s has no value", origin, line, d->key);
    char *field = (char *)g + d->off;
    if (d->k == K_TOPO) {
        if (strcmp(val, "switch") != 0 && strcmp(val, "mesh") != 0)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is not %s", origin, line, d->key, val, g_unit_hint[d->k]);
        *(int *)(void *)field = strcmp(val, "mesh") == 0;
        return ZP_OK;
    }
    if (d->k == K_TEXT) {
        size_t cap = d->off == offsetof(zp_gpu, name) ? sizeof g->name : sizeof g->description;
        if (strlen(val) >= cap)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s is longer than %zu characters", origin, line, d->key, cap - 1);
        memcpy(field, val, strlen(val) + 1);
        return ZP_OK;
    }
    double v = 0;
    ZP_TRY(parse_number(d, val, origin, line, &v));
    if (d->k == K_COUNT || d->k == K_FLAG)
        *(int *)(void *)field = (int)v;
    else
        *(double *)(void *)field = v;
    return ZP_OK;
}

zp_status zp_gpu_parse(const char *text, const char *origin, zp_gpu *out)
{
    zp_gpu g;
    memset(&g, 0, sizeof g);
    int seen[NKEYS] = {0}, line = 0;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char buf[1024];
        line++;
        if (n >= sizeof buf)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: line longer than %zu characters", origin, line, sizeof buf - 1);
        memcpy(buf, p, n);
        buf[n] = '\0';
        p = nl ? nl + 1 : NULL;
        char *s = zp_io_trim(buf);
        if (*s == '\0' || *s == '#')
            continue;
        ZP_TRY(parse_line(s, origin, line, &g, seen));
    }
    for (int i = 0; i < NKEYS; i++)
        if (!seen[i] && !g_keys[i].optional)
            return ZP_FAIL(ZP_EINVAL, "%s: %s is missing (every key is required, 0 where the README allows it)",
                           origin, g_keys[i].key);
    if (g.intra_mesh && !(g.link_bw > 0))
        return ZP_FAIL(ZP_EINVAL, "%s: intra_topology = mesh needs link_bw, the bandwidth of one peer link per "
                                  "direction (e.g. link_bw = 64 GB/s  # source: ...)",
                       origin);
    if (!g.intra_mesh && g.link_bw > 0)
        return ZP_FAIL(ZP_EINVAL, "%s: link_bw is a mesh's peer link: give intra_topology = mesh, or drop link_bw "
                                  "(a switch's bandwidth is nvlink_bw)",
                       origin);
    if (g.fp8_mx && !(g.fp8 > 0))
        return ZP_FAIL(ZP_EINVAL, "%s: fp8_block_scaled = 1 says the FP8 tensor cores apply block scales, but fp8 is "
                                  "0 (give the FP8 peak, or drop fp8_block_scaled)",
                       origin);
    snprintf(g.origin, sizeof g.origin, "%s", origin);
    *out = g;
    return ZP_OK;
}

zp_status zp_gpu_read(const char *path, zp_gpu *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ZP_FAIL(ZP_ENOENT, "--gpu: cannot read %s (a GPU preset name or a spec file; see `zplan gpus`)", path);
    char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    int big = !feof(f);
    fclose(f);
    if (big)
        return ZP_FAIL(ZP_EINVAL, "--gpu: %s is larger than %zu bytes: not a GPU spec file", path, sizeof text - 1);
    text[n] = '\0';
    return zp_gpu_parse(text, path, out);
}

int zp_gpu_preset_count(void) { return zp_gpu_preset_n; }

const char *zp_gpu_preset_file(int i) { return i >= 0 && i < zp_gpu_preset_n ? zp_gpu_preset_files[i] : NULL; }

const char *zp_gpu_preset_text(int i) { return i >= 0 && i < zp_gpu_preset_n ? zp_gpu_preset_texts[i] : NULL; }

zp_status zp_gpu_preset(int i, zp_gpu *out)
{
    if (i < 0 || i >= zp_gpu_preset_n)
        return ZP_FAIL(ZP_EINVAL, "no GPU preset %d", i);
    char origin[96];
    snprintf(origin, sizeof origin, "gpus/%s", zp_gpu_preset_files[i]);
    ZP_TRY(zp_gpu_parse(zp_gpu_preset_texts[i], origin, out));
    snprintf(out->origin, sizeof out->origin, "preset");
    return ZP_OK;
}

zp_status zp_gpu_find(const char *name, zp_gpu *out)
{
    size_t n = strlen(name);
    size_t stem = n > 4 && strcasecmp(name + n - 4, ".gpu") == 0 ? n - 4 : n;
    for (int i = 0; i < zp_gpu_preset_n; i++) {
        const char *f = zp_gpu_preset_files[i];
        if (strchr(name, '/') == NULL && strlen(f) == stem + 4 && strncasecmp(f, name, stem) == 0)
            return zp_gpu_preset(i, out);
    }
    if (strchr(name, '/') || stem != n || access(name, R_OK) == 0) /* a path, a .gpu name, or a file here */
        return zp_gpu_read(name, out);
    char list[1024] = "";
    for (int i = 0, k = 0; i < zp_gpu_preset_n; i++)
        k += snprintf(list + k, k < (int)sizeof list ? sizeof list - (size_t)k : 0, "%s%.*s", i ? ", " : "",
                      (int)strlen(zp_gpu_preset_files[i]) - 4, zp_gpu_preset_files[i]);
    return ZP_FAIL(ZP_EINVAL, "--gpu: unknown GPU '%s' (presets: %s; or a spec file path; see `zplan gpus`)", name,
                   list);
}

zp_status zp_gpu_apply(const zp_gpu *g, zp_cluster *c)
{
    int gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1, dom = g->nvlink_domain;
    if (dom % gpn != 0 && gpn % dom != 0)
        return ZP_FAIL(ZP_EINVAL,
                       "--gpu %s: its NVLink domain of %d GPUs and the %s nodes of %d GPUs do not tile each other "
                       "(one must divide the other)",
                       g->name, dom, c->name, gpn);
    c->gpu_name = g->name;
    c->gpu_mem = g->hbm;
    c->peak_flops = g->fp16;
    c->peak_flops_bf16 = g->bf16;
    c->peak_flops_fp8 = g->fp8;
    c->fp8_mx = g->fp8_mx;
    c->gemm_efficiency = g->gemm_efficiency;
    c->sms = g->sms;
    c->kernel_launch = g->kernel_launch;
    c->dispatch = g->dispatch;
    c->dispatch_block = g->dispatch_block;
    c->coll_dispatch = g->coll_dispatch;
    c->nccl_ctas = g->nccl_ctas;
    c->nccl_ll128 = g->nccl_ll128;
    c->nccl_ll_base = g->nccl_ll_base;
    c->nccl_ll_hop = g->nccl_ll_hop;
    c->flash_efficiency = g->flash_efficiency;
    c->flash_seq_half = g->flash_seq_half;
    c->tdp_w = g->tdp_w;
    c->hbm_bw = g->hbm_bw;
    c->nvlink_bw = g->nvlink_bw;
    c->nvlink_efficiency = g->nvlink_efficiency;
    c->nvlink_latency = g->nvlink_latency;
    c->peak_flops_fp32 = g->fp32;
    c->clock = g->clock;
    c->nvlink_domain = dom;
    c->nic_bw = g->nic_bw;
    c->intra_mesh = g->intra_mesh;
    c->link_bw = g->link_bw;
    return ZP_OK;
}
