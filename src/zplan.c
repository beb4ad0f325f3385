/* zplan — the command line: parses options, calls the libraries, turns statuses into messages and
 * exit codes (0 ok, 1 run-time failure, 2 bad usage or input). zp_cli_main is the command line's whole
 * dispatch: main (zp_main.c) returns it, and so does the Python module's entry (zp_api.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_config.h"

static const char USAGE[] =
    "zplan " ZP_VERSION " - capacity planner and simulator for ZeRO training of large models\n"
    "\n"
    "Usage:\n"
    "  zplan --model M --gpus N [options]     what-if: plans that fit, memory per GPU, step time\n"
    "  zplan models [--format F]              the model zoo\n"
    "  zplan clusters [--format F]            the cluster presets\n"
    "  zplan gpus [--format F]                the GPU presets (zplan gpus NAME: its spec file, sourced)\n"
    "  zplan report KIND [options]            table1, table2 (the ZeRO paper's), scaling, models, configs,\n"
    "                                         memory, validation (zplan report --help)\n"
    "  zplan compare --model M --gpus N [--stage 0,1,2,3] [--mp LIST] [--offload LIST] ...\n"
    "                                         the best plan of each choice, side by side (zplan compare --help)\n"
    "  zplan schedule --model M --gpus N ...  the recommended plan's step, op by op (zplan schedule --help)\n"
    "  zplan sweep --models L --gpus L ...    the best plan of each model on each GPU count (or each row\n"
    "                                         of a --grid file), split over the ranks under mpirun\n"
    "                                         (zplan sweep --help)\n"
    "  zplan calibrate [--backend cpu|cuda] [--quick] [-o profile.json]\n"
    "                                         time the real kernels here, fit cost models (also under mpirun)\n"
    "  mpirun -np N zplan exec --model M [--stage S] [--mp M] [--validate --profile F] ...\n"
    "                                         train for real under MPI (ZeRO 0-3, MP, checkpointing), measure\n"
    "                                         time and memory, compare with the prediction (zplan exec --help)\n"
    "  zplan help [COMMAND]                   help of a command\n"
    "  zplan --version\n"
    "\n"
    "What-if options:\n"
    "  --model M            zoo name (zplan models), a size (37B, 1.2T, 350M: a GPT-2-like model of about\n"
    "                       that size), or a HuggingFace config.json path\n"
    "  --gpus N             number of GPUs (K/M suffixes: 1K = 1000)\n"
    "  --cluster NAME|FILE  cluster preset: dgx2 (default), dgx-a100, dgx-a100-40gb, dgx-h100,\n"
    "                       dgx-h100-railopt, dgx-h200, hgx-h800, dgx-b200, gb200-nvl72, mi300x-node\n"
    "                       (zplan clusters); or a SimGrid platform XML with hosts gpu-<node>-<i> and\n"
    "                       cpu-<node> (see README)\n"
    "  --oversubscription R leaf down/up bandwidth of a rail-optimized fat tree (dgx-h100-railopt; default 1)\n"
    "  --preset NAME        the GPUs of a --cluster FILE (default dgx2)\n"
    "  --gpu NAME|FILE      the cluster's GPUs replaced: a GPU preset (zplan gpus) or a GPU spec file (README,\n"
    "                       \"GPU spec files\"); nodes, NICs and fabric stay --cluster's\n"
    "  --profile FILE       kernel and link costs from `zplan calibrate` instead of the preset's\n"
    "  --gpu-mem SIZE       memory per GPU, decimal bytes (32G = 32e9; Gi for 2^30); default: the preset's\n"
    "  --reserve SIZE       memory per GPU a plan leaves free for the CUDA context, NCCL buffers and library\n"
    "                       workspaces (default 2G: ~0.5 GB context, ~1.4 GB NCCL, 0.1 GB workspaces)\n"
    "  --host-mem SIZE      host memory per node (default: the preset's), shared by the GPUs the job uses on\n"
    "                       the node: a one-GPU job has all of it\n"
    "  --precision P        fp16, bf16 (mixed precision: 16-bit parameters and gradients, fp32 master weights\n"
    "                       and Adam states, 16 bytes a parameter), fp8 (bf16 with the blocks' linear GEMMs in\n"
    "                       FP8; Hopper and Blackwell) or fp32 (16 bytes, GEMMs at the fp32 rate);\n"
    "                       default: bf16 on A100/H100 (bf16 tensor cores), fp16 on V100\n"
    "  --fp8-recipe R       with --precision fp8: delayed (Transformer Engine's delayed scaling, the default),\n"
    "                       current (TE's current scaling), blockwise (TE's 1x128 / 128x128 block scales,\n"
    "                       DeepSeek-V3's), mxfp8 (TE's MXFP8, 32-element block scales; Blackwell only),\n"
    "                       torchao-tensorwise or torchao-rowwise (torchao float8 without torch.compile)\n"
    "  --fp8-all-gather     FSDP2 (stage 3) all-gathers the weights in FP8 (torchao tensorwise only)\n"
    "  --grad-accum-dtype T fp32: gradients and their accumulation in fp32 beside 16-bit parameters\n"
    "                       (Megatron-LM's recipe, 18 bytes a parameter; DeepSpeed's data_types.grad_accum_dtype)\n"
    "  --grad-accum-fusion  the weight-gradient GEMMs accumulate the micro-batches' gradients (Megatron-core's\n"
    "                       --gradient-accumulation-fusion); default: an add kernel per micro-batch after the\n"
    "                       first (every one into fp32 gradients), as PyTorch and DeepSpeed's ZeRO-0/1 run it\n"
    "  --stage S            ZeRO-DP stage 0 (plain DP), 1 (Pos), 2 (Pos+g), 3 (Pos+g+p); default: searched\n"
    ZP_CLI_DIM_HELP("tensor")
    ZP_CLI_DIM_HELP("expert")
    "  --capacity-factor C  MoE: an expert's token buffer over its fair share (default 1)\n"
    "  --moe-imbalance L    MoE: the busiest EP rank's tokens over the mean, >= 1 (default 1: even routing)\n"
    "  --moe-dispatcher D   MoE: how tokens cross the EP group: alltoall (default; Megatron-core's all-to-all: a\n"
    "                       copy per token and expert), allgather (Megatron-core's own default: every rank\n"
    "                       all-gathers the group's tokens whole and reduce-scatters the outputs back; not\n"
    "                       with the overlap), deepep (Megatron-core's flex dispatcher with --moe-enable-deepep:\n"
    "                       a token crosses to a node, and a GPU, once, NVLink forwarding inside the node) or\n"
    "                       deepep-fp8 (DeepSeek-V3's: deepep with the tokens sent to the experts in FP8;\n"
    "                       needs --precision fp8); a model's group-limited routing (n_group, topk_group)\n"
    "                       bounds the nodes a token reaches\n"
    "  --micro-batch b      sequences per GPU per micro-step; default: the fewest micro-steps whose micro-batch\n"
    "                       fits the global batch\n"
    "  --global-batch B     sequences per step (micro-batch x accumulation x DP); default: GPT-3's batch for a\n"
    "                       model of this size (0.5M tokens below 1.3B parameters, 1M below 6.7B, 2M below\n"
    "                       175B, 3.2M from 175B), rounded up to whole sequences per DP rank\n"
    "  --grad-accum k       micro-batches per step (gradient accumulation); default: what the batch gives\n"
    "  --seq s              sequence length in tokens, K binary: 8k = 8192 (default: the model's; a config.json's\n"
    "                       pre-training context: rope_scaling's original_max_position_embeddings, else\n"
    "                       max_position_embeddings, at most 8192 with rotary positions: the answer says which)\n"
    "  --mtp-layers N       the model's multi-token prediction modules (Megatron-core's --mtp-num-layers;\n"
    "                       default: the model's, DeepSeek-V3 1; 0 trains it without, as torchtitan does)\n"
    "  --pa | --no-pa       ZeRO-R Pa: partition activation checkpoints across the MP group\n"
    "  --pa-cpu             ZeRO-R Pa+cpu: Pa with the partitions in host memory\n"
    "  --offload none|optimizer|params\n"
    "                       optimizer: ZeRO-Offload (stage >= 1); params: ZeRO-3 Offload (stage 3)\n"
    "  --offload-device cpu|nvme\n"
    "                       where offloaded states live: pinned host memory (default) or the node's NVMe\n"
    "                       drives (ZeRO-Infinity: host memory holds DeepSpeed's swap buffers only)\n"
    "  --max-live-params N  stage 3: parameters gathered at once (stage3_max_live_parameters, default 1G)\n"
    "  --prefetch-bucket N  stage 3: parameters prefetched ahead (stage3_prefetch_bucket_size, default 500M)\n"
    "  --checkpoint | --no-checkpoint\n"
    "                       one activation checkpoint per block, recomputed in backward, or none\n"
    "                       (--checkpoint-activations is the same as --checkpoint)\n"
    "  --recompute full|selective|none|op\n"
    "                       activation recompute: full (= --checkpoint), selective (the attention core only,\n"
    "                       Korthikanti et al. 2022), none (= --no-checkpoint); default: searched; op:\n"
    "                       torchtitan's op-level policy (every other matmul of a block, its routed\n"
    "                       experts and elementwise ops recomputed; selective_ac_option \"op\"), never\n"
    "                       searched\n"
    "  --recompute-modules LIST|auto\n"
    "                       what selective recompute re-runs, Megatron-core's names, comma-separated: core_attn\n"
    "                       (default), layernorm, mla_up_proj, moe_act (output-discarding), mlp, moe,\n"
    "                       shared_experts (whole, with their communication); implies --recompute selective.\n"
    "                       auto: searched beside no and full recompute, cheapest recompute first: core_attn;\n"
    "                       layernorm and moe_act; and mla_up_proj; and mlp and shared_experts (what the\n"
    "                       model has of each)\n"
    "  --activation-func-fp8-input-store\n"
    "                       a SwiGLU's input (gate and up, dense and experts) kept for backward as 1-byte FP8\n"
    "                       (Megatron-core's flag; any precision; its cast fused into the activation kernel)\n"
    "  --swiglu-fusion on|off\n"
    "                       a SwiGLU as one fused kernel keeping only gate and up for backward (on, the\n"
    "                       default: Megatron-core's bias_swiglu, torch.compile's), or as PyTorch eager runs\n"
    "                       silu(gate) * up, keeping the SiLU's output too: 2 bytes more a token per unit of\n"
    "                       the MLP's width (off: Megatron-LM's --no-bias-swiglu-fusion; --compile off and\n"
    "                       --framework deepspeed run it so)\n"
    "  --adam-moments fp32|bf16|fp16|fp8\n"
    "                       Adam's m and v in that type (default fp32; Megatron-core's precision-aware optimizer,\n"
    "                       DeepSeek-V3's bf16): less optimizer memory and traffic; not with --offload\n"
    "  --checkpoint-every K\n"
    "                       full recompute of every K-th block only, the others keep their activations\n"
    "                       (torchtitan's selective_ac_option \"K\"; implies --recompute full)\n"
    ZP_CLI_DIM_HELP("pipeline")
    ZP_CLI_DIM_HELP("context")
    ZP_CLI_DIM_HELP_REST
    "  --cp-comm ring|all-gather\n"
    "                       how CP moves K and V: a ring hidden behind the attention (default; Megatron-core's\n"
    "                       p2p) or all-gathered before it and the gradients reduce-scattered after (Llama 3)\n"
    "  --schedule gpipe|1f1b|interleaved\n"
    "                       pipeline schedule (needs --pp); default: 1f1b and interleaved searched\n"
    "  --virtual-stages v   model chunks per pipeline rank of the interleaved schedule (divides the layers\n"
    "                       per stage); default: searched, and where no v divides them (126 layers on 16\n"
    "                       stages) with the embedding and the loss counted as a layer each, \"+emb/loss\"\n"
    "                       (Megatron-core's --account-for-embedding/loss-in-pipeline-split; --framework any)\n"
    "  --pp-first-layers N | --pp-last-layers N\n"
    "                       uneven stages: the first / last stage's layers, the stages between sharing the\n"
    "                       rest (Megatron-core's --decoder-first/last-pipeline-num-layers); with v chunks\n"
    "                       each stage's layers divide by v. Default: even (the first and the last stage\n"
    "                       take floor(L/P) when P does not divide the layers)\n"
    "  --pp-layout LIST     uneven stages: the layers of every stage, or of every virtual stage (c*P + s)\n"
    "                       with --virtual-stages, as N or N*K (K times); the first and the last virtual\n"
    "                       stage may have 0 (only the embedding, only the LM head: Llama 3 405B's\n"
    "                       --pp 16 --virtual-stages 8 --pp-layout 0,1*126,0). Must sum to the layers\n"
    "  --sp | --no-sp       Megatron sequence parallelism over the MP group; default: searched with MP > 1\n"
    "  --tp-comm-overlap off|te|async|auto\n"
    "                       sequence parallelism's all-gathers and reduce-scatters cut into chunks beside the\n"
    "                       GEMMs that use them: te (or on: Megatron-core's --tp-comm-overlap, Transformer\n"
    "                       Engine's userbuffers), async (torchtitan's async TP), auto (off and te searched);\n"
    "                       needs --sp and MP inside a node; default: off\n"
    "  --overlap-param-gather\n"
    "                       stage 1-2: the updated parameters all-gathered beside the next step's first\n"
    "                       forward, bucket by bucket (Megatron-core's --overlap-param-gather), not after the\n"
    "                       optimizer; needs --overlap-comm (its --overlap-grad-reduce)\n"
    "  --overlap-p2p-comm on|off|all\n"
    "                       the interleaved schedule's steady-state sends between pipeline stages beside the\n"
    "                       next pass, not waited for (on: Megatron-LM's default; off: its\n"
    "                       --no-overlap-p2p-communication; all: the warm-up's and the flush's too, its\n"
    "                       --overlap-p2p-communication-warmup-flush); default: on where the framework runs\n"
    "                       it (any)\n"
    "  --overlap-moe-expert-parallel-comm\n"
    "                       MoE: the EP all-to-alls beside the other micro-batch's compute (Megatron-core's\n"
    "                       combined 1F1B; DeepSeek's DualPipe alike): each waited for at the next one; the\n"
    "                       warm-up and cool-down passes that have no partner block; needs EP > 1\n"
    "  --moe-shared-expert-overlap\n"
    "                       MoE: the shared experts on a stream of their own (Megatron-core's flag): their\n"
    "                       up-projection beside the dispatch all-to-all, down-projection beside the\n"
    "                       combine's, backward beside the combine's gradient; --moe-dispatcher alltoall\n"
    "                       only, not with --overlap-moe-expert-parallel-comm; nothing without shared experts\n"
    "  --compile on|off     torch.compile of the blocks: on (default) costs their elementwise ops as fused\n"
    "                       kernels; off as PyTorch eager runs them, each torch op its own kernel, launch,\n"
    "                       host dispatch and HBM round trip (RMSNorm 8, rotary 6, SwiGLU 2; torchtitan's\n"
    "                       default, compile = false). async TP needs it on\n"
    "  --no-cb              ZeRO-R CB off: fused buffers grow with the model (4 bytes per parameter)\n"
    "  --bucket N           CB bucket in elements (default 500M, DeepSpeed's reduce_bucket_size)\n"
    "  --flash-attention | --no-flash-attention\n"
    "                       attention as FlashAttention's fused kernels (no s x s scores in memory), or as\n"
    "                       Megatron-LM's GEMMs and softmax; default: FlashAttention where the GPU runs it\n"
    "                       (A100, H100, H200; not V100) and --framework has it\n"
    "  --flash-kernel K     which FlashAttention (implies --flash-attention): fa2 (default, FlashAttention-2),\n"
    "                       fa1 or triton (FlashAttention-1 and its Triton port, llm-foundry's attn_impl:\n"
    "                       triton: ~0.4 of FA2's speed, heads up to 128)\n"
    "  --no-md              ZeRO-R MD off: count a fragmentation reserve (30% of activations, gradients, buffers)\n"
    "  --overlap-comm | --no-overlap-comm\n"
    "                       ZeRO-DP collectives overlap compute on their own stream (default), or block it\n"
    "  --framework F        plan for what a framework's release runs: any (default: every option), megatron-2021\n"
    "                       (Megatron-LM v2: ZeRO stage 0, full or no recompute, no SP, interleaving with\n"
    "                       3+ stages, gradients all-reduced after the backward, no fusion or FlashAttention)\n"
    "                       deepspeed (DeepSpeed's pipeline engine: 1F1B, no SP or selective recompute, ZeRO\n"
    "                       stage 0-1 with --pp), deepspeed-2020 (the ZeRO paper's DeepSpeed v0.2 with\n"
    "                       Megatron-LM 2019: ZeRO 0-2, fp16 only, no pipeline, the loss scaler's per-tensor\n"
    "                       checks, reductions blocking compute unless --overlap-comm) or\n"
    "                       megatron-deepspeed-2022 (BLOOM's: the pipeline engine, ZeRO 0-1, fp32 gradients\n"
    "                       under bf16, reductions after the flush); an option it does not run exits 2\n"
    "  --reshard-after-forward default|always|never\n"
    "                       stage 3's parameters after a block's forward (FSDP2's reshard_after_forward):\n"
    "                       freed and gathered again for the backward of every micro-batch (always, as\n"
    "                       DeepSpeed), or kept gathered to the end of the backward (never: once a step with\n"
    "                       --pp); default: torchtitan's, never with --pp, else always\n"
    "  --shard-group G|auto hybrid sharding (FSDP2 HSDP, MiCS) at stage 2-3: states sharded within G DP ranks\n"
    "                       (G divides DP), gradients reduce-scattered within G and all-reduced across the\n"
    "                       DP / G replicas; auto searches full sharding and the largest G inside a node;\n"
    "                       default: DP (full sharding)\n"
    "  --exact              pin every option not given to its default instead of searching it, as a DeepSpeed\n"
    "                       config does: MP 1, micro-batch = global batch / DP (or 1), no accumulation, no Pa,\n"
    "                       no offload; needs --stage\n"
    "  --format F           text (default), md, csv, json or html (--json: --format json)\n"
    "  --train-tokens N     price a token budget (decimal: 2T = 2e12) at each plan's tokens/s: days, GPU-hours,\n"
    "                       energy (GPU board power at TDP x GPUs x time; host, network, cooling excluded)\n"
    "  --gpu-hour-price USD with --train-tokens: the cost at this price per GPU-hour\n"
    "  --top K              fitting plans to show (default 5)\n"
    "  --trace FILE         write the recommended plan's simulated step as Chrome trace JSON (Perfetto)\n"
    "  --analytic           no simulation: first-order estimate (compute + communication, no overlap)\n"
    "  --sim full|reduced   simulate every node, or one node per role (default: reduced where it is exact)\n"
    "  --jobs N             simulations at once (default: the online CPUs)\n"
    "  -o, --output FILE    write to FILE (atomically) instead of standard output\n"
    "  --report FILE.html   also write the answer as one self-contained HTML page (tables, SVG charts)\n"
    "  --ds-config FILE     evaluate exactly the plan of a DeepSpeed JSON config (zero_optimization, batch\n"
    "                       sizes, fp16/bf16, activation_checkpointing; \"auto\" is resolved and reported),\n"
    "                       and give the verdict: its step against the best plan DeepSpeed runs\n"
    "  --megatron-args FILE | --torchtitan FILE.toml | --nemo FILE.yaml\n"
    "                       judge a launch you have: Megatron-LM's pretrain_gpt.py arguments (or a launch\n"
    "                       script of them), a torchtitan job TOML, a NeMo YAML; its exact plan, memory and\n"
    "                       step, and the verdict: the best plan that framework runs at the same global batch\n"
    "                       and the one change that gets most of it. --gpus defaults to the file's (torchrun\n"
    "                       --nnodes x --nproc_per_node, NeMo's trainer); a misspelt key, or one zplan does\n"
    "                       not model that changes the answer, exits 2 naming its line\n"
    "  --emit-ds-config FILE  write the recommended plan as a DeepSpeed config for deepspeed.initialize; the\n"
    "                       search stays within --framework deepspeed (exit 2 for what a config cannot say)\n"
    "  --max-model          answer for the largest model of --model's shape (hidden, heads, sequence, vocabulary\n"
    "                       kept; blocks added) that some plan fits, and say how many blocks that is\n"
    "  --emit-megatron-args FILE\n"
    "                       write the best plan Megatron-LM runs as its arguments (the model's shape and\n"
    "                       architecture: GQA, SwiGLU, RMSNorm, rope, biases, MoE, MLA, MTP; tensor/pipeline\n"
    "                       sizes, virtual stages, sequence parallel, recompute, batches, distributed\n"
    "                       optimizer, bf16/fp16, fp32 gradients, FlashAttention, vocabulary, rotary base),\n"
    "                       with its simulated step; exit 2 for an architecture it cannot state (ALiBi,\n"
    "                       GeGLU, parallel blocks, Qwen2-MoE's gated shared expert)\n"
    "  --emit-torchtitan FILE.toml\n"
    "                       write the best plan torchtitan runs (DDP or FSDP, TP with SP) as its job TOML:\n"
    "                       [model] flavor, [training] batch and sequence, [parallelism] degrees (EP with\n"
    "                       experts), [activation_checkpoint] mode, with its simulated step (the llama-3\n"
    "                       models; deepseek-v2-lite, -v2 and -v3 with --mtp-layers 0)\n"
    "Options given are constraints and everything not given is searched (stage, MP, PP with its schedule\n"
    "and virtual stages, SP, recompute, micro-batch, ZeRO-R Pa and Pa+cpu, offload); --exact pins the rest\n"
    "instead (no PP, no SP, full recompute). Every plan that fits is simulated with SimGrid\n"
    "(method simgrid) unless it provably cannot beat the best one. The same options, with the same names\n"
    "and suffixes, select the plan of `zplan report`, `zplan schedule` and `zplan exec`.\n"
    "\n"
    "Sizes take decimal suffixes K, M, G (or B for billions), T; binary Ki, Mi, Gi; --seq reads K and M as\n"
    "binary (8k = 8192); a model size needs its unit (70B, not 70). Memory is reported in\n"
    "GB = 1e9 bytes, as in the ZeRO paper. TFLOPs count executed FLOPs including recompute (Megatron-LM 2021).\n"
    "When no plan fits, the answer says what would: the largest micro-batch, sequence and model that fit as\n"
    "given, and the changes of one option (stage, MP, offload, Pa, batch, more GPUs) that make a plan fit.\n"
    "Exit status: 0 ok, 1 run-time failure, 2 bad usage or input, 3 no plan fits (the answer is printed).\n";

int zp_cli_main(int argc, char **argv)
{
    if (argc >= 2) {
        const char *cmd = argv[1];
        if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
            printf("zplan %s\n", ZP_VERSION);
            return 0;
        }
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
            zp_cli_usage_put(USAGE, stdout);
            return 0;
        }
        if (strcmp(cmd, "help") == 0) {
            if (argc >= 3 && strcmp(argv[2], "report") == 0)
                return zp_cli_report(2, (char *[]){"report", "--help", NULL});
            if (argc >= 3 && (strcmp(argv[2], "models") == 0 || strcmp(argv[2], "clusters") == 0 ||
                              strcmp(argv[2], "gpus") == 0))
                return zp_cli_list(2, (char *[]){argv[2], "--help", NULL});
            if (argc >= 3 && strcmp(argv[2], "calibrate") == 0)
                return zp_calibrate_main(2, (char *[]){"calibrate", "--help", NULL});
            if (argc >= 3 && strcmp(argv[2], "exec") == 0)
                return zp_exec_main(2, (char *[]){"exec", "--help", NULL});
            if (argc >= 3 && strcmp(argv[2], "sweep") == 0)
                return zp_cli_sweep(2, (char *[]){"sweep", "--help", NULL});
            if (argc >= 3 && strcmp(argv[2], "schedule") == 0)
                return zp_cli_schedule(2, (char *[]){"schedule", "--help", NULL});
            if (argc >= 3 && strcmp(argv[2], "compare") == 0)
                return zp_cli_compare(2, (char *[]){"compare", "--help", NULL});
            zp_cli_usage_put(USAGE, stdout);
            return 0;
        }
        if (strcmp(cmd, "models") == 0 || strcmp(cmd, "clusters") == 0 || strcmp(cmd, "gpus") == 0)
            return zp_cli_list(argc - 1, argv + 1);
        if (strcmp(cmd, "report") == 0)
            return zp_cli_report(argc - 1, argv + 1);
        if (strcmp(cmd, "calibrate") == 0)
            return zp_calibrate_main(argc - 1, argv + 1);
        if (strcmp(cmd, "exec") == 0)
            return zp_exec_main(argc - 1, argv + 1);
        if (strcmp(cmd, "schedule") == 0)
            return zp_cli_schedule(argc - 1, argv + 1);
        if (strcmp(cmd, "compare") == 0)
            return zp_cli_compare(argc - 1, argv + 1);
        if (strcmp(cmd, "sweep") == 0)
            return zp_cli_sweep(argc - 1, argv + 1);
        if (cmd[0] != '-') {
            fprintf(stderr, "zplan: unknown command '%s' (commands: models, clusters, gpus, report, compare, schedule, sweep, calibrate, "
                            "exec; or --model M --gpus N; "
                            "see zplan --help)\n", cmd);
            return 2;
        }
    }
    if (argc < 2) {
        zp_cli_usage_put(USAGE, stderr);
        return 2;
    }
    return zp_cli_whatif(argc, argv, USAGE);
}
