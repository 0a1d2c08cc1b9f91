-- One row per collective and element type (from the kernel name), over all ranks: how many
-- kernels, their time, and how many NCCL API calls of that kind NCCL's NVTX ranges recorded.
WITH tot AS (SELECT sum(duration_ns) AS all_ns FROM comm_kernels),
api AS (
  SELECT CASE WHEN collective IN ('Send', 'Recv') THEN 'SendRecv' ELSE collective END AS collective,
         count(*) AS api_calls
  FROM comm_nvtx WHERE collective IS NOT NULL GROUP BY 1),
g AS (
  SELECT collective, dtype, count(DISTINCT (device_id, pid)) AS ranks, count(*) AS instances,
         sum(duration_ns) AS total_ns, CAST(round(avg(duration_ns)) AS BIGINT) AS avg_ns,
         CAST(round(median(duration_ns)) AS BIGINT) AS median_ns, min(duration_ns) AS min_ns,
         max(duration_ns) AS max_ns
  FROM comm_kernels GROUP BY ALL)
SELECT g.collective, g.dtype, g.collective || coalesce(' ' || g.dtype, '') AS collective_key, g.ranks, g.instances, round(g.instances / g.ranks, 1) AS instances_per_rank,
       g.total_ns, g.avg_ns, g.median_ns, g.min_ns, g.max_ns,
       round(100.0 * g.total_ns / nullif(tot.all_ns, 0), 2) AS share_pct,
       a.api_calls,
       row_number() OVER (ORDER BY g.total_ns DESC, g.collective, g.dtype) AS time_rank
FROM g CROSS JOIN tot LEFT JOIN api a USING (collective)
ORDER BY g.total_ns DESC, g.collective, g.dtype
