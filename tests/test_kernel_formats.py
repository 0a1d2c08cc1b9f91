"""kernel_formats (analyses/sql/40_budget.sql) reads the numeric format and the unit of every
matrix-math kernel from its name: real names of cuBLAS, cuBLASLt/nvjet, CUTLASS, cuDNN/xmma and
Triton, and every GEMM/convolution name in the shared and fixture exports gets a format or an
explicit unknown."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import duckdb
import pytest
from nsys_diagnose.ingest import sql_library

from .conftest import FIXTURES, H200, PUBLIC

FORMATS = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "unknown"}
PATHS = {"tensor core", "CUDA core", "unknown"}


def _kernel_formats_sql() -> str:
    for file, text in sql_library.files():
        for st in sql_library.statements(file, text):
            if re.search(r"CREATE TABLE kernel_formats\b", st.sql):
                return st.sql
    raise AssertionError("no CREATE TABLE kernel_formats in the SQL library")


def parse(names: list[str]) -> dict[str, tuple[str, str, str, str]]:
    """{name: (family, op, format, path)} for the names kernel_formats keeps."""
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE kernel_names AS SELECT unnest($n::VARCHAR[]) AS name, 1 AS instances", {"n": names})
        con.execute(_kernel_formats_sql())
        return {r[0]: tuple(r[1:]) for r in con.execute("SELECT name, family, op, format, path FROM kernel_formats").fetchall()}
    finally:
        con.close()


# (name, op, format, path): names from the exports in ../shared and fixtures/exports, and from
# NVIDIA's published kernel lists (cuBLAS SASS kernels, CUTLASS profiler, xmma/CASK, cuBLASLt nvjet)
CASES = [
    # cuBLAS legacy: letter = type, digits = a tensor-core MMA shape, none = CUDA cores
    ("ampere_sgemm_128x64_nn", "gemm", "fp32", "CUDA core"),
    ("ampere_dgemm_128x64_nt_v0", "gemm", "fp64", "CUDA core"),
    ("ampere_dgemm_64x64_lower_nt", "gemm", "fp64", "CUDA core"),
    ("ampere_hgemm_256x128_nt_v0", "gemm", "fp16", "CUDA core"),
    ("volta_sgemm_128x64_nn", "gemm", "fp32", "CUDA core"),
    ("volta_fp16_sgemm_fp16_128x64_nn", "gemm", "fp16", "CUDA core"),
    ("volta_h884gemm_64x64_ldg8_nn", "gemm", "fp16", "tensor core"),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "gemm", "fp16", "tensor core"),
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_64x3_nt_v1", "gemm", "fp16", "tensor core"),
    ("ampere_h16816gemm_128x128_ldg8_stages_64x3_nt_v1", "gemm", "fp16", "tensor core"),
    ("ampere_bf16_s1688gemm_bf16_128x128_ldg8_f2f_nt_v1", "gemm", "bf16", "tensor core"),
    ("ampere_fp32_s1684tf32gemm_fp32_128x128_ldg4_nt_v1", "gemm", "tf32", "tensor core"),
    ("ampere_int8_i16832gemm_int8_128x128_ldg16_relu_stages_64x3_nt_v1", "gemm", "int8", "tensor core"),
    ("ampere_igemm_int8_128x128_ldg4_nt_v0", "gemm", "int8", "CUDA core"),
    ("zgemm_sm80_kernel", "gemm", "fp64", "CUDA core"),
    ("void sgemm_largek_lds64<(bool)1, (bool)0, (int)5, (int)5, (int)4, (int)4, (int)4, (int)34>(float *, const float *, "
     "const float *, int, int, int, int, int, int, const float *, const float *, float, float, int, int, int *, int *)",
     "gemm", "fp32", "CUDA core"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, (int)128, (int)16, (int)2, (int)2, (bool)0, (bool)1>"
     "(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>>)", "gemv", "fp32", "CUDA core"),
    # xmma (cuBLAS, cuBLASLt and cuDNN): the lowest-precision operand type is the math's
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
     "gemm", "fp32", "CUDA core"),
    ("sm80_xmma_gemm_tf32tf32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8", "gemm", "tf32", "tensor core"),
    ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_cgasize1x2x1_stage4_gmmastage2_warpgroupsize1x1x1_hgmma64x128x8",
     "gemm", "tf32", "tensor core"),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_nt_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16", "gemm", "fp16", "tensor core"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "gemm", "bf16", "tensor core"),
    ("sm90_xmma_gemm_f64f64_f64f64_f64_nt_n_tilesize128x128x16_stage3_warpsize4x2x1_tensor16x8x16", "gemm", "fp64", "tensor core"),
    ("sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize256x128x64_stage4_warpsize4x2x1_tensor16x8x32", "gemm", "int8", "tensor core"),
    ("sm90_xmma_gemm_i8i32_i8i32_f32_tn_n_tilesize128x128x128_stage4_gmmastage2_warpgroupsize1x1x1_igmma64x128x32",
     "gemm", "int8", "tensor core"),
    ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_kernel__5x_cublas",
     "gemm", "fp8", "tensor core"),
    ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_warpsize2x2x1_g1_ffma_aligna4_alignc4"
     "_execute_kernel__5x_cudnn", "conv", "fp32", "CUDA core"),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x32_stage5_warpsize2x2x1_g1_tensor16x8x8"
     "_execute_kernel__5x_cudnn", "conv", "tf32", "tensor core"),
    ("sm90_xmma_dgrad_implicit_gemm_indexed_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x64x32_warpgroupsize1x1x1_g1_strided"
     "_execute_kernel__5x_cudnn", "conv", "tf32", "tensor core"),
    ("sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1"
     "_execute_segment_k_off_kernel__5x_cudnn", "conv", "bf16", "tensor core"),
    # cuBLASLt nvjet: type letters after the architecture (A/B, compute, C/D; qq = fp8 A and B)
    ("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT", "gemm", "bf16", "tensor core"),
    ("nvjet_sm90_tss_64x8_64x16_4x1_v_bz_splitK_TNT", "gemm", "bf16", "tensor core"),
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "gemm", "fp16", "tensor core"),
    ("nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT", "gemm", "fp8", "tensor core"),
    ("nvjet_sm100_tst_256x128_64x5_2x2_2cta_h_bz_TNT", "gemm", "bf16", "tensor core"),
    ("nvjet_sm90_tst_8x64_64x16_4x1_v_badd_TNN", "gemm", "bf16", "tensor core"),
    # CUTLASS: tensorop/simt, the accumulator letter and MMA shape, the element type
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", "gemm", "fp32", "CUDA core"),
    ("cutlass_simt_dgemm_128x128_8x3_nt_align1", "gemm", "fp64", "CUDA core"),
    ("cutlass_simt_hgemm_256x128_8x2_nt_align1", "gemm", "fp16", "CUDA core"),
    ("cutlass_simt_igemm_s8_128x128_32x2_nt_align1", "gemm", "int8", "CUDA core"),
    ("cutlass_tensorop_d884gemm_128x128_16x3_nt_align1", "gemm", "fp64", "tensor core"),
    ("cutlass_tensorop_h16816gemm_256x128_32x3_nt_align8", "gemm", "fp16", "tensor core"),
    ("cutlass_tensorop_s16816gemm_f16_256x128_32x3_nt_align8", "gemm", "fp16", "tensor core"),
    ("cutlass_tensorop_s1688gemm_tf32_256x128_16x3_nt_align4", "gemm", "tf32", "tensor core"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4>(T1::Params)", "gemm", "tf32", "tensor core"),
    ("cutlass_tensorop_i16832gemm_s8_256x128_64x3_tn_align16", "gemm", "int8", "tensor core"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_128x256_64x3_nn_align2>(T1::Params)", "gemm", "bf16", "tensor core"),
    ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nt_align1>(T1::Params)", "gemm", "bf16", "tensor core"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align2>(T1::Params)", "gemm", "bf16", "tensor core"),
    ("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnn_align16_warpspecialized", "gemm", "fp8", "tensor core"),
    # cuDNN: scudnn/hcudnn legacy kernels, engines templated on the element type (computed in
    # fp32 on CUDA cores: engine_float), CUTLASS-built convolutions
    ("volta_scudnn_128x128_relu_interior_nn_v1", "conv", "fp32", "CUDA core"),
    ("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", "conv", "fp16", "tensor core"),
    ("void wgrad_alg0_engine<float, (int)128, (int)5, (int)5, (int)3, (int)3, (int)3, (bool)0, (int)512>(int, int, int, "
     "const T1 *, int, T1 *, const T1 *, kernel_grad_params, unsigned long long, int, float, int, int, int, int)",
     "conv", "fp32", "CUDA core"),
    ("void convolve_common_engine_float_NHWC<__nv_bfloat16, __nv_bfloat16, (int)128, (int)5, (int)5, (int)3, (int)3, (int)3, "
     "(bool)1, (bool)0, (bool)0, (bool)0, (bool)0>(int, int, int, const T1 *, const T1 *, int, T2 *, conv_kernel_common_params)",
     "conv", "bf16", "CUDA core"),
    ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_128x128_32x5_nhwc_align8>(T1::Params)",
     "conv", "bf16", "tensor core"),
    ("void implicit_convolve_sgemm<float, float, (int)1024, (int)5, (int)5, (int)3, (int)3, (int)3, (int)1, (bool)0, (bool)0, "
     "(bool)1>(int, int, int, const T1 *, int, T1 *, const T1 *, kernel_conv_params, unsigned long long, int, float, float, int, "
     "const T1 *, const T1 *, bool, int, int)", "conv", "fp32", "CUDA core"),
    # attention: fused kernels keep their format; PyTorch's memory-efficient fp32 path says no unit
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
     "attention", "fp16", "tensor core"),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, (bool)1, "
     "(int)64, (int)64, (int)64, (bool)1, (bool)1>::Params)", "attention", "fp32", "unknown"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, (bool)0, cutlass::bfloat16_t, "
     "Flash_kernel_traits<(int)128, (int)128, (int)64, (int)4, cutlass::bfloat16_t>>, (bool)1>(Flash_fwd_params)",
     "attention", "bf16", "unknown"),
    # Triton: the name carries no dtype
    ("triton_mm", "gemm", "unknown", "unknown"),
    ("triton_tem_fused_addmm_relu_0", "gemm", "unknown", "unknown"),
    ("triton_bmm_4", "gemm", "unknown", "unknown"),
]

# library helpers and other kernels that are not matrix math get no row
NOT_MATH = [
    "void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, __nv_bfloat16, float, __nv_bfloat16, (bool)0, float, "
    "__nv_bfloat16, __nv_bfloat16, (bool)1, (bool)0, (bool)0, (bool)0>(cublasLt::cublasSplitKParams<T6>, const T4 *)",
    "void cublasLt::epilogue::impl::globalKernel<(int)8, (int)32, float, float, float, (bool)1, (bool)1, (int)1>(int, int, long)",
    "void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<xmma__5x_cudnn::implicit_gemm::dgrad::"
    "Warp_specialized_params_nontemplate<xmma__5x_cudnn::Grid_constant_params>>(T1, bool)",
    "void scal_kernel<float, float, (int)1, (bool)1, (int)6, (int)5, (int)5, (int)3>(cublasTransposeParams<T2>, const T1 *, T1 *)",
    "triton_poi_fused__to_copy_1",
    "triton_red_fused__to_copy_add_native_layer_norm_5",
    "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, std::array<char *, "
    "(unsigned long)3>>(int, T2, T3)",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::"
    "[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(float) (instance 1)], "
    "std::array<char *, (unsigned long)2>, (int)4, TrivialOffsetCalculator<(int)1, unsigned int>, "
    "TrivialOffsetCalculator<(int)1, unsigned int>, at::native::memory::LoadWithCast<(int)1>, "
    "at::native::memory::StoreWithCast<(int)1>>(int, T1, T2, T3, T4, T5, T6)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
]


def test_formats_of_known_kernel_names():
    got = parse([c[0] for c in CASES])
    wrong = [(name[:90], got.get(name, (None,))[1:], (op, fmt, path)) for name, op, fmt, path in CASES
             if got.get(name, (None,))[1:] != (op, fmt, path)]
    assert not wrong, "\n".join(f"{n}: got {g}, want {w}" for n, g, w in wrong)


def test_helpers_and_other_kernels_are_not_matrix_math():
    assert parse(NOT_MATH) == {}


def test_families():
    got = parse([c[0] for c in CASES])
    family = {n: got[n][0] for n in got}
    assert family["nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_NNT"] == "cuBLAS"
    assert family["volta_scudnn_128x128_relu_interior_nn_v1"] == "cuDNN"
    assert family["cutlass_simt_dgemm_128x128_8x3_nt_align1"] == "CUTLASS"
    assert family["triton_mm"] == "Triton"
    assert family["sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4"
                  "_execute_kernel__5x_cublas"] == "cuBLAS"


# what a GEMM or convolution kernel's name looks like, broadly (more than kernel_formats needs)
GEMM_LIKE = re.compile(r"gemm|conv([^e]|$)|fprop|dgrad|wgrad|matmul|nvjet|xmma|tensorop|scudnn|triton_(tem_|b?mm)", re.I)
HELPER = re.compile(r"splitkreduce|reducesplitk|epilogue|init_device_workspace|scal_kernel", re.I)


def _export_names() -> list[str]:
    paths = sorted([*H200.glob("*.sqlite"), *PUBLIC.glob("*.sqlite"), *(FIXTURES / "exports").glob("*.sqlite")])
    names: set[str] = set()
    for p in paths:
        con = sqlite3.connect(f"file:{Path(p)}?mode=ro", uri=True)
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'").fetchone():
                continue
            names |= {r[0] for r in con.execute(
                "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = coalesce(k.demangledName, k.shortName)")}
        finally:
            con.close()
    return sorted(names)


def test_every_gemm_or_conv_name_in_the_exports_gets_a_format():
    names = _export_names()
    if not names:
        pytest.skip("no exports")
    got = parse(names)
    gemm_like = [n for n in names if GEMM_LIKE.search(n) and not HELPER.search(n)]
    assert gemm_like, "the exports hold GEMM/convolution kernels"
    missing = [n[:120] for n in gemm_like if n not in got]
    assert not missing, missing
    assert all(fmt in FORMATS and path in PATHS for _, _, fmt, path in got.values())
    # a library's kernel says its format; only Triton and hand-written kernels may not
    unknown = [n[:120] for n, (family, _, fmt, _) in got.items() if fmt == "unknown" and family not in ("Triton", "other")]
    assert not unknown, unknown
