-- One row per (device, process) on a device that several processes use at overlapping times:
-- the process's label (its NVTX rank range, where it has one), and the share of its steady state
-- that the budget gives to the other processes' GPU work (time-slicing).
WITH spans AS (
  SELECT device_id, pid, min(start_ns) AS first_ns, max(end_ns) AS last_ns, sum(duration_ns) AS gpu_ns
  FROM gpu_activity WHERE device_id IS NOT NULL AND pid IS NOT NULL GROUP BY ALL),
shared AS (
  SELECT a.device_id, a.pid, count(DISTINCT b.pid) + 1 AS processes, string_agg(DISTINCT b.pid::VARCHAR, ', ') AS other_pids
  FROM spans a JOIN spans b ON b.device_id = a.device_id AND b.pid <> a.pid
    AND b.first_ns < a.last_ns AND a.first_ns < b.last_ns
  GROUP BY ALL),
labels AS (
  SELECT pid, first(name ORDER BY n DESC, name) AS label FROM (
    SELECT pid, name, count(*) AS n FROM nvtx_tree WHERE coalesce(depth, 0) = 0 AND name ILIKE '%rank%' GROUP BY ALL)
  GROUP BY pid),
waits AS (
  SELECT device_id, pid, sum(ns) AS other_ns, any_value(window_ns) AS window_ns
  FROM budget WHERE kind = 'idle' AND cause = 'other processes' GROUP BY ALL)
SELECT s.device_id, s.pid, coalesce(l.label, p.name, 'pid ' || s.pid) AS label, s.processes, s.other_pids,
       coalesce(w.other_ns, 0) AS other_ns, w.window_ns,
       round(100.0 * coalesce(w.other_ns, 0) / nullif(w.window_ns, 0), 2) AS other_window_pct,
       row_number() OVER (PARTITION BY s.device_id ORDER BY coalesce(w.other_ns, 0) DESC, s.pid) AS rank
FROM shared s LEFT JOIN labels l USING (pid) LEFT JOIN processes p USING (pid) LEFT JOIN waits w USING (device_id, pid)
ORDER BY s.device_id, rank
