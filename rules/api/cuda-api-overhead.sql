-- One row per CUDA API (runtime and driver), version suffixes stripped, most host time first.
-- Totals cover the whole trace (as nsys's cuda_api_sum); the launch verdict judges the steady
-- state (steady_state), where it exists, so start-up and warm-up launches do not decide it.
-- Each table is read once for the whole trace and its steady state together (a call is in the
-- steady state when it starts inside its process's window; steady_state has a row per process).
WITH calls AS (
  SELECT a.api, a.layer, a.category, a.duration_ns, a.start_ns >= ss.start_ns AND a.start_ns < ss.end_ns AS steady
  FROM api_calls a LEFT JOIN steady_state ss ON ss.pid = a.pid),
-- The medians from each API's distinct durations and their counts, not median(): its state holds
-- every value of a group outside DuckDB's memory cap (at 1e7 kernels, 2e7 calls: 600 MB, the
-- cold run's peak); this is the same value (quantile_cont's interpolation, in the same order).
durations AS (
  SELECT api, layer, duration_ns, count(*) AS n, count(*) FILTER (WHERE steady) AS steady_n
  FROM calls WHERE duration_ns IS NOT NULL GROUP BY ALL),
ranked AS (
  SELECT *, sum(n) OVER w - n AS below, sum(n) OVER (PARTITION BY api, layer) AS total,
         sum(steady_n) OVER w - steady_n AS steady_below, sum(steady_n) OVER (PARTITION BY api, layer) AS steady_total
  FROM durations WINDOW w AS (PARTITION BY api, layer ORDER BY duration_ns ROWS UNBOUNDED PRECEDING)),
middle AS (  -- the durations at the two middle ranks (0-based (n - 1) // 2 and n // 2), all calls and steady ones
  SELECT api, layer,
         any_value(duration_ns) FILTER ((total - 1) // 2 BETWEEN below AND below + n - 1)::DOUBLE AS lo,
         any_value(duration_ns) FILTER (total // 2 BETWEEN below AND below + n - 1)::DOUBLE AS hi,
         any_value(duration_ns) FILTER ((steady_total - 1) // 2 BETWEEN steady_below AND steady_below + steady_n - 1)::DOUBLE
           AS steady_lo,
         any_value(duration_ns) FILTER (steady_total // 2 BETWEEN steady_below AND steady_below + steady_n - 1)::DOUBLE
           AS steady_hi
  FROM ranked GROUP BY api, layer),
per_api_calls AS (
  SELECT api, layer, any_value(category) AS category, count(*) AS calls,
         sum(duration_ns) AS total_ns, avg(duration_ns) AS avg_ns,
         min(duration_ns) AS min_ns, max(duration_ns) AS max_ns, coalesce(stddev_samp(duration_ns), 0) AS stddev_ns,
         count(*) FILTER (WHERE steady) AS steady_calls,
         coalesce(sum(duration_ns) FILTER (WHERE steady), 0) AS steady_total_ns
  FROM calls GROUP BY api, layer),
-- pid: the process that spends the most host time in the API (the budget slice it draws on),
-- the lowest pid on a tie
top_pid AS (
  SELECT api, layer, first(pid ORDER BY ns DESC, pid) AS pid
  FROM (SELECT api, layer, pid, sum(duration_ns) AS ns FROM api_calls GROUP BY ALL) GROUP BY ALL),
per_api AS (
  SELECT a.api, a.layer, a.category, t.pid, a.calls, a.total_ns, a.avg_ns, m.lo + (m.hi - m.lo) * 0.5 AS median_ns,
         a.min_ns, a.max_ns, a.stddev_ns, a.steady_calls, a.steady_total_ns,
         m.steady_lo + (m.steady_hi - m.steady_lo) * 0.5 AS steady_median_ns
  FROM per_api_calls a JOIN top_pid t ON t.api IS NOT DISTINCT FROM a.api AND t.layer IS NOT DISTINCT FROM a.layer
  LEFT JOIN middle m ON m.api IS NOT DISTINCT FROM a.api AND m.layer IS NOT DISTINCT FROM a.layer),
launched AS (
  SELECT g.launch_api AS api, count(*) AS gpu_ops, sum(g.duration_ns) AS gpu_ns,
         sum(g.duration_ns) FILTER (WHERE g.launch_start_ns >= ss.start_ns AND g.launch_start_ns < ss.end_ns)
           AS steady_gpu_ns
  FROM gpu_activity g LEFT JOIN steady_state ss ON ss.pid = g.pid
  WHERE g.launch_api IS NOT NULL GROUP BY 1),
total AS (SELECT sum(total_ns) AS all_ns FROM per_api),
has_steady AS (SELECT count(*) > 0 AS yes FROM steady_state),
rated AS (
  SELECT p.* EXCLUDE (steady_calls, steady_total_ns, steady_median_ns),
         round(100.0 * p.total_ns / total.all_ns, 2) AS share_pct,
         l.gpu_ops AS launched_ops, l.gpu_ns AS launched_gpu_ns,
         round(p.total_ns / nullif(l.gpu_ns, 0), 3) AS api_to_gpu_ratio,
         p.steady_calls, p.steady_total_ns, p.steady_median_ns,
         coalesce(l.steady_gpu_ns, 0) AS steady_launched_gpu_ns,
         round(p.steady_total_ns / nullif(l.steady_gpu_ns, 0), 3) AS steady_api_to_gpu_ratio,
         has_steady.yes AS judged_on_steady_state,
         -- every call before the steady state: a one-off start-up cost, which no loop advice fits
         coalesce(p.steady_calls, 0) = 0 AND has_steady.yes AS start_up_only
  FROM per_api p CROSS JOIN total CROSS JOIN has_steady LEFT JOIN launched l ON l.api = p.api),
with_cause AS (
  SELECT *,
         (SELECT count(*) FROM graph_launches g WHERE g.pid = rated.pid) AS graph_replays,
         -- median x calls: the typical cost, so a few slow first launches (lazy module
         -- loading at start-up) do not make a healthy loop look launch-bound
         (category = 'launch' AND CASE WHEN judged_on_steady_state
            THEN coalesce(steady_median_ns * steady_calls, 0) >= $min_total_ns
                 AND steady_median_ns * steady_calls >= $rival_ratio * steady_launched_gpu_ns
            ELSE median_ns * calls >= $min_total_ns
                 AND median_ns * calls >= $rival_ratio * coalesce(launched_gpu_ns, 0) END) AS launch_rivals_gpu,
         -- how busy the process keeps its GPU in the steady state: a host that waits on a busy GPU
         -- shows the GPU's pace, not a cost of its own
         (SELECT max(busy_pct) FROM steady_summary ss WHERE ss.pid = rated.pid) AS steady_busy_pct,
         (SELECT arg_max(verdict_class || ' (' || verdict_cause || ')', busy_pct) FROM steady_summary ss
          WHERE ss.pid = rated.pid) AS steady_verdict,
         -- the idle cause the budget gives this API's time (budget_causes' CUDA-call kinds)
         coalesce((SELECT any_value(c.cause) FROM budget_causes c
                   WHERE c.kind = 'idle' AND list_contains(c.api_categories, rated.category)), 'other CUDA calls')
           AS budget_cause
  FROM rated)
SELECT c.*,
       -- what the GPU actually lost to this kind of call: host time in calls says what they cost the
       -- host, not whether the GPU waited for them (other threads, other host work may set the pace)
       CASE WHEN c.steady_busy_pct IS NOT NULL THEN coalesce(
         (SELECT round(max(100.0 * i.ns / s.window_ns), 2)
          FROM (SELECT device_id, pid, sum(ns) AS ns FROM budget
                WHERE kind = 'idle' AND cause = c.budget_cause AND pid = c.pid GROUP BY ALL) i
          JOIN steady_summary s USING (device_id, pid)), 0) END AS cause_idle_pct
FROM with_cause c
ORDER BY total_ns DESC, api
