GPT_ARGS=(
    --disable-bias-linear --num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128
    --kv-channels 128 --normalization RMSNorm --position-embedding-type rope --norm-epsilon 1e-6 --swiglu
    --untie-embeddings-and-output-weights --vocab-size 129280 --make-vocab-size-divisible-by 1 --seq-length 4096 --max-position-embeddings 4096
    --multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64
    --v-head-dim 128 --qk-layernorm --rotary-scaling-factor 40 --rotary-base 10000 --mscale 1.0 --mscale-all-dim 1.0
    --num-experts 256 --moe-layer-freq ([0]*3+[1]*58) --moe-ffn-hidden-size 2048 --moe-router-topk 8
    --moe-shared-expert-intermediate-size 2048 --moe-router-enable-expert-bias --moe-router-group-topk 4
    --moe-router-num-groups 8 --moe-grouped-gemm --moe-token-dispatcher-type flex --moe-enable-deepep --mtp-num-layers 1
    --expert-model-parallel-size 64 --pipeline-model-parallel-size 16 --tensor-model-parallel-size 1
    --micro-batch-size 1 --global-batch-size 15360 --bf16 --use-distributed-optimizer
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
)
DISTRIBUTED_ARGS=(--nproc_per_node 8 --nnodes 256)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${GPT_ARGS[@]}
