#include "zp_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

zp_status zp_model_validate(const zp_model *m)
{
    if (m->layers <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': layers must be positive (got %lld)", m->name, (long long)m->layers);
    if (m->hidden <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': hidden size must be positive (got %lld)", m->name,
                       (long long)m->hidden);
    if (m->heads <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': heads must be positive (got %lld)", m->name, (long long)m->heads);
    if (m->hidden % m->heads != 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': heads (%lld) must divide the hidden size (%lld)", m->name,
                       (long long)m->heads, (long long)m->hidden);
    if (m->seq <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': sequence length must be positive (got %lld)", m->name,
                       (long long)m->seq);
    if (m->vocab <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': vocabulary must be positive (got %lld)", m->name,
                       (long long)m->vocab);
    if (m->ffn <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': FFN size must be positive (got %lld)", m->name, (long long)m->ffn);
    /* Every dimension below 2^31 keeps every product of two of them exact in a double. */
    const double lim = 2147483647.0;
    if (m->layers > lim || m->hidden > lim || m->heads > lim || m->seq > lim || m->vocab > lim || m->ffn > lim)
        return ZP_FAIL(ZP_ERANGE, "model '%s': a dimension exceeds 2^31-1", m->name);
    double p = zp_model_params(m);
    if (!(p <= ZP_MODEL_MAX_PARAMS))
        return ZP_FAIL(ZP_ERANGE, "model '%s' has %.3g parameters; zplan accepts at most %.0e", m->name, p,
                       ZP_MODEL_MAX_PARAMS);
    return ZP_OK;
}

zp_status zp_model_init(zp_model *m, const char *name, int64_t layers, int64_t hidden, int64_t heads, int64_t seq,
                        int64_t vocab, int64_t ffn)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name ? name : "custom");
    m->layers = layers;
    m->hidden = hidden;
    m->heads = heads;
    m->seq = seq;
    m->vocab = vocab;
    m->ffn = ffn > 0 ? ffn : (hidden > 0 && hidden <= INT64_MAX / 4 ? 4 * hidden : 0); /* 0: refused below */
    return zp_model_validate(m);
}

double zp_model_params_layer(const zp_model *m)
{
    double h = (double)m->hidden, f = (double)m->ffn;
    double attn = 3.0 * h * h + 3.0 * h + h * h + h; /* QKV weight+bias, output projection weight+bias */
    double mlp = h * f + f + f * h + h;              /* h->f and f->h, with biases */
    double norms = 4.0 * h;                          /* two LayerNorms, gain and bias each */
    return attn + mlp + norms;
}

double zp_model_params_embedding(const zp_model *m)
{
    return ((double)m->vocab + (double)m->seq) * (double)m->hidden;
}

double zp_model_params(const zp_model *m)
{
    return (double)m->layers * zp_model_params_layer(m) + zp_model_params_embedding(m) + 2.0 * (double)m->hidden;
}

double zp_model_params_largest_layer(const zp_model *m)
{
    double layer = zp_model_params_layer(m);
    double emb = (double)m->vocab * (double)m->hidden;
    return layer > emb ? layer : emb;
}

double zp_model_flops_forward_layer(const zp_model *m, double batch)
{
    double h = (double)m->hidden, f = (double)m->ffn, s = (double)m->seq;
    double tokens = batch * s;
    /* GEMMs: QKV (3h^2), projection (h^2), MLP (2hf) per token; 2 FLOPs per multiply-add. */
    double gemm = 2.0 * tokens * (3.0 * h * h + h * h + 2.0 * h * f);
    /* Attention: scores Q K^T and their product with V, each b*s*s*h multiply-adds. */
    double attn = 2.0 * 2.0 * batch * s * s * h;
    return gemm + attn;
}

double zp_model_flops_forward_logits(const zp_model *m, double batch)
{
    return 2.0 * batch * (double)m->seq * (double)m->hidden * (double)m->vocab;
}

double zp_model_flops_iteration(const zp_model *m, double batch, int recompute)
{
    double layers = (double)m->layers * zp_model_flops_forward_layer(m, batch);
    double logits = zp_model_flops_forward_logits(m, batch);
    double passes = recompute ? 4.0 : 3.0; /* forward, backward (2x), and the recomputed forward */
    return passes * layers + 3.0 * logits;
}

double zp_model_activation_bytes_layer(const zp_model *m, double batch, int64_t mp)
{
    double s = (double)m->seq, h = (double)m->hidden, a = (double)m->heads, t = (double)(mp > 0 ? mp : 1);
    return s * batch * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
}

double zp_model_checkpoint_bytes_layer(const zp_model *m, double batch)
{
    return 2.0 * (double)m->seq * batch * (double)m->hidden;
}

double zp_model_params_small_tensors(const zp_model *m, int64_t mp, double threshold)
{
    double h = (double)m->hidden, f = (double)m->ffn, t = (double)(mp > 0 ? mp : 1);
    /* per block: QKV bias 3h/t and MLP-up bias f/t are split; projection and MLP-down biases (h) and
     * the two LayerNorms' gains and biases (4 x h) are whole */
    const double tensors[] = {3.0 * h / t, f / t, h, h, h, h, h, h};
    double per_layer = 0;
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        if (tensors[i] < threshold)
            per_layer += tensors[i];
    double final_ln = 2.0 * h < threshold ? 2.0 * h : (h < threshold ? 2.0 * h : 0);
    return (double)m->layers * per_layer + final_ln;
}
