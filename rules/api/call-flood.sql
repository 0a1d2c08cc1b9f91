-- One row per (process, call family) in the steady state with enough calls to be a flood
-- (min_calls, min_calls_per_step): copies by direction and host memory,
-- memsets, each synchronization API and each event/stream query API. How often the calls come,
-- how much GPU idle time they hold, what the GPU did while the host was in them, and how that
-- compares with the launch overhead of the same process (the budget's launch slice), so that the
-- call that sets the pace is named.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
st AS (
  SELECT s.pid, count(*) AS steps FROM steps s JOIN ss USING (pid)
  WHERE s.start_ns >= ss.start_ns AND s.start_ns < ss.end_ns GROUP BY s.pid),
-- the device a process keeps busiest: calls with no GPU operation (syncs, queries) are measured
-- against it
dev AS (SELECT pid, first(device_id ORDER BY busy_ns DESC, device_id) AS device_id FROM steady_busy GROUP BY pid),
calls AS MATERIALIZED (
  SELECT a.pid, a.tid, a.global_pid, a.correlation_id, a.api, a.category, a.start_ns, a.end_ns, a.duration_ns
  FROM api_calls a JOIN ss USING (pid)
  WHERE a.start_ns >= ss.start_ns AND a.start_ns < ss.end_ns
    AND (a.category IN ('memcpy', 'memset') OR (a.category = 'sync' AND a.api NOT LIKE '%WaitEvent%')
         OR (a.category IN ('event', 'stream') AND a.api LIKE '%Query'))),
-- the copy each copy call issued: direction, host memory, size, and whether the call returned
-- only once the copy was done
ops AS (
  SELECT m.global_pid, m.correlation_id, m.kind::VARCHAR AS direction, m.host_memory, m.bytes,
         m.launch_end_ns >= m.end_ns AS waited
  FROM memcpys m WHERE m.pid IN (SELECT pid FROM ss)
  UNION ALL
  SELECT m.global_pid, m.correlation_id, NULL, NULL, m.bytes, false FROM memsets m WHERE m.pid IN (SELECT pid FROM ss)),
-- a sync issued right after a copy on the same thread (within 20 us) waits for that copy: one
-- round trip (.item(), .cpu(), .nonzero()), counted with the copy
last_copy AS (
  SELECT s.pid, s.tid, s.start_ns, c.direction, c.host_memory
  FROM calls s
  ASOF JOIN (SELECT c.pid, c.tid, c.end_ns, o.direction, o.host_memory FROM calls c
             JOIN ops o ON o.global_pid = c.global_pid AND o.correlation_id = c.correlation_id
             WHERE c.category = 'memcpy') c
    ON c.pid = s.pid AND c.tid = s.tid AND c.end_ns <= s.start_ns
  WHERE s.category = 'sync' AND s.start_ns - c.end_ns <= 20000),
classed AS (
  SELECT c.*, d.device_id, o.bytes, o.waited,
         CASE WHEN c.category = 'memcpy' OR l.direction IS NOT NULL THEN 'copy'
              WHEN c.category = 'memset' THEN 'memset'
              WHEN c.category = 'sync' THEN 'sync' ELSE 'query' END AS family,
         CASE WHEN c.category = 'memcpy' THEN coalesce(o.direction, 'unmatched') || coalesce(' ' || o.host_memory, '')
              WHEN l.direction IS NOT NULL THEN l.direction || coalesce(' ' || l.host_memory, '')
              WHEN c.category = 'memset' THEN 'memset'
              ELSE c.api::VARCHAR END AS call_key,
         c.category = 'sync' AND l.direction IS NOT NULL AS companion
  FROM calls c JOIN dev d USING (pid)
  -- (equality keys only: a test on the call's category beside them made nested-loop joins; a
  -- correlation id names one call, and last_copy holds sync calls alone)
  LEFT JOIN ops o ON o.global_pid = c.global_pid AND o.correlation_id = c.correlation_id
  LEFT JOIN last_copy l ON l.pid = c.pid AND l.tid = c.tid AND l.start_ns = c.start_ns),
-- families with enough calls to be a flood
flood_calls AS (
  SELECT c.* FROM classed c
  JOIN (SELECT c.pid, c.family, c.call_key FROM classed c LEFT JOIN st USING (pid) GROUP BY ALL
        HAVING count(*) FILTER (WHERE NOT c.companion) >= $min_calls
           AND coalesce(count(*) FILTER (WHERE NOT c.companion) / any_value(st.steps), $min_calls_per_step)
               >= $min_calls_per_step) f
    ON f.pid = c.pid AND f.family = c.family AND f.call_key = c.call_key),
-- The steady-state GPU idle gaps a family holds, as the budget splits them (budget.sql), from
-- the gap's own per-state times (idle_gaps, no lookup per call): a gap that follows one of the
-- family's blocking calls (a copy that waited, its sync, a sync, a poll) holds the time the
-- host spent in copy, memset, sync and poll calls inside it and the idle time after the call
-- returned, up to what it waited; a short gap that ends with one of the family's copies or
-- memsets holds those calls' time and the host time spent issuing it, beyond that.
gaps AS (
  SELECT g.device_id, g.pid, g.tid, g.start_ns, g.end_ns, g.duration_ns, g.copy_ns + g.sync_ns AS call_ns,
         g.host_ns + g.api_ns AS host_ns, g.blocking_end_ns, g.nvtx_range,
         CASE WHEN g.blocking_end_ns IS NOT NULL
              THEN least(g.end_ns - greatest(g.blocking_end_ns, g.start_ns), g.blocking_wait_ns) END AS after_ns,
         g.duration_ns < (SELECT value FROM budget_settings WHERE name = 'launch_gap_ns') AS short_gap
  FROM idle_gaps g
  WHERE g.in_steady_state AND (g.after_blocking_api IS NOT NULL OR g.next_kind IN ('memcpy', 'memset'))),
blocked_by AS (
  SELECT g.*, c.family, c.call_key
  FROM gaps g JOIN flood_calls c ON c.pid = g.pid AND c.tid = g.tid AND c.end_ns = g.blocking_end_ns
  WHERE g.device_id = c.device_id),
issued_by AS (
  SELECT g.*, c.family, c.call_key
  FROM gaps g
  JOIN (SELECT device_id, pid, start_ns, global_pid, correlation_id FROM memcpys
        UNION ALL SELECT device_id, pid, start_ns, global_pid, correlation_id FROM memsets) op
    ON op.device_id = g.device_id AND op.pid = g.pid AND op.start_ns = g.end_ns
  JOIN flood_calls c ON c.global_pid = op.global_pid AND c.correlation_id = op.correlation_id),
held_parts AS (
  SELECT pid, family, call_key, count(*) AS gaps_after, sum(call_ns) AS idle_in_calls_ns, sum(after_ns) AS after_ns,
         0 AS issue_ns
  FROM blocked_by GROUP BY ALL
  UNION ALL
  -- (the calls' time in a gap after a blocking call is that call's family's already)
  SELECT i.pid, i.family, i.call_key, 0, sum(CASE WHEN b.pid IS NULL THEN i.call_ns ELSE 0 END), 0,
         sum(CASE WHEN i.short_gap THEN greatest(i.host_ns - coalesce(i.after_ns, 0), 0) ELSE 0 END)
  FROM issued_by i LEFT JOIN blocked_by b ON b.pid = i.pid AND b.device_id = i.device_id AND b.end_ns = i.end_ns
  GROUP BY ALL),
-- the NVTX range holding most of a family's gaps (the launching thread's, as the budget places them)
places AS (
  SELECT pid, family, call_key, arg_max(nvtx_range, ns) AS top_range FROM (
    SELECT pid, family, call_key, nvtx_range, sum(duration_ns) AS ns FROM (
      SELECT pid, family, call_key, nvtx_range, duration_ns FROM blocked_by
      UNION ALL SELECT pid, family, call_key, nvtx_range, duration_ns FROM issued_by)
    WHERE nvtx_range IS NOT NULL GROUP BY ALL) GROUP BY ALL),
per_family AS (
  SELECT pid, family, call_key, any_value(device_id) AS device_id, count(*) FILTER (WHERE NOT companion) AS calls,
         mode(api) FILTER (WHERE NOT companion)::VARCHAR AS api, count(*) FILTER (WHERE companion) AS companion_syncs,
         sum(duration_ns) AS host_ns, median(duration_ns) FILTER (WHERE NOT companion) AS median_call_ns,
         median(bytes) AS median_bytes, sum(bytes) AS bytes, count(*) FILTER (WHERE waited) AS waited_copies
  FROM flood_calls GROUP BY pid, family, call_key),
-- the budget's host causes of each (device, process): launch overhead is what a launch flood holds
causes AS (
  SELECT device_id, pid, coalesce(sum(ns) FILTER (WHERE cause = 'launch'), 0) AS launch_idle_ns,
         coalesce(sum(ns) FILTER (WHERE cause = 'copy'), 0) AS copy_idle_ns,
         coalesce(sum(ns) FILTER (WHERE cause = 'sync'), 0) AS sync_idle_ns
  FROM budget WHERE kind = 'idle' GROUP BY ALL),
held AS (
  SELECT f.*, coalesce(h.gaps_after, 0) AS gaps_after, coalesce(h.idle_in_calls_ns, 0) AS idle_in_calls_ns,
         greatest(f.host_ns - coalesce(h.idle_in_calls_ns, 0), 0) AS busy_in_calls_ns,
         coalesce(h.after_ns, 0) AS after_ns, coalesce(h.issue_ns, 0) AS issue_ns,
         coalesce(h.idle_in_calls_ns, 0) + coalesce(h.after_ns, 0) + coalesce(h.issue_ns, 0) AS held_ns
  FROM per_family f
  LEFT JOIN (SELECT pid, family, call_key, sum(gaps_after) AS gaps_after, sum(idle_in_calls_ns) AS idle_in_calls_ns,
                    sum(after_ns) AS after_ns, sum(issue_ns) AS issue_ns FROM held_parts GROUP BY ALL) h
    USING (pid, family, call_key)),
ranked AS (
  SELECT h.*, row_number() OVER (PARTITION BY h.pid ORDER BY h.held_ns DESC, h.family, h.call_key) AS family_rank
  FROM held h)
SELECT r.device_id, r.pid, r.family, r.call_key, r.api,
       CASE r.family
         WHEN 'copy' THEN r.call_key || ' copies (' || r.api || CASE WHEN r.companion_syncs > 0
                          THEN ', each followed by a synchronization' ELSE '' END || ')'
         WHEN 'memset' THEN 'memsets (' || r.api || ')'
         WHEN 'sync' THEN r.api || ' synchronizations'
         ELSE r.api || ' polls' END AS what,
       -- the same, short, for the headline
       CASE r.family
         WHEN 'copy' THEN r.call_key || ' copies' || CASE WHEN r.companion_syncs > 0 THEN ' and syncs' ELSE '' END
         WHEN 'memset' THEN 'memsets'
         WHEN 'sync' THEN r.api || ' syncs'
         ELSE r.api || ' polls' END AS what_short,
       r.calls, st.steps, CAST(round(r.calls / nullif(st.steps, 0)) AS BIGINT) AS calls_per_step,
       coalesce(' (' || format('{:,}', CAST(round(r.calls / nullif(st.steps, 0)) AS BIGINT)) || ' per step)', '')
         AS per_step_text,
       r.companion_syncs, r.host_ns, r.median_call_ns, r.idle_in_calls_ns, r.busy_in_calls_ns,
       round(100.0 * r.busy_in_calls_ns / nullif(r.host_ns, 0), 1) AS busy_in_calls_pct,
       r.gaps_after, r.after_ns, r.issue_ns, r.held_ns, ss.window_ns,
       round(100.0 * r.held_ns / nullif(ss.window_ns, 0), 2) AS held_pct,
       r.median_bytes, r.bytes, r.waited_copies,
       coalesce(c.launch_idle_ns, 0) AS launch_idle_ns,
       round(100.0 * coalesce(c.launch_idle_ns, 0) / nullif(ss.window_ns, 0), 2) AS launch_idle_pct,
       r.family_rank, p.top_range,
       -- the family that holds the most GPU idle time, and more than launch overhead does
       r.family_rank = 1 AND r.held_ns > coalesce(c.launch_idle_ns, 0) AS sets_pace,
       -- what one call per step would still cost (the same idle time per call, once a step; for
       -- polls, per wait: a spin of many queries is one wait)
       greatest(r.held_ns - coalesce(st.steps, 0) * r.held_ns
                / CASE WHEN r.family = 'query' AND r.gaps_after > 0 THEN r.gaps_after ELSE r.calls END, 0)::BIGINT
         AS batched_saving_ns,
       (SELECT max(busy_pct) FROM steady_summary s WHERE s.pid = r.pid) AS steady_busy_pct
FROM ranked r JOIN ss USING (pid) LEFT JOIN st USING (pid)
LEFT JOIN causes c ON c.device_id = r.device_id AND c.pid = r.pid
LEFT JOIN places p ON p.pid = r.pid AND p.family = r.family AND p.call_key = r.call_key
ORDER BY r.held_ns DESC, r.pid, r.family, r.call_key
