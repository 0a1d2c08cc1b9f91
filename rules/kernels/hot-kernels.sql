-- One row per kernel name (demangled), most GPU time first; pid and device_id: the process
-- and device where it takes the most time, for the budget slice of its class a finding claims.
WITH per_place AS (
  SELECT name, pid, device_id, sum(duration_ns) AS ns FROM kernels GROUP BY ALL),
home AS (
  SELECT name, first(pid ORDER BY ns DESC, pid, device_id) AS pid,
         first(device_id ORDER BY ns DESC, pid, device_id) AS device_id
  FROM per_place GROUP BY name),
per_kernel AS (
  SELECT name, any_value(short_name) AS short_name, count(*) AS instances,
         sum(duration_ns) AS total_ns, avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns,
         min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
         coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
  FROM kernels GROUP BY name),
total AS (SELECT nullif(sum(total_ns), 0) AS all_ns FROM per_kernel)
SELECT name,
       -- names can run to kilobytes of template arguments; messages use the short form
       CASE WHEN length(short_name) > 120 THEN left(short_name, 117) || '...' ELSE short_name END AS display_name,
       instances, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns,
       round(100.0 * total_ns / total.all_ns, 2) AS share_pct,
       row_number() OVER (ORDER BY total_ns DESC, name) AS rank,
       coalesce(kc.class, 'other kernels') AS class, pid, device_id
FROM per_kernel CROSS JOIN total LEFT JOIN kernel_classes kc USING (name) LEFT JOIN home USING (name)
ORDER BY total_ns DESC, name
