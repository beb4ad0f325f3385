/* zp_kernels_timed.c — the kernels and collectives as operations to time (zp_timing.h's zp_timing_fn), and
 * the harness's clock and barrier hooks from a backend's timer and a communicator: what calibrate/ and
 * bench/ time, one implementation of each. */
#include "zp_kernels_impl.h"

/* ---- timing (zp_timing.h's hooks) ---- */

static zp_status clock_start(void *p)
{
    zp_kernels_clock *c = p;
    return c->be->timer_start(c->timer);
}

static zp_status clock_stop(void *p, double *seconds)
{
    zp_kernels_clock *c = p;
    return c->be->timer_stop(c->timer, seconds);
}

static zp_status comm_barrier(void *c) { return zp_comm_barrier(c); }

void zp_kernels_timing_hooks(zp_timing_opts *o, zp_kernels_clock *clock, zp_comm *barrier)
{
    o->clock_start = clock ? clock_start : NULL;
    o->clock_stop = clock ? clock_stop : NULL;
    o->clock_ctx = clock;
    o->barrier = barrier ? comm_barrier : NULL;
    o->barrier_ctx = barrier;
}

zp_status zp_coll_op_run(void *op)
{
    zp_coll_op *a = op;
    const zp_kernels_backend *be = a->be;
    const size_t n = (size_t)zp_comm_size(a->comm);
    switch (a->kind) {
    case ZP_COLL_ALLREDUCE: return be->allreduce(a->comm, a->send, a->recv, a->count, ZP_DT_F32, ZP_OP_SUM);
    case ZP_COLL_REDUCE_SCATTER:
        return be->reduce_scatter(a->comm, a->send, a->recv, a->count / n, ZP_DT_F32, ZP_OP_SUM);
    case ZP_COLL_ALLGATHER: return be->allgather(a->comm, a->send, a->recv, a->count / n, ZP_DT_F32);
    default: return be->broadcast(a->comm, a->send, a->count, ZP_DT_F32, 0);
    }
}

zp_status zp_copy_op_run(void *op)
{
    zp_copy_op *a = op;
    return a->to_device ? a->be->copy_to_device(a->dev, a->host, a->bytes)
                        : a->be->copy_to_host(a->host, a->dev, a->bytes);
}

zp_status zp_stream_copy_run(void *op)
{
    zp_stream_op *s = op;
    return s->be->stream_copy(s->a, s->b, s->n);
}

zp_status zp_stream_triad_run(void *op)
{
    zp_stream_op *s = op;
    return s->be->stream_triad(s->a, s->b, s->c, 3.0f, s->n);
}

zp_status zp_adam_op_run(void *op)
{
    zp_adam_op *a = op;
    zp_adam_result r;
    ZP_TRY(a->be->adam_step(&a->hp, &a->b, &r));
    if (r.overflow)
        return ZP_FAIL(ZP_ERUNTIME, "the timed Adam step overflowed (%zu non-finite gradients)", r.nonfinite);
    return ZP_OK;
}
