-- One row per (process, device, copy direction) of steady-state copies that touch pageable
-- host memory, most GPU time first.
WITH copies AS (
  SELECT m.pid, m.device_id, m.kind, m.bytes, m.duration_ns, m.launch_api,
         m.launch_end_ns - m.launch_start_ns AS api_ns
  FROM memcpys m JOIN steady_state s ON s.pid = m.pid
  WHERE m.host_memory = 'pageable' AND m.start_ns >= s.start_ns AND m.start_ns < s.end_ns),
-- the rate pinned copies of the same direction reach in this trace, where there are large ones
pinned AS (
  SELECT device_id, kind, sum(bytes) * 1e9 / nullif(sum(duration_ns), 0) AS rate
  FROM memcpys WHERE host_memory = 'pinned' AND bytes >= $large_copy_bytes GROUP BY ALL),
grouped AS (
  SELECT pid, device_id, kind, count(*) AS count, sum(bytes) AS bytes, sum(duration_ns) AS total_ns,
         max(bytes) AS max_bytes, median(bytes) AS median_bytes,
         count(*) FILTER (WHERE bytes >= $large_copy_bytes) AS large_count,
         coalesce(sum(api_ns), 0) AS api_ns, mode(launch_api) AS launch_api
  FROM copies GROUP BY ALL),
-- the innermost NVTX range that launches most of this direction's steady-state copy time
top_range AS (
  SELECT pid, device_id, name AS kind, first(range_name ORDER BY gpu_ns DESC, range_name) FILTER (WHERE range_name IS NOT NULL) AS top_range
  FROM (SELECT pid, device_id, name, range_name, sum(gpu_ns) AS gpu_ns FROM nvtx_op_time WHERE kind = 'memcpy' GROUP BY ALL)
  GROUP BY ALL)
SELECT g.pid, g.device_id, g.kind, g.count, g.bytes, g.total_ns,
       -- bytes per ns is GB/s; times 1e9 gives bytes/s
       round(g.bytes * 1e9 / nullif(g.total_ns, 0), 0) AS bytes_per_s,
       g.max_bytes, g.median_bytes, g.large_count, g.launch_api, g.api_ns, b.busy_ns,
       round(100.0 * g.total_ns / nullif(b.copy_share_ns, 0), 2) AS busy_share_pct,
       round(coalesce(p.rate, $pinned_bytes_per_s), 0) AS pinned_bytes_per_s,
       CASE WHEN p.rate IS NULL THEN 'assumed' ELSE 'measured' END AS pinned_rate_source,
       round(g.bytes * 1e9 / coalesce(p.rate, $pinned_bytes_per_s))::BIGINT AS pinned_est_ns,
       greatest(0, g.total_ns - round(g.bytes * 1e9 / coalesce(p.rate, $pinned_bytes_per_s)))::BIGINT AS est_saving_ns,
       t.top_range, coalesce(' from NVTX range "' || t.top_range || '"', '') AS where_text,
       coalesce(f.framework, 'other') AS framework
FROM grouped g LEFT JOIN steady_busy b USING (pid, device_id) LEFT JOIN pinned p USING (device_id, kind)
LEFT JOIN top_range t USING (pid, device_id, kind) LEFT JOIN process_frameworks f USING (pid)
ORDER BY g.total_ns DESC, g.pid, g.device_id, g.kind
