-- Per (device, process) with NCCL kernels: communication time split into the part that
-- overlaps compute (a non-NCCL kernel runs on the same device) and the exposed rest, over the
-- whole trace and over the process's steady state (the verdict: start-up excluded).
WITH win AS (SELECT span_ns FROM trace_window)
SELECT e.device_id, e.pid, e.comm_kernels, e.comm_ns, e.overlapped_ns, e.exposed_ns,
       round(100.0 * e.exposed_ns / nullif(e.comm_ns, 0), 2) AS exposed_share_pct,
       e.steady_comm_ns, e.steady_overlapped_ns, e.steady_exposed_ns,
       round(100.0 * e.steady_exposed_ns / nullif(e.steady_comm_ns, 0), 2) AS steady_exposed_share_pct,
       round(100.0 * e.steady_overlapped_ns / nullif(e.steady_comm_ns, 0), 2) AS steady_overlap_share_pct,
       e.window_ns, round(100.0 * e.steady_exposed_ns / nullif(e.window_ns, 0), 2) AS exposed_window_pct,
       e.compute_ns, win.span_ns
FROM comm_exposure e CROSS JOIN win
ORDER BY e.steady_exposed_ns DESC, e.exposed_ns DESC, e.device_id, e.pid
