/* zp_cluster.h — cluster presets: the hardware every prediction is made for.
 * One table (zp_cluster.c) holds every number with its source. Bandwidths are bytes per second
 * per direction (1 GB/s = 1e9 B/s), memories are bytes (decimal, as the ZeRO paper), FLOP/s are
 * dense fp16/bf16 tensor-core peaks. */
#ifndef ZP_CLUSTER_H
#define ZP_CLUSTER_H

#include <stdint.h>

#include "zp_status.h"

/* How the nodes' InfiniBand rails are connected (per rail; every rail alike).
 *  NONBLOCKING: an ideal full-bisection fabric of any size (every flow limited by its own NICs only);
 *  RAIL_FAT_TREE: NVIDIA's rail-optimized fat tree (DGX SuperPOD): rail r of the `leaf_nodes` nodes of a
 *      scalable unit share one leaf switch, whose uplinks carry 1/oversubscription of its down bandwidth
 *      into a non-blocking spine/core; nodes are placed in rank order, so a ring's hop between
 *      consecutive nodes stays under its leaf except at a scalable unit's edge. */
typedef enum { ZP_FABRIC_NONBLOCKING = 0, ZP_FABRIC_RAIL_FAT_TREE } zp_fabric;

typedef struct {
    const char *name;        /* "dgx2" */
    const char *gpu_name;    /* "V100-SXM3-32GB" */
    const char *description; /* one line for `zplan clusters` */
    int gpus_per_node;
    double gpu_mem;          /* bytes of HBM per GPU (the vendor's GB are GiB: HBM stacks of 2^30-byte dies) */
    double peak_flops;       /* fp16/bf16 dense tensor-core peak, FLOP/s per GPU */
    double peak_flops_bf16;  /* bf16 dense tensor-core peak; 0: the GPU has no bf16 tensor cores (V100: bf16
                                GEMMs run without them, at the fp32 rate) */
    double peak_flops_fp8;   /* dense FP8 tensor-core peak, FLOP/s per GPU; 0: no FP8 tensor cores */
    int fp8_mx;              /* 1: the tensor cores apply MX block scales at the FP8 rate (Blackwell: MXFP8) */
    double gemm_efficiency;  /* fraction of peak cuBLAS reaches on large 16-bit GEMMs whose tiles fill whole
                                waves (kernel benchmarks): the device model's gemm_max_efficiency, and the
                                analytic model's compute rate */
    int sms;                 /* streaming multiprocessors (the device model's waves) */
    double kernel_launch;    /* GPU time a kernel adds beyond its work (launch, ramp, tail), s */
    double dispatch;         /* host-side framework dispatch per kernel (PyTorch eager), s: a bare op's */
    double dispatch_block;   /* host time per kernel inside an eager framework's transformer block (module
                                calls, autograd nodes, views that launch nothing), s; 0: ZP_HOST_BLOCK_RATIO x
                                dispatch (sim/zp_device.c) */
    double coll_dispatch;    /* host time per torch.distributed collective or point-to-point call (c10d's
                                ProcessGroupNCCL: work object, stream events, the NCCL enqueue), s; 0:
                                ZP_HOST_COLL_RATIO x dispatch */
    int nccl_ctas;           /* SMs an NCCL collective kernel occupies while it runs: one CTA per channel (NCCL
                                INFO "24 coll channels" on 8-GPU NVSwitch nodes); compute overlapped with a
                                collective runs on the other SMs. 0: not modelled */
    int nccl_ll128;          /* NCCL's LL128 protocol is available (NCCL >= 2.5 on NVLink); 0: LL and Simple */
    double nccl_ll_base;     /* a small all-reduce's fixed time on NCCL's LL protocol inside the node, s, and */
    double nccl_ll_hop;      /* ... each NVSwitch step of its ring (2(g-1) steps): nccl-tests' measured floor
                                where it was published (0: NCCL's tuner figures, 3.6 + 0.47 us a step) */
    int unfused_kernels;     /* the software the preset stands for runs Megatron-LM 2019's unfused memory-bound
                                kernels (the ZeRO paper's stack) */
    double flash_efficiency; /* fraction of peak FlashAttention-2's causal forward+backward reaches at long
                                sequences (0: none) */
    double flash_seq_half;   /* sequence length (tokens) at which FlashAttention reaches half of that: its
                                efficiency at s tokens is flash_efficiency * s / (s + flash_seq_half) */
    double tdp_w;            /* the GPU's board power (TDP), W: the energy of a token budget (zp_units.h) */
    double hbm_bw;           /* HBM bandwidth per GPU, B/s */
    double nvlink_bw;        /* NVSwitch bandwidth per GPU per direction, B/s */
    double nvlink_efficiency;/* fraction of it a ring all-reduce reaches as bus bandwidth (nccl-tests) */
    double nvlink_latency;   /* s, per collective step within a node */
    int ib_rails;            /* InfiniBand NICs per node */
    double ib_rail_bw;       /* per NIC per direction, B/s */
    double ib_latency;       /* s, per collective step across nodes */
    int inter_channels;      /* NCCL channels (rings) a collective drives across nodes, each on one rail */
    int flat_rings;          /* 1: one flat ring through every GPU of a group (NCCL 2.4); 0: hierarchical */
    double ib_efficiency;    /* achievable fraction of a rail's line rate for NCCL (nccl-tests busbw / line rate) */
    int tree_allreduce;      /* 1: an all-reduce across nodes runs as NCCL's double binary tree when its tuner
                                predicts it faster than the ring (sim/zp_engine.h); 0: rings only */
    zp_fabric fabric;
    int leaf_nodes;          /* RAIL_FAT_TREE: nodes under one leaf switch of a rail (a scalable unit) */
    int switch_radix;        /* RAIL_FAT_TREE: ports per switch */
    int fabric_levels;       /* RAIL_FAT_TREE: switch levels (leaf, spine, core): 2*(radix/2)^levels NIC ports */
    double oversubscription; /* RAIL_FAT_TREE: a leaf's down / up bandwidth (1: non-blocking) */
    double pcie_bw;          /* host<->GPU per GPU per direction, B/s */
    double host_mem;         /* host DRAM per node, bytes */
    double nvme_bytes;       /* the node's internal NVMe drives, bytes (ZeRO-Infinity offload) */
    double nvme_read_bw;     /* their aggregate sequential read bandwidth, B/s */
    double nvme_write_bw;    /* ... and write bandwidth, B/s */
    double cpu_adam_rate;    /* CPU Adam parameters/s per node (all cores) for optimizer offload */
    const char *sources;     /* where the numbers come from */
    /* The GPU: a cluster preset names its GPU preset (gpus/NAME.gpu, vocab/zp_gpu.h), whose figures fill the
     * GPU fields above (gpu_name, gpu_mem, peak_flops*, gemm_efficiency, sms, kernel_launch, dispatch, nccl_*,
     * flash_*, tdp_w, hbm_bw, nvlink_*) and these: */
    const char *gpu;         /* the GPU preset's file stem, "h100-sxm5-80gb" */
    double peak_flops_fp32;  /* dense FP32 peak, FLOP/s per GPU (listed; fp32 GEMMs are priced at an eighth of
                                the fp16 peak, zp_cluster_peak_flops) */
    double clock;            /* the GPU's boost clock under its power cap, Hz */
    int nvlink_domain;       /* GPUs sharing one NVLink domain: what "inside a node" means for placement,
                                TP and EP (zp_cluster_domain); may exceed gpus_per_node (GB200 NVL72: 72 GPUs
                                on 18 trays of 4) or be smaller (NVLink-bridged PCIe pairs) */
    double nic_bw;           /* the GPU's scale-out NIC bandwidth per direction in its reference system, B/s
                                (listed; the node's NICs are ib_rails x ib_rail_bw) */
    int intra_mesh;          /* the domain's GPUs are a full mesh of direct peer links (AMD xGMI), not a switch:
                                the GPU file's intra_topology = mesh (zp_cluster_group_bw) */
    double link_bw;          /* mesh: one peer link per direction, B/s (nvlink_bw: all of a GPU's links) */
    int nccl24_trees;        /* 1: an all-reduce across nodes runs as NCCL 2.4.8 chose it: its tree up to the
                                size its own estimate gives (src/init.cc ncclTreeThreshold: every size on 2 nodes),
                                a flat ring above (sim/zp_collcost.c); 0: tree_allreduce's rule */
} zp_cluster;

int zp_cluster_count(void);
const zp_cluster *zp_cluster_get(int i);
/* Case-insensitive lookup of a preset; ZP_EINVAL naming the presets when absent. */
zp_status zp_cluster_find(const char *name, const zp_cluster **out);

/* Dense GEMM peak for "fp16", "bf16", "fp8" or "fp32" training, FLOP/s per GPU: the tensor-core peak for 16-bit
 * types that have tensor cores, else the fp32 (CUDA-core) peak, an eighth of the fp16 tensor peak on V100,
 * A100 and H100 alike (V100 15.7 of 125, A100 19.5 of 312 without TF32, H100 SXM 67 of 989: datasheets,
 * rounded to 1/8). "fp8": the FP8 tensor-core peak, 0 on a GPU without FP8 tensor cores. */
double zp_cluster_peak_flops(const zp_cluster *c, const char *dtype);
/* The GPU has FP8 tensor cores (H100, H200): --precision fp8 runs there only. */
int zp_cluster_has_fp8(const zp_cluster *c);
/* The GPU has bf16 tensor cores (A100, H100): mixed precision defaults to bf16 there, fp16 elsewhere. */
int zp_cluster_has_bf16(const zp_cluster *c);
/* Host memory each GPU of a job of `gpus` GPUs may use, bytes: the node's (`host_mem_node` bytes, or the
 * preset's when <= 0) shared only by the GPUs the job runs on that node (a one-GPU job has all of it). */
double zp_cluster_host_per_gpu(const zp_cluster *c, double host_mem_node, int64_t gpus);
/* NVMe capacity each GPU of such a job may use, bytes (the node's drives shared the same way). */
double zp_cluster_nvme_per_gpu(const zp_cluster *c, int64_t gpus);

/* GPUs of one NVLink domain (the simulated "node": groups inside it talk over NVLink): nvlink_domain, else
 * gpus_per_node. */
int zp_cluster_domain(const zp_cluster *c);
/* InfiniBand NICs of one NVLink domain (its nodes' ib_rails; a node's share when the domain is smaller), >= 1,
 * and their bandwidth, B/s per direction. */
int zp_cluster_domain_rails(const zp_cluster *c);
double zp_cluster_domain_ib_bw(const zp_cluster *c);

/* The bus bandwidth a collective over g GPUs of one NVLink / xGMI domain reaches, B/s per GPU per direction:
 * on a switch (NVSwitch) every group reaches the GPU's whole port, nvlink_bw x nvlink_efficiency; on a full
 * mesh (intra_mesh: MI300X's xGMI, one link to each peer) RCCL's rings and trees run over the g-1 direct links
 * among the group's GPUs only, (g-1) x link_bw x nvlink_efficiency (a TP-2 all-reduce one link's, TP-8 all
 * seven), never above the switch figure. The one figure the engine's collective model (sim/zp_collcost.c),
 * the analytic bound (planner/zp_analytic.c) and the device model (sim/zp_device.c) take. */
double zp_cluster_group_bw(const zp_cluster *c, int g);
/* Its fraction of the whole domain's figure (1 on a switch; on an 8-GPU mesh (g-1)/7): what a measured
 * profile's intra-node bus bandwidth (a full node's) is scaled by for a smaller group. */
double zp_cluster_group_share(const zp_cluster *c, int g);

/* InfiniBand bandwidth of one node, B/s per direction. */
double zp_cluster_node_ib_bw(const zp_cluster *c);

/* Nodes the fabric can connect (0: any number). */
int64_t zp_cluster_max_nodes(const zp_cluster *c);
/* ZP_OK when `gpus` GPUs fit on the fabric with this leaf oversubscription (<= 0: the preset's);
 * ZP_EINVAL saying why not (too many nodes for the switches, an oversubscription outside 1..leaf_nodes
 * or on a fabric without leaves). */
zp_status zp_cluster_check_size(const zp_cluster *c, int64_t gpus, double oversubscription);

#endif
