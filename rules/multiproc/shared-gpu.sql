-- One row per (device, process) on a device that several processes use at overlapping times:
-- the process's label (its NVTX rank range, where it has one), the share of its steady state
-- that the budget gives to the other processes' GPU work (waiting), and the stretch of its own
-- kernels while the others' kernels run (time-slicing lengthens them; it does not show as waiting).
-- The stretch compares each kernel (same name, grid and block) run while another process's kernels
-- run on the device against its runs alone, where both occur. Linear: one sweep over the device's
-- per-process kernel spans gives the time when two or more processes have kernels running, and two
-- ASOF joins give each kernel its share of that time.
WITH spans AS (
  SELECT device_id, pid, min(start_ns) AS first_ns, max(end_ns) AS last_ns, sum(duration_ns) AS gpu_ns
  FROM gpu_activity WHERE device_id IS NOT NULL AND pid IS NOT NULL GROUP BY ALL),
shared AS (
  SELECT a.device_id, a.pid, count(DISTINCT b.pid) + 1 AS processes, string_agg(DISTINCT b.pid::VARCHAR, ', ') AS other_pids
  FROM spans a JOIN spans b ON b.device_id = a.device_id AND b.pid <> a.pid
    AND b.first_ns < a.last_ns AND a.first_ns < b.last_ns
  GROUP BY ALL),
-- kernel work (kernels, whole CUDA graph replays) per (device, process), merged into spans that do
-- not overlap: a process's streams overlap each other, and each process must count once
kernel_ops AS (
  SELECT device_id, pid, start_ns, end_ns FROM gpu_activity
  WHERE kind IN ('kernel', 'graph') AND device_id IN (SELECT device_id FROM shared) AND pid IS NOT NULL),
opened AS (
  SELECT device_id, pid, start_ns, end_ns,
         coalesce(start_ns > max(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns, end_ns
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS opens
  FROM kernel_ops),
runs AS (
  SELECT device_id, pid, start_ns, end_ns,
         sum(opens::INTEGER) OVER (PARTITION BY device_id, pid ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS run
  FROM opened),
merged AS (SELECT device_id, pid, min(start_ns) AS s, max(end_ns) AS e FROM runs GROUP BY device_id, pid, run),
-- the sweep: processes with kernels running after each time point of the device
points AS (
  SELECT device_id, ts, sum(delta) AS delta FROM (
    SELECT device_id, s AS ts, 1 AS delta FROM merged UNION ALL SELECT device_id, e, -1 FROM merged)
  GROUP BY ALL),
counted AS (
  SELECT device_id, ts, sum(delta) OVER w AS running, lead(ts) OVER w AS next_ts FROM points
  WINDOW w AS (PARTITION BY device_id ORDER BY ts)),
-- contended_before: time before ts in which two or more processes had kernels running
contention AS (
  SELECT device_id, ts, running,
         coalesce(sum(CASE WHEN running >= 2 THEN next_ts - ts ELSE 0 END) OVER (
           PARTITION BY device_id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS contended_before
  FROM counted),
-- each steady-state kernel of a process on a shared device, and its time beside the others' kernels
steady_kernels AS (
  SELECT k.device_id, k.pid, k.name, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
         k.start_ns, k.end_ns, k.duration_ns
  FROM kernels k JOIN steady_state s ON s.pid = k.pid AND k.start_ns >= s.start_ns AND k.start_ns < s.end_ns
  WHERE k.device_id IN (SELECT device_id FROM shared)),
at_start AS (
  SELECT k.*, c.contended_before + CASE WHEN c.running >= 2 THEN k.start_ns - c.ts ELSE 0 END AS c0
  FROM steady_kernels k ASOF LEFT JOIN contention c ON c.device_id = k.device_id AND c.ts <= k.start_ns),
beside AS (
  SELECT k.*, coalesce(c.contended_before + CASE WHEN c.running >= 2 THEN k.end_ns - c.ts ELSE 0 END, 0)
              - coalesce(k.c0, 0) AS beside_ns
  FROM at_start k ASOF LEFT JOIN contention c ON c.device_id = k.device_id AND c.ts <= k.end_ns),
-- per kernel configuration: its runs alone (no other process's kernel at any time) and beside
-- the others (at least half its time); runs partly beside them are neither
configs AS (
  SELECT device_id, pid, name,
         count(*) FILTER (WHERE beside_ns = 0) AS alone_n,
         count(*) FILTER (WHERE 2 * beside_ns >= duration_ns AND duration_ns > 0) AS beside_n,
         median(duration_ns) FILTER (WHERE beside_ns = 0) AS alone_median_ns,
         median(duration_ns) FILTER (WHERE 2 * beside_ns >= duration_ns AND duration_ns > 0) AS beside_median_ns,
         sum(beside_ns) AS beside_sum_ns,
         sum(duration_ns) AS kernel_ns
  FROM beside GROUP BY device_id, pid, name, grid_x, grid_y, grid_z, block_x, block_y, block_z),
stretched AS (
  SELECT *, CASE WHEN alone_n > 0 AND beside_n > 0
                 THEN beside_n * (beside_median_ns - alone_median_ns) END AS stretch_ns
  FROM configs),
stretch AS (
  SELECT device_id, pid, sum(kernel_ns) AS kernel_ns,
         coalesce(sum(beside_sum_ns), 0) AS beside_kernel_ns,
         coalesce(sum(beside_sum_ns) FILTER (WHERE alone_n = 0), 0) AS unmeasured_ns,
         count(*) FILTER (WHERE stretch_ns IS NOT NULL) AS compared_kernels,
         sum(stretch_ns) AS stretch_ns,
         arg_max(name, stretch_ns) FILTER (WHERE stretch_ns IS NOT NULL) AS top_kernel,
         arg_max(alone_median_ns, stretch_ns) FILTER (WHERE stretch_ns IS NOT NULL) AS top_alone_ns,
         arg_max(beside_median_ns, stretch_ns) FILTER (WHERE stretch_ns IS NOT NULL) AS top_beside_ns,
         arg_max(alone_n, stretch_ns) FILTER (WHERE stretch_ns IS NOT NULL) AS top_alone_n,
         arg_max(beside_n, stretch_ns) FILTER (WHERE stretch_ns IS NOT NULL) AS top_beside_n
  FROM stretched GROUP BY device_id, pid),
labels AS (
  SELECT pid, first(name ORDER BY n DESC, name) AS label FROM (
    SELECT pid, name, count(*) AS n FROM nvtx_tree WHERE coalesce(depth, 0) = 0 AND name ILIKE '%rank%' GROUP BY ALL)
  GROUP BY pid),
waits AS (
  SELECT device_id, pid, sum(ns) AS other_ns, any_value(window_ns) AS window_ns
  FROM budget WHERE kind = 'idle' AND cause = 'other processes' GROUP BY ALL),
windows AS (SELECT device_id, pid, window_ns, steps FROM steady_summary),
out AS (
SELECT s.device_id, s.pid, coalesce(l.label, p.name, 'pid ' || s.pid) AS label, s.processes, s.other_pids,
       coalesce(w.other_ns, 0) AS other_ns, coalesce(w.window_ns, ww.window_ns) AS window_ns,
       round(100.0 * coalesce(w.other_ns, 0) / nullif(coalesce(w.window_ns, ww.window_ns), 0), 2) AS other_window_pct,
       coalesce(t.kernel_ns, 0) AS kernel_ns, coalesce(t.beside_kernel_ns, 0) AS beside_kernel_ns,
       round(100.0 * t.beside_kernel_ns / nullif(t.kernel_ns, 0), 2) AS beside_pct,
       coalesce(t.compared_kernels, 0) AS compared_kernels,
       t.stretch_ns::BIGINT AS stretch_ns,
       round(100.0 * t.stretch_ns / nullif(coalesce(w.window_ns, ww.window_ns), 0), 2) AS stretch_window_pct,
       ww.steps, (t.stretch_ns / nullif(ww.steps, 0))::BIGINT AS stretch_per_step_ns,
       coalesce(t.unmeasured_ns, 0) AS unmeasured_ns,
       round(100.0 * t.unmeasured_ns / nullif(t.kernel_ns, 0), 2) AS unmeasured_pct,
       t.top_kernel, t.top_alone_ns::BIGINT AS top_alone_ns, t.top_beside_ns::BIGINT AS top_beside_ns,
       round(t.top_beside_ns / nullif(t.top_alone_ns, 0), 2) AS top_ratio, t.top_alone_n, t.top_beside_n,
       row_number() OVER (PARTITION BY s.device_id ORDER BY coalesce(w.other_ns, 0) DESC, s.pid) AS rank
FROM shared s LEFT JOIN labels l USING (pid) LEFT JOIN processes p USING (pid) LEFT JOIN waits w USING (device_id, pid)
LEFT JOIN stretch t USING (device_id, pid) LEFT JOIN windows ww USING (device_id, pid))
-- stretched: some process of the device has a stretch or an unmeasured share worth a finding
SELECT *, bool_or(coalesce(stretch_window_pct, 0) >= $min_stretch_pct OR coalesce(unmeasured_pct, 0) >= $min_unmeasured_pct)
            OVER (PARTITION BY device_id) AS device_stretched
FROM out ORDER BY device_id, rank
