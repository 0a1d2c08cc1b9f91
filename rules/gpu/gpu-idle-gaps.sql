-- One row per idle gap between busy intervals of a (device, process), largest first.
-- Busy = the union of kernels, memcpys, memsets and graph replays (gpu_busy).
WITH win AS (SELECT span_ns FROM trace_window),
busy AS (SELECT device_id, pid, sum(duration_ns) AS busy_ns FROM gpu_busy GROUP BY ALL),
gaps AS (
  SELECT device_id, pid,
         lag(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns) AS start_ns,
         start_ns AS end_ns
  FROM gpu_busy)
SELECT g.device_id, g.pid, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS duration_ns,
       round(100.0 * (g.end_ns - g.start_ns) / win.span_ns, 2) AS gap_share_pct,
       b.busy_ns, win.span_ns - b.busy_ns AS idle_ns, win.span_ns,
       round(100.0 * b.busy_ns / win.span_ns, 2) AS utilization_pct,
       round(100.0 * (win.span_ns - b.busy_ns) / win.span_ns, 2) AS idle_pct,
       row_number() OVER (PARTITION BY g.device_id, g.pid ORDER BY g.end_ns - g.start_ns DESC, g.start_ns) AS gap_rank
FROM gaps g JOIN busy b USING (device_id, pid) CROSS JOIN win
WHERE g.start_ns IS NOT NULL AND g.end_ns - g.start_ns > $min_gap_ns
ORDER BY duration_ns DESC, g.start_ns
