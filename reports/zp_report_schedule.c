/* zp_report_schedule.c — one rank's step schedule in program order (`zplan schedule`), as text (one line
 * per op) or JSON: {"plan": {...}, "memory_gb": {...}, "ops": [{"id", "name", "kind", "stream", "part",
 * "phase", "layer", "micro", "deps", "flops", "bytes", "category", "buffer"}]}. An op depends on the op
 * before it on its stream (setup ops on the one before them) and a wait also on the signal that gives
 * it its token (tokens are taken in the order they were given). Replaying the alloc and free ops in
 * order gives the memory the what-if reports. */
#include "zp_report_schedule.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_memory.h"

typedef struct {
    FILE *f;
    zp_format fmt;
    int last[ZP_NSTREAMS + 1]; /* last op id per stream; [ZP_NSTREAMS]: the setup list */
    int *sig[ZP_NCHANNELS];    /* signal ids per channel in program order, and how many were taken */
    int nsig[ZP_NCHANNELS], taken[ZP_NCHANNELS], cap[ZP_NCHANNELS];
    int first;
    zp_status st;
} printer;

static void details(const zp_op *o, const zp_op_info *in, char *buf, size_t len)
{
    switch (in->cls) {
    case ZP_OPC_COMPUTE:
        if (o->flops > 0 && o->batch > 1)
            snprintf(buf, len, "gemm %.0fx%.0fx%.0f x%.0f, %.6g GFLOP", o->m, o->n, o->k, o->batch, o->flops / 1e9);
        else if (o->flops > 0)
            snprintf(buf, len, "gemm %.0fx%.0fx%.0f, %.6g GFLOP", o->m, o->n, o->k, o->flops / 1e9);
        else if (o->elems > 0)
            snprintf(buf, len, "%.0f elements, %.0f bytes", o->elems, o->bytes);
        else
            snprintf(buf, len, "%.0f parameters", o->bytes);
        break;
    case ZP_OPC_COLL:
        snprintf(buf, len, "%s over %s, %.0f bytes", zp_coll_name(in->coll), zp_group_name(in->group),
                 o->bytes);
        break;
    case ZP_OPC_COPY: snprintf(buf, len, "%s, %.0f bytes", in->dir == ZP_COPY_D2H ? "d2h" : "h2d", o->bytes); break;
    case ZP_OPC_P2P:
        snprintf(buf, len, "%s stage %d, %.0f bytes per GPU%s",
                 in->p2p == ZP_P2P_SEND ? "to" : (in->p2p == ZP_P2P_RECV ? "from" : "with"), o->item, o->bytes,
                 o->nowait ? ", not waited for" : "");
        break;
    case ZP_OPC_ALLOC:
    case ZP_OPC_FREE:
        snprintf(buf, len, "%s %s[%d], %.0f bytes", zp_mem_cat_name(o->cat), zp_buf_name(o->buf), o->item, o->bytes);
        break;
    default: snprintf(buf, len, "channel %s", zp_channel_name(o->channel)); break;
    }
}

static zp_status visit(void *ctx, const zp_op *o)
{
    printer *P = ctx;
    const zp_op_info *in = zp_op_info_get(o->type);
    const int lane = o->phase == ZP_PHASE_SETUP ? ZP_NSTREAMS : (int)o->stream;
    int deps[2], nd = 0;
    if (P->last[lane] >= 0)
        deps[nd++] = P->last[lane];
    P->last[lane] = o->id;
    if (in->cls == ZP_OPC_SIGNAL) {
        const zp_channel c = o->channel;
        if (P->nsig[c] == P->cap[c]) {
            int cap = P->cap[c] ? 2 * P->cap[c] : 64, *n = realloc(P->sig[c], (size_t)cap * sizeof *n);
            if (!n)
                return ZP_FAIL(ZP_ENOMEM, "out of memory");
            P->sig[c] = n;
            P->cap[c] = cap;
        }
        P->sig[c][P->nsig[c]++] = o->id;
    } else if (in->cls == ZP_OPC_WAIT && P->taken[o->channel] < P->nsig[o->channel]) {
        deps[nd++] = P->sig[o->channel][P->taken[o->channel]++];
    }
    const int mem = in->cls == ZP_OPC_ALLOC || in->cls == ZP_OPC_FREE;
    if (P->fmt == ZP_FMT_JSON) {
        fprintf(P->f, "%s\n    {\"id\": %d, \"name\": \"%s\", \"kind\": \"%s\", \"stream\": \"%s\", \"part\": \"%s\", "
                      "\"phase\": \"%s\", \"layer\": %d, \"micro\": %d, \"deps\": [",
                P->first ? "" : ",", o->id, in->name, zp_opc_name(in->cls), zp_stream_name(o->stream),
                zp_part_name(zp_op_part(o)), zp_phase_name(o->phase), o->layer, o->micro);
        for (int i = 0; i < nd; i++)
            fprintf(P->f, "%s%d", i ? ", " : "", deps[i]);
        fprintf(P->f, "], \"flops\": %.17g, \"bytes\": %.17g", o->flops, o->bytes);
        if (mem)
            fprintf(P->f, ", \"category\": \"%s\", \"buffer\": \"%s\"", zp_mem_cat_name(o->cat), zp_buf_name(o->buf));
        if (in->cls == ZP_OPC_SIGNAL || in->cls == ZP_OPC_WAIT)
            fprintf(P->f, ", \"channel\": \"%s\"", zp_channel_name(o->channel));
        if (in->cls == ZP_OPC_P2P)
            fprintf(P->f, ", \"peer_stage\": %d%s", o->item, o->nowait ? ", \"nowait\": true" : "");
        fputc('}', P->f);
    } else {
        char d[160], dl[32] = "";
        details(o, in, d, sizeof d);
        for (int i = 0; i < nd; i++)
            snprintf(dl + strlen(dl), sizeof dl - strlen(dl), "%s%d", i ? "," : "", deps[i]);
        fprintf(P->f, "%6d  %-7s %-9s %5d %5d  %-10s %-27s %-11s %s\n", o->id, zp_stream_name(o->stream),
                zp_phase_name(o->phase), o->layer, o->micro, zp_opc_name(in->cls), in->name, dl, d);
    }
    P->first = 0;
    return ZP_OK;
}

static json_t *plan_json(const zp_model *m, const zp_plan *p, int64_t rank, const zp_schedule *s)
{
    json_t *j = json_pack("{s:s, s:f, s:i, s:I, s:I, s:I, s:I, s:f, s:b, s:b, s:b, s:b, s:f, s:b, s:s, s:b, s:I, s:i, "
                     "s:s}",
                     "model", m->name, "params", zp_model_params(m), "stage", p->stage, "mp", (json_int_t)p->mp, "dp",
                     (json_int_t)p->dp, "micro_batch", (json_int_t)p->micro_batch, "grad_accum",
                     (json_int_t)p->grad_accum, "global_batch", zp_plan_global_batch(p), "checkpoint", p->checkpoint,
                     "pa", p->pa, "pa_cpu", p->pa_cpu, "cb", p->cb, "bucket", p->bucket, "md", p->md, "offload",
                     zp_offload_name(p->offload), "overlap_comm", p->overlap_comm, "rank", (json_int_t)rank, "ops",
                     s->nops, "memory", p->impl == ZP_IMPL_EXEC ? "zplan-exec" : "deepspeed");
    if (j && (p->pp > 1 || p->sp || p->selective)) {
        json_t *x = json_pack("{s:I, s:s, s:i, s:i, s:b, s:s}", "pp", (json_int_t)p->pp, "schedule",
                              zp_pp_schedule_name(p->schedule), "virtual_stages", p->vstages, "pipeline_stage",
                              s->stage, "sp", p->sp, "recompute", zp_recompute_name(zp_plan_recompute(p)));
        json_object_update(j, x);
        json_decref(x);
        if (zp_plan_p2p_overlapped(p))
            json_object_set_new(j, "overlap_p2p_comm", json_true());
    }
    return j;
}

zp_status zp_report_schedule(FILE *f, zp_format fmt, const zp_model *m, const zp_plan *p, int64_t rank,
                             const zp_schedule *s)
{
    if (fmt != ZP_FMT_TEXT && fmt != ZP_FMT_JSON)
        return ZP_FAIL(ZP_EINVAL, "a schedule is written as text or json");
    zp_memory mem;
    ZP_TRY(zp_memory_replay(s, &mem));
    printer P = {.f = f, .fmt = fmt, .first = 1};
    for (int i = 0; i <= ZP_NSTREAMS; i++)
        P.last[i] = -1;
    if (fmt == ZP_FMT_JSON) {
        json_t *plan = plan_json(m, p, rank, s);
        json_t *memj = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "params", mem.params / 1e9,
                                 "grads", mem.grads / 1e9, "optimizer", mem.optimizer / 1e9, "activations",
                                 mem.activations / 1e9, "checkpoints", mem.checkpoints / 1e9, "buffers",
                                 mem.buffers / 1e9, "fragmentation", mem.fragmentation / 1e9, "total",
                                 mem.total / 1e9, "host", mem.host / 1e9);
        char *pj = json_dumps(plan, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        char *mj = json_dumps(memj, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (pj && mj)
            fprintf(f, "{\n  \"plan\": %s,\n  \"memory_gb\": %s,\n  \"ops\": [", pj, mj);
        free(pj);
        free(mj);
        json_decref(plan);
        json_decref(memj);
    } else {
        fprintf(f, "zplan schedule: %s, rank %lld of %lld: stage %d, MP %lld, DP %lld, micro-batch %lld x %lld "
                   "accumulation, %s%s%s%s, offload %s; %d ops in program order\n",
                m->name, (long long)rank, (long long)zp_plan_gpus(p), p->stage, (long long)p->mp, (long long)p->dp,
                (long long)p->micro_batch, (long long)p->grad_accum, p->checkpoint ? "checkpointing" : "no checkpointing",
                p->pa_cpu ? ", Pa+cpu" : (p->pa ? ", Pa" : ""), p->cb ? ", CB" : "", p->md ? ", MD" : "",
                zp_offload_name(p->offload), s->nops);
        if (p->pp > 1 || p->sp || p->selective || p->op_sac)
            fprintf(f, "pipeline stage %d of %lld (%s, %d model chunks per stage), sequence parallelism %s, recompute "
                       "%s\n",
                    s->stage, (long long)p->pp, zp_pp_schedule_name(p->schedule), p->vstages, p->sp ? "on" : "off",
                    zp_recompute_name(zp_plan_recompute(p)));
        fprintf(f, "memory per GPU (replay of the alloc/free ops): %.6g GB on the device (peak), %.6g GB host\n",
                mem.total / 1e9, mem.host / 1e9);
        fprintf(f, "%6s  %-7s %-9s %5s %5s  %-10s %-27s %-11s %s\n", "id", "stream", "phase", "layer", "micro", "kind",
                "name", "deps", "what");
    }
    zp_status st = zp_schedule_walk(s, 1, -1, visit, &P);
    for (int c = 0; c < ZP_NCHANNELS; c++)
        free(P.sig[c]);
    ZP_TRY(st);
    if (fmt == ZP_FMT_JSON)
        fputs("\n  ]\n}\n", f);
    return ferror(f) ? ZP_FAIL(ZP_EIO, "writing the schedule failed") : ZP_OK;
}
