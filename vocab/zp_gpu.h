/* zp_gpu.h — GPU spec files: one GPU's figures as data, each with its source.
 *
 * A GPU spec file (gpus/NAME.gpu, or a user's file given to --gpu) holds one line per figure:
 *     key = value [unit]   # source: where the figure comes from
 * blank lines and lines starting with '#' are comments. Every key of the table in zp_gpu.c is required,
 * once; a figure without "# source: <text>", an unknown key, a negative or malformed value or a unit of
 * the wrong kind is ZP_EINVAL naming the key and the line. The presets are the files of gpus/, embedded
 * into the library at build time (vocab/zp_gpu_embed.py) and read by the same parser.
 * Units as cluster presets: bandwidths bytes per second per direction, FLOP/s dense (no 2:4 sparsity). */
#ifndef ZP_GPU_H
#define ZP_GPU_H

#include "zp_cluster.h"
#include "zp_status.h"

/* The largest count a spec file may give (sms, nvlink_domain, nccl_ctas): far above any GPU's, within int. */
#define ZP_GPU_MAX_COUNT 1000000

typedef struct {
    char name[64];         /* "H100-SXM5-80GB": what nvidia-smi calls it, and --gpu's preset name */
    char description[200]; /* one line for `zplan gpus` */
    char origin[256];      /* where it was read: "preset" or the file's path */
    double fp32;           /* dense FP32 peak (CUDA cores / vector units), FLOP/s */
    double fp16;           /* dense FP16 tensor-core peak, FLOP/s */
    double bf16;           /* dense BF16 tensor-core peak, FLOP/s; 0: no BF16 tensor cores */
    double fp8;            /* dense FP8 tensor-core peak, FLOP/s; 0: no FP8 tensor cores */
    int fp8_mx;            /* optional fp8_block_scaled = 1: block-scaled MMA (MXFP8) at the fp8 rate; absent 0 */
    double hbm;            /* HBM per GPU, bytes */
    double hbm_bw;         /* HBM bandwidth, B/s */
    int sms;               /* streaming multiprocessors (AMD: compute units) */
    double clock;          /* boost clock the peaks are quoted at, under the power cap, Hz */
    double tdp_w;          /* board power, W */
    int nvlink_domain;     /* GPUs sharing one NVLink / NVSwitch (xGMI) domain in the GPU's system */
    double nvlink_bw;      /* NVLink bandwidth per GPU per direction, B/s */
    double nvlink_efficiency; /* fraction of it a ring all-reduce reaches as bus bandwidth */
    double nvlink_latency; /* per collective step inside the domain, s */
    double nic_bw;         /* scale-out NIC bandwidth per GPU per direction in the GPU's reference system, B/s */
    double gemm_efficiency;/* fraction of the 16-bit peak cuBLAS reaches on large GEMMs */
    double kernel_launch;  /* GPU time a kernel adds beyond its work, s */
    double dispatch;       /* host-side framework dispatch per kernel, s */
    double dispatch_block; /* host time per kernel of an eager framework's transformer block, s (0: not given) */
    double coll_dispatch;  /* host time per torch.distributed collective call, s (0: not given) */
    int nccl_ctas;         /* SMs an NCCL collective occupies */
    int nccl_ll128;        /* NCCL's LL128 protocol is available */
    double nccl_ll_base;   /* small all-reduce's fixed time on LL inside the domain, s (0: NCCL's tuner) */
    double nccl_ll_hop;    /* ... and per ring step, s (0: NCCL's tuner) */
    double flash_efficiency; /* FlashAttention-2's causal fwd+bwd fraction of peak at long sequences (0: none) */
    double flash_seq_half; /* tokens at which it reaches half of that */
    /* Optional keys (absent: an NVSwitch, as every NVIDIA preset): how the domain's GPUs are connected.
     * intra_topology = switch: each GPU reaches a switch at nvlink_bw, so any group inside the domain gets it
     * all; = mesh: each GPU has a direct link of link_bw to each peer (AMD xGMI: 7 links on an 8 x MI300X
     * node), so a group of g GPUs of one domain uses only the g-1 links among them (zp_cluster_group_bw). */
    int intra_mesh;        /* 1: intra_topology = mesh; 0: switch */
    double link_bw;        /* mesh: one peer link's bandwidth per direction, B/s (0 on a switch) */
} zp_gpu;

/* Parses a spec's text; `origin` names it in messages ("gpus/h100-sxm5-80gb.gpu", a user's path). */
zp_status zp_gpu_parse(const char *text, const char *origin, zp_gpu *out);
/* Reads and parses a spec file (ZP_ENOENT when it cannot be read). */
zp_status zp_gpu_read(const char *path, zp_gpu *out);

/* The embedded presets (gpus/ at build time), in gpus/'s listed order. */
int zp_gpu_preset_count(void);
/* The i-th preset's file name (e.g. "h100-sxm5-80gb.gpu") and text; NULL when out of range. */
const char *zp_gpu_preset_file(int i);
const char *zp_gpu_preset_text(int i);
/* Parses the i-th preset. */
zp_status zp_gpu_preset(int i, zp_gpu *out);
/* A preset by its name or file stem (case-insensitive, with or without ".gpu"), else a spec file when `name`
 * holds a '/', ends in ".gpu" or is a readable file; ZP_EINVAL listing the presets when neither. */
zp_status zp_gpu_find(const char *name, zp_gpu *out);

/* Puts the GPU into a cluster: its figures replace the cluster's GPU figures; node and fabric stay.
 * ZP_EINVAL when the GPU's NVLink domain and the cluster's nodes do not tile each other. */
zp_status zp_gpu_apply(const zp_gpu *g, zp_cluster *c);

#endif
