-- One row per (device, process) whose steady state runs matrix math in narrow-alignment kernels:
-- GEMM and convolution kernels whose names say they load operands fewer than 16 bytes at a time
-- (CUTLASS and cuBLAS spell it `align1`, `align2`, `aligna2_alignc2`: the alignment in elements,
-- times the element size of the kernel's format), the variants libraries fall back to when a
-- leading dimension or a pointer is not a multiple of 16 bytes (fp16 sizes not multiples of 8).
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
aligned AS (
  SELECT f.name, f.format,
         list_min(list_transform(regexp_extract_all(f.name, 'align[a-z]?(\d+)', 1), x -> x::INTEGER)) AS align,
         CASE f.format WHEN 'fp64' THEN 8 WHEN 'fp32' THEN 4 WHEN 'tf32' THEN 4 WHEN 'fp16' THEN 2 WHEN 'bf16' THEN 2
                       WHEN 'fp8' THEN 1 WHEN 'int8' THEN 1 END AS bytes
  FROM kernel_formats f WHERE f.op IN ('gemm', 'conv')),
narrow AS (SELECT name, format, align, align * bytes AS align_bytes FROM aligned WHERE align * bytes < 16),
per AS (
  SELECT k.device_id, k.pid, any_value(ss.window_ns) AS window_ns,
         sum(k.duration_ns)::BIGINT AS narrow_ns, count(*) AS narrow_kernels,
         arg_max(n.format, k.duration_ns) AS format, min(n.align_bytes) AS align_bytes,
         arg_max(n.name, k.duration_ns) AS top_kernel
  FROM kernels k JOIN ss USING (pid) JOIN narrow n USING (name)
  WHERE k.start_ns >= ss.start_ns AND k.start_ns < ss.end_ns
  GROUP BY k.device_id, k.pid),
math AS (
  SELECT k.device_id, k.pid, sum(k.duration_ns)::BIGINT AS math_ns
  FROM kernels k JOIN ss USING (pid) JOIN kernel_formats f USING (name)
  WHERE f.op IN ('gemm', 'conv') AND k.start_ns >= ss.start_ns AND k.start_ns < ss.end_ns
  GROUP BY ALL)
SELECT p.device_id, p.pid, p.format, p.align_bytes, p.narrow_kernels, p.narrow_ns, m.math_ns, p.window_ns,
       round(100.0 * p.narrow_ns / p.window_ns, 2) AS narrow_window_pct,
       round(100.0 * p.narrow_ns / nullif(m.math_ns, 0), 2) AS narrow_math_pct,
       p.top_kernel, 16 // CASE p.format WHEN 'fp64' THEN 8 WHEN 'fp32' THEN 4 WHEN 'tf32' THEN 4
                                       WHEN 'fp16' THEN 2 WHEN 'bf16' THEN 2 ELSE 1 END AS multiple
FROM per p JOIN math m USING (device_id, pid)
ORDER BY p.narrow_ns DESC, p.device_id, p.pid
