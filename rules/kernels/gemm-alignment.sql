-- One row per (device, process) whose steady state runs matrix math in narrow-alignment kernels:
-- GEMM and convolution kernels whose names say they load operands fewer than 16 bytes at a time
-- (CUTLASS and cuBLAS spell it `align1`, `align2`, `aligna2_alignc2`: the alignment in elements,
-- times the element size of the kernel's format), the variants libraries fall back to when a
-- leading dimension or a pointer is not a multiple of 16 bytes (fp16 sizes not multiples of 8).
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
math AS (
  SELECT f.name, f.format,
         list_min(list_transform(regexp_extract_all(f.name, 'align[a-z]?(\d+)', 1), x -> x::INTEGER)) AS align,
         CASE f.format WHEN 'fp64' THEN 8 WHEN 'fp32' THEN 4 WHEN 'tf32' THEN 4 WHEN 'fp16' THEN 2 WHEN 'bf16' THEN 2
                       WHEN 'fp8' THEN 1 WHEN 'int8' THEN 1 END AS bytes
  FROM kernel_formats f WHERE f.op IN ('gemm', 'conv')),
-- one pass over the steady state's math kernels: all of them, and those loading under 16 bytes
per AS (
  SELECT k.device_id, k.pid, any_value(ss.window_ns) AS window_ns, sum(k.duration_ns)::BIGINT AS math_ns,
         coalesce(sum(k.duration_ns) FILTER (WHERE m.narrow), 0)::BIGINT AS narrow_ns,
         count(*) FILTER (WHERE m.narrow) AS narrow_kernels,
         arg_max(m.format, k.duration_ns) FILTER (WHERE m.narrow) AS format,
         arg_max(m.bytes, k.duration_ns) FILTER (WHERE m.narrow) AS bytes,
         min(m.align * m.bytes) FILTER (WHERE m.narrow) AS align_bytes,
         arg_max(m.name, k.duration_ns) FILTER (WHERE m.narrow) AS top_kernel
  FROM kernels k JOIN ss USING (pid)
  JOIN (SELECT *, align * bytes < 16 AS narrow FROM math) m USING (name)
  WHERE k.start_ns >= ss.start_ns AND k.start_ns < ss.end_ns
  GROUP BY k.device_id, k.pid),
-- the architecture a kernel's name says it was built for (cutlass_80_..., sm80_...), against the
-- device's: a kernel built for an older GPU is a fallback, whatever the sizes
arch AS (
  SELECT p.*, nullif(regexp_extract(p.top_kernel, '(?:cutlass_|sm)(\d\d)_', 1), '')::INTEGER AS kernel_arch,
         d.compute_major * 10 + d.compute_minor AS device_arch
  FROM per p LEFT JOIN devices d USING (device_id))
SELECT device_id, pid, format, align_bytes, narrow_kernels, narrow_ns, math_ns, window_ns,
       -- (kernels side by side on several streams sum past the window: then the share is of their sum)
       round(100.0 * narrow_ns / greatest(window_ns, math_ns), 2) AS narrow_window_pct,
       round(100.0 * narrow_ns / nullif(math_ns, 0), 2) AS narrow_math_pct,
       top_kernel, 16 // bytes AS multiple, kernel_arch, device_arch,
       coalesce(kernel_arch < device_arch, false) AS older_arch
FROM arch
WHERE narrow_kernels > 0
ORDER BY narrow_ns DESC, device_id, pid
