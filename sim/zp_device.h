/* zp_device.h — what one operation of the schedule costs on a device: the built-in device profile of
 * each cluster preset (the same zp_profile that `zplan calibrate` writes), and the time of compute,
 * element-wise, Adam and CPU operations under a profile. Collectives and copies are not here: they
 * are flows on the SimGrid platform (sim/zp_actors.c). */
#ifndef ZP_DEVICE_H
#define ZP_DEVICE_H

#include "zp_cluster.h"
#include "zp_profile.h"
#include "zp_schedule.h"

/* Kernel launch and tail overhead of an element-wise kernel, s (CUDA: ~5 us). */
#define ZP_DEVICE_ELTWISE_T0 5e-6
/* Achievable fraction of HBM bandwidth for streaming kernels (STREAM copy on V100/A100/H100 ~85-90%). */
#define ZP_DEVICE_STREAM_FRACTION 0.85
/* Bytes a mixed-precision optimizer step moves per parameter of the rank's partition, as DeepSpeed's ZeRO
 * step runs it (stage_1_and_2.py: step, unscale_and_clip_grads): the reduced 16-bit gradient partition cast
 * to fp32 (2 read, 4 written), its norm (2 read), the unscale-and-clip multiply, unconditional (4 + 4), the
 * fused Adam (28: fp32 parameter, gradient, m and v read; parameter, m and v written) and the fp32 master
 * copied into the 16-bit parameters the next all-gather sends (4 + 2). Adam alone would be 28. */
#define ZP_DEVICE_OPTIMIZER_BYTES 50.0
/* ... for a plan: less 2 bytes (one read, one write) for each byte Adam's m and v save in a narrower type
 * (zp_plan.exp_avg_bytes, exp_avg_sq_bytes; bf16 moments: 42). */
double zp_device_adam_bytes(const zp_plan *p);
/* A GEMM's main loop runs at k / (k + 64) of its speed: the prologue and epilogue of a CTA cost about two
 * of cuBLAS's 32-deep k-steps (the pipeline fill of its multistage kernels). */
#define ZP_DEVICE_K_HALF 64.0
/* The host's time per kernel inside an eager framework's transformer block over a bare op's dispatch, for
 * a preset whose GPU file gives no dispatch_block: measured on the H100 device machine (2026-11-27,
 * gpus/measured/h100-sxm5-80gb-2026-11-27.json, bench/gpu_micro.py; PyTorch 2.11): a 12-block GPT-2 stack
 * at 8 tokens, eager bf16, costs the host 45.4 and 49.0 us per kernel of its step (hidden 256 and 1024: 569
 * and 605 kernels; forward 49-64, backward 40-49) against 9.75 us for a bare x.add_(1): 4.8 of them. The
 * ratio is PyTorch's own code (module __call__, autograd nodes, views), not the GPU's; no A100 or V100
 * measurement exists, so their presets take it over their published bare-op dispatch. */
#define ZP_HOST_BLOCK_RATIO 4.8
/* The host's time per torch.distributed collective call over a bare op's, likewise: the same machine's
 * dist.all_reduce on a one-rank NCCL group, 41.2 us blocking and 43.3 async at 1 KiB, 49.7 and 43.7 at 1 MiB
 * (median 43.5 us), 4.4 bare ops; the c10d path (ProcessGroupNCCL's work object, the events that order its
 * stream after the current one, NCCL's enqueue: pytorch/pytorch PR #148590 of 2025 names the two event
 * syncs and a pybind call it saves for async_op=False) with no link to cross. */
#define ZP_HOST_COLL_RATIO 4.4

/* The preset's built-in profile: the per-kernel device model (zp_profile_device: GEMMs by shape with tile
 * and wave quantization, max of compute and memory traffic, launch; element-wise kernels by their bytes;
 * the host's dispatch per kernel, zp_device_host_time), Adam at the achievable HBM bandwidth, CPU Adam at the node's rate,
 * collectives with NVSwitch / InfiniBand latency and bandwidth, PCIe copies, NVMe drives. */
void zp_device_profile_builtin(const zp_cluster *c, zp_profile *out);

/* Seconds of a compute op on a device profile: its kind's cost function (sim/zp_ops.def; GEMM, batched
 * GEMM, element-wise by the profile's measured layer kernels when it has them else bytes at the copy
 * bandwidth, Adam, the host CPU's Adam where `gpus_sharing_cpu` GPUs of the node share the CPU); 0 for an
 * op that is not a kernel. */
double zp_device_op_time(const zp_profile *p, const zp_op *op, int gpus_sharing_cpu);
/* The host CPU's time to issue `op` (the framework's dispatch: dev.dispatch_s per kernel launched, one for a
 * collective, a point-to-point op or a copy), s; 0 for host work and non-GPU ops. The simulation runs the
 * host as a queue ahead of the GPU (sim/zp_actors.c): a kernel starts when both the GPU is free and its
 * dispatch is done, so the GPU idles where the host falls behind (small work per GPU). */
double zp_device_host_time(const zp_profile *p, const zp_op *op);
/* The head dimension FlashAttention-2's kernels compute a head of `d` at (d rounded up to a multiple of 32
 * up to 192, else 256): the attention kernels' work scales by it over d. */
double zp_device_flash_head_dim(double d);

/* A FlashAttention implementation (a strategy row, --flash-kernel): how fast its causal forward + backward
 * runs next to FlashAttention-2's at head dimension 128 on the same GPU (the preset's flash_efficiency),
 * at heads of 64 and of 128 (padded; linear between, flat beyond), the sequence at which it reaches half
 * of that (over the preset's flash_seq_half), the head dimension its kernels run a head of d at, and the
 * largest head it runs. */
typedef struct {
    const char *name;            /* --flash-kernel value */
    const char *alias;           /* the name a framework's config gives it (or NULL) */
    double speed64, speed128;    /* long-sequence speed at (padded) heads of 64 and 128 over FlashAttention-2's
                                    at 128 on the same GPU */
    double seq_half_ratio;       /* its half-speed sequence over the preset's flash_seq_half */
    double max_head_dim;         /* the largest head dimension it has kernels for; 0: any (FA2's 256 is
                                    not enforced: a wider head is costed at its own width) */
    double (*head_dim)(double d); /* the head dimension it computes a head of d at */
} zp_flash_kernel;

typedef enum { ZP_FLASH_KERNEL_FA2 = 0, ZP_FLASH_KERNEL_FA1, ZP_NFLASH_KERNELS } zp_flash_kernel_id;

/* The row of a kernel id (NULL outside the table). */
const zp_flash_kernel *zp_flash_kernel_get(int id);
/* The id named `text` (a row's name or alias, any case); else ZP_EINVAL naming the choices. */
zp_status zp_flash_kernel_parse(const char *text, int *id);
/* Kernels an op of this kind launches under the profile (its row's, or its unfused row's). */
int zp_device_launches(const zp_profile *p, const zp_op_info *info);

#endif
