/* zp_cli_opts.c — the option table and its parser (see zp_cli_opts.h). One row per option: its name,
 * whether it takes a value, the commands that take it, and the setter that reads the value into
 * zp_cli_args (through zp_size.h, so every number takes the same suffixes and gives the same errors). */
#include "zp_cli_opts.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "zp_device.h"
#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_framework.h"
#include "zp_pipeline.h"
#include "zp_size.h"

/* ---- setters: (args, "--name", value or NULL) ---- */

typedef zp_status (*setter)(zp_cli_args *a, const char *opt, const char *v);

#define STR(fn, field)                                                \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        (void)opt;                                                    \
        a->field = v;                                                 \
        return ZP_OK;                                                 \
    }
#define FLAG(fn, field, value)                                        \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        (void)opt;                                                    \
        (void)v;                                                      \
        a->field = (value);                                           \
        return ZP_OK;                                                 \
    }
#define INT(fn, field, lo, hi)                                        \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        return zp_size_parse_int(v, opt, (lo), (hi), &a->field);       \
    }
#define RANGE(fn, field, lo, hi)                                      \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        return zp_size_parse_range(v, opt, (lo), (hi), &a->field);     \
    }
/* A keyword read by its module's parser (which names the choices in its message) into an int field. */
#define ENUM(fn, type, parse, field)                                  \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        (void)opt;                                                    \
        type x;                                                       \
        ZP_TRY(parse(v, &x));                                         \
        a->field = (int)x;                                            \
        return ZP_OK;                                                 \
    }
/* A plan option given: its value into the request's base plan (or the request's own field) and its bit of
 * the search mask cleared (zp_search_req_give): it is no longer searched. */
#define GIVEN_INT(fn, field, bit, lo, hi)                             \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        ZP_TRY(zp_size_parse_int(v, opt, (lo), (hi), &a->r.field));    \
        zp_search_req_give(&a->r, (bit));                             \
        return ZP_OK;                                                 \
    }
#define GIVEN_ENUM(fn, type, parse, field, bit)                       \
    static zp_status fn(zp_cli_args *a, const char *opt, const char *v) \
    {                                                                 \
        (void)opt;                                                    \
        type x;                                                       \
        ZP_TRY(parse(v, &x));                                         \
        a->r.base.field = x;                                          \
        zp_search_req_give(&a->r, (bit));                             \
        return ZP_OK;                                                 \
    }

STR(set_model, model)
STR(set_models, models)
STR(set_cluster, cluster)
STR(set_preset, preset)
STR(set_profile, profile)
STR(set_gpus, gpus)
STR(set_out, out)
STR(set_trace, r.trace_path)
STR(set_grid, grid)
STR(set_partial, partial)
STR(set_ds_config, ds_config)
STR(set_emit_ds, emit_ds)
STR(set_emit_megatron, emit_megatron)
STR(set_emit_torchtitan, emit_torchtitan)
STR(set_backend, backend)
STR(set_replay, replay)
STR(set_dp_list, dp_list)
STR(set_ranks, ranks)
STR(set_stages, stages)
STR(set_reps, reps)
STR(set_warmup, warmup)
STR(set_max_bytes, max_bytes)
STR(set_hidden, hidden)
STR(set_tokens, tokens)
STR(set_gpu, gpu)
FLAG(set_help, help, 1)
FLAG(set_no_md, r.base.md, 0)
FLAG(set_analytic, r.simulate, 0)
FLAG(set_exact, r.exact, 1)
FLAG(set_validate, validate, 1)
FLAG(set_quick, quick, 1)
FLAG(set_max_model, max_model, 1)
RANGE(set_train_tokens, train_tokens, 1, 1e18)
RANGE(set_gpu_hour_price, gpu_hour_price, 0, 1e6)

/* --flash-attention, --no-flash-attention: the default is by the GPU (zp_search_flash_default). */
static zp_status set_flash(zp_cli_args *a, const char *opt, const char *v)
{
    (void)v;
    a->r.base.flash_attn = strcmp(opt, "--no-flash-attention") != 0;
    a->flash_given = 1;
    return ZP_OK;
}

/* An on|off option's value into *on (1 on, 0 off); another word exits 2 saying what each means. */
static zp_status on_off(const char *opt, const char *v, const char *on_means, const char *off_means, int *on)
{
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
        return ZP_FAIL(ZP_EINVAL, "%s '%s': use on (%s) or off (%s)", opt, v, on_means, off_means);
    *on = strcmp(v, "on") == 0;
    return ZP_OK;
}

/* --compile on|off: torch.compile of the blocks (on, the default: their elementwise ops fused, as every answer
 * before this option) or PyTorch eager's separate kernels (off; zp_plan.eager). */
static zp_status set_compile(zp_cli_args *a, const char *opt, const char *v)
{
    int on = 1;
    ZP_TRY(on_off(opt, v, "torch.compile: fused elementwise kernels", "PyTorch eager's separate kernels", &on));
    a->r.base.eager = !on;
    a->compile_given = 1;
    return ZP_OK;
}

/* --json: --format json. */
static zp_status set_json(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    a->fmt = ZP_FMT_JSON;
    a->fmt_given = 1;
    return ZP_OK;
}
FLAG(set_accum_fusion, r.base.grad_accum_fusion, 1)
FLAG(set_no_cb, r.base.cb, 0)
GIVEN_INT(set_micro, base.micro_batch, ZP_SEARCH_MICRO_BATCH, 1, ZP_MAX_MICRO_BATCH)
GIVEN_INT(set_global, global_batch, ZP_SEARCH_GLOBAL_BATCH, 1, INT64_C(1) << 50)
GIVEN_INT(set_accum, base.grad_accum, ZP_SEARCH_ACCUM, 1, INT64_C(1) << 30)
INT(set_rank, rank, 0, ZP_MAX_GPUS - 1)
INT(set_steps, steps, 1, INT64_C(1) << 20)
INT(set_seed, seed, 0, 0x7fffffffL)
/* DeepSpeed's stage-3 limits, in elements (suffixes: 1G = 1e9). */
RANGE(set_max_live, r.base.stage3_max_live, 0, 1e15)
RANGE(set_prefetch, r.base.stage3_prefetch, 0, 1e15)
RANGE(set_reserve, r.reserve, 0, 1e15)
RANGE(set_capacity, r.base.capacity_factor, 0.01, 64)
RANGE(set_imbalance, r.base.moe_imbalance, 1, 64)
RANGE(set_oversubscription, r.oversubscription, 1, 1e6)
RANGE(set_min_seconds, min_seconds, 0, 3600)
RANGE(set_lr, lr, 1e-12, 1e3)
RANGE(set_timeout, timeout_s, 1, 1e6)
GIVEN_ENUM(set_schedule, zp_pp_schedule, zp_pp_schedule_parse, schedule, ZP_SEARCH_SCHEDULE)
ENUM(set_cp_comm, zp_cp_comm, zp_cp_comm_parse, r.base.cp_comm)
ENUM(set_dispatcher, int, zp_dispatch_parse, r.base.dispatcher)
GIVEN_ENUM(set_offload, zp_offload, zp_offload_parse, offload, ZP_SEARCH_OFFLOAD)

/* Sharded data parallelism as FSDP2 runs it: stage 3's reshard policy (torchtitan's
 * fsdp_reshard_after_forward) and hybrid sharding's shard group (HSDP's data_parallel_shard_degree, MiCS's
 * mics_shard_size): G DP ranks, or "auto" to search the full group and the node's. */
ENUM(set_reshard, zp_reshard, zp_reshard_parse, r.base.reshard)
static zp_status set_shard_group(zp_cli_args *a, const char *opt, const char *v)
{
    if (strcmp(v, "auto") == 0) {
        a->r.shard_auto = 1;
        return ZP_OK;
    }
    return zp_size_parse_int(v, opt, 1, ZP_MAX_GPUS, &a->r.base.shard_group);
}

/* --flash-kernel names the FlashAttention implementation, and so asks for FlashAttention. */
static zp_status set_flash_kernel(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    ZP_TRY(zp_flash_kernel_parse(v, &a->r.base.flash_kernel));
    a->r.base.flash_attn = 1;
    a->flash_given = 1;
    return ZP_OK;
}

/* --megatron-args, --torchtitan, --nemo: a launch file to judge (its kind, zp_launch.h, by the option). */
static zp_status set_launch(zp_cli_args *a, const char *opt, const char *v)
{
    if (a->launch)
        return ZP_FAIL(ZP_EINVAL, "%s: %s already names the launch to judge (one launch file at a time)", opt,
                       a->launch_opt);
    a->launch = v;
    a->launch_opt = strcmp(opt, "--megatron-args") == 0 ? "--megatron-args"
                    : strcmp(opt, "--torchtitan") == 0  ? "--torchtitan"
                                                        : "--nemo";
    a->launch_kind = a->launch_opt[2] == 'm' ? 0 : a->launch_opt[2] == 't' ? 1 : 2; /* zp_launch_kind's order */
    return ZP_OK;
}

/* --framework: the release whose plans the search offers (zp_framework.h). */
static zp_status set_framework(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    return zp_framework_parse(v, &a->r.framework);
}

static zp_status set_stage(zp_cli_args *a, const char *opt, const char *v)
{
    int64_t s;
    ZP_TRY(zp_size_parse_int(v, opt, 0, 1000, &s));
    if (s > 3)
        return ZP_FAIL(ZP_EINVAL, "--stage: %s is not a ZeRO stage (use 0, 1, 2 or 3)", v);
    a->r.base.stage = (int)s;
    zp_search_req_give(&a->r, ZP_SEARCH_STAGE);
    return ZP_OK;
}

static zp_status set_small_int(const char *opt, const char *v, int64_t lo, int64_t hi, int *out)
{
    int64_t x;
    ZP_TRY(zp_size_parse_int(v, opt, lo, hi, &x));
    *out = (int)x;
    return ZP_OK;
}

static zp_status set_top(zp_cli_args *a, const char *opt, const char *v) { return set_small_int(opt, v, 1, 100000, &a->top); }
static zp_status set_jobs(zp_cli_args *a, const char *opt, const char *v) { return set_small_int(opt, v, 1, 1024, &a->r.jobs); }

/* ZeRO-R's activation option is one of none (--no-pa), Pa (--pa) and Pa+cpu (--pa-cpu): one setter for
 * the three, the option's name says which (as for --checkpoint and --no-checkpoint). */
static zp_status set_pa(zp_cli_args *a, const char *opt, const char *v)
{
    (void)v;
    a->r.base.pa = strcmp(opt, "--no-pa") != 0;
    a->r.base.pa_cpu = strcmp(opt, "--pa-cpu") == 0;
    zp_search_req_give(&a->r, ZP_SEARCH_PA | ZP_SEARCH_PA_CPU);
    return ZP_OK;
}

static zp_status set_checkpoint(zp_cli_args *a, const char *opt, const char *v)
{
    (void)v;
    a->r.checkpoint = strncmp(opt, "--no-", 5) != 0;
    zp_search_req_give_recompute(&a->r, a->r.checkpoint ? ZP_RECOMPUTE_FULL : ZP_RECOMPUTE_NONE);
    a->checkpoint_given = 1;
    return ZP_OK;
}

/* --recompute full|selective|none (--checkpoint and --no-checkpoint are full and none). */
static zp_status set_recompute(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    zp_recompute rc;
    ZP_TRY(zp_recompute_parse(v, &rc));
    zp_search_req_give_recompute(&a->r, rc);
    a->r.checkpoint = rc == ZP_RECOMPUTE_FULL;
    a->checkpoint_given = 1;
    return ZP_OK;
}

/* --recompute-modules LIST: what selective recompute re-runs (Megatron-core's --recompute-modules, commas or
 * spaces between the names); it implies --recompute selective. core_attn alone is the default, kept as 0.
 * auto: the sets of zp_search_rc_ladder searched with selective recompute. */
static zp_status set_rc_modules(zp_cli_args *a, const char *opt, const char *v)
{
    if (strcasecmp(v, "auto") == 0) { /* searched beside no and full recompute (zp_search_rc_ladder) */
        a->r.rc_auto = 1;
        a->r.base.rc_modules = 0u;
        return ZP_OK;
    }
    unsigned mods;
    ZP_TRY(zp_rc_module_parse(v, opt, &mods));
    a->r.base.rc_modules = mods == ZP_RCM_CORE_ATTN ? 0u : mods;
    zp_search_req_give_recompute(&a->r, ZP_RECOMPUTE_SELECTIVE);
    a->r.checkpoint = 0;
    a->checkpoint_given = 1;
    return ZP_OK;
}

/* --checkpoint-every K: full recompute of every K-th block only (torchtitan's selective_ac_option = "K");
 * it implies --recompute full. */
static zp_status set_ckpt_every(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(set_small_int(opt, v, 1, 1000000, &a->r.base.ckpt_every));
    zp_search_req_give_recompute(&a->r, ZP_RECOMPUTE_FULL);
    a->r.checkpoint = 1;
    a->checkpoint_given = 1;
    return ZP_OK;
}

static zp_status set_vstages(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(set_small_int(opt, v, 1, ZP_MAX_VSTAGES, &a->r.base.vstages));
    zp_search_req_give(&a->r, ZP_SEARCH_VSTAGES);
    return ZP_OK;
}

/* ---- uneven pipeline stages (vocab/zp_pipeline.h) ---- */

/* --pp-first-layers / --pp-last-layers N: the first or the last stage's transformer layers. */
static zp_status set_pp_edge(zp_cli_args *a, const char *opt, const char *v)
{
    return set_small_int(opt, v, 1, 1000000, strstr(opt, "first") ? &a->r.base.pp_first : &a->r.base.pp_last);
}

/* --pp-layout: the layers of every stage or virtual stage; the plan points at this process's copy. */
static zp_status set_pp_layout(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    static int layout[ZP_PP_MAX_LAYOUT];
    int n;
    ZP_TRY(zp_pp_layout_parse(v, layout, ZP_PP_MAX_LAYOUT, &n));
    a->r.base.pp_layout = layout;
    a->r.base.pp_layout_n = n;
    return ZP_OK;
}

static zp_status set_sp(zp_cli_args *a, const char *opt, const char *v)
{
    (void)v;
    a->r.base.sp = strncmp(opt, "--no-", 5) != 0;
    zp_search_req_give(&a->r, ZP_SEARCH_SP);
    return ZP_OK;
}

static zp_status set_overlap(zp_cli_args *a, const char *opt, const char *v)
{
    (void)v;
    a->r.base.overlap_comm = strncmp(opt, "--no-", 5) != 0;
    a->overlap_given = 1;
    return ZP_OK;
}

/* --overlap-p2p-comm on|off|all: the interleaved schedule's steady-state pipeline sends beside the next pass
 * (Megatron-LM's default; its --no-overlap-p2p-communication is off), or every send (all: with its
 * --overlap-p2p-communication-warmup-flush). */
static zp_status set_p2p_overlap(zp_cli_args *a, const char *opt, const char *v)
{
    const int all = strcmp(v, "all") == 0;
    if (!all)
        ZP_TRY(on_off(opt, v, "the steady state's sends beside the next pass, Megatron-LM's default; all: every "
                              "send, with --overlap-p2p-communication-warmup-flush",
                      "each send waited for: --no-overlap-p2p-communication", &a->r.base.overlap_p2p_comm));
    else
        a->r.base.overlap_p2p_comm = 1;
    a->r.base.overlap_p2p_warmup_flush = all;
    a->p2p_given = 1;
    return ZP_OK;
}

/* --swiglu-fusion on|off: a SwiGLU as one fused kernel keeping only gate and up for backward (Megatron-core's
 * bias_swiglu_impl, its default), or PyTorch eager's silu(gate) * up, which keeps the SiLU's output too (off:
 * Megatron-LM's --no-bias-swiglu-fusion). */
static zp_status set_swiglu_fusion(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(on_off(opt, v, "one fused kernel keeping gate and up, Megatron-core's default",
                  "eager PyTorch's kernels keeping the SiLU's output too: --no-bias-swiglu-fusion",
                  &a->r.base.swiglu_fusion));
    a->swiglu_given = 1;
    return ZP_OK;
}

/* --overlap-param-gather: the distributed optimizer's parameter all-gather beside the next forward. */
FLAG(set_param_gather, r.base.overlap_param_gather, 1)
/* --overlap-moe-expert-parallel-comm: the EP all-to-alls beside the other micro-batch's compute. */
FLAG(set_ep_overlap, r.base.ep_overlap, 1)
/* --moe-shared-expert-overlap: the shared experts beside the dispatch and combine all-to-alls. */
FLAG(set_shared_overlap, r.base.shared_overlap, 1)
/* --adam-moments TYPE: Adam's m and v in fp32 (default), bf16, fp16 or fp8 (Megatron-core's precision-aware
 * optimizer; DeepSeek-V3's BF16 moments). */
static zp_status set_adam_moments(zp_cli_args *a, const char *opt, const char *v)
{
    const double b = zp_adam_moment_bytes(v);
    if (!(b > 0))
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a moment type (fp32, bf16, fp16 or fp8)", opt, v);
    a->r.base.exp_avg_bytes = a->r.base.exp_avg_sq_bytes = b == 4.0 ? 0.0 : b;
    return ZP_OK;
}
/* --activation-func-fp8-input-store: a SwiGLU's input kept for backward as FP8 (Megatron-core's flag). */
FLAG(set_act_fp8_store, r.base.act_fp8_store, 1)

/* --tp-comm-overlap off|te|async|auto (zp_tp_overlap_parse's words; auto: searched). */
static zp_status set_tp_overlap(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    if (strcasecmp(v, "auto") == 0) {
        zp_search_req_open(&a->r, ZP_SEARCH_TP_OVERLAP);
        return ZP_OK;
    }
    zp_tp_overlap t;
    ZP_TRY(zp_tp_overlap_parse(v, &t));
    a->r.base.tp_overlap = (int)t;
    zp_search_req_give(&a->r, ZP_SEARCH_TP_OVERLAP);
    return ZP_OK;
}

static zp_status set_bucket(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(zp_size_parse_range(v, opt, 1, 1e15, &a->r.base.bucket));
    a->r.base.cb = 1;
    return ZP_OK;
}

/* Where offloaded states live: host memory (cpu) or NVMe (ZeRO-Infinity), for whatever --offload moves. */
static zp_status set_offload_device(zp_cli_args *a, const char *opt, const char *v)
{
    if (strcasecmp(v, "cpu") == 0)
        a->r.base.nvme = 0;
    else if (strcasecmp(v, "nvme") == 0)
        a->r.base.nvme = ZP_NVME_OPTIMIZER | ZP_NVME_PARAMS;
    else
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not cpu or nvme", opt, v);
    return ZP_OK;
}

/* Per command: text, md, csv, json and html for reports and the what-if; text and json where the
 * output is one rank's step or run. */
static zp_status set_format(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    ZP_TRY(zp_format_parse(v, &a->fmt));
    if ((a->cmd & (ZP_CMD_SCHEDULE | ZP_CMD_EXEC)) && a->fmt != ZP_FMT_TEXT && a->fmt != ZP_FMT_JSON)
        return ZP_FAIL(ZP_EINVAL, "--format: %s writes text or json, not '%s'", a->name, v);
    if ((a->cmd & ZP_CMD_LIST) && a->fmt == ZP_FMT_HTML)
        return ZP_FAIL(ZP_EINVAL, "--format: %s writes text, md, csv or json, not '%s'", a->name, v);
    a->fmt_given = 1;
    return ZP_OK;
}

/* --mtp-layers N: the model's multi-token prediction modules (Megatron-core's --mtp-num-layers; 0 drops
 * DeepSeek-V3's, as torchtitan's deepseek_v3 trains it). */
static zp_status set_mtp(zp_cli_args *a, const char *opt, const char *v)
{
    return zp_size_parse_int(v, opt, 0, 64, &a->mtp);
}

/* --seq: tokens, where K and M are binary as every framework's context lengths are (8k = 8,192, 128K =
 * 131,072; Llama 3.1's "128K" is 131,072); Ki/Mi and plain numbers as everywhere. */
static zp_status set_seq(zp_cli_args *a, const char *opt, const char *v)
{
    const size_t n = strlen(v);
    char bin[64];
    if (n >= 2 && n < sizeof bin - 1 && strchr("kKmM", v[n - 1]) && isdigit((unsigned char)v[n - 2])) {
        snprintf(bin, sizeof bin, "%.*s%ci", (int)(n - 1), v, toupper((unsigned char)v[n - 1]));
        v = bin;
    }
    return zp_size_parse_int(v, opt, 1, INT64_C(1) << 30, &a->seq);
}

/* A parallel degree, into the request's degree of the dimension whose option this is (--mp, --ep, --pp:
 * the dimension table's options, vocab/zp_dims.h). */
static zp_status set_degree(zp_cli_args *a, const char *opt, const char *v)
{
    for (int d = 0; d < ZP_NDIMS; d++)
        if (strcmp(zp_dims_get((zp_dim_id)d)->option, opt) == 0) {
            ZP_TRY(zp_size_parse_int(v, opt, 1, ZP_MAX_GPUS, &a->r.base.deg[d]));
            zp_search_req_give(&a->r, ZP_SEARCH_DIM(d));
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "%s: not a parallel dimension's option", opt);
}

/* --mp: the MP degree of a plan, or table2's list of degrees. */
static zp_status set_mp_any(zp_cli_args *a, const char *opt, const char *v)
{
    if (a->cmd & ZP_CMD_TABLE) {
        a->mp_list = v;
        return ZP_OK;
    }
    return set_degree(a, opt, v);
}

/* --report: the what-if's HTML page, or the report a sweep makes of its rows. */
static zp_status set_report(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    if (!(a->cmd & ZP_CMD_SWEEP)) {
        a->report_html = v;
        return ZP_OK;
    }
    if (strcmp(v, "scaling") != 0)
        return ZP_FAIL(ZP_EINVAL, "--report: a sweep makes the report 'scaling', not '%s'", v);
    a->sweep_report = v;
    return ZP_OK;
}

static zp_status set_sim(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    return zp_sim_mode_parse(v, &a->r.sim);
}

/* --precision: the training recipe's types (mixed precision keeps fp32 master weights and Adam's m, v:
 * 12 bytes a parameter; fp32 training keeps 4-byte parameters and gradients, m and v: K = 8). */
static zp_status set_precision(zp_cli_args *a, const char *opt, const char *v)
{
    a->fp8_precision = 0;
    if (strcasecmp(v, "fp16") == 0 || strcasecmp(v, "bf16") == 0) {
        a->r.base.param_bytes = 2.0;
        a->r.base.k_optimizer = ZP_ADAM_K;
        a->r.base.bf16 = v[0] == 'b' || v[0] == 'B';
        a->r.base.fp8 = ZP_FP8_NONE;
    } else if (strcasecmp(v, "fp8") == 0) {
        /* FP8 training: bf16 mixed precision (bf16 parameters, fp32 master weights and Adam: K = 12) with
         * the linear GEMMs in FP8; Transformer Engine's delayed scaling unless --fp8-recipe says (the
         * default of Megatron-core's --fp8-recipe) */
        a->r.base.param_bytes = 2.0;
        a->r.base.k_optimizer = ZP_ADAM_K;
        a->r.base.bf16 = 1;
        a->fp8_precision = 1;
        if (a->r.base.fp8 == ZP_FP8_NONE)
            a->r.base.fp8 = ZP_FP8_DELAYED;
    } else if (strcasecmp(v, "fp32") == 0) {
        a->r.base.param_bytes = 4.0;
        a->r.base.k_optimizer = 8.0;
        a->r.base.bf16 = 0;
        a->r.base.fp8 = ZP_FP8_NONE;
    } else {
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a precision (use fp16, bf16, fp8 or fp32)", opt, v);
    }
    zp_search_req_give(&a->r, ZP_SEARCH_BF16);
    return ZP_OK;
}

/* --fp8-recipe: how --precision fp8 scales and casts (vocab/zp_fp8.h). */
static zp_status set_fp8_recipe(zp_cli_args *a, const char *opt, const char *v)
{
    (void)opt;
    a->fp8_recipe_given = 1;
    return zp_fp8_parse(v, &a->r.base.fp8);
}

/* --fp8-all-gather: FSDP2 all-gathers the parameters in FP8 (torchao's enable_fsdp_float8_all_gather). */
FLAG(set_fp8_all_gather, r.base.fp8_all_gather, 1)

/* --grad-accum-dtype (DeepSpeed's data_types.grad_accum_dtype): fp32 gradients beside 16-bit parameters
 * (Megatron-LM's default), or the parameters' own type. */
static zp_status set_grad_dtype(zp_cli_args *a, const char *opt, const char *v)
{
    if (strcasecmp(v, "fp32") == 0)
        a->r.base.grad_bytes = 4.0;
    else if (strcasecmp(v, "fp16") == 0 || strcasecmp(v, "bf16") == 0 || strcmp(v, "16") == 0)
        a->r.base.grad_bytes = 0.0;
    else
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is not a gradient type (use fp32, or fp16/bf16 as the parameters)", opt, v);
    return ZP_OK;
}

/* --gpu-mem, for every command that takes it (the what-if, report, schedule, compare, table2): bytes, so a
 * bare 80 is 80 bytes; anything below 1 MB is refused with the size it was probably meant to be. */
static zp_status set_gpu_mem(zp_cli_args *a, const char *opt, const char *v)
{
    double x;
    ZP_TRY(zp_size_parse(v, opt, &x));
    if (!(x >= 1e6))
        return ZP_FAIL(ZP_EINVAL, "%s: %s is %.4g bytes, too small to hold anything; sizes are bytes (did you mean "
                                  "%sG = %s GB?)", opt, v, x, v, v);
    a->gpu_mem = v;
    a->gpu_mem_bytes = x;
    return ZP_OK;
}

/* --host-mem: a node's host memory, shared by the GPUs the job runs on it (zp_cluster_host_per_gpu) */
static zp_status set_host_mem(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(zp_size_parse(v, opt, &a->r.host_mem));
    if (!(a->r.host_mem >= 1e6 && a->r.host_mem <= 1e18))
        return ZP_FAIL(ZP_EINVAL, "%s: %s is not a node's host memory (e.g. 1.5T, 512Gi)", opt, v);
    return ZP_OK;
}

static zp_status set_k(zp_cli_args *a, const char *opt, const char *v)
{
    ZP_TRY(zp_size_parse(v, opt, &a->k));
    if (!(a->k > 0 && a->k < 1e6))
        return ZP_FAIL(ZP_EINVAL, "--k: must be a positive number of bytes per parameter");
    return ZP_OK;
}

/* ---- the table ---- */

/* The commands that take a plan. */
#define PLAN (ZP_CMD_WHATIF | ZP_CMD_VIEW | ZP_CMD_SCHEDULE | ZP_CMD_EXEC | ZP_CMD_COMPARE | ZP_CMD_SWEEP)
#define SEARCH (ZP_CMD_WHATIF | ZP_CMD_VIEW | ZP_CMD_SCHEDULE | ZP_CMD_COMPARE | ZP_CMD_SWEEP)
#define SWEEP ZP_CMD_SWEEP
#define VAL ZP_CMD_VALIDATION
#define ALL (PLAN | ZP_CMD_TABLE | ZP_CMD_LIST | ZP_CMD_CALIBRATE | VAL)

typedef struct {
    const char *name;
    char short_name;
    int takes_value;
    int cmds;
    setter set;
} zp_cli_opt;

static const zp_cli_opt g_opts[] = {
    {"help", 'h', 0, ALL, set_help},
    {"output", 'o', 1, ALL, set_out},
    {"format", 0, 1, ALL & ~ZP_CMD_CALIBRATE, set_format},
    {"json", 0, 0, ALL & ~ZP_CMD_CALIBRATE, set_json},
    /* the model and the cluster */
    {"model", 0, 1, PLAN | ZP_CMD_CALIBRATE, set_model},
    {"models", 0, 1, ZP_CMD_VIEW | ZP_CMD_TABLE | VAL | SWEEP, set_models},
    {"seq", 0, 1, PLAN | ZP_CMD_VIEW | ZP_CMD_CALIBRATE, set_seq},
    {"mtp-layers", 0, 1, SEARCH, set_mtp},
    {"gpus", 0, 1, SEARCH, set_gpus},
    {"cluster", 0, 1, SEARCH, set_cluster},
    {"preset", 0, 1, SEARCH, set_preset},
    {"gpu-mem", 0, 1, SEARCH | ZP_CMD_TABLE, set_gpu_mem},
    {"reserve", 0, 1, SEARCH, set_reserve},
    {"host-mem", 0, 1, SEARCH, set_host_mem},
    {"precision", 0, 1, SEARCH, set_precision},
    {"grad-accum-dtype", 0, 1, SEARCH, set_grad_dtype},
    /* FP8 training */
    {"fp8-recipe", 0, 1, SEARCH, set_fp8_recipe},
    {"fp8-all-gather", 0, 0, SEARCH, set_fp8_all_gather},
    {"profile", 0, 1, PLAN | VAL, set_profile},
    /* the plan */
    {"stage", 0, 1, PLAN, set_stage},
    /* the parallel degrees (--ep, --pp, --cp, ...) parse from the dimension table (find_opt); --mp keeps a
     * row for table2's list of MP degrees */
    {"mp", 0, 1, PLAN | ZP_CMD_TABLE, set_mp_any},
    {"capacity-factor", 0, 1, PLAN, set_capacity},
    {"moe-imbalance", 0, 1, PLAN, set_imbalance},
    {"moe-dispatcher", 0, 1, SEARCH, set_dispatcher},
    {"micro-batch", 0, 1, PLAN | VAL | ZP_CMD_CALIBRATE, set_micro},
    {"global-batch", 0, 1, PLAN, set_global},
    {"grad-accum", 0, 1, PLAN, set_accum},
    {"pa", 0, 0, PLAN, set_pa},
    {"no-pa", 0, 0, SEARCH, set_pa},
    {"pa-cpu", 0, 0, SEARCH, set_pa},
    {"offload", 0, 1, PLAN, set_offload},
    {"offload-device", 0, 1, SEARCH, set_offload_device},
    {"max-live-params", 0, 1, SEARCH, set_max_live},
    {"prefetch-bucket", 0, 1, SEARCH, set_prefetch},
    {"checkpoint", 0, 0, PLAN, set_checkpoint},
    {"checkpoint-activations", 0, 0, PLAN, set_checkpoint}, /* Megatron-LM's and DeepSpeed's name */
    {"no-checkpoint", 0, 0, PLAN, set_checkpoint},
    {"recompute", 0, 1, PLAN, set_recompute},
    {"recompute-modules", 0, 1, PLAN, set_rc_modules},
    {"activation-func-fp8-input-store", 0, 0, PLAN, set_act_fp8_store},
    {"swiglu-fusion", 0, 1, PLAN, set_swiglu_fusion},
    {"adam-moments", 0, 1, PLAN, set_adam_moments},
    /* torchtitan's checkpointing modes and torch.compile */
    {"checkpoint-every", 0, 1, PLAN, set_ckpt_every},
    {"cp-comm", 0, 1, PLAN, set_cp_comm},
    {"schedule", 0, 1, PLAN, set_schedule},
    {"virtual-stages", 0, 1, PLAN, set_vstages},
    /* uneven pipeline stages */
    {"pp-first-layers", 0, 1, PLAN, set_pp_edge},
    {"pp-last-layers", 0, 1, PLAN, set_pp_edge},
    {"pp-layout", 0, 1, PLAN, set_pp_layout},
    {"sp", 0, 0, PLAN, set_sp},
    {"no-sp", 0, 0, SEARCH, set_sp},
    {"overlap-comm", 0, 0, PLAN, set_overlap},
    {"no-overlap-comm", 0, 0, PLAN, set_overlap},
    {"no-cb", 0, 0, PLAN, set_no_cb},
    {"bucket", 0, 1, PLAN, set_bucket},
    {"no-md", 0, 0, PLAN, set_no_md},
    {"flash-attention", 0, 0, SEARCH, set_flash},
    {"no-flash-attention", 0, 0, SEARCH, set_flash},
    {"flash-kernel", 0, 1, SEARCH, set_flash_kernel},
    {"grad-accum-fusion", 0, 0, SEARCH, set_accum_fusion},
    {"framework", 0, 1, SEARCH, set_framework},
    {"exact", 0, 0, SEARCH, set_exact},
    /* TP communication overlapped with its GEMMs (Megatron-core's --tp-comm-overlap, torchtitan's async TP) */
    {"tp-comm-overlap", 0, 1, SEARCH, set_tp_overlap},
    {"overlap-param-gather", 0, 0, SEARCH, set_param_gather},
    {"overlap-p2p-comm", 0, 1, SEARCH, set_p2p_overlap},
    {"overlap-moe-expert-parallel-comm", 0, 0, SEARCH, set_ep_overlap},
    {"moe-shared-expert-overlap", 0, 0, SEARCH, set_shared_overlap},
    /* torch.compile of the blocks, or PyTorch eager */
    {"compile", 0, 1, SEARCH, set_compile},
    /* sharded data parallelism beside pipelines, hybrid sharding */
    {"reshard-after-forward", 0, 1, SEARCH, set_reshard},
    {"shard-group", 0, 1, SEARCH, set_shard_group},
    /* how the what-if answers */
    {"analytic", 0, 0, SEARCH, set_analytic},
    {"sim", 0, 1, SEARCH, set_sim},
    {"oversubscription", 0, 1, SEARCH, set_oversubscription},
    {"jobs", 0, 1, SEARCH, set_jobs},
    {"top", 0, 1, ZP_CMD_WHATIF | ZP_CMD_VIEW, set_top},
    {"trace", 0, 1, ZP_CMD_WHATIF | ZP_CMD_SCHEDULE, set_trace},
    {"report", 0, 1, ZP_CMD_WHATIF | SWEEP, set_report},
    {"ds-config", 0, 1, ZP_CMD_WHATIF | ZP_CMD_SCHEDULE, set_ds_config},
    {"emit-ds-config", 0, 1, ZP_CMD_WHATIF, set_emit_ds},
    {"max-model", 0, 0, ZP_CMD_WHATIF, set_max_model},
    {"train-tokens", 0, 1, ZP_CMD_WHATIF, set_train_tokens},
    {"gpu-hour-price", 0, 1, ZP_CMD_WHATIF, set_gpu_hour_price},
    {"emit-megatron-args", 0, 1, ZP_CMD_WHATIF, set_emit_megatron},
    {"emit-torchtitan", 0, 1, ZP_CMD_WHATIF, set_emit_torchtitan},
    {"megatron-args", 0, 1, ZP_CMD_WHATIF, set_launch},
    {"torchtitan", 0, 1, ZP_CMD_WHATIF, set_launch},
    {"nemo", 0, 1, ZP_CMD_WHATIF, set_launch},
    /* schedule */
    {"rank", 0, 1, ZP_CMD_SCHEDULE, set_rank},
    {"replay", 0, 1, ZP_CMD_SCHEDULE, set_replay},
    /* exec */
    {"steps", 0, 1, ZP_CMD_EXEC | VAL, set_steps},
    {"min-seconds", 0, 1, ZP_CMD_EXEC | VAL, set_min_seconds},
    {"seed", 0, 1, ZP_CMD_EXEC, set_seed},
    {"lr", 0, 1, ZP_CMD_EXEC, set_lr},
    {"backend", 0, 1, ZP_CMD_EXEC | ZP_CMD_CALIBRATE, set_backend},
    {"validate", 0, 0, ZP_CMD_EXEC, set_validate},
    {"timeout", 0, 1, ZP_CMD_EXEC | ZP_CMD_CALIBRATE | SWEEP, set_timeout},
    /* sweep */
    {"grid", 0, 1, SWEEP, set_grid},
    {"partial", 0, 1, SWEEP, set_partial},
    /* report table1 / table2 */
    {"dp", 0, 1, ZP_CMD_TABLE, set_dp_list},
    {"k", 0, 1, ZP_CMD_TABLE, set_k},
    /* calibrate */
    {"quick", 0, 0, ZP_CMD_CALIBRATE | VAL, set_quick},
    /* report validation */
    {"ranks", 0, 1, VAL, set_ranks},
    {"stages", 0, 1, VAL, set_stages},
    {"reps", 0, 1, ZP_CMD_CALIBRATE, set_reps},
    {"warmup", 0, 1, ZP_CMD_CALIBRATE, set_warmup},
    {"max-bytes", 0, 1, ZP_CMD_CALIBRATE, set_max_bytes},
    {"hidden", 0, 1, ZP_CMD_CALIBRATE, set_hidden},
    {"tokens", 0, 1, ZP_CMD_CALIBRATE, set_tokens},
    /* GPUs as data */
    {"gpu", 0, 1, SEARCH & ~SWEEP, set_gpu},
};

/* The commands that take an option, for "an option of zplan exec" messages. */
static const char *owner(int cmds)
{
    if (cmds == SWEEP)
        return "zplan sweep";
    if (cmds & ZP_CMD_EXEC && !(cmds & SEARCH))
        return "zplan exec";
    if (cmds & ZP_CMD_CALIBRATE && !(cmds & PLAN))
        return "zplan calibrate";
    if (cmds & ZP_CMD_SCHEDULE && !(cmds & ZP_CMD_WHATIF))
        return "zplan schedule";
    if (cmds & ZP_CMD_TABLE && !(cmds & PLAN))
        return "zplan report table1|table2";
    if (cmds & ZP_CMD_WHATIF)
        return "the what-if (zplan --model M --gpus N)";
    return "another command";
}

static const char *help_of(const zp_cli_args *a)
{
    switch (a->cmd) {
    case ZP_CMD_WHATIF: return "zplan --help";
    case ZP_CMD_VIEW:
    case ZP_CMD_TABLE: return "zplan report --help";
    case ZP_CMD_LIST: return "zplan models --help";
    case ZP_CMD_SCHEDULE: return "zplan schedule --help";
    case ZP_CMD_EXEC: return "zplan exec --help";
    case ZP_CMD_VALIDATION: return "zplan report validation --help";
    case ZP_CMD_COMPARE: return "zplan compare --help";
    case ZP_CMD_SWEEP: return "zplan sweep --help";
    default: return "zplan calibrate --help";
    }
}

static void defaults(zp_cli_cmd cmd, const char *name, zp_cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->name = name;
    a->fmt = ZP_FMT_TEXT;
    a->top = 5;
    a->mtp = -1;
    a->cluster = "dgx2";
    zp_search_req_default(&a->r, NULL, NULL, 0);
    a->r.simulate = 1;
    a->steps = 3;
    a->seed = 1;
    a->lr = 1e-3;
    a->timeout_s = 120;
    a->backend = "cpu";
    a->k = ZP_ADAM_K;
    if (cmd == ZP_CMD_SWEEP) /* a rank can be busy with one full simulation of a large cluster (~0.05 s per
                                node, up to ZP_SIM_MAX_FULL_NODES) between two signs of progress */
        a->timeout_s = 600;
    if (cmd == ZP_CMD_EXEC) { /* not given: exec_config's defaults, which depend on --validate */
        a->steps = 0;
        a->min_seconds = -1;
    }
    if (cmd == ZP_CMD_VALIDATION) {
        /* step times on this VM swing by -20%..+40% in spells of several steps: 7 steps' median landed
         * anywhere in 0.032-0.044 s for one configuration, 40 steps' (2 s) within 0.038-0.040 s (measured) */
        a->steps = 5;
        a->min_seconds = 2.0;
        a->models = "mini,small";
        a->ranks = "1,2,4";
        a->stages = "0,1,2,3";
    }
}

const char *const zp_cli_compare_opts[4] = {"stage", "mp", "offload", "micro-batch"};

/* The option named `name` (without its "--"): a row of the table, else a parallel dimension's option
 * (vocab/zp_dims.c's rows: a degree of every plan command, read by set_degree) written into *dim; NULL
 * when neither. */
static const zp_cli_opt *find_opt(const char *name, zp_cli_opt *dim)
{
    for (size_t k = 0; k < sizeof g_opts / sizeof g_opts[0]; k++)
        if (strcmp(name, g_opts[k].name) == 0)
            return &g_opts[k];
    for (int d = 0; d < ZP_NDIMS; d++) {
        const char *flag = zp_dims_get((zp_dim_id)d)->option;
        if (strncmp(flag, "--", 2) == 0 && strcmp(flag + 2, name) == 0) {
            *dim = (zp_cli_opt){flag + 2, 0, 1, PLAN, set_degree};
            return dim;
        }
    }
    return NULL;
}

zp_status zp_cli_args_apply(zp_cli_args *a, const char *opt, const char *val)
{
    zp_cli_opt dim;
    const zp_cli_opt *o = strncmp(opt, "--", 2) == 0 ? find_opt(opt + 2, &dim) : NULL;
    if (!o)
        return ZP_FAIL(ZP_EINVAL, "unknown option '%s'", opt);
    return o->set(a, opt, val);
}

/* compare: a list option keeps its text; every item goes through the option's setter on a scratch copy,
 * so an item is refused with the same message as the value alone. */
static zp_status compare_list(zp_cli_args *a, const zp_cli_opt *o, const char *opt, const char *val, int *taken)
{
    *taken = 0;
    if (a->cmd != ZP_CMD_COMPARE)
        return ZP_OK;
    for (int k = 0; k < 4; k++) {
        if (strcmp(o->name, zp_cli_compare_opts[k]) != 0)
            continue;
        char buf[256];
        if (strlen(val) >= sizeof buf)
            return ZP_FAIL(ZP_EINVAL, "%s: list too long", opt);
        strcpy(buf, val);
        char *save = NULL;
        int n = 0;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), n++) {
            zp_cli_args scratch = *a;
            ZP_TRY(o->set(&scratch, opt, tok));
        }
        if (n == 0)
            return ZP_FAIL(ZP_EINVAL, "%s: an empty list", opt);
        a->cmp_list[k] = val;
        *taken = 1;
    }
    return ZP_OK;
}

zp_status zp_cli_args_parse(zp_cli_cmd cmd, const char *name, int argc, char **argv, zp_cli_args *a)
{
    defaults(cmd, name, a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        char opt[64];
        const zp_cli_opt *o = NULL;
        zp_cli_opt dim;
        if (arg[0] == '-' && arg[1] == '-' && arg[2]) {
            const char *eq = strchr(arg, '=');
            size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
            if (len >= sizeof opt)
                len = sizeof opt - 1;
            memcpy(opt, arg, len);
            opt[len] = '\0';
            val = eq ? eq + 1 : NULL;
            o = find_opt(opt + 2, &dim);
        } else if (arg[0] == '-' && arg[1] && !arg[2]) {
            for (size_t k = 0; k < sizeof g_opts / sizeof g_opts[0] && !o; k++)
                if (g_opts[k].short_name == arg[1])
                    o = &g_opts[k];
            snprintf(opt, sizeof opt, "--%s", o ? o->name : arg + 1);
        } else {
            return ZP_FAIL(ZP_EINVAL, "unexpected argument '%s' (see %s)", arg, help_of(a));
        }
        if (!o)
            return ZP_FAIL(ZP_EINVAL, "unknown option '%s' (see %s)", arg, help_of(a));
        if (!(o->cmds & (int)cmd))
            return ZP_FAIL(ZP_EINVAL, "%s does not apply to %s: it is an option of %s (see %s)", opt, name,
                           owner(o->cmds), help_of(a));
        if (o->takes_value && !val) {
            if (i + 1 >= argc)
                return ZP_FAIL(ZP_EINVAL, "option %s needs a value (see %s)", opt, help_of(a));
            val = argv[++i];
        } else if (!o->takes_value && val) {
            return ZP_FAIL(ZP_EINVAL, "option %s takes no value (got '%s')", opt, val);
        }
        int taken;
        ZP_TRY(compare_list(a, o, opt, val, &taken));
        if (!taken)
            ZP_TRY(o->set(a, opt, val));
        if (a->help)
            return ZP_OK;
    }
    /* a release that reduced gradients on the compute stream unless told otherwise (deepspeed-2020) */
    const zp_framework *f = zp_framework_get(a->r.framework);
    if (f && f->overlap_off_default && !a->overlap_given)
        a->r.base.overlap_comm = 0;
    return ZP_OK;
}

zp_status zp_cli_args_check_plan(const zp_cli_args *a)
{
    const zp_search_req *r = &a->r;
    const zp_framework *f = zp_framework_get(r->framework);
    if (f && !f->overlap && a->overlap_given && r->base.overlap_comm)
        return ZP_FAIL(ZP_EINVAL, "--framework %s: %s reduces gradients after the backward, not beside it (drop "
                                  "--overlap-comm, or plan for another framework: --framework any)",
                       f->name, f->what);
    if (a->p2p_given && r->base.overlap_p2p_comm) {
        const char *word = r->base.overlap_p2p_warmup_flush ? "all" : "on";
        if (f && !f->p2p_overlap)
            return ZP_FAIL(ZP_EINVAL, "--framework %s: %s waits for every pipeline send and receive (drop "
                                      "--overlap-p2p-comm %s, or plan for another framework: --framework any)",
                           f->name, f->what, word);
        if ((zp_search_req_given(r, ZP_SEARCH_SCHEDULE) && r->base.schedule != ZP_PP_INTERLEAVED) ||
            (zp_search_req_given(r, ZP_SEARCH_DIM(ZP_DIM_PP)) && r->base.pp <= 1))
            return ZP_FAIL(ZP_EINVAL, "--overlap-p2p-comm %s: only the interleaved schedule overlaps its pipeline "
                                      "sends (Megatron-LM: \"non-interleaved schedule does not support overlapping "
                                      "p2p communication\"): give --pp > 1 with --schedule interleaved, or drop it",
                           word);
    }
    if (a->swiglu_given && r->base.swiglu_fusion) {
        if (f && !f->swiglu_fusion)
            return ZP_FAIL(ZP_EINVAL, "--framework %s: %s runs a SwiGLU as eager PyTorch's silu(gate) * up (drop "
                                      "--swiglu-fusion on, or plan for another framework: --framework any)",
                           f->name, f->what);
        if (r->base.eager)
            return ZP_FAIL(ZP_EINVAL, "--swiglu-fusion on with --compile off: PyTorch eager runs silu(gate) * up as "
                                      "separate kernels (drop one)");
    }
    if (a->launch && a->ds_config)
        return ZP_FAIL(ZP_EINVAL, "%s and --ds-config: judge one launch at a time", a->launch_opt);
    if ((a->fp8_recipe_given || r->base.fp8_all_gather) && !a->fp8_precision && !a->launch)
        return ZP_FAIL(ZP_EINVAL, "%s sets how FP8 training runs: give --precision fp8 too",
                       a->fp8_recipe_given ? "--fp8-recipe" : "--fp8-all-gather");
    const zp_fp8_info *f8 = zp_fp8_get(r->base.fp8);
    if (r->base.fp8_all_gather && f8 && f8->te)
        return ZP_FAIL(ZP_EINVAL, "--fp8-all-gather: FSDP2's FP8 all-gather is torchao's (use --fp8-recipe "
                                  "torchao-tensorwise or torchao-rowwise); Transformer Engine's recipes gather "
                                  "bf16 parameters");
    if (f8 && ((a->emit_megatron && !f8->megatron) || (a->emit_torchtitan && !f8->torchao)))
        return ZP_FAIL(ZP_EINVAL, "--fp8-recipe %s is %s, which %s does not run (use %s)", f8->name,
                       f8->te ? "Transformer Engine's" : "torchao's",
                       a->emit_megatron && !f8->megatron ? "Megatron-core" : "torchtitan",
                       f8->te ? "--fp8-recipe torchao-tensorwise or torchao-rowwise"
                              : "--fp8-recipe delayed, current, blockwise or mxfp8");
    if (r->base.fp8_all_gather && f8 && f8->rowwise)
        return ZP_FAIL(ZP_EINVAL, "--fp8-all-gather: torchao all-gathers FP8 weights with tensorwise scales only "
                                  "(use --fp8-recipe torchao-tensorwise)");
    const zp_dispatch_info *disp = zp_dispatch_get(r->base.dispatcher);
    if (disp && r->base.dispatcher != ZP_DISPATCH_ALLTOALL && ((a->emit_megatron && !disp->megatron) || a->emit_torchtitan))
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher %s is not an option %s has (%s)", disp->name,
                       a->emit_megatron ? "Megatron-core" : "torchtitan",
                       a->emit_megatron ? "its DeepEP dispatcher sends bf16: use --moe-dispatcher deepep"
                                        : "use --emit-megatron-args for Megatron-core's dispatchers and DeepEP");
    if (r->base.eager && zp_search_req_given(r, ZP_SEARCH_TP_OVERLAP) && r->base.tp_overlap == ZP_TP_OVERLAP_ASYNC)
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap async with --compile off: torchtitan's async TP runs under "
                                  "torch.compile only (drop --compile off, or use --tp-comm-overlap te)");
    if (a->launch) {
        static const struct {
            uint32_t bit;
            const char *opt;
        } plan_opts[] = {{ZP_SEARCH_STAGE, "--stage"},
                         {ZP_SEARCH_DIM(ZP_DIM_TP), "--mp"},
                         {ZP_SEARCH_DIM(ZP_DIM_PP), "--pp"},
                         {ZP_SEARCH_MICRO_BATCH, "--micro-batch"},
                         {ZP_SEARCH_GLOBAL_BATCH, "--global-batch"},
                         {ZP_SEARCH_ACCUM, "--grad-accum"},
                         {ZP_SEARCH_RECOMPUTE, "--recompute (or --checkpoint)"},
                         {ZP_SEARCH_SP, "--sp"},
                         {ZP_SEARCH_OFFLOAD, "--offload"}};
        const char *given = r->exact ? "--exact" : a->compile_given ? "--compile" : NULL;
        for (int i = (int)(sizeof plan_opts / sizeof plan_opts[0]) - 1; i >= 0; i--)
            if (zp_search_req_given(r, plan_opts[i].bit))
                given = plan_opts[i].opt; /* the first given, as written */
        if (given)
            return ZP_FAIL(ZP_EINVAL, "%s %s sets the plan: drop %s (zplan judges the launch as written)",
                           a->launch_opt, a->launch, given);
        /* a launch's plan is priced as its framework runs it: another framework's file of it would not be */
        const char *emit = a->emit_ds ? "--emit-ds-config" : a->emit_megatron ? "--emit-megatron-args"
                           : a->emit_torchtitan ? "--emit-torchtitan" : NULL;
        if (emit)
            return ZP_FAIL(ZP_EINVAL, "%s and %s: a launch is judged, not converted (its plan is priced as its "
                                      "framework runs it); emit from a what-if with the options of the plan",
                           a->launch_opt, emit);
    }
    if (r->exact && zp_search_req_searched(r, ZP_SEARCH_STAGE))
        return ZP_FAIL(ZP_EINVAL, "--exact pins every option not given to its default, and a plan always names "
                                  "its ZeRO stage: give --stage too (as a DeepSpeed config does)");
    if (zp_search_req_given(r, ZP_SEARCH_ACCUM | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_GLOBAL_BATCH) &&
        r->global_batch % (r->base.grad_accum * r->base.micro_batch) != 0)
        return ZP_FAIL(ZP_EINVAL, "--global-batch %lld is not --micro-batch %lld x --grad-accum %lld x a "
                                  "data-parallel degree",
                       (long long)r->global_batch, (long long)r->base.micro_batch, (long long)r->base.grad_accum);
    return ZP_OK;
}

/* The row named by a marker's text (up to its '\n'), or NULL. */
static const zp_dim_type *marked_dim(const char *name, size_t len)
{
    for (int d = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        if (strlen(t->name) == len && strncmp(t->name, name, len) == 0)
            return t;
    }
    return NULL;
}

/* Whether the usage has a row's own marker (its help goes there, not with the rest). */
static int usage_names(const char *usage, const char *name)
{
    char marker[64];
    snprintf(marker, sizeof marker, ZP_CLI_DIM_HELP("%s"), name);
    return strstr(usage, marker) != NULL;
}

void zp_cli_usage_put(const char *usage, FILE *f)
{
    for (const char *p = usage; *p;) {
        const char *mark = strchr(p, '\x1e');
        if (!mark) {
            fputs(p, f);
            return;
        }
        fwrite(p, 1, (size_t)(mark - p), f);
        const char *name = mark + 1, *end = strchr(name, '\n');
        const size_t len = end ? (size_t)(end - name) : strlen(name);
        if (len == 1 && *name == '*') { /* the rows the usage does not name, in the table's order */
            for (int d = 0; d < ZP_NDIMS; d++) {
                const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
                if (t->help && !usage_names(usage, t->name))
                    fputs(t->help, f);
            }
        } else {
            const zp_dim_type *t = marked_dim(name, len);
            if (t && t->help)
                fputs(t->help, f);
        }
        p = end ? end + 1 : name + len;
    }
}
