-- One row per CUDA API (runtime and driver), version suffixes stripped, most host time first.
WITH per_api AS (
  SELECT api, layer, any_value(category) AS category, count(*) AS calls,
         sum(duration_ns) AS total_ns, avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns,
         min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
         coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
  FROM api_calls GROUP BY api, layer),
launched AS (
  SELECT api_base_name(launch_api) AS api, count(*) AS gpu_ops, sum(duration_ns) AS gpu_ns
  FROM gpu_activity WHERE launch_api IS NOT NULL GROUP BY 1),
total AS (SELECT sum(total_ns) AS all_ns FROM per_api),
rated AS (
  SELECT p.*, round(100.0 * p.total_ns / total.all_ns, 2) AS share_pct,
         l.gpu_ops AS launched_ops, l.gpu_ns AS launched_gpu_ns,
         round(p.total_ns / nullif(l.gpu_ns, 0), 3) AS api_to_gpu_ratio
  FROM per_api p CROSS JOIN total LEFT JOIN launched l ON l.api = p.api)
SELECT *,
       -- median x calls: the typical cost, so a few slow first launches (lazy module
       -- loading at start-up) do not make a healthy loop look launch-bound
       (category = 'launch' AND median_ns * calls >= $min_total_ns
        AND median_ns * calls >= $rival_ratio * coalesce(launched_gpu_ns, 0)) AS launch_rivals_gpu
FROM rated
ORDER BY total_ns DESC, api
