-- One row per (device, process) with traced device-memory allocations: its peak live memory,
-- the device's peak over all its processes, and the headroom left on the device.
WITH ev AS (
  -- device-resident kinds only: pinned and pageable are host memory, managed memory migrates
  SELECT pid, device_id, ts_ns, address, operation, bytes
  FROM memory_events
  WHERE mem_kind IN ('Device', 'Device Static', 'Array') AND operation IN ('alloc', 'free')),
allocs AS (SELECT * FROM ev WHERE operation = 'alloc'),
frees AS (
  -- a free releases what the latest allocation at its address took (when it carries no size)
  SELECT f.pid, f.device_id, f.ts_ns, coalesce(nullif(f.bytes, 0), a.bytes, 0) AS bytes,
         a.ts_ns IS NULL AS unmatched
  FROM (SELECT * FROM ev WHERE operation = 'free') f
  ASOF LEFT JOIN allocs a
    ON a.pid = f.pid AND a.device_id = f.device_id AND a.address = f.address AND f.ts_ns >= a.ts_ns),
deltas AS (
  -- at equal timestamps frees count first, so a peak is never overstated
  SELECT pid, device_id, ts_ns, bytes AS delta, 1 AS ord FROM allocs
  UNION ALL SELECT pid, device_id, ts_ns, -bytes, 0 FROM frees),
proc_live AS (
  SELECT *, sum(delta) OVER (PARTITION BY device_id, pid ORDER BY ts_ns, ord, delta
                             ROWS UNBOUNDED PRECEDING) AS live
  FROM deltas),
dev_live AS (
  SELECT *, sum(delta) OVER (PARTITION BY device_id ORDER BY ts_ns, ord, delta, pid
                             ROWS UNBOUNDED PRECEDING) AS live
  FROM deltas),
-- memory freed but allocated before the capture began lifts the baseline: peak = max - min(0, low)
proc_peak AS (
  SELECT device_id, pid, max(live) - least(0, min(live)) AS peak_bytes, arg_max(ts_ns, (live, -ts_ns)) AS peak_ts_ns,
         count(*) FILTER (WHERE ord = 1) AS allocs, count(*) FILTER (WHERE ord = 0) AS frees
  FROM proc_live GROUP BY ALL),
dev_peak AS (
  SELECT device_id, max(live) - least(0, min(live)) AS device_peak_bytes, arg_max(ts_ns, (live, -ts_ns)) AS device_peak_ts_ns,
         count(DISTINCT pid) AS processes
  FROM dev_live GROUP BY ALL),
unmatched AS (SELECT device_id, pid, count(*) FILTER (WHERE unmatched) AS unmatched_frees FROM frees GROUP BY ALL),
busy AS (
  SELECT b.pid, b.device_id, s.end_ns - s.start_ns AS window_ns, b.busy_ns
  FROM steady_busy b JOIN steady_state s USING (pid)),
joined AS (
  SELECT p.device_id, p.pid, d.name AS gpu_name, d.memory_bytes, p.peak_bytes, p.peak_ts_ns,
         p.allocs, p.frees, coalesce(u.unmatched_frees, 0) AS unmatched_frees,
         dp.device_peak_bytes, dp.device_peak_ts_ns, dp.processes,
         -- the reserve is an estimate: a device whose measured peak fills it has no more to give
         CASE WHEN d.memory_bytes IS NULL THEN dp.device_peak_bytes + dp.processes * $reserve_bytes
              ELSE least(dp.device_peak_bytes + dp.processes * $reserve_bytes, greatest(d.memory_bytes, dp.device_peak_bytes))
              END AS device_used_bytes,
         round(100.0 * b.busy_ns / nullif(b.window_ns, 0), 2) AS utilization_pct,
         row_number() OVER (PARTITION BY p.device_id ORDER BY p.peak_bytes DESC, p.pid) AS process_rank
  FROM proc_peak p JOIN dev_peak dp USING (device_id)
  LEFT JOIN devices d USING (device_id)
  LEFT JOIN unmatched u USING (device_id, pid)
  LEFT JOIN busy b USING (pid, device_id))
SELECT device_id, pid, gpu_name, memory_bytes, peak_bytes, peak_ts_ns, allocs, frees, unmatched_frees,
       device_peak_bytes, device_peak_ts_ns, processes, device_used_bytes,
       round(100.0 * device_used_bytes / nullif(memory_bytes, 0), 2) AS device_used_pct,
       memory_bytes - device_used_bytes AS headroom_bytes,
       -- memory grows at most linearly with the batch (weights do not grow): a floor on the factor
       floor((memory_bytes * $target_fill_pct / 100.0 - (device_used_bytes - peak_bytes))
             / nullif(peak_bytes, 0))::BIGINT AS batch_scale_floor,
       utilization_pct, process_rank
FROM joined
ORDER BY device_id, process_rank
