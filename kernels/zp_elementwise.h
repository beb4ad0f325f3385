/* zp_elementwise.h — the element-wise arithmetic of zplan's kernels, in one place.
 *
 * Every function here is `static inline` and marked ZP_HD, so the same source is compiled
 * by the C compiler (the cpu backend's loops, the tests) and by nvcc (the cuda backend's
 * kernels): the CPU tests therefore cover the arithmetic that the GPU runs.
 *
 * Contents
 *   - IEEE half (fp16) and bfloat16 conversions in portable, branch-free C with
 *     round-to-nearest-even (the hardware conversions' rounding), NaN kept a quiet NaN;
 *   - the fused mixed-precision Adam / AdamW update of one element.
 *
 * Mixed-precision Adam as done here (one element, fp32 throughout):
 *     g  = grad * grad_mul                 grad_mul = clip / loss_scale (unscale + clip, fused)
 *     g += wd * p                          Adam (L2) only; AdamW decays the weight instead:
 *     p -= lr * wd * p                     AdamW only (decoupled weight decay, before the step)
 *     m  = b1 * m + (1 - b1) * g
 *     v  = b2 * v + (1 - b2) * g * g
 *     p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)     bc_i = 1 - b_i^t (1 without bias correction)
 *     half = to_fp16_or_bf16(p)
 * which is PyTorch's torch.optim.Adam / AdamW arithmetic.
 *
 * NaN/inf policy (see zp_kernels.h): the update itself never looks at finiteness. Before a
 * step, the gradients are checked (zp_adam_grad_check, or the step's own check); if any is
 * NaN or +-inf the step is skipped for the whole partition — parameters, m, v and the 16-bit
 * copy are left bit-for-bit untouched — and the overflow is reported, so that the trainer
 * lowers its loss scale, exactly as dynamic loss scaling in mixed-precision trainers does.
 */
#ifndef ZP_ELEMENTWISE_H
#define ZP_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define ZP_HD __host__ __device__
#else
#define ZP_HD
#endif

/* ---- bit casts: intrinsics on the device, memcpy in C++ host code, a union in C (defined
 * behaviour in C11, and the form GCC vectorises) ---- */

ZP_HD static inline uint32_t zp_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#elif defined(__cplusplus)
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#else
    union { float f; uint32_t u; } x = {.f = f};
    return x.u;
#endif
}

ZP_HD static inline float zp_f32_from_bits(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#elif defined(__cplusplus)
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#else
    union { uint32_t u; float f; } x = {.u = u};
    return x.f;
#endif
}

/* ---- fp32 -> fp16 (IEEE binary16), round to nearest even ----
 * Normal results: add the rounding bias (0xfff plus the lowest kept mantissa bit, which
 * makes ties go to even) to the fp32 bits after rebasing the exponent, and shift.
 * Results below the fp16 normal range: let an fp32 addition of a magic constant shift the
 * 10 mantissa bits down to the bottom — fp32 addition itself rounds to nearest even
 * (requires no flush-to-zero, the default on both the CPU and CUDA without fast-math).
 * Overflow goes to inf, NaN to the quiet NaN 0x7e00 with the sign kept. Branch-free so
 * loops over it vectorise. */
ZP_HD static inline uint16_t zp_f32_to_f16(float f)
{
    const uint32_t u = zp_f32_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;                  /* |f| bits */
    /* subnormal or zero result: |f| < 2^-14 */
    const uint32_t magic = (uint32_t)((127 - 15) + (23 - 10) + 1) << 23; /* 0.5f: 2^-1 */
    const uint32_t sub = zp_f32_bits(zp_f32_from_bits(a) + zp_f32_from_bits(magic)) - magic;
    /* normal result */
    const uint32_t odd = (a >> 13) & 1u;
    const uint32_t nrm = (a + ((uint32_t)(15 - 127) << 23) + 0xfffu + odd) >> 13;
    /* overflow (|f| >= 65520 rounds to inf) and inf/NaN; selects by masks, not branches */
    const uint32_t is_nan = 0u - (uint32_t)(a > 0x7f800000u);
    const uint32_t big = 0x7c00u | (is_nan & 0x0200u);
    const uint32_t is_sub = 0u - (uint32_t)(a < 0x38800000u);   /* 0x38800000 = 2^-14 */
    const uint32_t is_big = 0u - (uint32_t)(a >= 0x477ff000u);  /* 0x477ff000 = 65520 */
    uint32_t h = (sub & is_sub) | (nrm & ~is_sub);
    h = (big & is_big) | (h & ~is_big);
    return (uint16_t)(h | sign);
}

/* fp16 -> fp32, exact. */
ZP_HD static inline float zp_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (e == 0) {
        /* zero or subnormal: mant * 2^-24, exact in fp32 */
        float f = (float)mant * 5.9604644775390625e-08f;
        bits = zp_f32_bits(f);
    } else if (e == 31) {
        bits = 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
    } else {
        bits = ((e + (127 - 15)) << 23) | (mant << 13);
    }
    return zp_f32_from_bits(bits | sign);
}

/* ---- fp32 -> bfloat16, round to nearest even; NaN stays a quiet NaN ---- */
ZP_HD static inline uint16_t zp_f32_to_bf16(float f)
{
    const uint32_t u = zp_f32_bits(f);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x0040u;
    const uint32_t is_nan = 0u - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
    return (uint16_t)((nan & is_nan) | (rounded & ~is_nan));
}

/* bfloat16 -> fp32, exact. */
ZP_HD static inline float zp_bf16_to_f32(uint16_t b) { return zp_f32_from_bits((uint32_t)b << 16); }

/* ---- fused Adam ---- */

/* Per-step scalars of the update, derived once on the host from the hyper-parameters
 * (zp_adam_coeffs_make in zp_kernels.h) and passed by value to every element. */
typedef struct {
    float lr;           /* learning rate */
    float beta1;        /* first-moment decay */
    float beta2;        /* second-moment decay */
    float one_minus_beta1; /* 1 - beta1, computed in double */
    float one_minus_beta2; /* 1 - beta2, computed in double */
    float eps;          /* added to the bias-corrected sqrt(v) */
    float l2;           /* Adam: weight decay folded into the gradient (0 for AdamW) */
    float decay;        /* AdamW: p *= decay, decay = 1 - lr*wd (1 for Adam) */
    float grad_mul;     /* clip / loss_scale: unscales and clips the gradient */
    float step_size;    /* lr / (1 - beta1^t) */
    float inv_sqrt_bc2; /* 1 / sqrt(1 - beta2^t) */
} zp_adam_coeffs;

/* Updates one element in place: master parameter *p, moments *m and *v, from the
 * (loss-scaled) gradient g; returns the new parameter. */
ZP_HD static inline float zp_adam_update(const zp_adam_coeffs c, float *p, float g, float *m, float *v)
{
    float pv = *p;
    float gv = g * c.grad_mul + c.l2 * pv;
    pv *= c.decay;
    float mv = c.beta1 * *m + c.one_minus_beta1 * gv;
    float vv = c.beta2 * *v + c.one_minus_beta2 * gv * gv;
    float denom = sqrtf(vv) * c.inv_sqrt_bc2 + c.eps;
    pv -= c.step_size * (mv / denom);
    *m = mv;
    *v = vv;
    *p = pv;
    return pv;
}

/* 1 when x is neither NaN nor +-inf (bit test: independent of -ffast-math). */
ZP_HD static inline int zp_f32_is_finite(float x) { return (zp_f32_bits(x) & 0x7f800000u) != 0x7f800000u; }

#endif
