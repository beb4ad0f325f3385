/* zp_emit.h — private to sim/: the ops a step is made of, each appended to one stream of the builder
 * (zp_builder.h) with the builder's micro-batch, phase and layer: GEMMs (their FLOPs counted in b->flops),
 * element-wise kernels, collectives and copies, channel signals and waits, and Megatron's MP collectives with
 * or without sequence parallelism (Korthikanti et al. 2022) and TP overlap (zp_plan.tp_overlap: TE's
 * userbuffers, PyTorch's async TP). An op knows its kind's facts (zp_ops.def), not where in the step it is:
 * a block's structure is zp_block.c's, the step's zp_schedule.c's. Sizes: m, n, k and batch a GEMM's
 * (m x k times k x n, batch of them); bytes and elements per op on one rank. */
#ifndef ZP_EMIT_H
#define ZP_EMIT_H

#include "zp_builder.h"

/* 1 where ops that take no memory and do not order the streams are left out (a memory-only schedule, or
 * after a failure). */
int zp_emit_skipped(const zp_builder *b);

/* One GEMM on the compute stream, its FLOPs all counted (gemm), or `useful` of them (gemm_part: an expert's
 * rows padded to its capacity and the busiest rank's extra tokens run but are no model FLOPs); with TP
 * overlap the pending all-gather is taken by the GEMM that consumes it. gemm_bwd: its backward, the input
 * gradient dX(m, k) = dY(m, n) . W(n, k) and the weight gradient dW(k, n) = X^T(k, m) . dY(m, n). */
void zp_emit_gemm(zp_builder *b, int type, double m, double n, double k, double batch);
void zp_emit_gemm_part(zp_builder *b, int type, double m, double n, double k, double batch, double useful);
void zp_emit_gemm_bwd(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double batch);
/* An element-wise op over `elems` elements (its bytes its row's where the row has them, else `bytes`). */
void zp_emit_eltwise(zp_builder *b, int type, double bytes, double elems);
/* A collective or copy of `bytes` on stream s. */
void zp_emit_move(zp_builder *b, int s, int type, double bytes);
/* A signal or a wait on channel c of stream s. */
void zp_emit_signal(zp_builder *b, int s, zp_channel c);
void zp_emit_wait(zp_builder *b, int s, zp_channel c);
/* An op's micro-batch index, saturated at INT_MAX. */
int zp_emit_micro(int64_t u);

/* Tokens an element-wise kernel outside the attention and MLP walks on one MP rank: T, or T/t with SP. */
double zp_emit_sp_tokens(const zp_builder *b, double T);
/* After a row-parallel GEMM: its partial sums all-reduced over MP, or reduce-scattered with SP. */
void zp_emit_mp_reduce(zp_builder *b, double bytes);
/* Before a column-parallel GEMM: SP's all-gather of its input (nothing without SP); with TP overlap it
 * waits for the GEMM that consumes it. */
void zp_emit_mp_gather(zp_builder *b, double bytes);
/* The pending all-gather emitted on its own (before an op that does not take it). */
void zp_emit_tp_flush(zp_builder *b);
/* A row-parallel GEMM and the reduction of its partial sums (`bytes`; 0: none here), pipelined with TP
 * overlap; a column-parallel GEMM's backward and the reduction of its input gradient. */
void zp_emit_gemm_rs(zp_builder *b, int type, double m, double n, double k, double bytes);
void zp_emit_gemm_bwd_rs(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double bytes);

#endif
