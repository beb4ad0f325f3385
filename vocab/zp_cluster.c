#include "zp_cluster.h"
#include "zp_gpu.h"

#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

/* Sources (the GPU figures now live in the gpus/ folder, each with its source; their derivations stay here).
 * Every figure is a datasheet's or a kernel-level measurement's; none is fitted to an end-to-end
 * training time (those judge the model: bench/heldout.sh).
 *  Memory: HBM stacks are built of 2^30-byte dies, and the vendors' "GB" of HBM are GiB (nvidia-smi shows
 *  32 GB V100s and 80 GB A100/H100 as 32768 and 81920 MiB before the driver's reservation): 32, 40, 80 GiB;
 *  the H200's 141 GB of HBM3e likewise (143771 MiB visible).
 *  [dgx2]  NVIDIA DGX-2 datasheet (2018): 16x V100-SXM3 32 GB, NVSwitch (6 NVLink2 x 25 GB/s = 150 GB/s per GPU
 *          per direction), 8x 100 Gb/s EDR IB, 1.5 TB DDR4, 2x Xeon Platinum 8168, 30 TB NVMe (8x 3.84 TB);
 *          V100 datasheet: 125 TFLOP/s fp16 tensor, 900 GB/s HBM2, 80 SMs; PCIe gen3 x16 ~16 GB/s.
 *  [a100]  DGX A100 datasheet: 8x A100-SXM4 80 GB (320 GB model: 40 GB), 312 TFLOP/s bf16, 2039 GB/s HBM2e (40 GB:
 *          1555 GB/s), 108 SMs, NVLink3 600 GB/s bidirectional per GPU, 8x 200 Gb/s HDR IB, 2 TB DDR4 (320 GB
 *          model: 1 TB), PCIe gen4 x16 ~32 GB/s, 30 TB NVMe (8x 3.84 TB; 320 GB model 15 TB, 4 drives).
 *  [h100]  DGX H100 datasheet: 8x H100-SXM5 80 GB, 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3, 132 SMs, NVLink4
 *          900 GB/s bidirectional per GPU, 8x 400 Gb/s NDR IB, 2 TB DDR5, PCIe gen5 x16 ~64 GB/s, 8x 3.84 TB NVMe.
 *  [h200]  DGX H200 datasheet: the same system with 8x H200 141 GB HBM3e at 4.8 TB/s (the same GH100 die).
 *  Board power (TDP, the GPU datasheets' "max thermal design power"): V100-SXM3 350 W (SXM2 300 W), A100-SXM4
 *          400 W, H100-SXM5 700 W, H200-SXM5 700 W; the GPUs alone (a DGX H100 node draws ~10.2 kW at most).
 *  GEMM (kernel benchmarks of cuBLAS on large 16-bit GEMMs): V100 83 TFLOP/s of 125 (Markidis et al.,
 *  "NVIDIA Tensor Core Programmability, Performance & Precision", IPDPSW 2018: 0.66); H100-SXM5 759-786 of 989
 *  on 8 GPUs of an AWS p5 node (mamf-finder, torch 2.5: 0.78; pytorch/pytorch #100850: 720-772 at
 *  2048x8192x8192, which the shape model below puts at 0.96 of the ceiling: 0.76-0.81; the H200, the same die:
 *  0.78). A100-SXM4: the ceiling is what shapes the model calls unquantized reach, two fixed-shape
 *  measurements: CUTLASS's profiler documentation, 235.1 TFLOP/s at 3456x4096x8192 fp16 (fp32 accumulate;
 *  8 full waves of 128x128 tiles: 0.95 x k/(k+64) of the ceiling -> 0.80), and mli/transformers-benchmarks,
 *  torch.matmul of 8192x8192 fp16 timed for 3 s (sustained clocks) on an A100-SXM4-80GB, 230 (0.99 -> 0.74):
 *  0.77, their mean. mamf-finder's 271 (0.87) is the best of a sweep over shapes with cuBLAS 12, short runs
 *  each: a best case above what the same model's shapes reach, not a ceiling for all of them.
 *  The shape's tile and wave quantization and the main loop's k/(k + 64) come on top (sim/zp_profile.c).
 *  Software: dgx2 stands for the ZeRO paper's stack (PyTorch 1.2, CUDA 10.0, NCCL 2.4.8, Megatron-LM 2019, whose
 *  attention scaling, masking, softmax and dropout and whose bias, dropout and residual adds are separate
 *  kernels: unfused_kernels); the A100 and H100 presets the fused kernels of Megatron-LM 2020 onwards.
 *  FlashAttention-2 (Dao 2023, Fig. 4-7, the flash-attention repository's assets/flash2_{a100,h100}_fwd_bwd_
 *  benchmark.png: forward+backward at head dimensions 64 and 128, 512 to 16k tokens a sequence, 16k tokens a
 *  batch): causal, head dimension 128, 99, 133, 155, 173, 182, 189 TFLOP/s on an A100-SXM4 and 163, 221, 265,
 *  294, 308, 328 on an H100-SXM5; none on the V100. Fitted as P s / (s + h) (each panel alone): causal
 *  h = 485-540 tokens (A100 and H100, head dimensions 64 and 128; rms 1-3 TFLOP/s), P at head dimension 128
 *  0.62 of 312 and 0.337 of 989 (presets: 0.60, 0.34); the non-causal panels give h = 180-205, as do Triton's
 *  FlashAttention-2 and FlashAttention-3 on an H100 (pytorch/benchmark #2391: 0.69, 0.82, 0.91, 0.96, 0.99 of
 *  the 16k figure at 512-8k). A causal kernel amortizes each row block's fixed work (loading Q, the final
 *  rescale, writing O, the half-masked diagonal tile) over half the keys: training is causal, h = 500. The
 *  head dimension and FlashAttention-1's speed: sim/zp_device.c (g_flash_kernels).
 *  Kernels: ~3 us of GPU time per kernel beyond its work (launch, ramp, tail of back-to-back kernels) and a host
 *  dispatch of ~10 us per kernel for a PyTorch eager framework (operator micro-benchmarks: 3.3 us for a bare
 *  op; autograd recording, Python module calls and the CUDA launch add the rest; pytorch/pytorch issue
 *  #41383: 5 us per op on a scalar from Python, 7 us with autograd; flagos-ai/Torch-FL PR #27: an eager CUDA
 *  add of 512x512 issued back to back costs the host 8 us per op on an A100). The simulation runs it as the
 *  host's queue ahead of the GPU (sim/zp_actors.c).
 *  Measured on an H100 (the device machine lent on 2026-11-27, gpus/measured/h100-sxm5-80gb-2026-11-27.json,
 *  bench/gpu_micro.py; PyTorch 2.11, CUDA 13.0, NCCL 2.28.9, a VM of 16 Xeon cores): empty kernels queued back
 *  to back 1.89-2.10 us of GPU time each, 0.98 in a CUDA graph: a floor under the 3 us a real kernel's launch,
 *  ramp and tail cost, which stays. The host: x.add_(1) 9.75 us (9.81 with autograd), F.linear 22, an
 *  nn.Linear call 30, F.layer_norm 19.6: the 10 us bare op stays. Inside a model the host costs more per
 *  kernel than a bare op: a 12-block GPT-2 at 8 tokens, eager bf16, 45.4 and 49.0 us per kernel of its step
 *  (forward 49-64, backward 40-49; hidden 256 and 1024) - the module calls, autograd's nodes and the views
 *  that launch nothing - so a kernel of the model's blocks costs the host dispatch_block (47 us on the H100
 *  preset; ZP_HOST_BLOCK_RATIO = 4.8 bare ops on presets with no measurement: the A100 and V100 presets take
 *  it over their published bare-op figure above, PyTorch's code being the same on every GPU). A
 *  torch.distributed collective costs the host coll_dispatch per call (dist.all_reduce on one NCCL rank:
 *  41.2-49.7 us, 43.5 the preset's; ZP_HOST_COLL_RATIO = 4.4 bare ops elsewhere): the TP all-reduces of
 *  every block, the DP buckets, the pipeline's sends and receives. NCCL's own call on one rank is 2.5 us
 *  (in-place broadcast), 12 us for a 1 MiB all-reduce: the rest is c10d's (pytorch/pytorch PR #148590, 2025,
 *  removed two of its event syncs and a pybind call from async_op=False calls). No published per-call figure
 *  of c10d was found.
 *  Collectives: NCCL's own cost model (src/graph/tuning.cc: latency per protocol LL/LL128/Simple and per hop
 *  kind NVLink/PCIe/network, bandwidth fractions per protocol; sim/zp_engine.c); NCCL 2.4.8 of the ZeRO paper
 *  predates LL128 (2.5). Latencies of the links themselves: NVSwitch ~5 us and InfiniBand ~6-10 us per ring
 *  step on the Simple protocol.
 *  Small collectives inside a node: nccl-tests all_reduce_perf on a DGX A100, NCCL_ALGO=Ring, one channel,
 *  8-128 bytes (nccl-tests issue #123, "Understanding the latency of NCCL", 2022): 10.0, 13.76, 16.88, 20.8,
 *  25.2, 29.5, 33.7 us on 2-8 GPUs, i.e. 6.0 us + 1.98 us per ring step (2(g-1) steps; least squares,
 *  residuals under 0.6 us); NCCL's tuner figures (3.6 + 0.47 us a step) are 3-4 times below the measured
 *  times from 4 GPUs up. A 2-GPU all-reduce of 32 bytes on A100-SXM4 (NCCL issue #583): 10.1 us. No such
 *  table for a DGX H100's NVSwitch was found: its presets take the A100's floor (nccl_ll_base, nccl_ll_hop).
 *  Channels across nodes (see README, "Framework releases of 2020-2022": NCCL 2.4.8's own netGetRings,
 *  src/transport/net.cc at v2.4.8-1, builds one ring per NIC across nodes, so this one-ring figure is not its
 *  code's; it is kept because eight rails put the paper's measured MP-32 Megatron-LM point 4x fast):
 *  the paper's NCCL 2.4.8 drove one ring per collective across DGX-2 nodes, so a
 *  group's inter-node traffic crossed one 100 Gb/s rail; NCCL 2.4 ran large collectives as flat rings through
 *  every GPU of the group, so each node's egress carries 2(P-1)/P of the buffer per all-reduce; NCCL >= 2.7 with
 *  rail-optimised rings uses one channel per NIC on DGX A100 / H100, and zplan models those as hierarchical
 *  (intra-node ring, then a ring over the nodes). NCCL over InfiniBand: ~80% of EDR's 12.5 GB/s line rate
 *  (nccl-tests all-reduce across two DGX-1 with 4 EDR NICs: ~40 GB/s bus bandwidth of 50 GB/s) and ~90% on
 *  HDR/NDR (nccl-tests across two HGX A100 with 4 HDR NICs: 91 GB/s of 100, nccl-tests issue #100).
 *  NVSwitch: a ring all-reduce reaches 0.78 of a GPU's NVLink bandwidth per direction as bus bandwidth
 *  (nccl-tests all_reduce_perf on 8 A100-SXM4: 200-230 GB/s of 300, nccl-tests issue #149; NCCL's tuner caps
 *  sm_80 at 235 GB/s; rings on DGX H100 ~360 of 450): 117 GB/s on a DGX-2, 234 on a DGX A100, 351 on a DGX H100
 *  (NVLink SHARP's all-reduce, NCCL >= 2.17 on H100, is not modelled).
 *  CPU Adam rate: DeepSpeed's CPU Adam (ZeRO-Offload paper, Ren et al. 2021, Table 3) updates ~1B
 *  parameters in ~0.3-0.5 s on a 2-socket Xeon: 2.5e9 params/s per node for dgx2, more for newer CPUs.
 *  NVMe drives: PCIe gen3 x4 enterprise drives (DGX-2) ~3.2 GB/s sequential read and ~2 GB/s write each, gen4 x4
 *  (DGX A100 / H100 / H200) ~6.5 and ~3.5 GB/s each (drive datasheets), aggregated over the node's drives.
 *  Trees: NCCL >= 2.4 runs an all-reduce across nodes as a double binary tree when its tuner predicts it
 *  faster (small messages, many nodes); dgx-a100 / dgx-h100 model that choice (sim/zp_engine.h). dgx2
 *  takes NCCL 2.4.8's own rule (nccl24_trees; its code, tag v2.4.8-1: src/init.cc ncclTreeThreshold,
 *  src/enqueue.cc getPatternInfo): the tree at every size on 2 nodes and up to 69 / 158 / 338 MB on 4 / 8 /
 *  16 DGX-2, the flat ring above; the tree priced at NCCL 2.4.8's own latency estimate (15 us a level of
 *  the inter-node tree, 4 us a hop of the 16-GPU chain) and the flat ring's bytes (sim/zp_collcost.c).
 *  [superpod] NVIDIA DGX SuperPOD reference architecture with DGX H100 (RA-11333-001, 2023): scalable units
 *          (SU) of 32 DGX H100; compute fabric NDR 400 Gb/s InfiniBand, 8 ports per node, rail-optimized
 *          (rail r of every node of an SU on the SU's leaf switch r), QM9700 switches of 64 NDR ports,
 *          leaf-spine cables = node-leaf cables (non-blocking, 32 down / 32 up per leaf); two switch levels
 *          up to 8 SU (256 nodes: a spine's 64 ports reach 64 leaves = 8 SU x 8 rails), a core level
 *          beyond (the RA's table lists up to 64 SU, 2048 nodes). A fat tree of L levels of radix-R
 *          switches connects 2(R/2)^L ports: 65,536 NIC ports = 8192 nodes at three levels. Oversubscribed
 *          builds (e.g. 2:1) keep 32 nodes per leaf and remove uplinks (and spines): --oversubscription. */

/* The node figures every DGX of a generation shares (a preset's rows: its host memory, drives, fabric); the
 * GPU figures are the GPU preset's (gpus/NAME.gpu, each figure with its source there). */
#define ZP_DGX_A100_NODE(host, drives)                                                                         \
    .gpus_per_node = 8, .ib_rails = 8, .ib_rail_bw = 25e9, .ib_latency = 8e-6, .inter_channels = 8,             \
    .flat_rings = 0, .ib_efficiency = 0.9, .tree_allreduce = 1, .pcie_bw = 32e9, .host_mem = (host),         \
    .nvme_bytes = (drives) * 3.84e12, .nvme_read_bw = (drives) * 6.5e9, .nvme_write_bw = (drives) * 3.5e9,    \
    .cpu_adam_rate = 4e9
#define ZP_DGX_H100_NODE                                                                                       \
    .gpus_per_node = 8, .ib_rails = 8, .ib_rail_bw = 50e9, .ib_latency = 6e-6, .inter_channels = 8,             \
    .flat_rings = 0, .ib_efficiency = 0.9, .tree_allreduce = 1, .pcie_bw = 64e9, .host_mem = 2e12,           \
    .nvme_bytes = 8 * 3.84e12, .nvme_read_bw = 8 * 6.5e9, .nvme_write_bw = 8 * 3.5e9, .cpu_adam_rate = 6e9

/* The rows as written: node and fabric; zp_cluster_get fills in the GPU of each from its preset. */
static const zp_cluster g_rows[] = {
    {
        .name = "dgx2",
        .gpu = "v100-sxm3-32gb",
        .description = "NVIDIA DGX-2: 16x V100 32 GB, NVSwitch, 8x 100 Gb/s EDR InfiniBand (the ZeRO paper's)",
        .gpus_per_node = 16,
        .unfused_kernels = 1,
        .ib_rails = 8,
        .ib_rail_bw = 12.5e9,
        .ib_latency = 10e-6,
        .inter_channels = 1,
        .flat_rings = 1,
        .ib_efficiency = 0.80,
        .tree_allreduce = 0,
        .nccl24_trees = 1,
        .pcie_bw = 16e9,
        .host_mem = 1.5e12,
        .nvme_bytes = 8 * 3.84e12,
        .nvme_read_bw = 8 * 3.2e9,
        .nvme_write_bw = 8 * 2.0e9,
        .cpu_adam_rate = 2.5e9,
        .sources = "DGX-2 and V100 datasheets; cuBLAS tensor-core GEMM (Markidis et al. 2018); nccl-tests; NCCL's "
                   "tuning model",
    },
    {
        .name = "dgx-a100",
        .gpu = "a100-sxm4-80gb",
        .description = "NVIDIA DGX A100: 8x A100 80 GB, NVSwitch, 8x 200 Gb/s HDR InfiniBand",
        ZP_DGX_A100_NODE(2e12, 8),
        .sources = "DGX A100 and A100 datasheets; mamf-finder GEMM; nccl-tests; NCCL's tuning model",
    },
    {
        .name = "dgx-a100-40gb",
        .gpu = "a100-sxm4-40gb",
        .description = "NVIDIA DGX A100 320GB: 8x A100 40 GB, NVSwitch, 8x 200 Gb/s HDR InfiniBand",
        ZP_DGX_A100_NODE(1e12, 4),
        .sources = "DGX A100 and A100 datasheets; mamf-finder GEMM; nccl-tests; NCCL's tuning model",
    },
    {
        .name = "dgx-h100",
        .gpu = "h100-sxm5-80gb",
        .description = "NVIDIA DGX H100: 8x H100 80 GB, NVSwitch, 8x 400 Gb/s NDR InfiniBand",
        ZP_DGX_H100_NODE,
        .sources = "DGX H100 and H100 datasheets; mamf-finder GEMM; nccl-tests; NCCL's tuning model",
    },
    {
        /* dgx-h100's nodes on the fabric NVIDIA specifies for them: a preset of its own (not a fabric option
         * on every preset) because the fabric bounds the cluster size and is what a SuperPOD is sold as;
         * dgx-h100 stays the ideal non-blocking fabric of any size. */
        .name = "dgx-h100-railopt",
        .gpu = "h100-sxm5-80gb",
        .description = "DGX H100 SuperPOD: 8x H100 80 GB, NVSwitch, 8x 400 Gb/s NDR rail-optimized fat tree "
                       "(32-node leaves, <= 8192 nodes)",
        ZP_DGX_H100_NODE,
        .fabric = ZP_FABRIC_RAIL_FAT_TREE,
        .leaf_nodes = 32,
        .switch_radix = 64,
        .fabric_levels = 3,
        .oversubscription = 1.0,
        .sources = "DGX H100 and H100 datasheets; DGX SuperPOD reference architecture (DGX H100)",
    },
    {
        .name = "dgx-h200",
        .gpu = "h200-sxm5-141gb",
        .description = "NVIDIA DGX H200: 8x H200 141 GB, NVSwitch, 8x 400 Gb/s NDR InfiniBand",
        ZP_DGX_H100_NODE,
        .sources = "DGX H200 and H200 datasheets; the H100's GEMM (same die); nccl-tests; NCCL's tuning model",
    },
    {
        /* DeepSeek-V3 technical report (2024), Section 3.1: 8 H800 a node on NVLink/NVSwitch, one 400 Gb/s
         * InfiniBand (CX7) NIC a GPU; HGX H800 servers are HGX H100 systems with H800 boards: the DGX H100's
         * node figures (host memory, drives, PCIe gen5). */
        .name = "hgx-h800",
        .gpu = "h800-sxm5-80gb",
        .description = "HGX H800: 8x H800 80 GB, NVSwitch at 400 GB/s bidirectional, 8x 400 Gb/s NDR InfiniBand",
        ZP_DGX_H100_NODE,
        .sources = "DeepSeek-V3 technical report (H800 nodes); DGX H100 node figures; nccl-tests; NCCL's tuning model",
    },
    {
        /* DGX B200 datasheet: 8x B200 (1,440 GB HBM3e), 2 NVLink5 switches, 8x 400 Gb/s ConnectX-7, 2x Xeon
         * Platinum 8570, 2 TB DDR5 (up to 4 TB), 8x 3.84 TB U.2 NVMe, PCIe gen5: the DGX H100's node figures. */
        .name = "dgx-b200",
        .gpu = "b200-sxm-180gb",
        .description = "NVIDIA DGX B200: 8x B200 180 GB, NVLink5 NVSwitch, 8x 400 Gb/s NDR InfiniBand",
        ZP_DGX_H100_NODE,
        .sources = "DGX B200 and HGX B200 datasheets; the H100's kernel figures (none published for B200)",
    },
    {
        /* GB200 NVL72 datasheet and reference architecture: 18 compute trays of 2 Grace CPUs (480 GB LPDDR5X
         * each: "up to 17 TB" for 36) and 4 B200-class GPUs, 4 ConnectX-7 400 Gb/s a tray (one a GPU), all 72
         * GPUs on one NVLink5 domain (the GPU file's nvlink_domain): groups inside the domain talk over NVLink,
         * so TP and EP span trays (zp_cluster_domain). Host link: NVLink-C2C, 900 GB/s bidirectional from a
         * Grace to its 2 GPUs: 225 GB/s a GPU a direction. NVMe: 4 E1.S drives a tray (sizes not stated:
         * 3.84 TB and gen4 speeds assumed, as the DGX drives). CPU Adam: the DGX H100's per-node rate for a
         * tray's two 72-core Graces (not measured). */
        .name = "gb200-nvl72",
        .gpu = "gb200-nvl72",
        .description = "NVIDIA GB200 NVL72: racks of 72 GPUs on one NVLink5 domain (18 trays of 4), 400 Gb/s "
                       "NDR InfiniBand a GPU",
        .gpus_per_node = 4,
        .ib_rails = 4,
        .ib_rail_bw = 50e9,
        .ib_latency = 6e-6,
        .inter_channels = 8,
        .flat_rings = 0,
        .ib_efficiency = 0.9,
        .tree_allreduce = 1,
        .pcie_bw = 225e9,
        .host_mem = 960e9,
        .nvme_bytes = 4 * 3.84e12,
        .nvme_read_bw = 4 * 6.5e9,
        .nvme_write_bw = 4 * 3.5e9,
        .cpu_adam_rate = 6e9,
        .sources = "GB200 NVL72 datasheet and reference architecture; the H100's kernel figures (none published "
                   "for GB200)",
    },
    {
        /* An 8 x MI300X node of AMD's Instinct MI300X platform (the OAM universal baseboard), as the Dell
         * PowerEdge XE9680 ships it: 2 Xeon Scalable (4th/5th gen), 32 DDR5 DIMMs (up to 4 TB; 2 TB here, as
         * the DGX H100's), PCIe gen5 x16 to each GPU, 8 U.2 NVMe, one 400 Gb/s NIC a GPU (AMD's reference: 8
         * x 400 Gb/s, RoCE or InfiniBand): the DGX H100's node figures. The GPUs are a full xGMI mesh, not a
         * switch (gpus/mi300x.gpu, intra_topology = mesh): a TP-2 group's collectives get one link, TP-8's
         * seven (zp_cluster_group_bw). RoCE's NCCL/RCCL efficiency: assumed NDR's 0.9 (not measured). */
        .name = "mi300x-node",
        .gpu = "mi300x",
        .description = "AMD Instinct MI300X platform: 8x MI300X 192 GB, xGMI full mesh, 8x 400 Gb/s NICs",
        ZP_DGX_H100_NODE,
        .sources = "AMD MI300X and MI300X platform data sheets; ROCm blogs (hipBLASLt MAF, rccl-tests/xGMI); Dell "
                   "XE9680 spec sheet; the DGX H100's node figures",
    },
};
enum { NROWS = (int)(sizeof g_rows / sizeof g_rows[0]) };

/* The rows with their GPUs, filled once (the presets are parsed by the same parser as a user's file; a
 * preset that does not parse is a build defect the gpu tests catch: its row keeps no GPU and is skipped). */
static zp_cluster g_clusters[NROWS];
static zp_gpu g_gpus[NROWS];
static int g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve_rows(void)
{
    for (int i = 0; i < NROWS; i++) {
        zp_cluster c = g_rows[i];
        if (zp_gpu_find(c.gpu, &g_gpus[g_count]) != ZP_OK || zp_gpu_apply(&g_gpus[g_count], &c) != ZP_OK)
            continue;
        g_clusters[g_count] = c;
        g_clusters[g_count].gpu_name = g_gpus[g_count].name;
        g_count++;
    }
    zp_error_clear();
}


int zp_cluster_count(void)
{
    pthread_once(&g_once, resolve_rows);
    return g_count;
}

const zp_cluster *zp_cluster_get(int i) { return (i >= 0 && i < zp_cluster_count()) ? &g_clusters[i] : NULL; }

zp_status zp_cluster_find(const char *name, const zp_cluster **out)
{
    for (int i = 0; i < zp_cluster_count(); i++) {
        if (strcasecmp(g_clusters[i].name, name) == 0) {
            *out = &g_clusters[i];
            return ZP_OK;
        }
    }
    char list[512] = "";
    for (int i = 0, k = 0; i < zp_cluster_count(); i++)
        k += snprintf(list + k, k < (int)sizeof list ? sizeof list - (size_t)k : 0, "%s%s", i ? ", " : "",
                      g_clusters[i].name);
    return ZP_FAIL(ZP_EINVAL, "--cluster: unknown cluster '%s' (presets: %s; see `zplan clusters`)", name, list);
}

double zp_cluster_peak_flops(const zp_cluster *c, const char *dtype)
{
    if (strcmp(dtype, "fp16") == 0)
        return c->peak_flops;
    if (strcmp(dtype, "bf16") == 0 && c->peak_flops_bf16 > 0)
        return c->peak_flops_bf16;
    if (strcmp(dtype, "fp8") == 0)
        return c->peak_flops_fp8;
    return c->peak_flops / 8.0;
}

int zp_cluster_has_bf16(const zp_cluster *c) { return c->peak_flops_bf16 > 0; }

int zp_cluster_domain(const zp_cluster *c) { return c->nvlink_domain > 0 ? c->nvlink_domain : c->gpus_per_node; }

int zp_cluster_domain_rails(const zp_cluster *c)
{
    const int gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1, dom = zp_cluster_domain(c);
    const int rails = dom == gpn ? c->ib_rails : (int)((int64_t)c->ib_rails * dom / gpn);
    return rails > 0 ? rails : 1;
}

double zp_cluster_domain_ib_bw(const zp_cluster *c)
{
    const int gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1, dom = zp_cluster_domain(c);
    return dom == gpn ? zp_cluster_node_ib_bw(c) : zp_cluster_node_ib_bw(c) * dom / gpn;
}

double zp_cluster_group_share(const zp_cluster *c, int g)
{
    if (!c->intra_mesh || !(c->link_bw > 0) || !(c->nvlink_bw > 0))
        return 1.0;
    const double links = (g > 1 ? g - 1.0 : 1.0) * c->link_bw; /* the direct links among g GPUs */
    return links < c->nvlink_bw ? links / c->nvlink_bw : 1.0;
}

double zp_cluster_group_bw(const zp_cluster *c, int g)
{
    const double full = c->nvlink_bw * (c->nvlink_efficiency > 0 ? c->nvlink_efficiency : 1.0);
    return c->intra_mesh ? full * zp_cluster_group_share(c, g) : full;
}

int zp_cluster_has_fp8(const zp_cluster *c) { return c->peak_flops_fp8 > 0; }

double zp_cluster_node_ib_bw(const zp_cluster *c) { return c->ib_rails * c->ib_rail_bw; }

/* GPUs of a job of `gpus` GPUs on one node. */
static double gpus_on_node(const zp_cluster *c, int64_t gpus)
{
    int64_t used = c->gpus_per_node > 0 && gpus > c->gpus_per_node ? c->gpus_per_node : gpus;
    return (double)(used > 0 ? used : 1);
}

double zp_cluster_host_per_gpu(const zp_cluster *c, double host_mem_node, int64_t gpus)
{
    return (host_mem_node > 0 ? host_mem_node : c->host_mem) / gpus_on_node(c, gpus);
}

double zp_cluster_nvme_per_gpu(const zp_cluster *c, int64_t gpus) { return c->nvme_bytes / gpus_on_node(c, gpus); }

int64_t zp_cluster_max_nodes(const zp_cluster *c)
{
    if (c->fabric != ZP_FABRIC_RAIL_FAT_TREE)
        return 0;
    double ports = 2.0 * pow(c->switch_radix / 2.0, c->fabric_levels); /* a fat tree's end ports */
    int rails = c->ib_rails > 0 ? c->ib_rails : 1;
    return (int64_t)(ports / rails);
}

zp_status zp_cluster_check_size(const zp_cluster *c, int64_t gpus, double oversubscription)
{
    if (oversubscription > 0) {
        if (c->fabric != ZP_FABRIC_RAIL_FAT_TREE)
            return ZP_FAIL(ZP_EINVAL, "--oversubscription: cluster %s has a non-blocking fabric without leaf switches "
                                      "(use a rail-optimized fat tree, e.g. --cluster dgx-h100-railopt)",
                           c->name);
        if (!(oversubscription >= 1.0 && oversubscription <= c->leaf_nodes))
            return ZP_FAIL(ZP_EINVAL, "--oversubscription: %g is not a leaf's down/up ratio between 1 and %d (its nodes)",
                           oversubscription, c->leaf_nodes);
    }
    int64_t max = zp_cluster_max_nodes(c);
    int64_t gpn = c->gpus_per_node > 0 ? c->gpus_per_node : 1;
    int64_t nodes = (gpus + gpn - 1) / gpn;
    if (max > 0 && nodes > max)
        return ZP_FAIL(ZP_EINVAL,
                       "--gpus: %lld GPUs are %lld nodes, more than the %s fabric holds: a %d-level fat tree of "
                       "%d-port switches connects %lld NIC ports, %lld nodes of %d rails (%lld GPUs)",
                       (long long)gpus, (long long)nodes, c->name, c->fabric_levels, c->switch_radix,
                       (long long)(max * c->ib_rails), (long long)max, c->ib_rails, (long long)(max * gpn));
    return ZP_OK;
}
