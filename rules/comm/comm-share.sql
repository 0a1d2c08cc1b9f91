-- Per (device, process) with GPU work, in traces that have NCCL kernels at all: how much of
-- the busy time is communication (NCCL kernels, union per device), and which collective leads.
-- Traces without any NCCL kernel return no rows (single-GPU programs: nothing to say).
WITH win AS (SELECT span_ns FROM trace_window),
busy AS (SELECT device_id, pid, sum(duration_ns) AS busy_ns FROM gpu_busy GROUP BY ALL),
by_coll AS (SELECT device_id, pid, collective, sum(duration_ns) AS coll_ns FROM comm_kernels GROUP BY ALL),
top AS (
  SELECT device_id, pid, first(collective ORDER BY coll_ns DESC, collective) FILTER (WHERE collective IS NOT NULL) AS top_collective,
         max(coll_ns) AS top_ns, sum(coll_ns) AS all_ns
  FROM by_coll GROUP BY ALL),
api AS (SELECT pid, count(*) AS nccl_api_calls FROM comm_nvtx WHERE collective IS NOT NULL GROUP BY pid)
SELECT b.device_id, b.pid, coalesce(e.comm_kernels, 0) AS comm_kernels, coalesce(e.comm_ns, 0) AS comm_ns,
       b.busy_ns, win.span_ns,
       round(100.0 * coalesce(e.comm_ns, 0) / nullif(b.busy_ns, 0), 2) AS comm_busy_pct,
       round(100.0 * coalesce(e.comm_ns, 0) / nullif(win.span_ns, 0), 2) AS comm_window_pct,
       coalesce(e.exposed_ns, 0) AS exposed_ns,
       t.top_collective, round(100.0 * t.top_ns / nullif(t.all_ns, 0), 2) AS top_collective_pct,
       coalesce(a.nccl_api_calls, 0) AS nccl_api_calls
FROM busy b CROSS JOIN win
LEFT JOIN comm_exposure e USING (device_id, pid)
LEFT JOIN top t USING (device_id, pid)
LEFT JOIN api a ON a.pid = b.pid
WHERE EXISTS (SELECT 1 FROM comm_kernels)
ORDER BY comm_ns DESC, b.device_id, b.pid
