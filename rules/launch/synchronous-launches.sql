-- One row per (device, process) whose kernels ran long enough to tell (launch_waits): how many of
-- their launch calls returned only after the kernel had finished, and the GPU idle time the step
-- budget gives to launching, which synchronous launches make.
WITH ss AS (SELECT pid, end_ns - start_ns AS window_ns FROM steady_state),
launch_idle AS (
  SELECT device_id, pid, sum(ns) AS launch_idle_ns, first(place ORDER BY ns DESC, place) FILTER (WHERE place IS NOT NULL) AS top_place
  FROM budget WHERE kind = 'idle' AND cause = 'launch' GROUP BY ALL),
-- (the launches' median and API for the message, read only where launches are synchronous: a
-- median over every kernel of a 1e7-kernel export costs a second)
launches AS (
  SELECT k.device_id, k.pid, count(*) AS launches, median(k.launch_end_ns - k.launch_start_ns) AS median_launch_ns,
         mode(k.launch_api)::VARCHAR AS launch_api
  FROM kernels k JOIN steady_state s ON s.pid = k.pid
  JOIN (SELECT device_id, pid FROM launch_waits WHERE synchronous) w ON w.device_id = k.device_id AND w.pid = k.pid
  WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns AND k.graph_id IS NULL AND k.launch_end_ns IS NOT NULL
  GROUP BY ALL)
SELECT w.device_id, w.pid, (SELECT value FROM settings WHERE name = 'sync_launch_min_kernel_ns')::BIGINT AS min_kernel_ns,
       w.kernels, w.waited, w.waited_pct, w.waited_ns, w.synchronous,
       l.launches, l.median_launch_ns, l.launch_api, ss.window_ns,
       coalesce(li.launch_idle_ns, 0) AS launch_idle_ns,
       round(100.0 * coalesce(li.launch_idle_ns, 0) / nullif(ss.window_ns, 0), 2) AS launch_idle_pct,
       li.top_place,
       coalesce(' in NVTX range "' || li.top_place || '"', '') AS where_text
FROM launch_waits w JOIN ss USING (pid) LEFT JOIN launches l USING (device_id, pid)
LEFT JOIN launch_idle li USING (device_id, pid)
ORDER BY w.waited_ns DESC, w.device_id, w.pid
