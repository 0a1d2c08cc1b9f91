-- One row per (process, NVTX range name): wall time, the GPU work launched from inside it
-- (nested ranges included, attributed by the launch call's time on the launching thread), and
-- the GPU busy and idle time during its instances in the steady state.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
r AS (
  SELECT r.*, (r.start_ns >= ss.start_ns AND r.start_ns < ss.end_ns) AS steady, ss.window_ns
  FROM nvtx_range_stats r LEFT JOIN ss USING (pid)),
per_name AS (
  SELECT pid, name, any_value(style) AS style, count(*) AS instances, sum(duration_ns) AS wall_ns,
         avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns, min(duration_ns) AS min_ns,
         max(duration_ns) AS max_ns, min(depth) AS depth, sum(ops) AS gpu_ops, sum(kernels) AS kernels,
         sum(memcpys) AS memcpys, sum(memsets) AS memsets, sum(graphs) AS graph_launches,
         sum(gpu_ns) AS launched_gpu_ns, sum(gpu_proj_ns) AS gpu_proj_ns, sum(busy_during_ns) AS busy_during_ns,
         count(*) FILTER (WHERE steady) AS steady_instances,
         coalesce(sum(duration_ns) FILTER (WHERE steady), 0) AS steady_wall_ns,
         coalesce(sum(duration_ns * greatest(devices, 1) - busy_during_ns) FILTER (WHERE steady AND devices > 0), 0)
           AS steady_idle_ns,
         any_value(window_ns) AS window_ns
  FROM r GROUP BY pid, name)
SELECT pid, name, style, instances, wall_ns, avg_ns, median_ns, min_ns, max_ns, depth, gpu_ops, kernels,
       memcpys, memsets, graph_launches, launched_gpu_ns, gpu_proj_ns, busy_during_ns,
       steady_instances, steady_wall_ns, steady_idle_ns, window_ns,
       round(100.0 * steady_idle_ns / nullif(window_ns, 0), 2) AS steady_idle_window_pct,
       round(100.0 * steady_idle_ns / nullif(steady_wall_ns, 0), 2) AS steady_idle_range_pct,
       row_number() OVER (PARTITION BY pid ORDER BY steady_idle_ns DESC, wall_ns DESC, name) AS idle_rank
FROM per_name
ORDER BY wall_ns DESC, pid, name
