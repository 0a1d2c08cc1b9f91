-- One row per transfer kind (memcpy direction, or memset), most GPU time first, totals as in
-- nsys's summaries. pid and device_id: the process and device with most of the kind's time; how
-- much of it the step waits for (copies under compute kernels are hidden) is their budget's
-- copies slice (memsets: its memsets slice), which findings claim: a copy kind's share of it is
-- at most its own GPU time in that steady state, so that start-up copies of one kind never take
-- the exposure of another kind's steady-state copies.
WITH ops AS (
  SELECT pid, device_id, kind, host_memory, start_ns, duration_ns, bytes FROM memcpys
  UNION ALL SELECT pid, device_id, 'memset', NULL, start_ns, duration_ns, bytes FROM memsets),
-- where copies run side by side (several copy engines) their summed time can pass the busy time:
-- a share is then taken of the larger
busy AS (SELECT nullif(greatest((SELECT sum(duration_ns) FROM device_busy), (SELECT sum(duration_ns) FROM ops)), 0)
                  AS busy_ns),
-- each kind's GPU time and bytes in the steady state, per (device, process)
steady_time AS (
  SELECT o.device_id, o.pid, o.kind, sum(o.duration_ns) AS steady_ns, sum(o.bytes) AS bytes,
         coalesce(sum(o.bytes) FILTER (WHERE o.host_memory = 'pageable'), 0) AS pageable_bytes
  FROM ops o JOIN steady_state s ON s.pid = o.pid
  WHERE o.start_ns >= s.start_ns AND o.start_ns < s.end_ns GROUP BY ALL),
-- the share of a copy kind's bytes touching pageable memory over the steady state only: start-up
-- copies (model.to(), a checkpoint load) are often pageable where the loop's are pinned
steady AS (
  SELECT kind, round(100.0 * sum(pageable_bytes) / nullif(sum(bytes), 0), 2) AS steady_pageable_bytes_pct
  FROM steady_time WHERE kind <> 'memset' GROUP BY kind),
-- copy time no kernel hides, per (device, process), from the step-time budget
exposed AS (SELECT device_id, pid, coalesce(sum(ns) FILTER (WHERE cause = 'copies'), 0) AS copies_ns,
                   coalesce(sum(ns) FILTER (WHERE cause = 'memsets'), 0) AS memsets_ns,
                   coalesce(sum(ns) FILTER (WHERE cause NOT IN ('copies', 'memsets')), 0) AS kernel_ns,
                   any_value(window_ns) AS window_ns
            FROM budget WHERE kind = 'gpu' GROUP BY ALL),
per_kind AS (
SELECT arg_max(pid, (duration_ns, -pid, -device_id)) AS pid, arg_max(device_id, (duration_ns, -pid, -device_id)) AS device_id, kind, count(*) AS count, sum(duration_ns) AS total_ns, sum(bytes) AS bytes,
       avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns,
       min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
       -- bytes per ns is GB/s; times 1e9 gives bytes/s
       round(sum(bytes) * 1e9 / nullif(sum(duration_ns), 0), 0) AS bytes_per_s,
       round(100.0 * sum(duration_ns) / any_value(busy.busy_ns), 2) AS busy_share_pct,
       count(*) FILTER (WHERE host_memory = 'pageable') AS pageable_count,
       coalesce(sum(bytes) FILTER (WHERE host_memory = 'pageable'), 0) AS pageable_bytes,
       coalesce(sum(duration_ns) FILTER (WHERE host_memory = 'pageable'), 0) AS pageable_ns,
       count(*) FILTER (WHERE host_memory = 'pinned') AS pinned_count,
       coalesce(sum(bytes) FILTER (WHERE host_memory = 'pinned'), 0) AS pinned_bytes,
       round(100.0 * coalesce(sum(bytes) FILTER (WHERE host_memory = 'pageable'), 0)
             / nullif(sum(bytes), 0), 2) AS pageable_bytes_pct
FROM ops CROSS JOIN busy
GROUP BY kind),
mine AS (
  -- (least() skips a NULL: a kind with no steady-state time claims none)
  SELECT k.*, coalesce(CASE WHEN k.kind = 'memset' THEN e.memsets_ns
                            ELSE least(e.copies_ns, coalesce(t.steady_ns, 0)) END, 0) AS exposed_ns,
         -- kernel time no copy runs beside yet: copies already under kernels (their steady-state
         -- time beyond the exposed copies) have used that much of it
         greatest(coalesce(e.kernel_ns, 0) - greatest(coalesce(c.copy_ns, 0) - coalesce(e.copies_ns, 0), 0), 0) AS free_kernel_ns,
         e.window_ns, st.steady_pageable_bytes_pct
  FROM per_kind k LEFT JOIN exposed e USING (device_id, pid) LEFT JOIN steady st USING (kind)
  LEFT JOIN steady_time t USING (device_id, pid, kind)
  LEFT JOIN (SELECT device_id, pid, sum(steady_ns) AS copy_ns FROM steady_time WHERE kind <> 'memset' GROUP BY ALL) c
    USING (device_id, pid)),
judged AS (
  SELECT m.* EXCLUDE (free_kernel_ns, window_ns, steady_pageable_bytes_pct),
         -- copies moved beside the kernels hide at most behind the kernel time no copy uses yet
         least(exposed_ns, free_kernel_ns) AS overlap_ns,
         round(100.0 * exposed_ns / nullif(window_ns, 0), 2) AS exposed_window_pct,
         steady_pageable_bytes_pct, coalesce(f.framework, 'other') AS framework
  FROM mine m LEFT JOIN process_frameworks f USING (pid)),
-- pinned copies to or from the host that the kernels are too short to hide: the bus sets the
-- step, and what moving fewer bytes wins is not in the trace
bus AS (
  SELECT *, kind IN ('Host-to-Device', 'Device-to-Host') AND coalesce(steady_pageable_bytes_pct, pageable_bytes_pct, 0) = 0
            AND overlap_ns < 0.5 * exposed_ns AS bus_bound
  FROM judged)
SELECT *, CASE WHEN NOT bus_bound THEN overlap_ns END AS overlap_gain_ns FROM bus
ORDER BY total_ns DESC, kind
