/* zp_profile.h — a device profile: what `zplan calibrate` measured on a machine, and the cost
 * models fitted to it, which the simulator reads with --profile. This module is the ONE reader
 * and writer of the profile JSON.
 *
 * JSON layout (bandwidths in GB/s = 1e9 B/s, times in seconds, rates per second):
 * {
 *   "format": "zplan-profile", "version": 1,
 *   "machine": {"cpu_model", "cores", "gpu", "gpu_count", "nodes", "ranks", "hostname",
 *               "measured_at" (ISO 8601 UTC), "zplan_version",
 *               "while_calibrating": {"others_cores", "load_1min"} (optional: the machine watched),
 *               "probe": {"s", "drift"[, "sync"]} (optional: the reference work's time, spread and ranks' lag,
 *               kernels/zp_probe.h),
 *               "libraries": {"blas", "mpi", "cuda", "nccl"}},
 *   "backend": "cpu" | "cuda",
 *   "memory_bw_gbs": {"copy", "triad"},                        STREAM convention, per rank
 *   "host_device_gbs": {"h2d", "d2h"},                         PCIe copies; 0 = not applicable (cpu)
 *   "compute": {"peak_flops_fp32", "peak_flops_fp16", "peak_flops_bf16"},
 *   "adam": {"params_per_s", "bytes_per_param", "cpu_params_per_s",
 *            "points": [{"n", "params_per_s", "spread"}...]},
 *   "gemm": [{"m", "n", "k", "flops_per_s", "spread"}...],     measured points, >= 1
 *   "gemm_model": {"dtype", "t0_s", "s_per_flop", "s_per_byte", "residual"[, "cold_gbs"]},
 *   "collectives": {"allreduce" | "reduce_scatter" | "allgather" | "broadcast":
 *                     {"intra_node" | "inter_node":              each scope optional
 *                        {"nranks", "latency_s", "busbw_gbs", "residual",
 *                         "points": [{"bytes", "time_s", "spread"}...],
 *                         "hot_points": [...] (optional: back to back, buffers in cache)}}},
 *   "layer_kernels": {"layernorm_fwd" | "gelu_fwd" | ... (zp_profile_kernel_name):   OPTIONAL
 *                       {"t0_s", "s_per_elem", "elems"}},        time = t0 + elements * s_per_elem
 *   "device_model": {"sms", "gemm_max_efficiency", "k_half", "launch_s", "dispatch_s",   OPTIONAL
 *                    "unfused_kernels" (optional, false), "flash_efficiency" (optional, 0),
 *                    "flash_seq_half" (optional, 0), "nccl_ctas" (optional, 0),
 *                    "nccl_ll_base_s", "nccl_ll_hop_s" (optional, 0: NCCL's tuner figures)},
 *   "nvme_gbs": {"read", "write"}                                OPTIONAL: the node's drives (ZeRO-Infinity)
 *   "host_calls": {"kernel_s", "gemm_s"}                          OPTIONAL: a device backend's host time per call
 * }
 * Every listed key is required except "layer_kernels" and each of its kernels (absent = not measured:
 * profiles written before it existed still load), "device_model", "nvme_gbs", "host_calls", and the scopes of a
 * collective (optional: absent = not measured);
 * unknown keys are ignored, so tools may add their own. Numbers must be finite and >= 0.
 */
#ifndef ZP_PROFILE_H
#define ZP_PROFILE_H

#include <stddef.h>

#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZP_PROFILE_FORMAT "zplan-profile"
#define ZP_PROFILE_VERSION 1
#define ZP_PROFILE_MAX_GEMM 256  /* measured GEMM shapes kept */
#define ZP_PROFILE_MAX_POINTS 40 /* measured sizes kept per collective and scope */
#define ZP_PROFILE_MAX_ADAM 16   /* measured Adam sizes kept */

/* Collective kinds, in the order of zp_coll_kind (kernels/) and of the JSON keys. */
typedef enum {
    ZP_PROFILE_ALLREDUCE = 0,
    ZP_PROFILE_REDUCE_SCATTER,
    ZP_PROFILE_ALLGATHER,
    ZP_PROFILE_BROADCAST,
    ZP_PROFILE_NCOLL
} zp_profile_coll;

typedef enum { ZP_PROFILE_INTRA_NODE = 0, ZP_PROFILE_INTER_NODE, ZP_PROFILE_NSCOPE } zp_profile_scope;

typedef struct {
    char cpu_model[128];     /* /proc/cpuinfo model name */
    int cores;               /* online CPUs of one node */
    char gpu[128];           /* device name, "" for the cpu backend */
    int gpu_count;           /* devices visible to one rank, 0 for cpu */
    int nodes;               /* nodes the calibration ran on */
    int ranks;               /* MPI ranks of the calibration */
    char hostname[128];      /* host of rank 0 */
    char measured_at[32];    /* ISO 8601 UTC, "2024-05-01T12:00:00Z" */
    char zplan_version[32];
    int watched;             /* 1: the machine was watched while calibrating (JSON "while_calibrating",
                                optional: {"others_cores", "load_1min"}); 0: not known (older profiles) */
    double others_cores;     /* cores' worth of CPU other processes used meanwhile (zp_quiet.h) */
    double load1;            /* the 1-minute load average at the end */
    double probe_s;          /* JSON "probe": {"s", "drift"}, optional (0: absent): the reference work of
                                kernels/zp_probe.h, the median of its timings between the calibration's parts,
                                seconds; exec --validate times it again and compares (this machine's speed) */
    double probe_drift;      /* (max - min) / min of those timings: how far the speed moved while calibrating */
    double probe_sync;       /* JSON "probe.sync", optional (0: absent): the slowest rank's lag behind the ranks'
                                mean over the reference work's samples, as a fraction of the mean (the median of
                                the calibration's timings); the simulation makes each collective wait it
                                (sim/zp_actors.c sync_wait) */
    char blas[256];          /* library versions, "" when absent */
    char mpi[128];
    char cuda[64];
    char nccl[64];
} zp_profile_machine;

typedef struct {
    double n;                /* elements in the partition */
    double params_per_s;     /* median rate */
    double spread;           /* (max - min) / median of the repetitions (and ranks) */
} zp_profile_adam_point;

typedef struct {
    double m, n, k;          /* C (m, n) = A (m, k) . B (k, n) */
    double flops_per_s;      /* median achieved rate, 2mnk / time */
    double spread;           /* (max - min) / median */
} zp_profile_gemm_point;

typedef struct {
    double bytes;            /* size of the whole buffer (nccl-tests "size": the all-reduced buffer,
                                the gathered output, the reduce-scattered input) */
    double time_s;           /* median time, slowest rank */
    double spread;           /* (max - min) / median */
} zp_profile_coll_point;

/* Cost model of one collective in one scope: time = latency + bytes * busbw_factor / busbw,
 * busbw_factor = 2(n-1)/n all-reduce, (n-1)/n reduce-scatter / all-gather, 1 broadcast. */
typedef struct {
    int measured;            /* 0: not measured (zp_profile_collective_time returns -1) */
    int nranks;              /* ranks of the communicator it was measured on, >= 2 */
    double latency_s;        /* fitted latency (alpha) at nranks */
    double busbw_gbs;        /* fitted bus bandwidth, GB/s */
    double residual;         /* rms relative residual of the fit */
    int npoints;
    zp_profile_coll_point points[ZP_PROFILE_MAX_POINTS];
    int nhot;                /* "hot_points", optional (0: absent): the same collective back to back, its
                                buffers in cache as a tensor-parallel collective finds the activations the GEMM
                                before it just wrote (zp_op_info.warm); sizes up to the last-level cache */
    zp_profile_coll_point hot[ZP_PROFILE_MAX_POINTS];
} zp_profile_coll_fit;

/* The executor's layer kernels (kernels/zp_nn.h) whose per-element cost a profile may hold. Elements:
 * rows x columns of the tensor the kernel walks (layernorm, residual, bias, embedding: tokens x hidden;
 * gelu: tokens x ffn; softmax: heads x seq x seq per sequence; cross-entropy: tokens x vocabulary). */
typedef enum {
    ZP_KERNEL_LAYERNORM_FWD = 0,
    ZP_KERNEL_LAYERNORM_BWD,
    ZP_KERNEL_GELU_FWD,
    ZP_KERNEL_GELU_BWD,
    ZP_KERNEL_SOFTMAX_FWD,
    ZP_KERNEL_SOFTMAX_BWD,
    ZP_KERNEL_XENT_FWD,      /* row max, sum of exponentials, target pick */
    ZP_KERNEL_XENT_BWD,
    ZP_KERNEL_EMBED_FWD,
    ZP_KERNEL_EMBED_BWD,
    ZP_KERNEL_RESIDUAL_ADD,
    ZP_KERNEL_BIAS_ADD,
    ZP_KERNEL_BIAS_GRAD,
    ZP_KERNEL_RMSNORM_FWD,   /* today's architectures (Llama): tokens x hidden */
    ZP_KERNEL_RMSNORM_BWD,
    ZP_KERNEL_GLU_FWD,       /* act(gate) * up: tokens x ffn */
    ZP_KERNEL_GLU_BWD,
    ZP_KERNEL_ROPE_FWD,      /* rotary embedding of Q and K: tokens x (Q + K width) */
    ZP_KERNEL_ROPE_BWD,
    ZP_KERNEL_MOE_GATHER,    /* a mixture-of-experts' token copies gathered by expert: copies x hidden */
    ZP_KERNEL_MOE_COMBINE,   /* each token's copies summed (gate-weighted): copies x hidden */
    ZP_KERNEL_MOE_COMBINE_BWD, /* the copies' gradients scattered and the gates' dot products: copies x hidden */
    ZP_PROFILE_NKERNEL
} zp_profile_kernel;

typedef struct {
    int measured;            /* 0: not in the profile */
    double t0_s;             /* per-call overhead, s */
    double s_per_elem;       /* seconds per element */
    double elems;            /* largest element count measured (informative) */
} zp_profile_kernel_fit;

/* The per-kernel model of a GPU (the built-in presets carry one; a profile may): a GEMM takes
 *   max(2mnk / (peak x efficiency), bytes(A, B, C) / copy bandwidth) + launch_s,
 *   efficiency = gemm_max_efficiency x max over cuBLAS's CTA tiles of (the tile's relative throughput x tile
 *                quantization x wave quantization over `sms` SMs) x k / (k + k_half),
 * an element-wise kernel launch_s + its bytes / copy bandwidth; the host dispatches each kernel in dispatch_s
 * (the framework's host side, a queue ahead of the GPU in the simulation: small kernels wait on the CPU). sms == 0: not set (the GEMM
 * fit and the measured kernels alone, as `zplan calibrate` writes for the cpu backend). */
typedef struct {
    int sms;                 /* streaming multiprocessors: a GEMM's CTAs run in waves of this many */
    double gemm_max_eff;     /* fraction of the 16-bit peak a GEMM reaches when its tiles fill whole waves */
    double k_half;           /* the k at which a GEMM's main loop runs at half speed (prologue, epilogue) */
    double launch_s;         /* GPU time a kernel adds beyond its work (launch, ramp, tail), s */
    double dispatch_s;       /* host-side framework dispatch per kernel, s (sim/zp_actors.c: the host's queue):
                                a bare op's (the optimizer's calls, copies) */
    double dispatch_block_s; /* ... of a kernel inside the framework's transformer blocks, s; 0: dispatch_s */
    double coll_dispatch_s;  /* ... of a torch.distributed collective or point-to-point call, s; 0: dispatch_s */
    double nccl_ll_base_s;   /* NCCL's LL protocol inside a node, measured: fixed time of a collective, s */
    double nccl_ll_hop_s;    /* ... and each ring step over NVSwitch, s (0 both: NCCL's tuner figures) */
    int unfused_kernels;     /* the framework's memory-bound kernels are Megatron-LM 2019's, unfused
                                (sim/zp_ops.def: eltbytes_unfused) rather than 2020's fused ones */
    int nccl_ctas;           /* SMs (one CTA per NCCL channel) a collective's kernel holds while it runs: compute
                                overlapped with collectives gets sms - nccl_ctas x (collectives running) of them
                                (sim/zp_engine.c). 0: not modelled */
    double flash_eff;        /* fraction of the 16-bit peak FlashAttention's causal kernels reach, forward and
                                backward, at long sequences (0: the GPU has none; a plan's FlashAttention is
                                then costed as the unfused attention) */
    double flash_seq_half;   /* tokens a sequence at which they reach half of it: s / (s + flash_seq_half) of
                                flash_eff at s tokens (0: every length alike) */
} zp_profile_device;

/* FP8 training's GEMMs (zp_plan.fp8), set for the plans priced (zp_device_profile_fp8), never read from nor
 * written to a profile file: recipe 0 prices every GEMM in the profile's own type. */
typedef struct {
    int recipe;              /* the zp_fp8_recipe of the plans priced (vocab/zp_fp8.h); 0: none */
    double peak_flops;       /* the GPU's dense FP8 tensor-core peak, FLOP/s */
    double gemm_max_eff;     /* fraction of it large FP8 GEMMs whose tiles fill whole waves reach */
    int all_gather;          /* parameters all-gathered in FP8 (FSDP2): no weight cast beside the GEMM */
} zp_profile_fp8;

typedef struct {
    zp_profile_machine machine;
    char backend[8];                 /* "cpu" or "cuda" */

    double copy_gbs;                 /* memory_bw_gbs.copy: STREAM copy, GB/s */
    double triad_gbs;                /* memory_bw_gbs.triad: STREAM triad, GB/s */
    double h2d_gbs, d2h_gbs;         /* host <-> device copies, GB/s; 0 for cpu */

    double peak_flops_fp32;          /* FLOP/s: asymptote of the GEMM fit or best measured */
    double peak_flops_fp16;          /* for the cpu backend: the fp32 figure (16-bit GEMMs widen) */
    double peak_flops_bf16;

    double adam_params_per_s;        /* fused Adam on the backend's device, large partitions */
    double adam_bytes_per_param;     /* bytes the step moves per parameter (30) */
    double cpu_adam_params_per_s;    /* fused Adam on the host CPU (offload) */
    int nadam;
    zp_profile_adam_point adam[ZP_PROFILE_MAX_ADAM];

    int ngemm;
    zp_profile_gemm_point gemm[ZP_PROFILE_MAX_GEMM];
    /* GEMM time model: t = t0 + s_per_flop * 2mnk + s_per_byte * bytes(A, B, C) */
    char gemm_dtype[8];              /* "fp32", "fp16", "bf16": element type of the measured GEMMs */
    double gemm_t0_s;
    double gemm_s_per_flop;
    double gemm_s_per_byte;
    double gemm_residual;            /* rms relative residual of the fit */
    double gemm_cold_gbs;            /* gemm_model.cold_gbs, optional (0: absent): the rate, GB/s, at which a
                                        GEMM's operands that the step last touched long before come in, on
                                        top of the measured points (timed in loops whose buffers stay in
                                        cache): calibrate on the cpu writes its STREAM triad; zp_op_info.cold
                                        names the operands */

    zp_profile_coll_fit coll[ZP_PROFILE_NCOLL][ZP_PROFILE_NSCOPE];

    zp_profile_kernel_fit kernels[ZP_PROFILE_NKERNEL]; /* "layer_kernels", optional */
    zp_profile_device dev;           /* "device_model", optional (sms 0: absent) */
    double nvme_read_gbs, nvme_write_gbs; /* "nvme_gbs", optional (0: absent): a node's drives, GB/s */
    double host_kernel_s, host_gemm_s; /* "host_calls", optional (0: absent; calibrate writes it for a device
                                          backend): the host's time to issue one backend kernel call and one
                                          cuBLAS GEMM call, back to back, s; the host's dispatch of a profile
                                          without a device model (zp_device_host_time) */
    zp_profile_fp8 fp8;              /* FP8 training's GEMM rate (not in the file) */
    int eager;                       /* the plans priced run without torch.compile (zp_plan.eager): a block's
                                        elementwise ops as PyTorch eager's kernels (zp_op_info.launches_eager);
                                        set for the plans priced, not in the file */
} zp_profile;

/* An empty profile (zeros, nothing measured). */
void zp_profile_init(zp_profile *p);

/* Reads and validates a profile; on any problem returns ZP_EINVAL (ZP_ENOENT when the file
 * cannot be read) with a message naming the file and the key ("memory_bw_gbs.copy: ..."). */
zp_status zp_profile_read(const char *path, zp_profile *out);
/* The same from a JSON text (`name` is used in messages). */
zp_status zp_profile_parse(const char *json, size_t len, const char *name, zp_profile *out);
/* Writes atomically (temporary file + rename): an existing file is replaced only when the new
 * one is complete. Validates first: an invalid profile is never written. */
zp_status zp_profile_write(const zp_profile *p, const char *path);
/* The profile as JSON text (the file's content), malloc'ed, NUL-terminated; free() it. */
zp_status zp_profile_to_json(const zp_profile *p, char **out);
/* Checks the in-memory profile against the same rules as the reader. */
zp_status zp_profile_validate(const zp_profile *p);

const char *zp_profile_coll_name(zp_profile_coll kind);   /* "allreduce", ... */
const char *zp_profile_scope_name(zp_profile_scope scope); /* "intra_node", "inter_node" */
double zp_profile_busbw_factor(zp_profile_coll kind, int nranks);

/* Bytes the GEMM model counts for a shape: A, B and C once each, in the model's element type
 * (C in fp32). */
/* Bytes of one input element of the profile's measured GEMMs (gemm_dtype: 4 fp32, else 2). */
double zp_profile_gemm_elem_bytes(const zp_profile *p);
double zp_profile_gemm_bytes(const zp_profile *p, double m, double n, double k);
/* Time of a GEMM, seconds. Near measured shapes (log-space distance |ln m/m'| + |ln n/n'| + |ln k/k'|
 * <= ZP_PROFILE_GEMM_NEAR over the measured points) the achieved rate of the nearest measured points
 * (up to ZP_PROFILE_GEMM_IDW of them within twice that distance, inverse-square-distance weighted in log
 * rate; exactly the measured rate at a measured shape), so per-call overheads, cache effects and
 * small-shape inefficiency the straight-line fit misses are kept; elsewhere (and for
 * profiles without points, as the built-in presets) the device model where the profile has one
 * (zp_profile_device), else the fitted model. */
#define ZP_PROFILE_GEMM_NEAR 1.3862943611198906 /* ln 4 */
#define ZP_PROFILE_GEMM_IDW 4
double zp_profile_gemm_time(const zp_profile *p, double m, double n, double k);
/* `batch` GEMMs of one shape in one launch (attention's): with a device model, their CTAs share the waves;
 * otherwise launch overhead once and the rest per entry. */
double zp_profile_gemm_time_batched(const zp_profile *p, double m, double n, double k, double batch);
/* The device model's efficiency of a shape (zp_profile_device), in (0, 1]; 0 without a device model. */
double zp_profile_gemm_shape_efficiency(const zp_profile *p, double m, double n, double k, double batch);
/* The fitted model alone: t0 + s_per_flop * 2mnk + s_per_byte * bytes. */
double zp_profile_gemm_fit_time(const zp_profile *p, double m, double n, double k);
/* Fraction of the peak (of the model's dtype) a GEMM of this shape reaches by the fitted model (smooth
 * in the shape, unlike the measured points), in (0, 1]: 2mnk / (gemm_fit_time * peak). A profile without a GEMM model gives 1. */
double zp_profile_gemm_efficiency(const zp_profile *p, double m, double n, double k);
/* Peak FLOP/s for "fp32", "fp16" or "bf16" (0 for anything else). */
double zp_profile_peak_flops(const zp_profile *p, const char *dtype);

/* Time of one collective of `bytes` (whole buffer, see zp_profile_coll_point) on `nranks` ranks:
 * latency * (nranks - 1) / (measured nranks - 1) + bytes * busbw_factor(nranks) / busbw.
 * 0 for one rank; -1 when that kind and scope were not measured. */
double zp_profile_collective_time(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope, double bytes,
                                  int nranks);

/* Like zp_profile_collective_time, but from the measured points when the profile holds >= 2 of them
 * measured on exactly `nranks` ranks: piecewise linear in log(bytes)-log(time) between points, the
 * smallest point's time below them, the fitted bandwidth beyond the largest. Otherwise the fit. */
double zp_profile_collective_time_measured(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope,
                                           double bytes, int nranks);
/* The same from the hot points (measured back to back) when the profile holds >= 2 of them on exactly nranks
 * and bytes is within their sizes; -1 otherwise (the caller takes the measured time above). */
double zp_profile_collective_time_hot(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope, double bytes,
                                      int nranks);

/* Time of a fused Adam step over n parameters on the device (or on the host CPU when cpu != 0): the measured
 * points' rate interpolated in log size where n lies among them (smaller partitions stay in cache), the
 * fitted rate beyond the largest. */
double zp_profile_adam_time(const zp_profile *p, double n, int cpu);

/* "layernorm_fwd", ... (the JSON keys); "?" out of range. */
const char *zp_profile_kernel_name(zp_profile_kernel k);
/* Seconds of one call of layer kernel k over `elems` elements; -1 when the profile lacks it. */
double zp_profile_kernel_time(const zp_profile *p, zp_profile_kernel k, double elems);

/* The tensor-core peak the device model prices GEMMs at, FLOP/s: the peak of gemm_dtype (after
 * zp_profile_for_dtype: the plan's training type), else the fp16 peak (1e12 when none is known). */
double zp_profile_gemm_peak(const zp_profile *p);

/* The profile's GEMM costs for training in `dtype` ("fp16", "bf16", "fp32"): its GEMM model and points are
 * of gemm_dtype; when both types' peaks are known and differ, the FLOP-bound part is scaled by their
 * ratio (bf16 on a GPU without bf16 tensor cores, fp32 training on a profile of fp16 GEMMs). *out is a
 * copy of *in otherwise. */
void zp_profile_for_dtype(const zp_profile *in, const char *dtype, zp_profile *out);

/* Multiplies every compute time of the profile (GEMM points and model, Adam rates, layer kernels,
 * memory bandwidths) by `factor` > 0: the same machine with each rank given 1/factor of the CPU it had
 * when the profile was measured (e.g. more ranks than cores). Collectives are left as measured. */
zp_status zp_profile_scale_compute(zp_profile *p, double factor);

#ifdef __cplusplus
}
#endif

#endif
