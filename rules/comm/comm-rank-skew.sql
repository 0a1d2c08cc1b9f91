-- One row per rank (device, process) that took part in synchronizing collectives matched
-- across ranks (comm_instances: the k-th instance of one collective on every rank, aligned).
-- For every matched instance: late_ns = this rank's kernel start minus the earliest rank's;
-- skew_ns = latest start minus earliest. The rank arriving last makes the others wait skew_ns
-- inside their already-running NCCL kernels. Only instances inside each rank's steady state
-- count: the first collectives (DDP's parameter broadcast) wait for start-up, not for a straggler.
WITH steady AS (SELECT * FROM comm_instances WHERE in_steady_state),
inst AS (
  SELECT collective_key, instance, min(start_ns) AS first_start, max(start_ns) AS last_start
  FROM steady GROUP BY ALL HAVING count(*) >= 2),
nranks AS (SELECT count(DISTINCT (device_id, pid)) AS ranks FROM comm_instances),
per AS (
  SELECT i.device_id, i.pid, i.collective_key, i.start_ns,
         i.start_ns - s.first_start AS late_ns, s.last_start - s.first_start AS skew_ns,
         (i.start_ns = s.last_start AND s.last_start > s.first_start) AS is_last
  FROM steady i JOIN inst s USING (collective_key, instance)),
agg AS (
  SELECT device_id, pid, count(*) AS instances, count(*) FILTER (WHERE is_last) AS times_last,
         CAST(round(avg(late_ns)) AS BIGINT) AS mean_late_ns, max(late_ns) AS max_late_ns,
         coalesce(sum(skew_ns) FILTER (WHERE is_last), 0) AS skew_when_last_ns,
         CAST(round(avg(skew_ns) FILTER (WHERE is_last)) AS BIGINT) AS mean_skew_when_last_ns,
         -- the latest-arriving instance; the earliest of equals, so both columns name one instance
         arg_max(collective_key, (late_ns, -start_ns, collective_key)) AS worst_collective,
         arg_max(start_ns, (late_ns, -start_ns, collective_key)) AS worst_start_ns
  FROM per GROUP BY ALL)
SELECT a.device_id, a.pid, n.ranks, a.instances, a.times_last,
       round(100.0 * a.times_last / a.instances, 2) AS last_pct,
       a.mean_late_ns, a.max_late_ns, a.skew_when_last_ns, a.mean_skew_when_last_ns,
       round(100.0 * a.skew_when_last_ns / nullif(e.window_ns, 0), 2) AS skew_window_pct,
       a.worst_collective, a.worst_start_ns, e.window_ns,
       row_number() OVER (ORDER BY a.times_last DESC, a.skew_when_last_ns DESC, a.device_id, a.pid) AS straggler_rank
FROM agg a CROSS JOIN nranks n LEFT JOIN comm_exposure e USING (device_id, pid)
ORDER BY straggler_rank
