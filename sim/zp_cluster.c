#include "zp_cluster.h"

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
 *  parameters in ~0.3-0.5 s on a 2-socket Xeon: 2.5e9 params/s per node for dgx2, more for newer CPUs. */
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
        .pcie_bw = 64e9,
        .host_mem = 2e12,
        .cpu_adam_rate = 6e9,
        .sources = "DGX H100 and H100 datasheets",
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
    return ZP_FAIL(ZP_EINVAL, "--cluster: unknown cluster '%s' (presets: dgx2, dgx-a100, dgx-h100; see `zplan clusters`)",
                   name);
}

double zp_cluster_node_ib_bw(const zp_cluster *c) { return c->ib_rails * c->ib_rail_bw; }
