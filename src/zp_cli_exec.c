/* zp_cli_exec.c — `zplan exec`: options, the run under MPI, the report (text or JSON on rank 0), and
 * --validate: the same configuration simulated on a platform that describes this machine (from a
 * `zplan calibrate` profile) and the memory model's prediction, against what was measured.
 *
 * Bad options exit 2 on every rank before MPI starts (every rank parses the same arguments, and the
 * number of ranks comes from the launcher's environment), so no rank waits for one that left. A
 * failure after MPI started aborts the whole job (MPI_Abort): a rank never waits forever for a
 * failed peer. The simulation forks (SimGrid runs one simulation per process): it runs on rank 0
 * before MPI_Init, which Open MPI requires of fork. */
#include "zp_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "zp_config.h"
#include "zp_exec.h"
#include "zp_watchdog.h"
#include "zp_io.h"
#include "zp_memory.h"
#include "zp_pipeline.h"
#include "zp_profile.h"
#include "zp_quiet.h"
#include "zp_simrun.h"
#include "zp_size.h"
#include "zp_zoo.h"

/* --validate's measured run when --steps and --min-seconds are not given: steps at least, seconds of
 * measured steps at least */
#define ZP_CLI_VALIDATE_STEPS 5
#define ZP_CLI_VALIDATE_SECONDS 2.0
/* --validate's targets: a quiet run whose step is within this fraction of the prediction, and every
 * memory category within ZP_CLI_TARGET_MEMORY, has met them */
#define ZP_CLI_TARGET_STEP 0.15
#define ZP_CLI_TARGET_MEMORY 0.03

static const char USAGE[] =
    "Usage: mpirun -np N zplan exec --model M [options]\n"
    "Trains a decoder for real (fp32) with ZeRO, Megatron MP, expert parallelism, activation checkpointing\n"
    "and ZeRO-Offload, driven by the same step schedule the simulator uses: GPT's block, or today's (GQA,\n"
    "RMSNorm, rotary, SwiGLU, untied head; mixture-of-experts with top-k routing; e.g. tiny-llama,\n"
    "tiny-moe); reports per-step loss, step time\n"
    "and per-rank peak memory by category. Every tensor and kernel is on the backend: the host (cpu:\n"
    "OpenBLAS, OpenMP, MPI) or the GPU (cuda: cuBLAS, CUDA layer kernels, NCCL).\n"
    "\n"
    "Plan options are the what-if's (same names, same K/M suffixes); exec runs exactly the plan given and\n"
    "what is not given takes the default shown:\n"
    "  --model M                 zoo model (tiny, mini, small, tiny-llama, tiny-moe: a few million\n"
    "                            parameters at most; zplan models)\n"
    "  --stage S                 ZeRO stage 0-3 (default 0)\n"
    "  --mp M                    Megatron model-parallel degree; divides the ranks and the heads (default 1)\n"
    "  --ep E                    expert parallelism of a mixture-of-experts model: each rank holds 1/E of\n"
    "                            the experts, tokens exchanged by all-to-all; divides the DP ranks (default 1)\n"
    "  --cp C                    context parallelism: each sequence cut over C of the DP ranks (Megatron-core's\n"
    "                            causal load balancing); 2C divides the sequence, C the DP ranks (default 1)\n"
    "  --cp-comm ring|all-gather how CP moves K and V: ring (default; Megatron-core's p2p: passed round, merged\n"
    "                            by online softmax) or all-gather (Llama 3's: gathered whole)\n"
    "  --micro-batch b           sequences per rank per micro-step (default 1)\n"
    "  --grad-accum k            micro-steps per step (default 1)\n"
    "  --global-batch B          sequences per step: sets the accumulation (B = micro-batch x k x DP / CP)\n"
    "  --seq s                   sequence length (default: the model's)\n"
    "  --checkpoint | --no-checkpoint\n"
    "                            one checkpoint per block, recomputed in backward (default off here;\n"
    "                            --checkpoint-activations is the same)\n"
    "  --pa                      ZeRO-R Pa: partition checkpoints across the MP ranks (with checkpointing)\n"
    "  --bucket N                gradient bucket in elements (default 500M, capped at the model)\n"
    "  --no-cb                   one bucket as large as the model\n"
    "  --no-md                   checkpoints allocated one by one instead of in one contiguous region\n"
    "  --overlap-comm | --no-overlap-comm\n"
    "                            ZeRO collectives on the schedule's comm stream (default off: in line)\n"
    "  --offload optimizer       ZeRO-Offload (stages 1-3): fp32 master parameters and Adam states of the\n"
    "                            partition on the host (pinned), gradients down, CPU Adam, fp16 parameters\n"
    "                            back; on --backend cpu an emulation (the device is host memory, copies\n"
    "                            are memcpy)\n"
    "Run options:\n"
    "  --steps k                 training steps (default 3; with --validate 5)\n"
    "  --min-seconds S           keep training past k steps until the steps after the first took S seconds\n"
    "                            (default 0, with --validate 2: the median then spans a shared machine's\n"
    "                            noise)\n"
    "  --backend cpu|cuda        kernels backend (default cpu; cuda needs a GPU)\n"
    "  --seed n                  parameters and synthetic tokens (default 1)\n"
    "  --lr x                    Adam learning rate (default 1e-3)\n"
    "  --format text|json        report format (default text), printed by rank 0\n"
    "  --validate                also predict the step (SimGrid) and the memory (the replay of the\n"
    "                            executor's schedule), with errors; the measured step is the median with\n"
    "                            its min and max, and the machine is watched while it runs: a run that\n"
    "                            was not quiet (other processes using over 0.25 core, a load above the\n"
    "                            cores, steps spread over 50%, a median step over 15% above the fastest\n"
    "                            tenth, a reference work timed before and after\n"
    "                            the steps over 40% off the calibration's or over 50% apart between the\n"
    "                            ranks) is reported as such and not judged; a quiet one is 'met' with its\n"
    "                            step within 15% and memory within 3%\n"
    "  --profile FILE            device profile of this machine for --validate, from\n"
    "                            `mpirun -np N zplan calibrate [--model M --micro-batch b] -o FILE`\n"
    "  --timeout S               under mpirun: end the job, naming the rank, when a rank dies or makes no\n"
    "                            progress for S seconds (default 120); ranks must all get the same options\n"
    "  -o, --output FILE         write the report to FILE\n"
    "Exit status: 0 ok, 1 run-time failure, 2 bad usage or input (or no CUDA device).\n";

/* Bytes of memory the kernel can still give, /proc/meminfo's MemAvailable; 0 when unknown. */
static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024.0;
}

/* On the cpu backend every tensor of the run lives in this machine's memory: the replay of the executor's
 * schedule says how much before anything is allocated, so a model too large for the machine is refused
 * with what to change instead of dying in an allocation (issue #18). */
static zp_status check_fits_here(const zp_exec_config *cfg, int ranks)
{
    if (strcmp(cfg->backend, "cpu") != 0)
        return ZP_OK;
    zp_plan plan = cfg->plan;
    plan.dp = ranks / cfg->plan.mp;
    plan.param_bytes = 4.0;
    plan.k_optimizer = 8.0;
    plan.impl = ZP_IMPL_EXEC;
    zp_memory m;
    ZP_TRY(zp_memory_estimate(&cfg->model, &plan, &m));
    const int here = zp_cli_launch_local_size(ranks);
    const double need = (m.total + m.host) * (double)(here > 0 ? here : 1), have = mem_available();
    if (have > 0 && need > have)
        return ZP_FAIL(ZP_EINVAL,
                       "--model %s: %d rank%s on this machine need %.1f GB (%.1f GB each, fp32: the replay of the "
                       "executor's schedule) and %.1f GB are available: use a smaller model (tiny, mini, small; "
                       "zplan models), --stage 3 over more ranks, or zplan's what-if to size the real run",
                       cfg->model.name, here, here == 1 ? "" : "s", need / 1e9, (m.total + m.host) / 1e9, have / 1e9);
    return ZP_OK;
}

/* The profile of `zplan exec --validate` must be this machine's, measured on this backend, ideally with
 * this run's ranks (README: which profile goes with which run): another backend is refused; other ranks or
 * another CPU are warned about, since the prediction then carries their difference. */
static zp_status check_profile_use(const char *path, const zp_profile *p, const zp_exec_config *cfg, int ranks,
                                   int rank0)
{
    if (strcmp(p->backend, cfg->backend) != 0)
        return ZP_FAIL(ZP_EINVAL, "--profile %s was calibrated on the %s backend and this run is on %s: calibrate "
                                  "with `mpirun -np %d zplan calibrate --backend %s -o FILE`",
                       path, p->backend, cfg->backend, ranks, cfg->backend);
    if (!rank0)
        return ZP_OK;
    if (p->machine.ranks != ranks)
        fprintf(stderr, "zplan exec: warning: --profile %s was calibrated with %d rank%s and this run has %d: the "
                        "ranks share the cores and memory differently, so the predicted compute can be far off "
                        "(calibrate with `mpirun -np %d zplan calibrate -o FILE` for this run)\n",
                path, p->machine.ranks, p->machine.ranks == 1 ? "" : "s", ranks, ranks);
    char model[128] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "model name : %127[^\n]", model) == 1)
            break;
    if (f)
        fclose(f);
    if (model[0] && p->machine.cpu_model[0] && strcmp(model, p->machine.cpu_model) != 0)
        fprintf(stderr, "zplan exec: warning: --profile %s was measured on %s, this machine is %s\n", path,
                p->machine.cpu_model, model);
    return ZP_OK;
}

/* The platform of this machine for the simulator: one node holding every rank, link figures from
 * the profile's measured collectives (the engine reads them from the profile), compute from its fits. */
static void local_cluster(const zp_profile *p, int ranks, zp_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->name = "local";
    c->gpu_name = p->machine.cpu_model[0] ? p->machine.cpu_model : "cpu";
    c->description = "this machine, from its calibration profile";
    c->gpus_per_node = ranks;
    c->gpu_mem = 1e15;
    c->peak_flops = p->peak_flops_fp32 > 0 ? p->peak_flops_fp32 : 1e10;
    c->gemm_efficiency = 1.0;
    c->hbm_bw = (p->copy_gbs > 0 ? p->copy_gbs : 5.0) * 1e9;
    const zp_profile_coll_fit *ar = &p->coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    c->nvlink_bw = ar->measured ? ar->busbw_gbs * 1e9 : c->hbm_bw;
    c->nvlink_latency = ar->measured ? ar->latency_s : 1e-5;
    c->ib_rails = 1;
    c->ib_rail_bw = c->nvlink_bw;
    c->ib_latency = c->nvlink_latency;
    c->inter_channels = 1;
    c->ib_efficiency = 1.0;
    c->pcie_bw = 1e10;
    c->host_mem = 1e15;
    c->cpu_adam_rate = p->cpu_adam_params_per_s > 0 ? p->cpu_adam_params_per_s : 1e8;
    c->sources = "zplan calibrate";
}

typedef struct {
    int done;
    zp_sim_result sim;
    zp_memory mem;
    zp_memory stage_mem[ZP_EXEC_MAX_STAGES]; /* with pipeline stages: each stage's replay */
    int nstages;
    char err[300];
    zp_profile_machine cal; /* the profile's machine: was it quiet while calibrating (cal.watched)? */
} prediction;

static double rel(double pred, double meas) { return meas > 0 ? (pred - meas) / meas : (pred > 0 ? INFINITY : 0.0); }

/* The memory rows of the report: each category's peak (activations with the checkpoints, as the
 * replay's peak_activations), then the device total. */
static const struct {
    const char *key;
    int cat; /* zp_mem_cat; -1: activations + checkpoints */
} MEM_ROWS[] = {{"params", ZP_MEM_PARAMS},   {"grads", ZP_MEM_GRADS}, {"optimizer", ZP_MEM_OPTIMIZER},
                {"activations", -1},         {"buffers", ZP_MEM_BUFFERS}, {"host", ZP_MEM_HOST}};
enum { NMEM = sizeof MEM_ROWS / sizeof MEM_ROWS[0] };

static double mem_measured(const zp_exec_result *r, int i)
{
    return MEM_ROWS[i].cat < 0 ? r->peak_activations : r->peak[MEM_ROWS[i].cat];
}

static double mem_pred(const zp_memory *m, int i)
{
    return MEM_ROWS[i].cat < 0 ? m->peak_activations : m->peak[MEM_ROWS[i].cat];
}

/* --validate's verdict on a done prediction: "not quiet" when the machine was not, while calibrating the
 * profile or while measuring (qv->reason says which and why; the comparison then
 * says nothing of the model: it is neither met nor missed), else "met" when the step is within
 * ZP_CLI_TARGET_STEP and every memory category and the total within ZP_CLI_TARGET_MEMORY, else "missed". */
static const char *verdict(const zp_exec_result *r, const prediction *pr, zp_quiet_verdict *qv)
{
    zp_quiet_verdict cv; /* the profile's calibration first: a busy one priced other people's work */
    const zp_profile_machine *m = &pr->cal;
    if (m->watched && zp_quiet_judge_figures(m->cores, m->ranks, m->others_cores, m->load1, &cv) == ZP_OK &&
        !cv.quiet) {
        memset(qv, 0, sizeof *qv);
        snprintf(qv->reason, sizeof qv->reason, "the profile was calibrated on a busy machine: %.150s", cv.reason);
        return "not quiet";
    }
    if (zp_quiet_judge(&r->quiet, qv) != ZP_OK || !qv->quiet)
        return "not quiet";
    double worst = fabs(rel(pr->mem.total, r->peak_total));
    for (int k = 0; k < NMEM; k++)
        worst = fmax(worst, fabs(rel(mem_pred(&pr->mem, k), mem_measured(r, k))));
    const double step = fabs(rel(pr->sim.step_time, r->measured_step_s));
    return step <= ZP_CLI_TARGET_STEP && worst <= ZP_CLI_TARGET_MEMORY ? "met" : "missed";
}

/* report_json's "quiet": the machine over the measured steps, and the judge's reading of it. */
static json_t *report_json_quiet(const zp_exec_result *r)
{
    zp_quiet_verdict v;
    const zp_quiet_in *q = &r->quiet;
    if (zp_quiet_judge(q, &v) != ZP_OK)
        return json_null();
    json_t *j = json_pack("{s:b, s:s, s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:f}", "quiet", v.quiet, "reason", v.reason,
                          "others_cores", v.others_cores, "load_1min", q->load1, "load_limit", v.load_limit, "cores",
                          q->cores, "ranks_here", q->procs, "spread", v.spread, "window_s", q->wall_s, "own_cpu_s",
                          q->own_cpu_s);
    if (q->probe_s[0] > 0) { /* the reference work (kernels/zp_probe.h) before and after the steps, s */
        json_object_set_new(j, "probe_s", json_pack("[f, f]", q->probe_s[0], q->probe_s[1]));
        json_object_set_new(j, "probe_fastest_rank_s", json_pack("[f, f]", q->probe_fast_s[0], q->probe_fast_s[1]));
        json_object_set_new(j, "rank_spread", json_real(v.rank_spread));
    }
    json_object_set_new(j, "median_lag", json_real(v.median_lag));
    if (q->probe_cal_s > 0) {
        json_object_set_new(j, "probe_calibrated_s", json_real(q->probe_cal_s));
        json_object_set_new(j, "speed_change", json_real(v.speed_change));
    }
    return j;
}

/* report_json's "config": the model and the plan run, the backend and the run's options. */
static json_t *report_json_config(const zp_exec_config *c, const zp_exec_result *r)
{
    const zp_model *m = &c->model;
    json_t *cfg = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:i, s:i, s:i, s:i}", "model", m->name, "layers",
                            (json_int_t)m->layers, "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                            "seq", (json_int_t)m->seq, "vocab", (json_int_t)m->vocab, "params", zp_model_params(m),
                            "params_per_rank", r->params_per_rank, "stage", c->plan.stage, "dp", r->dp, "mp", r->mp,
                            "pp", r->pp);
    if (r->pp > 1)
        json_object_set_new(cfg, "schedule", json_string(zp_pp_schedule_name(c->plan.schedule)));
    json_object_set_new(cfg, "micro_batch", json_integer(c->plan.micro_batch));
    json_object_set_new(cfg, "grad_accum", json_integer(c->plan.grad_accum));
    const int64_t cp = c->plan.cp > 1 ? c->plan.cp : 1;
    if (cp > 1) { /* context parallelism: cp of the dp ranks share each sequence */
        json_object_set_new(cfg, "cp", json_integer(cp));
        json_object_set_new(cfg, "cp_comm", json_string(zp_cp_comm_name((zp_cp_comm)c->plan.cp_comm)));
    }
    json_object_set_new(cfg, "global_batch", json_integer(c->plan.micro_batch * c->plan.grad_accum * (r->dp / cp)));
    json_object_set_new(cfg, "checkpoint_activations", json_boolean(c->plan.checkpoint));
    json_object_set_new(cfg, "pa", json_boolean(c->plan.pa));
    json_object_set_new(cfg, "overlap_comm", json_boolean(c->plan.overlap_comm));
    json_object_set_new(cfg, "offload", json_string(zp_offload_name(c->plan.offload)));
    json_object_set_new(cfg, "backend", json_string(c->backend));
    json_object_set_new(cfg, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(cfg, "steps", json_integer(c->steps));
    json_object_set_new(cfg, "min_seconds", json_real(c->min_seconds));
    json_object_set_new(cfg, "dtype", json_string("fp32"));
    return cfg;
}

/* report_json's "pipeline_stages" (pp > 1): each stage's largest rank, and with a prediction its replay. */
static json_t *report_json_stages(const zp_exec_result *r, const prediction *pr)
{
    json_t *st = json_array();
    for (int k = 0; k < r->pp && k < ZP_EXEC_MAX_STAGES; k++) {
        json_t *e = json_pack("{s:i, s:f, s:f}", "stage", k, "total_gb", r->stage_peak_total[k] / 1e9,
                              "activations_gb", r->stage_peak_activations[k] / 1e9);
        if (pr && pr->done && k < pr->nstages) {
            json_object_set_new(e, "predicted_total_gb", json_real(pr->stage_mem[k].total / 1e9));
            json_object_set_new(e, "total_error", json_real(rel(pr->stage_mem[k].total, r->stage_peak_total[k])));
        }
        json_array_append_new(st, e);
    }
    return st;
}

/* report_json's "validation" (a prediction done): predicted against measured, step, memory by category and
 * time by part and by phase, with relative errors. */
static json_t *report_json_validation(const zp_exec_result *r, const prediction *pr)
{
    json_t *v = json_object();
    json_object_set_new(v, "predicted_step_s", json_real(pr->sim.step_time));
    json_object_set_new(v, "measured_step_s", json_real(r->measured_step_s));
    json_object_set_new(v, "step_error", json_real(rel(pr->sim.step_time, r->measured_step_s)));
    json_object_set_new(v, "measured_step_min_s", json_real(r->quiet.steps.min));
    json_object_set_new(v, "measured_step_max_s", json_real(r->quiet.steps.max));
    json_object_set_new(v, "measured_steps", json_integer((json_int_t)r->quiet.steps.n));
    zp_quiet_verdict qv;
    json_object_set_new(v, "verdict", json_string(verdict(r, pr, &qv)));
    json_object_set_new(v, "verdict_reason", json_string(qv.reason));
    json_t *me = json_object(), *mp = json_object();
    for (int k = 0; k < NMEM; k++) {
        json_object_set_new(me, MEM_ROWS[k].key, json_real(rel(mem_pred(&pr->mem, k), mem_measured(r, k))));
        json_object_set_new(mp, MEM_ROWS[k].key, json_real(mem_pred(&pr->mem, k) / 1e9));
    }
    const double tot = pr->mem.total; /* the device's total: host memory apart */
    json_object_set_new(me, "total", json_real(rel(tot, r->peak_total)));
    json_object_set_new(mp, "total", json_real(tot / 1e9));
    json_object_set_new(v, "memory_error", me);
    json_object_set_new(v, "predicted_memory_gb", mp);
    json_t *ph = json_object();
    json_object_set_new(ph, "compute", json_pack("{s:f,s:f}", "predicted", pr->sim.compute, "measured",
                                                r->time.compute));
    json_object_set_new(ph, "mp_comm", json_pack("{s:f,s:f}", "predicted", pr->sim.mp_comm, "measured",
                                                r->time.mp_comm));
    json_object_set_new(ph, "dp_comm", json_pack("{s:f,s:f}", "predicted", pr->sim.dp_exposed, "measured",
                                                r->time.dp_comm));
    json_object_set_new(ph, "optimizer", json_pack("{s:f,s:f}", "predicted", pr->sim.optimizer, "measured",
                                                  r->time.optimizer));
    json_object_set_new(ph, "pp_comm", json_pack("{s:f,s:f}", "predicted", pr->sim.pp_exposed, "measured",
                                                r->time.pp_comm));
    json_object_set_new(v, "phases_s", ph);
    json_t *bp = json_object(); /* the step's phases: what the compute stream ran or waited for in each */
    for (int p = 0; p < ZP_NPHASES; p++)
        json_object_set_new(bp, zp_phase_name((zp_phase)p), json_pack("{s:f,s:f}", "predicted", pr->sim.phase[p],
                                                                      "measured", r->time.phase[p]));
    json_object_set_new(v, "by_phase_s", bp);
    json_t *bk = json_object(); /* by op kind: the compute stream's ops of each of zp_ops.def's rows */
    for (int t = 0; t < ZP_NOPK; t++)
        if (r->time.kind[t] > 0 || pr->sim.kind[t] > 0)
            json_object_set_new(bk, zp_op_info_get(t)->name, json_pack("{s:f,s:f,s:f}", "ops", r->time.kind_n[t],
                                                                       "predicted", pr->sim.kind[t], "measured",
                                                                       r->time.kind[t]));
    json_object_set_new(v, "by_kind_s", bk);
    return v;
}

static json_t *report_json(const zp_exec_config *c, const zp_exec_result *r, const prediction *pr)
{
    json_t *root = json_object();
    json_object_set_new(root, "config", report_json_config(c, r));
    json_object_set_new(root, "ranks", json_integer(r->ranks));
    json_t *steps = json_array();
    for (int k = 0; k < r->steps; k++) {
        json_t *s = json_object();
        json_object_set_new(s, "step", json_integer(k + 1));
        json_object_set_new(s, "loss", json_real(r->step[k].loss));
        json_object_set_new(s, "time_s", json_real(r->step[k].time_s));
        json_array_append_new(steps, s);
    }
    json_object_set_new(root, "steps", steps);
    json_object_set_new(root, "tokens_per_s", json_real(r->tokens_per_s));
    json_object_set_new(root, "quiet", report_json_quiet(r));
    json_t *mem = json_object();
    for (int k = 0; k < NMEM; k++)
        json_object_set_new(mem, MEM_ROWS[k].key, json_real(mem_measured(r, k) / 1e9));
    json_object_set_new(mem, "total", json_real(r->peak_total / 1e9));
    json_object_set_new(root, "memory_peak_gb", mem);
    if (r->pp > 1) /* each stage's largest rank, and with --validate its replay */
        json_object_set_new(root, "pipeline_stages", report_json_stages(r, pr));
    json_t *tb = json_pack("{s:f, s:f, s:f, s:f, s:f}", "compute", r->time.compute, "mp_comm", r->time.mp_comm,
                           "dp_comm", r->time.dp_comm, "optimizer", r->time.optimizer, "pp_comm", r->time.pp_comm);
    for (int p = 0; p < ZP_NPHASES; p++)
        json_object_set_new(tb, zp_phase_name((zp_phase)p), json_real(r->time.phase[p]));
    json_object_set_new(root, "time_breakdown_s", tb);
    if (pr && pr->done)
        json_object_set_new(root, "validation", report_json_validation(r, pr));
    else if (pr && pr->err[0])
        json_object_set_new(root, "validation", json_pack("{s:s}", "error", pr->err));
    return root;
}

/* --validate's lines on the measured steps and the machine: min / median / max, and quiet or not (why). */
static void report_text_quiet(FILE *f, const zp_exec_result *r)
{
    const zp_quiet_in *q = &r->quiet;
    zp_quiet_verdict v;
    if (zp_quiet_judge(q, &v) != ZP_OK)
        return;
    fprintf(f, "measured steps: %zu over %.1f s, min %.4f / median %.4f / max %.4f s (q10..q90 spread %.0f%%, "
               "median %.0f%% above q10)\n", q->steps.n, q->wall_s, q->steps.min, q->steps.median, q->steps.max,
            100 * v.spread, 100 * v.median_lag);
    char others[32] = "unknown";
    if (v.others_cores >= 0)
        snprintf(others, sizeof others, "%.2f cores", v.others_cores);
    if (q->probe_s[0] > 0 && q->probe_cal_s > 0)
        fprintf(f, "machine speed: reference work %.2f / %.2f ms before / after the steps, %.2f ms while calibrating "
                   "(%+.0f%%), the slowest rank %+.0f%% on the fastest\n", 1e3 * q->probe_s[0], 1e3 * q->probe_s[1],
                1e3 * q->probe_cal_s, 100 * v.speed_change, 100 * v.rank_spread);
    fprintf(f, "machine while measuring: %s (other processes %s, load %.2f on %d cores, %d ranks here)%s%s\n",
            v.quiet ? "quiet" : "NOT QUIET", others, q->load1, q->cores, q->procs, v.quiet ? "" : ": ", v.reason);
}

/* --validate's table of the op kinds that took the most time on either side (ZP_CLI_EXEC_KINDS of them):
 * where a step's error comes from, kernel by kernel (every kind in the JSON's by_kind_s). */
#define ZP_CLI_EXEC_KINDS 10
static void report_text_kinds(FILE *f, const zp_exec_result *r, const prediction *pr)
{
    int order[ZP_NOPK], n = 0;
    for (int t = 0; t < ZP_NOPK; t++) /* insertion by the larger of the two times, largest first */
        if (r->time.kind[t] > 0 || pr->sim.kind[t] > 0) {
            double w = fmax(r->time.kind[t], pr->sim.kind[t]);
            int at = n++;
            while (at > 0 && fmax(r->time.kind[order[at - 1]], pr->sim.kind[order[at - 1]]) < w) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = t;
        }
    fprintf(f, "\ntime per op kind (rank 0; the %d largest of %d), s:\n  %-22s %5s %10s %10s %8s\n",
            n < ZP_CLI_EXEC_KINDS ? n : ZP_CLI_EXEC_KINDS, n, "kind", "ops", "measured", "predicted", "error");
    for (int i = 0; i < n && i < ZP_CLI_EXEC_KINDS; i++) {
        const int t = order[i];
        const double me = r->time.kind[t], pd = pr->sim.kind[t];
        fprintf(f, "  %-22s %5.0f %10.5f %10.5f ", zp_op_info_get(t)->name, r->time.kind_n[t], me, pd);
        if (me < 1e-5 && pd < 1e-5)
            fprintf(f, "%8s\n", "-");
        else
            fprintf(f, "%+7.1f%%\n", 100 * rel(pd, me));
    }
}

/* --validate's last line: met or missed on a quiet machine, not judged on a busy one. */
static void report_text_verdict(FILE *f, const zp_exec_result *r, const prediction *pr)
{
    zp_quiet_verdict qv;
    const char *vd = verdict(r, pr, &qv);
    if (strcmp(vd, "not quiet") == 0)
        fprintf(f, "\nverdict: not judged: the machine was not quiet while measuring (%s); run again on an idle "
                   "machine\n",
                qv.reason);
    else
        fprintf(f, "\nverdict: %s (targets: step within %.0f%%, memory within %.0f%%; the machine was quiet)\n", vd,
                100 * ZP_CLI_TARGET_STEP, 100 * ZP_CLI_TARGET_MEMORY);
}

static void report_text(FILE *f, const zp_exec_config *c, const zp_exec_result *r, const prediction *pr)
{
    fprintf(f, "zplan exec: %s (%.3g M parameters, l=%lld h=%lld a=%lld s=%lld V=%lld), %d ranks = dp %d x mp %d",
            c->model.name, zp_model_params(&c->model) / 1e6, (long long)c->model.layers, (long long)c->model.hidden,
            (long long)c->model.heads, (long long)c->model.seq, (long long)c->model.vocab, r->ranks, r->dp, r->mp);
    if (r->pp > 1)
        fprintf(f, " x pp %d (%s)", r->pp, zp_pp_schedule_name(c->plan.schedule));
    const int cp = c->plan.cp > 1 ? (int)c->plan.cp : 1;
    char cps[32] = "";
    if (cp > 1) {
        fprintf(f, ", cp %d of the dp (%s)", cp, zp_cp_comm_name((zp_cp_comm)c->plan.cp_comm));
        snprintf(cps, sizeof cps, " / cp %d", cp);
    }
    fputc('\n', f);
    fprintf(f, "ZeRO stage %d (%s), micro-batch %lld x accumulation %lld x dp %d%s = global batch %lld, "
               "checkpointing %s%s, backend %s, fp32%s\n",
            c->plan.stage, zp_stage_get(c->plan.stage)->name, (long long)c->plan.micro_batch,
            (long long)c->plan.grad_accum, r->dp, cps,
            (long long)(c->plan.micro_batch * c->plan.grad_accum * (r->dp / cp)),
            c->plan.checkpoint ? "on" : "off", c->plan.pa ? " + Pa" : "", c->backend,
            c->plan.offload == ZP_OFFLOAD_OPTIMIZER
                ? (strcmp(c->backend, "cpu") == 0 ? ", optimizer offloaded (emulated: the device is host memory)"
                                                  : ", optimizer offloaded to the host (fp16 parameters back)")
                : "");
    fprintf(f, "\n%6s %12s %10s\n", "step", "loss", "time (s)");
    for (int k = 0; k < r->steps; k++)
        fprintf(f, "%6d %12.6f %10.4f\n", k + 1, r->step[k].loss, r->step[k].time_s);
    fprintf(f, "\nmeasured step %.4f s (median%s), %.0f tokens/s\n", r->measured_step_s,
            r->steps >= 2 ? " without the first step" : "", r->tokens_per_s);
    if (pr)
        report_text_quiet(f, r);
    fprintf(f, "\npeak memory per rank (largest rank), MB = 1e6 B (total: the device's; host apart):\n");
    const double tot_pred = pr && pr->done ? pr->mem.total : 0;
    if (pr && pr->done)
        fprintf(f, "  %-12s %12s %12s %8s\n", "category", "measured", "predicted", "error");
    for (int k = 0; k < NMEM; k++) {
        if (pr && pr->done)
            fprintf(f, "  %-12s %12.3f %12.3f %+7.1f%%\n", MEM_ROWS[k].key, mem_measured(r, k) / 1e6,
                    mem_pred(&pr->mem, k) / 1e6, 100 * rel(mem_pred(&pr->mem, k), mem_measured(r, k)));
        else
            fprintf(f, "  %-12s %12.3f\n", MEM_ROWS[k].key, mem_measured(r, k) / 1e6);
    }
    if (pr && pr->done)
        fprintf(f, "  %-12s %12.3f %12.3f %+7.1f%%\n", "total", r->peak_total / 1e6, tot_pred / 1e6,
                100 * rel(tot_pred, r->peak_total));
    else
        fprintf(f, "  %-12s %12.3f\n", "total", r->peak_total / 1e6);
    if (r->pp > 1) {
        fprintf(f, "\npeak memory per pipeline stage (its largest rank), MB:\n");
        if (pr && pr->done)
            fprintf(f, "  %-12s %12s %12s %8s\n", "stage", "measured", "predicted", "error");
        for (int k = 0; k < r->pp && k < ZP_EXEC_MAX_STAGES; k++) {
            if (pr && pr->done && k < pr->nstages)
                fprintf(f, "  %-12d %12.3f %12.3f %+7.1f%%\n", k, r->stage_peak_total[k] / 1e6,
                        pr->stage_mem[k].total / 1e6, 100 * rel(pr->stage_mem[k].total, r->stage_peak_total[k]));
            else
                fprintf(f, "  %-12d %12.3f\n", k, r->stage_peak_total[k] / 1e6);
        }
    }
    fprintf(f, "\ntime per step (rank 0), s:\n");
    if (pr && pr->done) {
        fprintf(f, "  %-12s %10s %10s %8s\n", "part", "measured", "predicted", "error");
        const char *nm[] = {"compute", "mp_comm", "dp_comm", "optimizer", "pp_comm"};
        double me[] = {r->time.compute, r->time.mp_comm, r->time.dp_comm, r->time.optimizer, r->time.pp_comm};
        double pd[] = {pr->sim.compute, pr->sim.mp_comm, pr->sim.dp_exposed, pr->sim.optimizer, pr->sim.pp_exposed};
        for (int i = 0; i < (r->pp > 1 ? 5 : 4); i++) {
            /* a part below 0.1 ms on both sides (an MP all-reduce with mp = 1 measures microseconds, the
             * model says 0) has no meaningful relative error */
            if (me[i] < 1e-4 && pd[i] < 1e-4)
                fprintf(f, "  %-12s %10.4f %10.4f %8s\n", nm[i], me[i], pd[i], "-");
            else
                fprintf(f, "  %-12s %10.4f %10.4f %+7.1f%%\n", nm[i], me[i], pd[i], 100 * rel(pd[i], me[i]));
        }
        fprintf(f, "  %-12s %10.4f %10.4f %+7.1f%%\n", "step", r->measured_step_s, pr->sim.step_time,
                100 * rel(pr->sim.step_time, r->measured_step_s));
    } else {
        fprintf(f, "  compute %.4f, mp_comm %.4f, dp_comm %.4f, optimizer %.4f\n", r->time.compute, r->time.mp_comm,
                r->time.dp_comm, r->time.optimizer);
    }
    if (pr && pr->done) {
        fprintf(f, "\ntime per phase (rank 0), s:\n  %-12s %10s %10s %8s\n", "phase", "measured", "predicted", "error");
        for (int p = 0; p < ZP_NPHASES; p++) {
            double me = r->time.phase[p], pd = pr->sim.phase[p];
            if (me < 1e-4 && pd < 1e-4)
                fprintf(f, "  %-12s %10.4f %10.4f %8s\n", zp_phase_name((zp_phase)p), me, pd, "-");
            else
                fprintf(f, "  %-12s %10.4f %10.4f %+7.1f%%\n", zp_phase_name((zp_phase)p), me, pd, 100 * rel(pd, me));
        }
    } else {
        fprintf(f, "  by phase: ");
        for (int p = 0; p < ZP_NPHASES; p++)
            fprintf(f, "%s %.4f%s", zp_phase_name((zp_phase)p), r->time.phase[p], p + 1 < ZP_NPHASES ? ", " : "\n");
    }
    if (pr && pr->done)
        report_text_kinds(f, r, pr);
    if (pr && !pr->done && pr->err[0])
        fprintf(f, "\nvalidation: %s\n", pr->err);
    if (pr && pr->done)
        report_text_verdict(f, r, pr);
}

/* The exec configuration of the options: exactly the plan given, exec's defaults for the rest (stage 0,
 * MP 1, micro-batch 1, no accumulation, no checkpointing, no overlap; the global batch sets the
 * accumulation). */
static zp_status exec_config(const zp_cli_args *a, int ranks, zp_exec_config *cfg)
{
    const zp_search_req *r = &a->r;
    zp_exec_config_default(cfg);
    zp_plan *p = &cfg->plan;
    if (zp_pp_uneven(&r->base)) /* the executor's tensors and its tests are of the even split */
        return ZP_FAIL(ZP_EINVAL, "--pp-first-layers / --pp-last-layers / --pp-layout: zplan exec runs the even "
                                  "split of the layers over the stages (drop them, or predict with the what-if)");
    const zp_plan *b = &r->base;
    if (zp_search_req_given(r, ZP_SEARCH_STAGE))
        p->stage = b->stage;
    for (int d = 0; d < ZP_NDIMS; d++) /* the degrees given; DP is what they leave of the ranks */
        if (d != ZP_DIM_DP && zp_search_req_given(r, ZP_SEARCH_DIM(d)))
            p->deg[d] = b->deg[d];
    if (zp_search_req_given(r, ZP_SEARCH_SCHEDULE))
        p->schedule = b->schedule;
    if (zp_search_req_given(r, ZP_SEARCH_VSTAGES)) {
        p->vstages = b->vstages;
        if (zp_search_req_searched(r, ZP_SEARCH_SCHEDULE) && p->vstages > 1)
            p->schedule = ZP_PP_INTERLEAVED;
    }
    if (zp_search_req_given(r, ZP_SEARCH_SP))
        p->sp = b->sp;
    p->cp_comm = b->cp_comm;
    if (zp_search_req_given(r, ZP_SEARCH_MICRO_BATCH))
        p->micro_batch = b->micro_batch;
    const int accum = zp_search_req_given(r, ZP_SEARCH_ACCUM);
    if (accum)
        p->grad_accum = b->grad_accum;
    if (zp_search_req_given(r, ZP_SEARCH_GLOBAL_BATCH)) {
        /* the batch's replicas: the DP ranks over the CP ranks that share each sequence */
        const int64_t dp = ranks / (p->mp > 0 ? p->mp : 1) / (p->pp > 0 ? p->pp : 1) / (p->cp > 1 ? p->cp : 1);
        const int64_t per = p->micro_batch * dp;
        if (dp < 1 || r->global_batch % per != 0 ||
            (accum && r->global_batch != per * p->grad_accum))
            return ZP_FAIL(ZP_EINVAL, "--global-batch %lld is not micro-batch %lld x accumulation x %lld "
                                      "data-parallel ranks",
                           (long long)r->global_batch, (long long)p->micro_batch, (long long)dp);
        p->grad_accum = r->global_batch / per;
    }
    if (a->checkpoint_given) {
        zp_plan_set_recompute(p, zp_search_req_given(r, ZP_SEARCH_RECOMPUTE)
                                     ? zp_search_req_recompute(r)
                                     : (r->checkpoint ? ZP_RECOMPUTE_FULL : ZP_RECOMPUTE_NONE));
        if (p->checkpoint)
            p->ckpt_every = r->base.ckpt_every; /* refused by zp_exec_config_check: the executor has no such mode */
    }
    if (a->overlap_given)
        p->overlap_comm = r->base.overlap_comm;
    p->pa = zp_search_req_given(r, ZP_SEARCH_PA) && b->pa == 1;
    p->pa_cpu = zp_search_req_given(r, ZP_SEARCH_PA_CPU) && b->pa_cpu == 1;
    if (zp_search_req_given(r, ZP_SEARCH_OFFLOAD))
        p->offload = b->offload;
    p->cb = r->base.cb;
    p->bucket = r->base.bucket;
    p->md = r->base.md;
    /* --validate compares a median step with a prediction: by default over >= 5 steps and >= 2 s of them
     * (step times on this VM swing by -20%..+40% in spells of several steps; a 2 s median of one
     * configuration stayed within 0.038-0.040 s where a 7-step one landed anywhere in 0.032-0.044 s) */
    cfg->steps = a->steps > 0 ? (int)a->steps : (a->validate ? ZP_CLI_VALIDATE_STEPS : 3);
    cfg->min_seconds = a->min_seconds >= 0 ? a->min_seconds : (a->validate ? ZP_CLI_VALIDATE_SECONDS : 0);
    cfg->seed = (uint64_t)a->seed;
    cfg->lr = a->lr;
    cfg->backend = a->backend;
    cfg->probe = a->validate; /* this machine's speed beside the calibration's (the verdict's quiet check) */
    if (!a->model)
        return ZP_FAIL(ZP_EINVAL, "--model is required (e.g. --model tiny; zplan models lists them)");
    zp_model_origin origin;
    zp_status st = zp_model_resolve(a->model, a->seq, &cfg->model, &origin);
    if (st != ZP_OK)
        return ZP_FAIL(st, "--model %s: %s", a->model, zp_error_message());
    return ZP_OK;
}

/* The checks before the run, on every rank: the configuration against the ranks and this machine's memory,
 * MPI where ranks > 1, the backend's start, and --profile (read into *prof, checked against the run).
 * Returns 0 to go on, else the exit code (the message printed, by rank 0 where every rank fails alike). */
static int exec_prepare(const zp_cli_args *a, const zp_exec_config *cfg, int ranks, int rank0, zp_profile *prof)
{
#if !ZP_HAVE_MPI
    if (ranks > 1)
        return zp_cli_fail_as("zplan exec", ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without MPI: run it without mpirun"));
#endif
    if (zp_exec_config_check(cfg, ranks) != ZP_OK || check_fits_here(cfg, ranks) != ZP_OK) {
        if (rank0)
            fprintf(stderr, "zplan exec: %s\n", zp_error_message());
        return 2;
    }
    const zp_kernels_backend *be;
    zp_status st = zp_kernels_backend_get(cfg->backend, &be);
    if (st == ZP_OK)
        st = be->init();
    if (st != ZP_OK) {
        if (rank0)
            fprintf(stderr, "zplan exec: --backend %s: %s\n", cfg->backend, zp_error_message());
        return zp_status_exit_code(st);
    }
    if (a->validate && !a->profile)
        return zp_cli_fail_as("zplan exec", ZP_FAIL(ZP_EINVAL, "--validate needs --profile FILE: the costs of this "
                                                           "machine, from `mpirun -np %d zplan calibrate --model %s "
                                                           "--micro-batch %lld -o FILE`",
                                                    ranks, a->model, (long long)cfg->plan.micro_batch));
    if (a->profile && zp_profile_read(a->profile, prof) != ZP_OK) {
        if (rank0)
            fprintf(stderr, "zplan exec: --profile %s\n", zp_error_message());
        return 2;
    }
    if (a->profile && (st = check_profile_use(a->profile, prof, cfg, ranks, rank0)) != ZP_OK)
        return zp_cli_fail_as("zplan exec", st);
    return 0;
}

/* --validate's prediction, on rank 0 before MPI starts (the simulation forks): the step simulated on this
 * machine's platform (prof's compute scaled to this run's share of the cores) and the memory replay of the
 * executor's schedule, each pipeline stage's too; a failure is kept in pr->err for the report. */
static void exec_predict(const zp_exec_config *cfg, zp_profile *prof, int ranks, prediction *pr)
{
    zp_plan plan = cfg->plan;
    plan.dp = ranks / cfg->plan.mp / (cfg->plan.pp > 1 ? cfg->plan.pp : 1);
    plan.param_bytes = 4.0;
    plan.k_optimizer = 8.0;
    plan.impl = ZP_IMPL_EXEC;
    /* Ranks share the cores: with more ranks than cores each gets cores/ranks of a core. The profile's
     * compute was measured with its own rank count running at once (zplan calibrate times every rank
     * together), so it already holds that share; scale to this run's:
     * max(1, ranks/cores) / max(1, calibration ranks/cores), 1 when calibrated with as many ranks. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    int cal_ranks = prof->machine.ranks > 0 ? prof->machine.ranks : 1;
    double share = fmax(1.0, (double)ranks / (double)cores) / fmax(1.0, (double)cal_ranks / (double)cores);
    if (share != 1.0)
        zp_profile_scale_compute(prof, share);
    zp_cluster cl;
    local_cluster(prof, ranks, &cl);
    zp_sim_job job;
    memset(&job, 0, sizeof job);
    job.in.model = &cfg->model;
    job.in.plan = &plan;
    job.in.cluster = &cl;
    job.in.profile = prof;
    zp_status st = zp_simrun_one(&job);
    if (st == ZP_OK)
        st = job.st;
    if (st == ZP_OK)
        st = zp_memory_estimate(&cfg->model, &plan, &pr->mem); /* plan.impl: the executor's own layout */
    if (st == ZP_OK && plan.pp > 1 && plan.pp <= ZP_EXEC_MAX_STAGES) {
        st = zp_memory_estimate_stages(&cfg->model, &plan, pr->stage_mem, ZP_EXEC_MAX_STAGES);
        pr->nstages = (int)plan.pp;
    }
    if (st == ZP_OK) {
        pr->sim = job.res;
        pr->cal = prof->machine;
        pr->done = 1;
    } else {
        snprintf(pr->err, sizeof pr->err, "prediction failed: %s", job.err[0] ? job.err : zp_error_message());
    }
}

/* The run on `world` (st: how the start went), watched: a watchdog names a rank that dies or hangs and ends
 * the job within timeout_s (+ 2 heartbeats); ranks started with different options (argv hashed) are refused
 * before any work. */
static zp_status exec_run_watched(zp_status st, const zp_exec_config *cfg, zp_comm *world, int ranks,
                                  double timeout_s, int argc, char **argv, zp_exec_result *res)
{
    int watching = 0;
    if (st == ZP_OK && ranks > 1) {
        st = zp_comm_watchdog_start(world, timeout_s, "zplan exec");
        watching = st == ZP_OK;
    }
    if (st == ZP_OK && ranks > 1) {
        uint64_t h = 0;
        for (int i = 1; i < argc; i++) /* the command line, every argument and its end */
            h = zp_config_hash(argv[i], strlen(argv[i]) + 1, h);
        st = zp_comm_check_same_config(world, h, "exec configuration");
    }
    if (st == ZP_OK)
        st = zp_exec_run(cfg, world, res);
    if (watching)
        zp_comm_watchdog_stop();
    return st;
}

/* Rank 0's report (JSON or text; pr NULL without --validate) to `output`, or stdout when NULL: the exit
 * code, 1 when it could not be written. */
static int exec_write_report(const zp_exec_config *cfg, const zp_exec_result *res, const prediction *pr, int json,
                             const char *output)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return 1;
    if (json) {
        json_t *j = report_json(cfg, res, pr);
        json_dumpf(j, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', f);
        json_decref(j);
    } else {
        report_text(f, cfg, res, pr);
    }
    fclose(f);
    int rc = 0;
    if (output) {
        if (zp_io_write_file(output, text, len) != ZP_OK) {
            fprintf(stderr, "zplan exec: %s\n", zp_error_message());
            rc = 1;
        }
    } else {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    free(text);
    return rc;
}

static int exec_main(int argc, char **argv)
{
    zp_cli_args a;
    zp_status pst = zp_cli_args_parse(ZP_CMD_EXEC, "zplan exec", argc, argv, &a);
    if (pst != ZP_OK)
        return zp_cli_fail_as("zplan exec", pst);
    if (a.help) {
        fputs(USAGE, stdout);
        return 0;
    }
    const int ranks = zp_cli_launch_size();
    const int rank0 = zp_cli_launch_rank() == 0;
    zp_exec_config cfg;
    if ((pst = exec_config(&a, ranks, &cfg)) != ZP_OK)
        return zp_cli_fail_as("zplan exec", pst);
    const int validate = a.validate;
    zp_cli_launch_threads();
    zp_profile prof;
    const int prc = exec_prepare(&a, &cfg, ranks, rank0, &prof);
    if (prc != 0)
        return prc;

    /* ---- prediction on rank 0, before MPI starts (fork) ---- */
    prediction pr;
    memset(&pr, 0, sizeof pr);
    if (validate && rank0)
        exec_predict(&cfg, &prof, ranks, &pr);

    /* ---- the run ---- */
    int argc2 = argc;
    char **argv2 = argv;
    if (zp_kernels_mpi_init(&argc2, &argv2) != ZP_OK) {
        fprintf(stderr, "zplan exec: %s\n", zp_error_message());
        return 1;
    }
    zp_comm *world = NULL;
    zp_exec_result res;
    const zp_kernels_backend *be;
    zp_status st = zp_kernels_backend_get(cfg.backend, &be);
    if (st == ZP_OK)
        st = zp_comm_world(be, &world);
    if (st == ZP_OK && zp_comm_size(world) != ranks)
        st = ZP_FAIL(ZP_EINVAL, "the launcher announced %d ranks, MPI has %d", ranks, zp_comm_size(world));
    st = exec_run_watched(st, &cfg, world, ranks, a.timeout_s, argc, argv, &res);
    int rank = world ? zp_comm_rank(world) : 0;
    if (st != ZP_OK) {
        fprintf(stderr, "zplan exec: rank %d: %s\n", rank, zp_error_message());
        if (ranks > 1) /* the others may be waiting in a collective: end the job */
            zp_kernels_mpi_abort(zp_status_exit_code(st));
        zp_comm_free(world);
        zp_kernels_mpi_finalize();
        return zp_status_exit_code(st);
    }
    int rc = 0;
    res.quiet.probe_cal_s = pr.cal.probe_s; /* the judge sets the run's speed beside the calibration's */
    if (rank == 0)
        rc = exec_write_report(&cfg, &res, validate ? &pr : NULL, a.fmt == ZP_FMT_JSON, a.out);
    zp_exec_result_free(&res);
    zp_comm_free(world);
    zp_kernels_mpi_finalize();
    return rc;
}

int zp_exec_main(int argc, char **argv) { return zp_cli_launch_exit(argc, argv, exec_main(argc, argv)); }
