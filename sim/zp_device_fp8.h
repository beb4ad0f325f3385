/* zp_device_fp8.h — FP8 training on the device model: the linear layers' GEMMs at the GPU's FP8 peak and
 * the recipe's cast, amax and transpose kernels beside them (vocab/zp_fp8.h says what each recipe does). */
#ifndef ZP_DEVICE_FP8_H
#define ZP_DEVICE_FP8_H

#include "zp_cluster.h"
#include "zp_ops.h"
#include "zp_profile.h"

/* FP8 GEMMs on Hopper reach less of their peak than bf16 GEMMs of theirs: on one H100 SXM, cuBLAS through
 * torch._scaled_mm ran 1,296.9 TFLOP/s in FP8 and torch.matmul 764.9 TFLOP/s in bf16 on the same large
 * shape (NVIDIA/cutlass issue #1662, PyTorch 24.07 container, cuBLAS 12.5): 65.5% of the 1,979 TFLOP/s FP8
 * peak against 77.3% of the 989 bf16 peak, a 1.70x GEMM speedup rather than 2x. The preset's bf16
 * efficiency times this ratio is the FP8 GEMMs' (H100: 0.78 x 0.847 = 0.66, 1,307 TFLOP/s). */
#define ZP_DEVICE_FP8_EFF_REL ((1296.9 / 1979.0) / (764.9 / 989.0))

/* Sets the profile's FP8 rate for plans of this recipe on this GPU (recipe 0: none; a GPU without FP8
 * tensor cores: none, the CLI refuses such plans first). */
void zp_device_profile_fp8(const zp_cluster *c, int recipe, int all_gather, zp_profile *p);
/* Seconds of a linear layer's GEMM in FP8 (info->fp8 set, p->fp8.recipe set): the GEMM at the FP8 rate
 * and the recipe's casts of its operands. */
double zp_device_fp8_gemm_time(const zp_profile *p, const zp_op *op, const zp_op_info *info);
/* The GEMM alone (no casts), `batch` of them in one launch (a grouped GEMM's experts), s: what the GEMM's
 * FP8 speedup is read from. */
double zp_device_fp8_gemm_only(const zp_profile *p, double m, double n, double k, double batch);
/* The cast kernels (amax, cast, transpose) the recipe runs beside a GEMM of this role, s, and how many. */
double zp_device_fp8_cast_time(const zp_profile *p, const zp_op *op, zp_fp8_op role, int *launches);

#endif
