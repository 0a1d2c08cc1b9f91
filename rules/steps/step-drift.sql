-- One row per process whose steady-state steps slow down steadily over the run: the median period
-- of the last quarter of its timed steps against the first quarter's, the trend's strength (the
-- correlation of period with step number), how much of the growth is GPU time, and the kernel
-- whose time per step grows most (its time in the last quarter's window against the first's).
WITH st AS (
  SELECT pid, step, bound_ns, period_ns, kernel_ns,
         ntile(4) OVER (PARTITION BY pid ORDER BY step) AS quarter, count(*) OVER (PARTITION BY pid) AS steps
  FROM step_profile WHERE timed),
trend AS (
  SELECT pid, any_value(steps) AS steps, corr(step, period_ns) AS trend_corr,
         median(period_ns) FILTER (WHERE quarter = 1) AS first_period_ns,
         median(period_ns) FILTER (WHERE quarter = 4) AS last_period_ns,
         median(kernel_ns) FILTER (WHERE quarter = 1) AS first_kernel_ns,
         median(kernel_ns) FILTER (WHERE quarter = 4) AS last_kernel_ns,
         count(*) FILTER (WHERE quarter = 1) AS first_steps, count(*) FILTER (WHERE quarter = 4) AS last_steps,
         min(bound_ns) FILTER (WHERE quarter = 1) AS first_start_ns,
         max(bound_ns + period_ns) FILTER (WHERE quarter = 1) AS first_end_ns,
         min(bound_ns) FILTER (WHERE quarter = 4) AS last_start_ns,
         max(bound_ns + period_ns) FILTER (WHERE quarter = 4) AS last_end_ns
  FROM st GROUP BY pid HAVING count(*) >= $min_steps),
drifting AS (
  SELECT t.*, round(t.last_period_ns / nullif(t.first_period_ns, 0), 2) AS growth,
         -- what the steps took beyond the first quarter's pace
         (SELECT sum(greatest(s.period_ns - t.first_period_ns, 0)) FROM st s WHERE s.pid = t.pid)::BIGINT AS excess_ns
  FROM trend t
  WHERE t.trend_corr >= $min_trend_corr AND t.last_period_ns >= $min_growth * t.first_period_ns),
-- each kernel's GPU time per step in the first and the last quarter's windows (by full name: a
-- short name such as elementwise_kernel covers many ops)
per_name AS (
  SELECT d.pid, k.name, any_value(k.short_name) AS short_name,
         sum(k.duration_ns) FILTER (WHERE k.start_ns >= d.first_start_ns AND k.start_ns < d.first_end_ns) / any_value(d.first_steps) AS first_ns,
         sum(k.duration_ns) FILTER (WHERE k.start_ns >= d.last_start_ns AND k.start_ns < d.last_end_ns) / any_value(d.last_steps) AS last_ns
  FROM kernels k JOIN drifting d ON d.pid = k.pid
  WHERE (k.start_ns >= d.first_start_ns AND k.start_ns < d.first_end_ns) OR (k.start_ns >= d.last_start_ns AND k.start_ns < d.last_end_ns)
  GROUP BY d.pid, k.name),
grower AS (
  SELECT pid, arg_max(short_name, coalesce(last_ns, 0) - coalesce(first_ns, 0)) AS grower,
         regexp_matches(arg_max(name, coalesce(last_ns, 0) - coalesce(first_ns, 0)), $copy_pattern, 'i') AS grower_copies,
         arg_max(first_ns, coalesce(last_ns, 0) - coalesce(first_ns, 0)) AS grower_first_ns,
         arg_max(last_ns, coalesce(last_ns, 0) - coalesce(first_ns, 0)) AS grower_last_ns
  FROM per_name GROUP BY pid HAVING max(coalesce(last_ns, 0) - coalesce(first_ns, 0)) > 0)
SELECT d.pid, d.steps, round(d.trend_corr, 2) AS trend_corr, d.first_period_ns::BIGINT AS first_period_ns,
       d.last_period_ns::BIGINT AS last_period_ns, d.growth, d.excess_ns,
       d.first_kernel_ns::BIGINT AS first_kernel_ns, d.last_kernel_ns::BIGINT AS last_kernel_ns,
       -- (kernel medians may grow a little more than the period's: at most all of it)
       CASE WHEN d.last_kernel_ns - d.first_kernel_ns >= d.last_period_ns - d.first_period_ns THEN 100.0
            ELSE round(100.0 * greatest(d.last_kernel_ns - d.first_kernel_ns, 0) / nullif(d.last_period_ns - d.first_period_ns, 0), 1)
            END AS gpu_growth_pct,
       g.grower::VARCHAR AS grower, coalesce(g.grower_first_ns, 0)::BIGINT AS grower_first_ns,
       g.grower_last_ns::BIGINT AS grower_last_ns, coalesce(g.grower_copies, false) AS grower_copies
FROM drifting d LEFT JOIN grower g USING (pid)
ORDER BY d.pid
