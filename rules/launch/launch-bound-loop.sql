-- One row per (device, process): its steady-state kernels, the GPU idle time between them and
-- the host time spent in launch calls, the evidence of a loop that the CPU cannot feed fast enough.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
base AS (SELECT device_id, pid FROM steady_busy),
-- (with, for a trace without NVTX, the launching thread and API that issue most kernels)
-- A launch that waits for room in the GPU's launch queue lasts long (over $blocked_launch_ns) and
-- returns with its kernel still queued behind other work for at least as long as it waited: the
-- GPU was busy all along. Its time is the GPU's pace seen from the host, not launch overhead.
k AS (
  SELECT k.device_id, k.pid, count(*) AS kernels, median(k.duration_ns) AS median_kernel_ns,
         sum(k.duration_ns) AS kernel_ns,
         count(*) FILTER (WHERE k.launch_end_ns - k.launch_start_ns > $blocked_launch_ns
                           AND k.start_ns - k.launch_end_ns >= k.launch_end_ns - k.launch_start_ns) AS blocked_launches,
         sum(k.launch_end_ns - k.launch_start_ns) FILTER (WHERE k.launch_end_ns - k.launch_start_ns > $blocked_launch_ns
                           AND k.start_ns - k.launch_end_ns >= k.launch_end_ns - k.launch_start_ns) AS blocked_launch_ns,
         mode(k.launch_tid) AS launch_tid, mode(k.launch_api)::VARCHAR AS top_launch_api
  FROM kernels k JOIN ss USING (pid) WHERE k.start_ns >= ss.start_ns AND k.start_ns < ss.end_ns
  GROUP BY k.device_id, k.pid),
api AS (
  SELECT a.pid, count(*) AS launch_calls, sum(a.duration_ns) AS launch_api_ns,
         median(a.duration_ns) AS median_launch_ns, count(*) FILTER (WHERE a.api ILIKE '%graphlaunch%') AS graph_launches
  FROM api_calls a JOIN ss USING (pid)
  WHERE a.category = 'launch' AND a.start_ns >= ss.start_ns AND a.start_ns < ss.end_ns GROUP BY a.pid),
-- host calls that block until the GPU catches up (syncs, .item()-style copies): a CUDA graph
-- cannot capture them
blocking AS (
  SELECT b.pid, count(*) AS blocking_calls FROM blocking_calls b JOIN ss USING (pid)
  WHERE b.start_ns >= ss.start_ns AND b.start_ns < ss.end_ns GROUP BY b.pid),
-- the budget's launch-overhead idle time (40_budget.sql), and the NVTX range holding most of it
launch_idle AS (
  SELECT device_id, pid, sum(ns) AS launch_idle_ns, first(place ORDER BY ns DESC, place) FILTER (WHERE place IS NOT NULL) AS top_place,
         max(ns) FILTER (WHERE place IS NOT NULL) AS top_place_ns
  FROM budget WHERE kind = 'idle' AND cause = 'launch' GROUP BY ALL),
-- the budget's other call causes: the one holding the most idle time sets the pace (copies and
-- memsets issued one by one, synchronizations and polls, other CUDA calls)
call_idle AS (
  SELECT device_id, pid, arg_max(cause, ns) AS top_call_cause, max(ns) AS top_call_idle_ns
  FROM (SELECT device_id, pid, cause, sum(ns) AS ns FROM budget
        WHERE kind = 'idle' AND cause IN ('copy', 'sync', 'other CUDA calls') GROUP BY ALL)
  GROUP BY ALL),
st AS (
  SELECT s.pid, count(*) AS steps FROM steps s JOIN ss USING (pid)
  WHERE s.start_ns >= ss.start_ns AND s.start_ns < ss.end_ns GROUP BY s.pid),
measured AS (
SELECT x.device_id, x.pid, coalesce(k.kernels, 0) AS kernels, st.steps,
       CAST(round(k.kernels / nullif(st.steps, 0)) AS BIGINT) AS kernels_per_step,
       coalesce(' (' || format('{:,}', CAST(round(k.kernels / nullif(st.steps, 0)) AS BIGINT)) || ' per step)', '')
         AS per_step_text,
       k.median_kernel_ns, coalesce(k.kernel_ns, 0) AS kernel_ns, coalesce(b.busy_ns, 0) AS busy_ns, ss.window_ns,
       ss.window_ns - coalesce(b.busy_ns, 0) AS idle_ns,
       round(100.0 * (ss.window_ns - coalesce(b.busy_ns, 0)) / nullif(ss.window_ns, 0), 2) AS idle_pct,
       coalesce(a.launch_calls, 0) AS launch_calls, coalesce(a.launch_api_ns, 0) AS launch_api_ns,
       coalesce(k.blocked_launches, 0) AS blocked_launches, coalesce(k.blocked_launch_ns, 0) AS blocked_launch_ns,
       coalesce(a.launch_api_ns, 0) - coalesce(k.blocked_launch_ns, 0) AS free_launch_ns,
       CASE WHEN k.blocked_launch_ns >= 0.05 * a.launch_api_ns
            THEN ' (' || format('{:,}', k.blocked_launches) || ' of them waited for room in a full launch queue '
                 || 'while the GPU was busy: not counted as overhead)' ELSE '' END AS blocked_text,
       a.median_launch_ns, coalesce(a.graph_launches, 0) AS graph_launches,
       round(coalesce(a.launch_api_ns, 0) / nullif(k.kernel_ns, 0), 3) AS api_to_kernel_ratio,
       coalesce(li.launch_idle_ns, 0) AS launch_idle_ns,
       round(100.0 * coalesce(li.launch_idle_ns, 0) / nullif(ss.window_ns, 0), 2) AS launch_idle_pct,
       ci.top_call_cause, coalesce(ci.top_call_idle_ns, 0) AS top_call_idle_ns,
       round(100.0 * coalesce(ci.top_call_idle_ns, 0) / nullif(ss.window_ns, 0), 2) AS top_call_idle_pct,
       li.top_place, round(100.0 * li.top_place_ns / nullif(li.launch_idle_ns, 0), 1) AS top_place_pct,
       coalesce(lw.synchronous, false) AS synchronous_launches,
       k.launch_tid, k.top_launch_api, coalesce(bl.blocking_calls, 0) AS blocking_calls,
       CAST(round(coalesce(bl.blocking_calls, 0) / nullif(st.steps, 0)) AS BIGINT) AS blocking_per_step,
       CASE WHEN li.top_place IS NOT NULL
            THEN 'most of it in NVTX range "' || li.top_place || '" ('
                 || round(100.0 * li.top_place_ns / nullif(li.launch_idle_ns, 0), 1) || ' %)'
            ELSE 'launched by thread ' || k.launch_tid || ' through ' || coalesce(k.top_launch_api, 'launch calls')
                 || ', outside any NVTX range' END AS where_text,
       coalesce(fw.framework, 'other') AS framework, coalesce(fw.compiled, false) AS compiled,
       coalesce(li.top_place_ns, 0) AS top_place_ns,
       round(100.0 * coalesce(li.top_place_ns, 0) / nullif(ss.window_ns, 0), 2) AS top_place_window_pct,
       coalesce(ro.ops, 0) AS range_ops, CAST(round(ro.ops / nullif(st.steps, 0)) AS BIGINT) AS range_ops_per_step,
       ro.gpu_ns // nullif(ro.ops, 0) AS range_mean_op_ns
FROM base x JOIN ss USING (pid) LEFT JOIN process_frameworks fw ON fw.pid = x.pid LEFT JOIN k USING (device_id, pid) LEFT JOIN steady_busy b USING (device_id, pid)
LEFT JOIN api a USING (pid) LEFT JOIN st USING (pid) LEFT JOIN launch_idle li USING (device_id, pid)
LEFT JOIN blocking bl USING (pid) LEFT JOIN call_idle ci USING (device_id, pid)
LEFT JOIN launch_waits lw USING (device_id, pid)
-- the GPU operations the range holding most launch overhead launches in the steady state
LEFT JOIN nvtx_range_ops ro ON ro.device_id = x.device_id AND ro.pid = x.pid AND ro.range_name = li.top_place),
-- the whole loop launch-bound; else one NVTX range whose operations are issued one by one, holding
-- min_launch_idle_pct of the window as launch overhead while the rest of the step keeps the GPU fed
judged AS (
  SELECT *, coalesce(kernels >= $min_kernels AND median_kernel_ns <= $max_median_kernel_ns AND idle_pct >= $min_idle_pct
                     AND free_launch_ns >= $min_api_ratio * kernel_ns AND launch_idle_pct >= $min_launch_idle_pct
                     AND launch_idle_ns >= top_call_idle_ns AND NOT synchronous_launches, false) AS loop_launch_bound
  FROM measured)
SELECT *, NOT loop_launch_bound AND top_place IS NOT NULL AND top_place_window_pct >= $min_launch_idle_pct
          AND range_ops >= $min_kernels AND coalesce(range_mean_op_ns <= $max_median_kernel_ns, false)
          AND top_place_ns >= top_call_idle_ns AND NOT synchronous_launches AS range_launch_bound,
       round(graph_launches / nullif(steps, 0), 1) AS graphs_per_step,
       -- many graphs a step: graphs captured per layer or per op, each still a launch and the
       -- Python around it
       coalesce(graph_launches >= $many_graphs_per_step * steps, false) AS graphs_per_layer
FROM judged
ORDER BY idle_ns DESC, device_id, pid
