-- One row per (process, NVTX range name): wall time, the GPU work launched from inside it
-- (nested ranges included, attributed by the launch call's time on the launching thread), and
-- the GPU busy and idle time during its instances in the steady state.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
-- (not a library's ranges in a domain of its own, XLA's, NCCL's, CUB's: its internals, not the
-- program's phases; library_ranges)
r AS (
  SELECT r.*, (r.start_ns >= ss.start_ns AND r.start_ns < ss.end_ns) AS steady, ss.window_ns, ss.end_ns AS steady_end_ns
  FROM nvtx_range_stats r LEFT JOIN ss USING (pid)
  WHERE NOT EXISTS (SELECT 1 FROM library_ranges l WHERE l.domain IS NOT NULL AND l.domain = r.domain AND r.name LIKE l.pattern)),
-- Instances of one name that overlap (a range open on several threads at once) cover the same
-- time: their steady-state wall time once, as the union of the instances, up to the window's end.
spans AS (
  SELECT pid, name, start_ns, least(end_ns, steady_end_ns) AS end_ns,
         max(least(end_ns, steady_end_ns)) OVER (PARTITION BY pid, name ORDER BY start_ns, end_ns
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM r WHERE steady),
covered AS (
  SELECT pid, name, sum(greatest(end_ns - greatest(start_ns, coalesce(prev_end, start_ns)), 0)) AS covered_ns
  FROM spans GROUP BY ALL),
per_name AS (
  SELECT pid, name, any_value(style) AS style, count(*) AS instances, sum(duration_ns) AS wall_ns,
         avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns, min(duration_ns) AS min_ns,
         max(duration_ns) AS max_ns, min(depth) AS depth, sum(ops) AS gpu_ops, sum(kernels) AS kernels,
         sum(memcpys) AS memcpys, sum(memsets) AS memsets, sum(graphs) AS graph_launches,
         sum(gpu_ns) AS launched_gpu_ns, sum(gpu_proj_ns) AS gpu_proj_ns, sum(busy_during_ns) AS busy_during_ns,
         count(*) FILTER (WHERE steady) AS steady_instances,
         coalesce(sum(duration_ns) FILTER (WHERE steady), 0) AS steady_wall_ns,
         coalesce(sum(duration_ns * greatest(devices, 1) - busy_during_ns) FILTER (WHERE steady AND devices > 0), 0)
           AS summed_idle_ns,
         greatest(max(devices) FILTER (WHERE steady), 1) AS steady_devices,
         any_value(window_ns) AS window_ns
  FROM r GROUP BY pid, name),
-- the GPU idle time during overlapping instances counted once: in proportion to the time they
-- cover over their summed wall time
per_name_idle AS (
  SELECT n.* EXCLUDE (summed_idle_ns), coalesce(c.covered_ns, 0) AS steady_covered_ns,
         round(n.summed_idle_ns * least(1.0, coalesce(c.covered_ns / nullif(n.steady_wall_ns, 0), 1.0)))::BIGINT AS steady_idle_ns
  FROM per_name n LEFT JOIN covered c USING (pid, name)),
-- The budget's idle time charged to the range as the innermost one open on the launching
-- thread (40_budget.sql): time in a nested range is that range's, not its parents'.
place_causes AS (
  SELECT pid, place AS name, cause, sum(ns) AS ns FROM budget
  WHERE kind = 'idle' AND place IS NOT NULL GROUP BY ALL),
windows AS (SELECT pid, sum(window_ns) AS window_ns FROM steady_summary GROUP BY pid),
places AS (
  -- (copies and syncs count as one cause here: a copy that waits and the sync after it are one
  -- round trip to the GPU, as .item() makes)
  SELECT pid, name, sum(ns) AS place_idle_ns,
         greatest(max(ns) FILTER (WHERE cause NOT IN ('sync', 'copy')), sum(ns) FILTER (WHERE cause IN ('sync', 'copy'))) AS top_ns,
         string_agg(cause || ' ' || printf('%.1f %%', 100.0 * ns / total_ns), ', ' ORDER BY ns DESC, cause)
           FILTER (WHERE ns >= 0.05 * total_ns) AS causes,
         sum(ns) FILTER (WHERE cause IN ('host code', 'untraced host code')) AS host_code_ns,
         sum(ns) FILTER (WHERE cause = 'OS wait') AS os_wait_ns,
         sum(ns) FILTER (WHERE cause IN ('sync', 'copy')) AS sync_ns
  FROM (SELECT *, sum(ns) OVER (PARTITION BY pid, name) AS total_ns FROM place_causes) GROUP BY pid, name),
-- the OS, sync and copy calls and the CUDA graph captures the GPU's idle gaps in the range were
-- spent in, costliest first
calls AS (
  SELECT pid, nvtx_range AS name, detail, os_wait_kind(detail) AS wait_kind, cause, sum(duration_ns) AS ns
  FROM idle_gaps
  WHERE in_steady_state AND nvtx_range IS NOT NULL
    AND (cause IN ('os-call', 'sync', 'copy') OR is_graph_capture(cause, detail))
  GROUP BY ALL),
top_calls AS (
  SELECT pid, name, string_agg(detail, ', ' ORDER BY ns DESC, detail) FILTER (WHERE k <= 3) AS top_calls,
         sum(ns) FILTER (WHERE cause = 'os-call' AND wait_kind = 'file I/O') AS file_io_ns,
         sum(ns) FILTER (WHERE cause = 'cuda-api') AS capture_ns
  FROM (SELECT *, row_number() OVER (PARTITION BY pid, name ORDER BY ns DESC, detail) AS k FROM calls)
  GROUP BY pid, name)
SELECT n.pid, n.name, style, instances, wall_ns, avg_ns, median_ns, min_ns, max_ns, depth, gpu_ops, kernels,
       memcpys, memsets, graph_launches, launched_gpu_ns, gpu_proj_ns, busy_during_ns,
       steady_instances, steady_wall_ns, steady_idle_ns, n.window_ns,
       -- (on several GPUs, of each one's time)
       round(100.0 * steady_idle_ns / nullif(n.window_ns * steady_devices, 0), 2) AS steady_idle_window_pct,
       round(100.0 * steady_idle_ns / nullif(steady_covered_ns * steady_devices, 0), 2) AS steady_idle_range_pct,
       coalesce(p.place_idle_ns, 0)::BIGINT AS place_idle_ns,
       round(100.0 * coalesce(p.place_idle_ns, 0) / nullif(w.window_ns, 0), 2) AS place_idle_window_pct,
       p.causes AS place_causes,
       round(100.0 * p.top_ns / nullif(p.place_idle_ns, 0), 2) AS top_cause_share_pct,
       round(100.0 * coalesce(p.host_code_ns, 0) / nullif(p.place_idle_ns, 0), 2) AS host_code_pct,
       round(100.0 * coalesce(p.os_wait_ns, 0) / nullif(p.place_idle_ns, 0), 2) AS os_wait_pct,
       round(100.0 * coalesce(p.sync_ns, 0) / nullif(p.place_idle_ns, 0), 2) AS sync_pct,
       round(100.0 * coalesce(c.file_io_ns, 0) / nullif(p.place_idle_ns, 0), 2) AS file_io_pct,
       -- (of whole gaps, so it may pass the budget's share of them: capped; NULL without idle time
       -- of its own, as least() skips a NULL)
       CASE WHEN p.place_idle_ns > 0
            THEN least(round(100.0 * coalesce(c.capture_ns, 0) / p.place_idle_ns, 2), 100) END AS capture_pct,
       coalesce(c.top_calls, 'host code (no traced call)') AS top_calls,
       row_number() OVER (PARTITION BY n.pid ORDER BY coalesce(p.place_idle_ns, 0) DESC, steady_idle_ns DESC,
                                                    wall_ns DESC, n.name) AS idle_rank
FROM per_name_idle n LEFT JOIN places p USING (pid, name) LEFT JOIN top_calls c USING (pid, name)
LEFT JOIN windows w USING (pid)
ORDER BY wall_ns DESC, n.pid, n.name
