-- One row per (process, device, kernel) for GEMM/convolution kernels that do fp32 math on CUDA
-- cores, in the steady state, on GPUs with tensor cores; the process's largest first.
WITH gpu AS (
  -- tensor cores: compute capability 7.0+ (Volta), except GeForce GTX 16xx (Turing without
  -- them); old exports without a capability are judged by the name
  SELECT device_id, name AS gpu_name, compute_major, compute_minor,
         CASE WHEN compute_major >= 8 THEN 'bf16, fp16 or TF32' ELSE 'fp16' END AS tensor_formats
  FROM devices
  WHERE NOT regexp_matches(coalesce(name, ''), $no_tensor_core_gpus, 'i')
    AND (compute_major >= 7
         OR (compute_major IS NULL AND regexp_matches(coalesce(name, ''), $tensor_core_gpus, 'i')))),
-- names matched once each (kernel_names), not once per kernel: the GEMM and convolution kernels
-- in fp32 on CUDA cores, and those on tensor cores (a match wins over the fp32 signature)
gemm_names AS (
  SELECT name, NOT regexp_matches(name, $tensor_core_pattern, 'i') AS fp32 FROM kernel_names
  WHERE regexp_matches(name, $gemm_pattern, 'i')
    AND (regexp_matches(name, $fp32_pattern, 'i') OR regexp_matches(name, $tensor_core_pattern, 'i'))),
fp32_names AS (SELECT name FROM gemm_names WHERE fp32),
-- one scan of the steady state's kernels for both formats
gemms AS (
  SELECT k.pid, k.device_id, k.name, n.fp32, any_value(k.short_name) AS short_name, count(*) AS instances,
         sum(k.duration_ns) AS total_ns, median(k.duration_ns) FILTER (WHERE n.fp32) AS median_ns,
         -- what a faster format can shorten: each launch's time beyond a kernel's fixed cost
         sum(greatest(k.duration_ns - $latency_floor_ns, 0)) AS above_floor_ns
  FROM kernels k JOIN gemm_names n USING (name) JOIN steady_state s ON s.pid = k.pid
  WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns
  GROUP BY ALL),
fp32 AS (SELECT * EXCLUDE (fp32) FROM gemms WHERE fp32),
ranked AS (
  SELECT f.*, CASE WHEN coalesce(f.short_name, '') IN ('', 'Kernel', 'Kernel2', 'device_kernel')
                   THEN regexp_replace(f.name, '^void ', '') ELSE f.short_name END AS label,
         sum(f.total_ns) OVER (PARTITION BY f.pid, f.device_id) AS fp32_ns,
         sum(f.above_floor_ns) OVER (PARTITION BY f.pid, f.device_id) AS format_bound_ns,
         count(*) OVER (PARTITION BY f.pid, f.device_id) AS fp32_kernels,
         row_number() OVER (PARTITION BY f.pid, f.device_id ORDER BY f.total_ns DESC, f.name) AS rank
  FROM fp32 f),
-- the process's GEMM and convolution time on tensor cores: where it is a real share, mixed
-- precision is on and the fp32 GEMMs are those it leaves out
tensor_core AS (SELECT pid, device_id, sum(total_ns) AS tc_gemm_ns FROM gemms WHERE NOT fp32 GROUP BY ALL),
-- the innermost NVTX range that launches most of the fp32 GEMM time
top_range AS (
  SELECT pid, device_id, first(range_name ORDER BY ns DESC, range_name) FILTER (WHERE range_name IS NOT NULL) AS top_range, max(ns) AS top_range_ns
  FROM (SELECT o.pid, o.device_id, o.range_name, sum(o.gpu_ns) AS ns
        FROM nvtx_op_time o JOIN fp32_names USING (name) WHERE o.kind = 'kernel' GROUP BY ALL)
  GROUP BY ALL)
SELECT r.pid, r.device_id, g.gpu_name, g.compute_major, g.compute_minor, g.tensor_formats, r.name,
       -- a wrapper's short name (cutlass::Kernel2<...>) says nothing: show the full name then
       CASE WHEN length(r.label) > 120 THEN left(r.label, 117) || '...' ELSE r.label END AS display_name,
       r.instances, r.total_ns, r.median_ns, r.rank, r.fp32_kernels, r.fp32_ns, b.busy_ns,
       round(100.0 * r.total_ns / nullif(b.kernel_share_ns, 0), 2) AS busy_share_pct,
       round(100.0 * r.fp32_ns / nullif(b.kernel_share_ns, 0), 2) AS fp32_share_pct,
       round(r.fp32_ns * least(1.0, b.busy_ns / nullif(b.kernel_sum_ns, 0)))::BIGINT AS fp32_busy_ns,
       r.format_bound_ns::BIGINT AS format_bound_ns,
       round(100.0 * r.format_bound_ns / nullif(b.kernel_share_ns, 0), 2) AS format_bound_share_pct,
       round(r.format_bound_ns * (1 - 1 / $expected_speedup) * least(1.0, b.busy_ns / nullif(b.kernel_sum_ns, 0)))::BIGINT
         AS est_saving_ns,
       round(100.0 * coalesce(tc.tc_gemm_ns, 0) / nullif(coalesce(tc.tc_gemm_ns, 0) + r.fp32_ns, 0), 2) AS tensor_core_gemm_pct,
       t.top_range, round(100.0 * t.top_range_ns / nullif(r.fp32_ns, 0), 2) AS top_range_pct,
       CASE WHEN t.top_range IS NOT NULL
            THEN ' (' || printf('%.0f %%', 100.0 * t.top_range_ns / nullif(r.fp32_ns, 0))
                 || ' launched from NVTX range "' || t.top_range || '")' ELSE '' END AS where_text
FROM ranked r JOIN gpu g USING (device_id) LEFT JOIN steady_busy b USING (pid, device_id)
LEFT JOIN top_range t USING (pid, device_id) LEFT JOIN tensor_core tc USING (pid, device_id)
ORDER BY r.fp32_ns DESC, r.pid, r.device_id, r.rank
