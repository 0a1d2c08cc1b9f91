-- One row per (process, device, numeric format, unit) of matrix math (GEMM, convolution,
-- attention; kernel_formats) in the steady state: its GPU time beside the device's dense peak
-- for that format and for the fastest format a training loop can use there (bf16 or fp16 on
-- tensor cores). The process's largest first.
WITH
-- Dense peak throughput per GPU model and format, TFLOP/s (TOP/s for int8), without sparsity:
-- NVIDIA's datasheets give tensor-core figures "with sparsity" (marked *), halved here. A
-- figure a datasheet does not give is left out (the rule then says the peak is unknown), except
-- fp64 on CUDA cores where the CUDA C++ Programming Guide's throughput table fixes it as a
-- ratio of fp32 (compute capability 7.5: 1/32, 8.9: 1/64).
peaks(model, format, path, tflops, source) AS (VALUES
  -- H100 SXM5 datasheet: FP64 34, FP64 TC 67, FP32 67, TF32 989*, BF16/FP16 1,979*, FP8/INT8 3,958*
  ('H100 SXM', 'fp64', 'CUDA core', 34.0, 'NVIDIA H100 datasheet (SXM)'),
  ('H100 SXM', 'fp64', 'tensor core', 67.0, 'NVIDIA H100 datasheet (SXM)'),
  ('H100 SXM', 'fp32', 'CUDA core', 67.0, 'NVIDIA H100 datasheet (SXM)'),
  ('H100 SXM', 'tf32', 'tensor core', 494.5, 'NVIDIA H100 datasheet (SXM), 989 with sparsity'),
  ('H100 SXM', 'bf16', 'tensor core', 989.5, 'NVIDIA H100 datasheet (SXM), 1,979 with sparsity'),
  ('H100 SXM', 'fp16', 'tensor core', 989.5, 'NVIDIA H100 datasheet (SXM), 1,979 with sparsity'),
  ('H100 SXM', 'fp8', 'tensor core', 1979.0, 'NVIDIA H100 datasheet (SXM), 3,958 with sparsity'),
  ('H100 SXM', 'int8', 'tensor core', 1979.0, 'NVIDIA H100 datasheet (SXM), 3,958 TOPS with sparsity'),
  -- H100 PCIe: FP64 26, FP64 TC 51, FP32 51, TF32 756*, BF16/FP16 1,513*, FP8/INT8 3,026*
  ('H100 PCIe', 'fp64', 'CUDA core', 26.0, 'NVIDIA H100 datasheet (PCIe)'),
  ('H100 PCIe', 'fp64', 'tensor core', 51.0, 'NVIDIA H100 datasheet (PCIe)'),
  ('H100 PCIe', 'fp32', 'CUDA core', 51.0, 'NVIDIA H100 datasheet (PCIe)'),
  ('H100 PCIe', 'tf32', 'tensor core', 378.0, 'NVIDIA H100 datasheet (PCIe), 756 with sparsity'),
  ('H100 PCIe', 'bf16', 'tensor core', 756.5, 'NVIDIA H100 datasheet (PCIe), 1,513 with sparsity'),
  ('H100 PCIe', 'fp16', 'tensor core', 756.5, 'NVIDIA H100 datasheet (PCIe), 1,513 with sparsity'),
  ('H100 PCIe', 'fp8', 'tensor core', 1513.0, 'NVIDIA H100 datasheet (PCIe), 3,026 with sparsity'),
  ('H100 PCIe', 'int8', 'tensor core', 1513.0, 'NVIDIA H100 datasheet (PCIe), 3,026 TOPS with sparsity'),
  -- H200 SXM datasheet: the H100 SXM's compute (FP64 34, FP64 TC 67, FP32 67, TF32 989*, BF16/FP16 1,979*, FP8/INT8 3,958*)
  ('H200 SXM', 'fp64', 'CUDA core', 34.0, 'NVIDIA H200 datasheet (SXM)'),
  ('H200 SXM', 'fp64', 'tensor core', 67.0, 'NVIDIA H200 datasheet (SXM)'),
  ('H200 SXM', 'fp32', 'CUDA core', 67.0, 'NVIDIA H200 datasheet (SXM)'),
  ('H200 SXM', 'tf32', 'tensor core', 494.5, 'NVIDIA H200 datasheet (SXM), 989 with sparsity'),
  ('H200 SXM', 'bf16', 'tensor core', 989.5, 'NVIDIA H200 datasheet (SXM), 1,979 with sparsity'),
  ('H200 SXM', 'fp16', 'tensor core', 989.5, 'NVIDIA H200 datasheet (SXM), 1,979 with sparsity'),
  ('H200 SXM', 'fp8', 'tensor core', 1979.0, 'NVIDIA H200 datasheet (SXM), 3,958 with sparsity'),
  ('H200 SXM', 'int8', 'tensor core', 1979.0, 'NVIDIA H200 datasheet (SXM), 3,958 TOPS with sparsity'),
  -- H200 NVL (and H100 NVL): FP64 30, FP64 TC 60, FP32 60, TF32 835*, BF16/FP16 1,671*, FP8/INT8 3,341*
  ('H200 NVL', 'fp64', 'CUDA core', 30.0, 'NVIDIA H200 datasheet (NVL)'),
  ('H200 NVL', 'fp64', 'tensor core', 60.0, 'NVIDIA H200 datasheet (NVL)'),
  ('H200 NVL', 'fp32', 'CUDA core', 60.0, 'NVIDIA H200 datasheet (NVL)'),
  ('H200 NVL', 'tf32', 'tensor core', 417.5, 'NVIDIA H200 datasheet (NVL), 835 with sparsity'),
  ('H200 NVL', 'bf16', 'tensor core', 835.5, 'NVIDIA H200 datasheet (NVL), 1,671 with sparsity'),
  ('H200 NVL', 'fp16', 'tensor core', 835.5, 'NVIDIA H200 datasheet (NVL), 1,671 with sparsity'),
  ('H200 NVL', 'fp8', 'tensor core', 1670.5, 'NVIDIA H200 datasheet (NVL), 3,341 with sparsity'),
  ('H200 NVL', 'int8', 'tensor core', 1670.5, 'NVIDIA H200 datasheet (NVL), 3,341 TOPS with sparsity'),
  -- A100 (SXM4 and PCIe alike): FP64 9.7, FP64 TC 19.5, FP32 19.5, TF32 156, BF16/FP16 312, INT8 624; no FP8
  ('A100', 'fp64', 'CUDA core', 9.7, 'NVIDIA A100 datasheet'),
  ('A100', 'fp64', 'tensor core', 19.5, 'NVIDIA A100 datasheet'),
  ('A100', 'fp32', 'CUDA core', 19.5, 'NVIDIA A100 datasheet'),
  ('A100', 'tf32', 'tensor core', 156.0, 'NVIDIA A100 datasheet, 312 with sparsity'),
  ('A100', 'bf16', 'tensor core', 312.0, 'NVIDIA A100 datasheet, 624 with sparsity'),
  ('A100', 'fp16', 'tensor core', 312.0, 'NVIDIA A100 datasheet, 624 with sparsity'),
  ('A100', 'int8', 'tensor core', 624.0, 'NVIDIA A100 datasheet, 1,248 TOPS with sparsity'),
  -- L40S: FP32 91.6, TF32 366*, BF16/FP16 733*, FP8/INT8 1,466*; FP64 1/64 of FP32 (compute capability 8.9)
  ('L40S', 'fp64', 'CUDA core', 1.43, 'FP32 / 64 (CUDA C++ Programming Guide, compute capability 8.9)'),
  ('L40S', 'fp32', 'CUDA core', 91.6, 'NVIDIA L40S datasheet'),
  ('L40S', 'tf32', 'tensor core', 183.0, 'NVIDIA L40S datasheet, 366 with sparsity'),
  ('L40S', 'bf16', 'tensor core', 366.5, 'NVIDIA L40S datasheet, 733 with sparsity'),
  ('L40S', 'fp16', 'tensor core', 366.5, 'NVIDIA L40S datasheet, 733 with sparsity'),
  ('L40S', 'fp8', 'tensor core', 733.0, 'NVIDIA L40S datasheet, 1,466 with sparsity'),
  ('L40S', 'int8', 'tensor core', 733.0, 'NVIDIA L40S datasheet, 1,466 TOPS with sparsity'),
  -- L4: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8/INT8 485*; FP64 1/64 of FP32 (compute capability 8.9)
  ('L4', 'fp64', 'CUDA core', 0.47, 'FP32 / 64 (CUDA C++ Programming Guide, compute capability 8.9)'),
  ('L4', 'fp32', 'CUDA core', 30.3, 'NVIDIA L4 datasheet'),
  ('L4', 'tf32', 'tensor core', 60.0, 'NVIDIA L4 datasheet, 120 with sparsity'),
  ('L4', 'bf16', 'tensor core', 121.0, 'NVIDIA L4 datasheet, 242 with sparsity'),
  ('L4', 'fp16', 'tensor core', 121.0, 'NVIDIA L4 datasheet, 242 with sparsity'),
  ('L4', 'fp8', 'tensor core', 242.5, 'NVIDIA L4 datasheet, 485 with sparsity'),
  ('L4', 'int8', 'tensor core', 242.5, 'NVIDIA L4 datasheet, 485 TOPS with sparsity'),
  -- B200, per GPU from the HGX B200 datasheet's 8-GPU figures: FP64/FP64 TC 296, TF32 18 P*,
  -- BF16/FP16 36 P*, FP8/INT8 72 P*; it gives no FP32 figure (left out: unknown)
  ('B200', 'fp64', 'CUDA core', 37.0, 'NVIDIA HGX B200 datasheet, 296 for 8 GPUs'),
  ('B200', 'fp64', 'tensor core', 37.0, 'NVIDIA HGX B200 datasheet, 296 for 8 GPUs'),
  ('B200', 'tf32', 'tensor core', 1125.0, 'NVIDIA HGX B200 datasheet, 18,000 for 8 GPUs with sparsity'),
  ('B200', 'bf16', 'tensor core', 2250.0, 'NVIDIA HGX B200 datasheet, 36,000 for 8 GPUs with sparsity'),
  ('B200', 'fp16', 'tensor core', 2250.0, 'NVIDIA HGX B200 datasheet, 36,000 for 8 GPUs with sparsity'),
  ('B200', 'fp8', 'tensor core', 4500.0, 'NVIDIA HGX B200 datasheet, 72,000 for 8 GPUs with sparsity'),
  ('B200', 'int8', 'tensor core', 4500.0, 'NVIDIA HGX B200 datasheet, 72,000 TOPS for 8 GPUs with sparsity'),
  -- V100 SXM2: FP64 7.8, FP32 15.7, FP16 tensor 125; PCIe: 7, 14, 112; no bf16 or TF32
  ('V100 SXM2', 'fp64', 'CUDA core', 7.8, 'NVIDIA V100 datasheet (SXM2)'),
  ('V100 SXM2', 'fp32', 'CUDA core', 15.7, 'NVIDIA V100 datasheet (SXM2)'),
  ('V100 SXM2', 'fp16', 'tensor core', 125.0, 'NVIDIA V100 datasheet (SXM2)'),
  ('V100 PCIe', 'fp64', 'CUDA core', 7.0, 'NVIDIA V100 datasheet (PCIe)'),
  ('V100 PCIe', 'fp32', 'CUDA core', 14.0, 'NVIDIA V100 datasheet (PCIe)'),
  ('V100 PCIe', 'fp16', 'tensor core', 112.0, 'NVIDIA V100 datasheet (PCIe)'),
  -- T4: FP32 8.1, FP16 tensor 65, INT8 130; FP64 1/32 of FP32 (compute capability 7.5)
  ('T4', 'fp64', 'CUDA core', 0.25, 'FP32 / 32 (CUDA C++ Programming Guide, compute capability 7.5)'),
  ('T4', 'fp32', 'CUDA core', 8.1, 'NVIDIA T4 datasheet'),
  ('T4', 'fp16', 'tensor core', 65.0, 'NVIDIA T4 datasheet'),
  ('T4', 'int8', 'tensor core', 130.0, 'NVIDIA T4 datasheet')),
-- GPU product names (devices.name) to the models above, first match wins; others are unknown
models(priority, model, pattern) AS (VALUES
  (1, 'H200 NVL', 'h200 nvl'), (2, 'H200 SXM', 'h200'), (3, 'H100 NVL', 'h100 nvl'),
  (4, 'H100 PCIe', 'h100 pcie'), (5, 'H100 SXM', 'h100'), (6, 'A100', 'a100'), (7, 'L40S', 'l40s'),
  (8, 'L4', '\bl4\b'), (9, 'B200', '\bb200\b'), (10, 'V100 SXM2', 'v100.*sxm'), (11, 'V100 PCIe', 'v100'),
  (12, 'T4', '\bt4\b')),
-- H100 NVL is specified as the H200 NVL's compute
peak_rows AS (
  SELECT * FROM peaks UNION ALL
  SELECT 'H100 NVL', format, path, tflops, replace(source, 'H200', 'H100') FROM peaks WHERE model = 'H200 NVL'),
gpu AS (
  SELECT d.device_id, coalesce(d.name, 'GPU ' || d.device_id) AS gpu_name,
         (SELECT first(m.model ORDER BY m.priority) FROM models m
          WHERE regexp_matches(coalesce(d.name, ''), m.pattern, 'i')) AS model
  FROM devices d),
-- the fastest format a training loop can move its math to: bf16 or fp16 on tensor cores
fast AS (
  SELECT model, max(tflops) FILTER (WHERE format IN ('bf16', 'fp16') AND path = 'tensor core') AS fast_peak,
         -- bf16 where the GPU has it at the top rate (no GradScaler needed); else fp16
         CASE WHEN max(tflops) FILTER (WHERE format = 'bf16') >= max(tflops) FILTER (WHERE format = 'fp16')
              THEN 'bf16' ELSE 'fp16' END AS fast_format,
         max(tflops) FILTER (WHERE format = 'bf16') = max(tflops) FILTER (WHERE format = 'fp16') AS half_alike,
         max(tflops) FILTER (WHERE format = 'tf32') AS tf32_peak
  FROM peak_rows GROUP BY model),
math AS (
  SELECT k.pid, k.device_id, f.format, f.path, k.name, any_value(k.short_name) AS short_name,
         count(*) AS instances, sum(k.duration_ns) AS ns,
         bool_or(f.op IN ('gemm', 'conv')) AS gemm_or_conv
  FROM kernels k JOIN kernel_formats f USING (name) JOIN steady_state s ON s.pid = k.pid
  WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns AND f.op <> 'gemv'
  GROUP BY ALL),
per_format AS (
  SELECT pid, device_id, format, path, count(*) AS kernels, sum(instances) AS instances, sum(ns) AS format_ns,
         sum(ns) FILTER (WHERE gemm_or_conv) AS gemm_ns,
         first(CASE WHEN coalesce(short_name, '') IN ('', 'Kernel', 'Kernel2', 'device_kernel')
                    THEN regexp_replace(name, '^void ', '') ELSE short_name END ORDER BY ns DESC, name) AS top_label
  FROM math GROUP BY ALL),
-- the format's peak on this GPU: fp16/bf16 data on CUDA cores is computed in fp32 FMA there
-- (cuDNN's engine_float); where the name does not say the unit, the format's best unit, so
-- that the estimated saving errs low
with_peak AS (
  SELECT p.*, g.gpu_name, g.model,
         (SELECT max(r.tflops) FROM peak_rows r
          WHERE r.model = g.model
            AND r.format = CASE WHEN p.path = 'CUDA core' AND p.format IN ('fp16', 'bf16') THEN 'fp32' ELSE p.format END
            AND (p.path = 'unknown' OR r.path = p.path
                 OR (p.path = 'CUDA core' AND p.format IN ('fp16', 'bf16')))) AS peak_tflops,
         f.fast_format, f.fast_peak, f.half_alike, f.tf32_peak
  FROM per_format p JOIN gpu g USING (device_id) LEFT JOIN fast f ON f.model = g.model)
SELECT w.pid, w.device_id, w.gpu_name, w.model AS gpu_model, w.format, w.path, w.kernels, w.instances,
       w.format_ns, coalesce(w.gemm_ns, 0) AS gemm_ns,
       sum(w.format_ns) OVER (PARTITION BY w.pid, w.device_id) AS math_ns,
       round(100.0 * w.format_ns / sum(w.format_ns) OVER (PARTITION BY w.pid, w.device_id), 2) AS format_share_pct,
       b.busy_ns, round(100.0 * coalesce(w.gemm_ns, 0) / nullif(b.kernel_share_ns, 0), 2) AS busy_share_pct,
       w.peak_tflops, w.fast_format, w.fast_peak AS fast_peak_tflops,
       round(w.fast_peak / nullif(w.peak_tflops, 0), 1) AS peak_gain, w.tf32_peak AS tf32_peak_tflops,
       coalesce(w.half_alike, false) AS half_alike,
       -- what moving it to the fast format could win: its GEMM/conv time x (1 - peak / fast
       -- peak), the speedup capped at max_speedup (small or memory-bound GEMMs gain less); where
       -- kernels run side by side their summed time is above the busy time, and the saving in
       -- step time is that much smaller (busy over the sum)
       CASE WHEN w.peak_tflops > 0 AND w.fast_peak > w.peak_tflops
            THEN round(coalesce(w.gemm_ns, 0) * (1 - 1 / least(w.fast_peak / w.peak_tflops, $max_speedup))
                       * least(1.0, coalesce(b.busy_ns / nullif(b.kernel_sum_ns, 0), 1.0)))::BIGINT
            WHEN w.peak_tflops > 0 AND w.fast_peak IS NOT NULL THEN 0 END AS est_saving_ns,
       -- a format far below the fast one (by the peaks; on an unknown GPU, fp64, or half data
       -- computed on CUDA cores)
       CASE WHEN w.peak_tflops > 0 AND w.fast_peak IS NOT NULL THEN w.fast_peak / w.peak_tflops >= $min_gain
            ELSE w.format = 'fp64' OR (w.path = 'CUDA core' AND w.format IN ('fp16', 'bf16')) END AS slow,
       -- the budget slice its time is in (kernel_classes)
       CASE WHEN w.format = 'fp64' THEN 'fp64 math' WHEN w.path = 'tensor core' THEN 'tensor-core math'
            WHEN w.path = 'CUDA core' THEN 'fp32 math' END AS claim_cause,
       CASE WHEN length(w.top_label) > 120 THEN left(w.top_label, 117) || '...' ELSE w.top_label END AS top_kernel,
       row_number() OVER (PARTITION BY w.pid, w.device_id ORDER BY w.format_ns DESC, w.format, w.path) AS rank,
       CASE w.path WHEN 'tensor core' THEN ' on tensor cores' WHEN 'CUDA core' THEN ' on CUDA cores' ELSE '' END AS unit_text,
       CASE WHEN w.peak_tflops IS NULL THEN 'peak unknown for ' || w.gpu_name
            ELSE printf('%.4g TFLOP/s on %s', w.peak_tflops, w.model) END AS peak_text,
       CASE WHEN w.fast_peak IS NULL THEN 'peak unknown for ' || w.gpu_name
            ELSE printf('%.4g TFLOP/s for %s on tensor cores', w.fast_peak, w.fast_format) END AS fast_text
FROM with_peak w LEFT JOIN steady_busy b USING (pid, device_id)
ORDER BY math_ns DESC, w.pid, w.device_id, rank
