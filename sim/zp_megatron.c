/* zp_megatron.c — a plan as Megatron-LM arguments (see zp_megatron.h). */
#include "zp_megatron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zp_io.h"

zp_status zp_megatron_check(const zp_plan *p)
{
    if (p->stage >= 2)
        return ZP_FAIL(ZP_EUNSUPPORTED, "ZeRO stage %d is not Megatron-LM's (its distributed optimizer is stage 1): "
                                        "run this plan with DeepSpeed (--emit-ds-config)",
                       p->stage);
    if (p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EUNSUPPORTED, "offload %s is DeepSpeed's, not Megatron-LM's: use --emit-ds-config",
                       zp_offload_name(p->offload));
    if (p->pa_cpu)
        return ZP_FAIL(ZP_EUNSUPPORTED, "checkpoints in host memory (ZeRO-R Pa+cpu) are DeepSpeed's: use "
                                        "--emit-ds-config");
    return ZP_OK;
}

typedef struct {
    char *buf;
    size_t len, used;
    int overflow;
} out;

static void add(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->len - o->used)
        o->overflow = 1;
    else
        o->used += (size_t)n;
}

zp_status zp_megatron_args(const zp_model *m, const zp_plan *p, char *buf, size_t len)
{
    ZP_TRY(zp_megatron_check(p));
    if (len < 1)
        return ZP_FAIL(ZP_ERANGE, "no room for the arguments");
    buf[0] = '\0';
    out o = {.buf = buf, .len = len};
    add(&o, "--num-layers %lld --hidden-size %lld --num-attention-heads %lld --ffn-hidden-size %lld --seq-length %lld "
            "--max-position-embeddings %lld",
        (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->ffn, (long long)m->seq,
        (long long)(m->positions > 0 ? m->positions : m->seq));
    add(&o, " --tensor-model-parallel-size %lld --pipeline-model-parallel-size %lld", (long long)p->mp,
        (long long)p->pp);
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED)
        add(&o, " --num-layers-per-virtual-pipeline-stage %lld", (long long)(m->layers / (p->pp * p->vstages)));
    if (p->sp)
        add(&o, " --sequence-parallel");
    switch (zp_plan_recompute(p)) {
    case ZP_RECOMPUTE_FULL: add(&o, " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"); break;
    case ZP_RECOMPUTE_SELECTIVE: add(&o, " --recompute-granularity selective"); break;
    default: break;
    }
    if (p->pa && p->mp > 1)
        add(&o, " --distribute-saved-activations");
    add(&o, " --micro-batch-size %lld --global-batch-size %.0f", (long long)p->micro_batch, zp_plan_global_batch(p));
    if (p->stage == 1)
        add(&o, " --use-distributed-optimizer");
    if (p->overlap_comm)
        add(&o, " --overlap-grad-reduce");
    add(&o, " %s", p->param_bytes == 2.0 ? "--fp16" : "");
    if (o.used > 0 && buf[o.used - 1] == ' ')
        buf[--o.used] = '\0';
    return o.overflow ? ZP_FAIL(ZP_ERANGE, "the arguments need more than %zu bytes", len) : ZP_OK;
}

zp_status zp_megatron_write(const zp_model *m, const zp_plan *p, const char *path)
{
    char args[1024], text[1400];
    ZP_TRY(zp_megatron_args(m, p, args, sizeof args));
    int n = snprintf(text, sizeof text,
                     "# Megatron-LM arguments (pretrain_gpt.py) of zplan's plan for %s: %lld GPUs = DP %lld x TP %lld x "
                     "PP %lld\n%s\n",
                     m->name, (long long)zp_plan_gpus(p), (long long)p->dp, (long long)p->mp, (long long)p->pp, args);
    if (n < 0 || (size_t)n >= sizeof text)
        return ZP_FAIL(ZP_ERANGE, "the arguments are too long");
    return zp_io_write_file(path, text, (size_t)n);
}
