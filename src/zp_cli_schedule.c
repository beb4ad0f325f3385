/* `zplan schedule [plan options] [--rank R] [--format text|json]`: the recommended plan's step (the
 * what-if's, found by the same search) as one rank's schedule in program order. */
#include <stdio.h>
#include <stdlib.h>

#include "zp_cli.h"
#include "zp_report_schedule.h"

static const char USAGE[] =
    "Usage: zplan schedule --model M --gpus N [plan options] [--rank R] [--format text|json] [-o FILE]\n"
    "Prints one rank's training step as the simulator, the memory model and the executor see it: every\n"
    "operation in program order (kernels, collectives, copies, channel signals and waits, memory allocs and\n"
    "frees) with its stream, phase, time part, FLOPs, bytes, memory category and the operations it depends\n"
    "on. The plan is the what-if's recommended one for the same options (everything not given is searched;\n"
    "--exact pins it), so replaying the alloc and free ops gives the what-if's memory per GPU.\n"
    "\n"
    "  --rank R             which rank (default 0; the ranks of a pipeline stage run the same schedule)\n"
    "  --format text|json   text (default): one line per op; json: {\"plan\", \"memory_gb\", \"ops\": [{\"id\",\n"
    "                       \"name\", \"kind\", \"stream\", \"part\", \"phase\", \"layer\", \"micro\", \"deps\", \"flops\",\n"
    "                       \"bytes\", \"category\", \"buffer\"}]}; a pipeline send the compute stream does\n"
    "                       not wait for (--overlap-p2p-comm) has \"nowait\": true\n"
    "  -o, --output FILE    write to FILE (atomically)\n"
    "  --replay FILE        instead of a plan: read a schedule written by --format json (edited, or made by\n"
    "                       another tool), check every op against zplan's op kinds and print the memory\n"
    "                       its alloc and free ops hold at the peak, by category\n"
    "Plan options: those of the what-if (zplan --help): --model, --gpus, --cluster, --gpu-mem, --host-mem,\n"
    "--stage, --mp, --ep, --micro-batch, --global-batch, --grad-accum, --seq, --pa, --no-pa, --pa-cpu, --offload,\n"
    "--offload-device, --max-live-params, --prefetch-bucket, --checkpoint/--no-checkpoint, --recompute, --pp,\n"
    "--schedule, --virtual-stages, --pp-first-layers, --pp-last-layers, --pp-layout, --sp/--no-sp, --no-cb, --bucket,\n"
    "--no-md, --flash-attention/--no-flash-attention (default: by the GPU, as the what-if), --flash-kernel, --grad-accum-fusion, --overlap-comm, --framework,\n"
    "--overlap-p2p-comm, --exact, --analytic, --profile, --ds-config, --trace. With pipeline stages, rank R runs stage R / (DP x MP)\n"
    "(Megatron-LM's order: MP ranks innermost, then DP, then PP).\n";

/* --replay FILE: the memory of a schedule read back, by category at the device peak. */
static zp_status replay(const zp_cli_args *a)
{
    zp_op *ops;
    int n;
    ZP_TRY(zp_schedule_read_ops(a->replay, &ops, &n));
    zp_memory m;
    zp_status st = zp_memory_replay_ops(ops, n, &m);
    free(ops);
    ZP_TRY(st);
    static const char *const keys[] = {"category", "gb"};
    static const char *const heads[] = {"Category", "GB per GPU"};
    zp_table *t = zp_table_new("Memory of the replayed schedule at its device peak (GB = 1e9 bytes)", 2, keys, heads);
    const struct {
        const char *name;
        double v;
    } rows[] = {{"params", m.params},       {"grads", m.grads},     {"optimizer", m.optimizer},
                {"activations", m.activations}, {"checkpoints", m.checkpoints}, {"buffers", m.buffers},
                {"fragmentation", m.fragmentation}, {"total", m.total}, {"host", m.host}};
    for (size_t i = 0; t && i < sizeof rows / sizeof rows[0] && st == ZP_OK; i++) {
        st = zp_table_add_row(t);
        if (st == ZP_OK)
            st = zp_table_set_str(t, 0, rows[i].name);
        if (st == ZP_OK)
            st = zp_table_set_num(t, 1, rows[i].v / 1e9, "%.6g");
    }
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (st != ZP_OK) {
        zp_table_free(t);
        return st;
    }
    zp_cli_out out;
    if ((st = zp_cli_out_open(a->out, &out)) == ZP_OK) {
        st = zp_table_write(t, out.f, a->fmt);
        st = zp_cli_out_close(&out, st);
    }
    zp_table_free(t);
    return st;
}

static int zp_cli_schedule_body(zp_cli_plan *op)
{
    zp_cli_plan o = *op; /* by value: the request points at o.model */
    o.a.r.model = &o.model;
    zp_status st = ZP_OK;
    if (o.a.replay) {
        st = replay(&o.a);
        return st == ZP_OK ? 0 : zp_cli_fail_as("zplan schedule", st);
    }
    zp_search_result res;
    if ((st = zp_cli_plan_search(&o, &res)) != ZP_OK)
        return zp_cli_fail_as("zplan schedule", st);
    const zp_eval *best = NULL;
    for (int i = 0; i < res.n && !best; i++)
        if (res.plans[i].fits)
            best = &res.plans[i];
    if (!best)
        st = ZP_FAIL(ZP_ENOFIT, "no plan fits these options, so there is no step to print (zplan with the same "
                                "options says why and what would fit; exit 3)");
    else if (o.a.rank >= o.a.r.gpus)
        st = ZP_FAIL(ZP_EINVAL, "--rank %lld: the plan has ranks 0 to %lld", (long long)o.a.rank,
                     (long long)o.a.r.gpus - 1);
    zp_schedule s = {0};
    /* Megatron-LM's rank order: MP innermost, then DP, then the pipeline stage */
    const int stage = best ? (int)(o.a.rank / (best->plan.dp * best->plan.mp)) : 0;
    if (st == ZP_OK)
        st = zp_schedule_build_stage(&o.model, &best->plan, stage, &s);
    zp_cli_out out;
    if (st == ZP_OK && (st = zp_cli_out_open(o.a.out, &out)) == ZP_OK) {
        st = zp_report_schedule(out.f, o.a.fmt, &o.model, &best->plan, o.a.rank, &s);
        st = zp_cli_out_close(&out, st);
    }
    zp_schedule_free(&s);
    zp_search_result_free(&res);
    return st == ZP_OK ? 0 : zp_cli_fail_as("zplan schedule", st);
}

int zp_cli_schedule(int argc, char **argv)
{
    return zp_cli_plan_main(ZP_CMD_SCHEDULE, "zplan schedule", "zplan schedule", USAGE, argc, argv, zp_cli_schedule_body);
}
