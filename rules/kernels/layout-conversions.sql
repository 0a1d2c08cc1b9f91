-- One row per (device, process) with convolutions in its steady state: the GPU time cuDNN spends
-- converting activations and gradients between NCHW and NHWC around them (nchwToNhwc and
-- nhwcToNchw kernels), against the convolutions themselves and the steady state. Tensor-core
-- convolutions run NHWC; a channels-first model pays a conversion on each side of most of them.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
names AS (
  SELECT name, regexp_matches(name, 'nchwtonhwc|nhwctonchw', 'i') AS conversion,
         regexp_matches(name, 'fprop|dgrad|wgrad|convolve|implicit_?gemm|winograd', 'i') AS conv,
         regexp_matches(name, 'nchw', 'i') AND regexp_matches(name, '\bbn_|batch_?norm', 'i') AS nchw_norm
  FROM kernel_names),
per AS (
  SELECT k.device_id, k.pid, any_value(ss.window_ns) AS window_ns,
         coalesce(sum(k.duration_ns) FILTER (WHERE n.conversion), 0)::BIGINT AS conversion_ns,
         count(*) FILTER (WHERE n.conversion) AS conversions,
         coalesce(sum(k.duration_ns) FILTER (WHERE n.conv AND NOT n.conversion), 0)::BIGINT AS conv_ns,
         count(*) FILTER (WHERE n.conv AND NOT n.conversion) AS convs,
         coalesce(sum(k.duration_ns) FILTER (WHERE n.nchw_norm), 0)::BIGINT AS nchw_norm_ns,
         sum(k.duration_ns)::BIGINT AS kernel_ns
  FROM kernels k JOIN ss USING (pid) JOIN names n USING (name)
  WHERE k.start_ns >= ss.start_ns AND k.start_ns < ss.end_ns
  GROUP BY k.device_id, k.pid)
SELECT device_id, pid, conversions, conversion_ns, convs, conv_ns, nchw_norm_ns, kernel_ns, window_ns,
       round(100.0 * conversion_ns / window_ns, 2) AS conversion_window_pct,
       round(100.0 * conversion_ns / nullif(kernel_ns, 0), 2) AS conversion_kernel_pct,
       round(conversion_ns / nullif(conv_ns, 0), 2) AS conversion_to_conv
FROM per
WHERE convs > 0
ORDER BY conversion_ns DESC, device_id, pid
