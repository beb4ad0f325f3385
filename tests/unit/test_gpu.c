/* GPU spec files (vocab/zp_gpu.h): a good file's figures exactly as C literals would be, each error kind
 * named with its key and line, every embedded preset parsing, and the cluster presets' GPU figures equal
 * to the literals they had before they moved into the files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "zp_cluster.h"
#include "zp_dims.h"
#include "zp_gpu.h"
#include "../zp_test.h"

/* A complete spec; tests replace or drop one line of it. */
static const char GOOD[] =
    "# a test GPU\n"
    "name = TEST-GPU  # source: test\n"
    "description = a test GPU  # source: test\n"
    "fp32 = 67 TFLOP/s  # source: datasheet\n"
    "fp16 = 989 TFLOP/s # source: datasheet\n"
    "bf16 = 0.989 PFLOP/s # source: datasheet\n"
    "fp8 = 0  # source: none\n"
    "hbm = 80 GiB  # source: datasheet\n"
    "hbm_bw = 3.35 TB/s  # source: datasheet\n"
    "sms = 132  # source: whitepaper\n"
    "clock = 1830 MHz  # source: whitepaper\n"
    "tdp = 700 W  # source: datasheet\n"
    "nvlink_domain = 8  # source: datasheet\n"
    "nvlink_bw = 450 GB/s  # source: datasheet\n"
    "nvlink_efficiency = 0.78  # source: nccl-tests\n"
    "nvlink_latency = 4 us  # source: NCCL\n"
    "nic_bw = 400 Gb/s  # source: datasheet\n"
    "gemm_efficiency = 0.78  # source: mamf-finder\n"
    "kernel_launch = 3 us  # source: benchmark\n"
    "dispatch = 10e-6 s  # source: benchmark\n"
    "nccl_ctas = 24  # source: NCCL INFO\n"
    "nccl_ll128 = 1  # source: NCCL\n"
    "nccl_ll_base = 6.0 us  # source: nccl-tests\n"
    "nccl_ll_hop = 1.98 us  # source: nccl-tests\n"
    "flash_efficiency = 0.34  # source: FA2\n"
    "flash_seq_half = 500  # source: FA2\n";

/* GOOD with the line starting "key =" replaced by `line` (NULL: dropped). */
static void edit(const char *key, const char *line, char *out, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s = ", key);
    const char *at = strstr(GOOD, pat);
    cr_assert(at, "%s", key);
    const char *end = strchr(at + 1, '\n');
    snprintf(out, cap, "%.*s%s%s%s", (int)(at - GOOD + 1), GOOD, line ? line : "", line ? "\n" : "", end + 1);
}

static void expect_error(const char *key, const char *line, const char *want)
{
    char text[4096];
    zp_gpu g;
    edit(key, line, text, sizeof text);
    cr_assert_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_EINVAL, "%s accepted", line ? line : key);
    cr_expect(strstr(zp_error_message(), want), "message '%s' lacks '%s'", zp_error_message(), want);
}

Test(gpu, good_file_figures_exact)
{
    zp_gpu g;
    cr_assert_eq(zp_gpu_parse(GOOD, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_str_eq(g.name, "TEST-GPU");
    cr_expect_eq(g.fp16, 989e12);
    cr_expect_eq(g.bf16, 989e12); /* 0.989 PFLOP/s: the digits and the unit's exponent read as one literal */
    cr_expect_eq(g.fp8, 0);
    cr_expect_eq(g.hbm, 80 * 1073741824.0);
    cr_expect_eq(g.hbm_bw, 3350e9);
    cr_expect_eq(g.nic_bw, 50e9);
    cr_expect_eq(g.clock, 1830e6);
    cr_expect_eq(g.nvlink_latency, 4e-6);
    cr_expect_eq(g.nccl_ll_hop, 1.98e-6);
    cr_expect_eq(g.dispatch, 10e-6);
    cr_expect_eq(g.sms, 132);
    cr_expect_eq(g.nvlink_domain, 8);
    cr_expect_eq(g.flash_seq_half, 500);
}

Test(gpu, unsourced_figure_names_key_and_line)
{
    expect_error("hbm_bw", "hbm_bw = 3.35 TB/s", "t.gpu:9: hbm_bw has no source");
    expect_error("hbm_bw", "hbm_bw = 3.35 TB/s  # datasheet", "hbm_bw has no source");
    expect_error("hbm_bw", "hbm_bw = 3.35 TB/s  # source:", "hbm_bw has no source");
}

Test(gpu, missing_figure_named)
{
    expect_error("sms", NULL, "t.gpu: sms is missing");
    expect_error("fp8", NULL, "fp8 is missing");
}

Test(gpu, negative_figure_named)
{
    expect_error("tdp", "tdp = -700 W  # source: x", "t.gpu:12: tdp: -700 W is negative");
}

/* fp8_block_scaled: optional, a flag, and only beside an FP8 peak. */
Test(gpu, fp8_block_scaled_needs_fp8)
{
    zp_gpu g;
    cr_assert_eq(zp_gpu_parse(GOOD, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(g.fp8_mx, 0);
    expect_error("fp8", "fp8 = 0  # source: none\nfp8_block_scaled = 1  # source: x",
                 "fp8_block_scaled = 1 says the FP8 tensor cores apply block scales, but fp8 is 0");
    expect_error("fp8", "fp8 = 1979 TFLOP/s  # source: x\nfp8_block_scaled = 2  # source: x",
                 "fp8_block_scaled: '2' is not 0 or 1");
    char text[4096];
    edit("fp8", "fp8 = 1979 TFLOP/s  # source: x\nfp8_block_scaled = 1  # source: x", text, sizeof text);
    cr_assert_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(g.fp8_mx, 1);
}

Test(gpu, unknown_key_named)
{
    expect_error("tdp", "tdp_watts = 700 W  # source: x", "t.gpu:12: unknown key 'tdp_watts'");
}

Test(gpu, wrong_unit_bad_number_zero_fraction_duplicate)
{
    expect_error("hbm_bw", "hbm_bw = 3.35 TB  # source: x", "hbm_bw: '3.35 TB' needs a unit of B/s");
    expect_error("hbm", "hbm = 80  # source: x", "hbm: '80' needs a unit");
    expect_error("sms", "sms = many  # source: x", "sms: 'many' is not a number");
    expect_error("sms", "sms = 13.5  # source: x", "is not a whole number");
    expect_error("fp16", "fp16 = 0  # source: x", "fp16: 0 is not a valid figure");
    expect_error("gemm_efficiency", "gemm_efficiency = 78  # source: x", "is not a fraction");
    expect_error("nccl_ll128", "nccl_ll128 = 2  # source: x", "nccl_ll128: '2' is not 0 or 1");
    /* beyond int's range: refused before the cast (fuzz_gpu found the undefined conversion) */
    expect_error("sms", "sms = 3000000000  # source: x", "sms: 3000000000 is out of range (a count is at most");
    expect_error("nccl_ll128", "nccl_ll128 = 5e9  # source: x", "nccl_ll128: '5e9' is not 0 or 1");
    expect_error("sms", "sms = 132  # source: x\nsms = 132  # source: y", "sms is given twice");
    expect_error("sms", "sms 132  # source: x", "is not 'key = value");
}

Test(gpu, every_preset_parses_and_is_found_by_name)
{
    cr_assert_geq(zp_gpu_preset_count(), 5);
    for (int i = 0; i < zp_gpu_preset_count(); i++) {
        zp_gpu g, h;
        cr_assert_eq(zp_gpu_preset(i, &g), ZP_OK, "%s: %s", zp_gpu_preset_file(i), zp_error_message());
        char stem[80];
        snprintf(stem, sizeof stem, "%s", zp_gpu_preset_file(i));
        stem[strlen(stem) - 4] = '\0';
        cr_expect_eq(zp_gpu_find(stem, &h), ZP_OK, "%s", stem);
        cr_expect_str_eq(h.name, g.name);
        cr_expect_eq(zp_gpu_find(g.name, &h), ZP_OK, "%s: the name finds the file (case-insensitive)", g.name);
        cr_expect(g.fp16 >= g.bf16 || g.bf16 == 0, "%s", g.name);
    }
    zp_gpu g;
    cr_expect_eq(zp_gpu_find("no-such-gpu", &g), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "h100-sxm5-80gb"), "the message lists the presets: %s", zp_error_message());
    cr_expect_eq(zp_gpu_find("/no/such/file.gpu", &g), ZP_ENOENT);
}

/* The figures the cluster rows held as C literals before they moved into gpus/: the same doubles. */
Test(gpu, cluster_presets_keep_their_figures)
{
    const zp_cluster *c = zp_test_preset("dgx2");
    cr_expect_eq(c->gpu_mem, 32 * 1073741824.0);
    cr_expect_eq(c->peak_flops, 125e12);
    cr_expect_eq(c->peak_flops_bf16, 0);
    cr_expect_eq(c->gemm_efficiency, 0.66);
    cr_expect_eq(c->sms, 80);
    cr_expect_eq(c->nccl_ctas, 12);
    cr_expect_eq(c->nccl_ll128, 0);
    cr_expect_eq(c->nccl_ll_base, 0);
    cr_expect_eq(c->hbm_bw, 900e9);
    cr_expect_eq(c->nvlink_bw, 150e9);
    cr_expect_eq(c->nvlink_latency, 5e-6);
    cr_expect_eq(c->tdp_w, 350);
    cr_expect_eq(c->flash_efficiency, 0);
    cr_expect_eq(c->unfused_kernels, 1);
    cr_expect_str_eq(c->gpu_name, "V100-SXM3-32GB");
    cr_assert_eq(zp_cluster_find("dgx-a100-40gb", &c), ZP_OK);
    cr_expect_eq(c->gpu_mem, 40 * 1073741824.0);
    cr_expect_eq(c->hbm_bw, 1555e9);
    cr_expect_eq(c->peak_flops_bf16, 312e12);
    cr_expect_eq(c->gemm_efficiency, 0.77);
    cr_expect_eq(c->nccl_ll_base, 6.0e-6);
    cr_expect_eq(c->nccl_ll_hop, 1.98e-6);
    cr_expect_eq(c->flash_efficiency, 0.60);
    cr_expect_eq(c->flash_seq_half, 500);
    cr_expect_eq(c->peak_flops_fp8, 0);
    cr_assert_eq(zp_cluster_find("dgx-h100-railopt", &c), ZP_OK);
    cr_expect_eq(c->hbm_bw, 3350e9);
    cr_expect_eq(c->peak_flops, 989e12);
    cr_expect_eq(c->peak_flops_fp8, 1979e12);
    cr_expect_eq(c->nvlink_bw, 450e9);
    cr_expect_eq(c->nvlink_latency, 4e-6);
    cr_expect_eq(c->tdp_w, 700);
    cr_expect_eq(c->flash_efficiency, 0.34);
    cr_expect_eq(c->gemm_efficiency, 0.78);
    cr_assert_eq(zp_cluster_find("dgx-h200", &c), ZP_OK);
    cr_expect_eq(c->gpu_mem, 141 * 1073741824.0);
    cr_expect_eq(c->hbm_bw, 4800e9);
    cr_expect_eq(c->peak_flops_fp8, 1979e12);
}

/* Each cluster preset's GPU is its own preset, and the GPU's reference NIC is the node's per GPU. */
Test(gpu, cluster_presets_and_their_gpus_agree)
{
    for (int i = 0; i < zp_cluster_count(); i++) {
        const zp_cluster *c = zp_cluster_get(i);
        zp_gpu g;
        cr_assert_eq(zp_gpu_find(c->gpu, &g), ZP_OK, "%s: %s", c->name, zp_error_message());
        cr_expect_str_eq(c->gpu_name, g.name);
        cr_expect_eq(c->nic_bw, zp_cluster_node_ib_bw(c) / c->gpus_per_node, "%s", c->name);
        cr_expect(zp_cluster_domain(c) % c->gpus_per_node == 0 || c->gpus_per_node % zp_cluster_domain(c) == 0,
                  "%s", c->name);
    }
}

Test(gpu, apply_replaces_gpu_keeps_node)
{
    const zp_cluster *h100 = zp_test_preset("dgx-h100");
    zp_gpu g;
    cr_assert_eq(zp_gpu_parse(GOOD, "t.gpu", &g), ZP_OK);
    zp_cluster c = *h100;
    cr_assert_eq(zp_gpu_apply(&g, &c), ZP_OK);
    cr_expect_str_eq(c.gpu_name, "TEST-GPU");
    cr_expect_eq(c.ib_rail_bw, h100->ib_rail_bw);
    cr_expect_eq(c.host_mem, h100->host_mem);
    g.nvlink_domain = 3; /* neither divides the node of 8 nor is a multiple of it */
    cr_expect_eq(zp_gpu_apply(&g, &c), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "NVLink domain of 3 GPUs"), "%s", zp_error_message());
}

/* GB200 NVL72: trays of 4, one NVLink domain of 72: the domain is what "inside a node" means for the
 * simulation and the search, its NICs those of its 18 trays; the host figures stay a tray's. */
Test(gpu, nvl72_domain_spans_trays)
{
    const zp_cluster *c = zp_test_preset("gb200-nvl72");
    cr_expect_eq(c->gpus_per_node, 4);
    cr_expect_eq(zp_cluster_domain(c), 72);
    cr_expect_eq(zp_cluster_domain_rails(c), 72);
    cr_expect_eq(zp_cluster_domain_ib_bw(c), 72 * 50e9);
    cr_expect_eq(zp_cluster_host_per_gpu(c, 0, 144), 960e9 / 4);
    const zp_cluster *h = zp_test_preset("dgx-h100");
    cr_expect_eq(zp_cluster_domain(h), 8);
    cr_expect_eq(zp_cluster_domain_rails(h), 8);
    cr_expect_eq(zp_cluster_domain_ib_bw(h), zp_cluster_node_ib_bw(h));
}

/* The TP search range over a 72-GPU domain: the degrees that tile it (1, 2, 4, 8) on 144 GPUs, and up to 64
 * when a 64-GPU job fills part of one domain; over 8-GPU nodes unchanged (1..8). */
static int tp_range(int64_t gpus, int domain, int64_t *out)
{
    static zp_model m; /* 128 heads: every power of two up to 128 splits them */
    m.layers = 8, m.hidden = 16384, m.heads = 128, m.seq = 2048, m.vocab = 32000;
    zp_dim_ctx c;
    zp_dims_ctx_init(&c, &m, gpus, domain, 0);
    const zp_dim_type *tp = zp_dims_get(ZP_DIM_TP);
    int n = 0;
    for (int64_t t = tp->next(&c, 0); t > 0 && n < 16; t = tp->next(&c, t))
        out[n++] = t;
    return n;
}

Test(gpu, tp_range_uses_the_domain)
{
    int64_t t[16];
    int n = tp_range(144, 72, t);
    cr_expect_eq(n, 4, "144 GPUs on 72-GPU domains: %d degrees", n);
    cr_expect_eq(t[n - 1], 8);
    n = tp_range(64, 72, t);
    cr_expect_eq(n, 7, "64 GPUs of one 72-GPU domain: %d degrees", n);
    cr_expect_eq(t[n - 1], 64);
    n = tp_range(64, 8, t);
    cr_expect_eq(n, 4);
    cr_expect_eq(t[n - 1], 8);
}

/* The intra-domain topology (optional keys): absent, a switch; mesh needs link_bw; link_bw needs a mesh; a
 * value other than switch or mesh is named. */
Test(gpu, intra_topology_keys)
{
    char text[4096];
    zp_gpu g;
    cr_assert_eq(zp_gpu_parse(GOOD, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(g.intra_mesh, 0, "absent: a switch");
    cr_expect_eq(g.link_bw, 0);
    snprintf(text, sizeof text, "%sintra_topology = mesh  # source: t\nlink_bw = 64 GB/s  # source: t\n", GOOD);
    cr_assert_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(g.intra_mesh, 1);
    cr_expect_eq(g.link_bw, 64e9);
    snprintf(text, sizeof text, "%sintra_topology = switch  # source: t\n", GOOD);
    cr_assert_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(g.intra_mesh, 0);
    snprintf(text, sizeof text, "%sintra_topology = mesh  # source: t\n", GOOD);
    cr_expect_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "intra_topology = mesh needs link_bw"), "%s", zp_error_message());
    snprintf(text, sizeof text, "%slink_bw = 64 GB/s  # source: t\n", GOOD);
    cr_expect_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "link_bw is a mesh's peer link"), "%s", zp_error_message());
    snprintf(text, sizeof text, "%sintra_topology = torus  # source: t\n", GOOD);
    cr_expect_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "t.gpu:27: intra_topology: 'torus' is not switch or mesh"), "%s",
              zp_error_message());
    snprintf(text, sizeof text, "%sintra_topology = mesh  # source: t\nlink_bw = -64 GB/s  # source: t\n", GOOD);
    cr_expect_eq(zp_gpu_parse(text, "t.gpu", &g), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "link_bw: -64 GB/s is negative"), "%s", zp_error_message());
}

/* A switch gives every group inside the domain the whole port; MI300X's xGMI mesh gives a group of g the g-1
 * links among its GPUs: (g-1) x 64 GB/s x 0.71, TP-8 all seven (318 GB/s), TP-2 one (45.4 GB/s). */
Test(gpu, group_bw_switch_and_mesh)
{
    const zp_cluster *h, *m;
    cr_assert_eq(zp_cluster_find("dgx-h100", &h), ZP_OK);
    cr_assert_eq(zp_cluster_find("mi300x-node", &m), ZP_OK);
    for (int g = 2; g <= 8; g *= 2) {
        cr_expect_eq(zp_cluster_group_bw(h, g), h->nvlink_bw * h->nvlink_efficiency, "switch, %d GPUs", g);
        cr_expect_eq(zp_cluster_group_share(h, g), 1.0);
    }
    cr_expect_eq(m->intra_mesh, 1);
    cr_expect_eq(m->link_bw, 64e9);
    cr_expect_eq(m->nvlink_bw, 448e9);
    cr_expect_float_eq(zp_cluster_group_bw(m, 8), 7 * 64e9 * 0.71, 1e3);
    cr_expect_float_eq(zp_cluster_group_bw(m, 4), 3 * 64e9 * 0.71, 1e3);
    cr_expect_float_eq(zp_cluster_group_bw(m, 2), 1 * 64e9 * 0.71, 1e3);
    cr_expect_float_eq(zp_cluster_group_share(m, 2), 1.0 / 7, 1e-12);
    /* the mesh follows the GPU into another cluster (--gpu mi300x) */
    zp_gpu g;
    zp_cluster c = *h;
    cr_assert_eq(zp_gpu_find("mi300x", &g), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_gpu_apply(&g, &c), ZP_OK);
    cr_expect_float_eq(zp_cluster_group_bw(&c, 2), zp_cluster_group_bw(m, 2), 1e-3);
}
