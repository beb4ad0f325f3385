#include "zp_cluster.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* Sources:
 *  [dgx2]  NVIDIA DGX-2 datasheet (2018): 16x V100-SXM3 32 GB, NVSwitch 2.4 TB/s bisection
 *          (300 GB/s bidirectional per GPU), 8x 100 Gb/s EDR IB, 1.5 TB DDR4, 2x Xeon Platinum 8168;
 *          V100 datasheet: 125 TFLOP/s fp16 tensor, 900 GB/s HBM2 (SXM3: 980 GB/s); PCIe gen3 x16 ~16 GB/s.
 *          Achievable GEMM fraction 0.42: chosen so that the simulated single-V100 step of Megatron-LM's
 *          1.2B model (40 layers x 1536, micro-batch 8) runs at the 39 TFLOP/s Megatron-LM 2019 measured
 *          end to end (30% of peak); see bench/fidelity.
 *  [a100]  NVIDIA DGX A100 datasheet: 8x A100-SXM4 80 GB, 312 TFLOP/s bf16, 2039 GB/s HBM2e, NVLink3
 *          600 GB/s bidirectional per GPU, 8x 200 Gb/s HDR IB, 2 TB DDR4, PCIe gen4 x16 ~32 GB/s.
 *  [h100]  NVIDIA DGX H100 datasheet: 8x H100-SXM5 80 GB, 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3,
 *          NVLink4 900 GB/s bidirectional per GPU, 8x 400 Gb/s NDR IB, 2 TB DDR5, PCIe gen5 x16 ~64 GB/s.
 *  Latencies: NCCL per-step latency within a node ~5 us (NVSwitch), across nodes ~10 us (IB verbs +
 *  proxy), the orders of magnitude nccl-tests shows for small messages.
 *  Channels across nodes: the paper's NCCL 2.4.8 drove one ring per collective across DGX-2 nodes, so a
 *  group's inter-node traffic crossed one 100 Gb/s rail (the ZeRO paper measures Megatron-LM at ~5 TFLOP/s
 *  per GPU with MP across two DGX-2 nodes: the cross-node all-reduces run at a single rail's speed).
 *  NCCL 2.4 ran large collectives as flat rings through every GPU of the group, so each node's egress
 *  carries 2(P-1)/P of the buffer per all-reduce; NCCL >= 2.7 with rail-optimised rings uses one
 *  channel per NIC on DGX A100 / H100, and zplan models those as hierarchical (intra-node ring, then a
 *  ring over the nodes). NCCL over InfiniBand reaches ~80% of EDR's 12.5 GB/s line rate (nccl-tests
 *  all-reduce across two DGX-1 with 4 EDR NICs: ~40 GB/s bus bandwidth of 50 GB/s) and ~90% on HDR/NDR.
 *  CPU Adam rate: DeepSpeed's CPU Adam (ZeRO-Offload paper, Ren et al. 2021, Table 3) updates ~1B
 *  parameters in ~0.3-0.5 s on a 2-socket Xeon: 2.5e9 params/s per node for dgx2, more for newer CPUs.
 *  Trees: NCCL >= 2.4 runs an all-reduce across nodes as a double binary tree when its tuner predicts it
 *  faster (small messages, many nodes); dgx-a100 / dgx-h100 model that choice (sim/zp_engine.h). dgx2
 *  keeps the rings its fidelity figures (the ZeRO paper's runs on 25 nodes) were reproduced with.
 *  [superpod] NVIDIA DGX SuperPOD reference architecture with DGX H100 (RA-11333-001, 2023): scalable units
 *          (SU) of 32 DGX H100; compute fabric NDR 400 Gb/s InfiniBand, 8 ports per node, rail-optimized
 *          (rail r of every node of an SU on the SU's leaf switch r), QM9700 switches of 64 NDR ports,
 *          leaf-spine cables = node-leaf cables (non-blocking, 32 down / 32 up per leaf); two switch levels
 *          up to 8 SU (256 nodes: a spine's 64 ports reach 64 leaves = 8 SU x 8 rails), a core level
 *          beyond (the RA's table lists up to 64 SU, 2048 nodes). A fat tree of L levels of radix-R
 *          switches connects 2(R/2)^L ports: 65,536 NIC ports = 8192 nodes at three levels. Oversubscribed
 *          builds (e.g. 2:1) keep 32 nodes per leaf and remove uplinks (and spines): --oversubscription. */
static const zp_cluster g_clusters[] = {
    {
        .name = "dgx2",
        .gpu_name = "V100-SXM3-32GB",
        .description = "NVIDIA DGX-2: 16x V100 32 GB, NVSwitch, 8x 100 Gb/s EDR InfiniBand (the ZeRO paper's)",
        .gpus_per_node = 16,
        .gpu_mem = 32e9,
        .peak_flops = 125e12,
        .gemm_efficiency = 0.42,
        .hbm_bw = 900e9,
        .nvlink_bw = 150e9,
        .nvlink_latency = 5e-6,
        .ib_rails = 8,
        .ib_rail_bw = 12.5e9,
        .ib_latency = 10e-6,
        .inter_channels = 1,
        .flat_rings = 1,
        .ib_efficiency = 0.80,
        .tree_allreduce = 0,
        .pcie_bw = 16e9,
        .host_mem = 1.5e12,
        .cpu_adam_rate = 2.5e9,
        .sources = "DGX-2 and V100 datasheets; Megatron-LM 2019 for achievable efficiency",
    },
    {
        .name = "dgx-a100",
        .gpu_name = "A100-SXM4-80GB",
        .description = "NVIDIA DGX A100: 8x A100 80 GB, NVSwitch, 8x 200 Gb/s HDR InfiniBand",
        .gpus_per_node = 8,
        .gpu_mem = 80e9,
        .peak_flops = 312e12,
        .peak_flops_bf16 = 312e12,
        .gemm_efficiency = 0.50,
        .hbm_bw = 2039e9,
        .nvlink_bw = 300e9,
        .nvlink_latency = 5e-6,
        .ib_rails = 8,
        .ib_rail_bw = 25e9,
        .ib_latency = 8e-6,
        .inter_channels = 8,
        .flat_rings = 0,
        .ib_efficiency = 0.9,
        .tree_allreduce = 1,
        .pcie_bw = 32e9,
        .host_mem = 2e12,
        .cpu_adam_rate = 4e9,
        .sources = "DGX A100 and A100 datasheets",
    },
    {
        .name = "dgx-h100",
        .gpu_name = "H100-SXM5-80GB",
        .description = "NVIDIA DGX H100: 8x H100 80 GB, NVSwitch, 8x 400 Gb/s NDR InfiniBand",
        .gpus_per_node = 8,
        .gpu_mem = 80e9,
        .peak_flops = 989e12,
        .peak_flops_bf16 = 989e12,
        .gemm_efficiency = 0.45,
        .hbm_bw = 3350e9,
        .nvlink_bw = 450e9,
        .nvlink_latency = 4e-6,
        .ib_rails = 8,
        .ib_rail_bw = 50e9,
        .ib_latency = 6e-6,
        .inter_channels = 8,
        .flat_rings = 0,
        .ib_efficiency = 0.9,
        .tree_allreduce = 1,
        .pcie_bw = 64e9,
        .host_mem = 2e12,
        .cpu_adam_rate = 6e9,
        .sources = "DGX H100 and H100 datasheets",
    },
    {
        /* dgx-h100's nodes on the fabric NVIDIA specifies for them: a preset of its own (not a fabric option
         * on every preset) because the fabric bounds the cluster size and is what a SuperPOD is sold as;
         * dgx-h100 stays the ideal non-blocking fabric of any size. */
        .name = "dgx-h100-railopt",
        .gpu_name = "H100-SXM5-80GB",
        .description = "DGX H100 SuperPOD: 8x H100 80 GB, NVSwitch, 8x 400 Gb/s NDR rail-optimized fat tree "
                       "(32-node leaves, <= 8192 nodes)",
        .gpus_per_node = 8,
        .gpu_mem = 80e9,
        .peak_flops = 989e12,
        .peak_flops_bf16 = 989e12,
        .gemm_efficiency = 0.45,
        .hbm_bw = 3350e9,
        .nvlink_bw = 450e9,
        .nvlink_latency = 4e-6,
        .ib_rails = 8,
        .ib_rail_bw = 50e9,
        .ib_latency = 6e-6,
        .inter_channels = 8,
        .flat_rings = 0,
        .ib_efficiency = 0.9,
        .tree_allreduce = 1,
        .fabric = ZP_FABRIC_RAIL_FAT_TREE,
        .leaf_nodes = 32,
        .switch_radix = 64,
        .fabric_levels = 3,
        .oversubscription = 1.0,
        .pcie_bw = 64e9,
        .host_mem = 2e12,
        .cpu_adam_rate = 6e9,
        .sources = "DGX H100 and H100 datasheets; DGX SuperPOD reference architecture (DGX H100)",
    },
};

int zp_cluster_count(void) { return (int)(sizeof g_clusters / sizeof g_clusters[0]); }

const zp_cluster *zp_cluster_get(int i) { return (i >= 0 && i < zp_cluster_count()) ? &g_clusters[i] : NULL; }

zp_status zp_cluster_find(const char *name, const zp_cluster **out)
{
    for (int i = 0; i < zp_cluster_count(); i++) {
        if (strcasecmp(g_clusters[i].name, name) == 0) {
            *out = &g_clusters[i];
            return ZP_OK;
        }
    }
    return ZP_FAIL(ZP_EINVAL,
                   "--cluster: unknown cluster '%s' (presets: dgx2, dgx-a100, dgx-h100, dgx-h100-railopt; see "
                   "`zplan clusters`)",
                   name);
}

double zp_cluster_peak_flops(const zp_cluster *c, const char *dtype)
{
    if (strcmp(dtype, "fp16") == 0)
        return c->peak_flops;
    if (strcmp(dtype, "bf16") == 0 && c->peak_flops_bf16 > 0)
        return c->peak_flops_bf16;
    return c->peak_flops / 8.0;
}

int zp_cluster_has_bf16(const zp_cluster *c) { return c->peak_flops_bf16 > 0; }

double zp_cluster_node_ib_bw(const zp_cluster *c) { return c->ib_rails * c->ib_rail_bw; }

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
