-- One row per idle gap between busy intervals of a (device, process), largest first.
-- Busy = the union of kernels, memcpys, memsets and graph replays (gpu_busy).
-- Verdicts judge the steady state (steady_state: start-up and the first step excluded);
-- start-up is reported on its own.
WITH win AS (SELECT span_ns FROM trace_window),
busy AS (SELECT device_id, pid, sum(duration_ns) AS busy_ns FROM gpu_busy GROUP BY ALL),
-- idle_gaps (22_idle_gaps.sql) holds every gap of at least the dispatch_gap_ns setting already;
-- only a lower threshold needs the gaps recomputed from the busy intervals
ingest_min AS (SELECT value FROM phase_settings WHERE name = 'dispatch_gap_ns'),
gaps AS (
  SELECT device_id, pid, start_ns, end_ns FROM idle_gaps WHERE $min_gap_ns >= (SELECT value FROM ingest_min)
  UNION ALL
  SELECT device_id, pid, lag(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns) AS start_ns,
         start_ns AS end_ns
  FROM gpu_busy WHERE $min_gap_ns < (SELECT value FROM ingest_min)),
steady AS (
  SELECT b.device_id, b.pid, ss.start_ns AS steady_start_ns, ss.end_ns - ss.start_ns AS steady_window_ns,
         ss.startup_ns, ss.method AS steady_method, ss.module_load_ns, ss.first_step_ns,
         coalesce(sb.busy_ns, 0) AS steady_busy_ns
  FROM busy b JOIN steady_state ss USING (pid) LEFT JOIN steady_busy sb USING (pid, device_id)),
listed AS (
  SELECT g.device_id, g.pid, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS duration_ns,
         coalesce(g.start_ns >= s.steady_start_ns AND g.end_ns <= s.steady_start_ns + s.steady_window_ns, false)
           AS in_steady_state
  FROM gaps g LEFT JOIN steady s USING (device_id, pid)
  WHERE g.start_ns IS NOT NULL AND g.end_ns - g.start_ns > $min_gap_ns),
steady_gaps AS (
  SELECT device_id, pid, count(*) AS steady_gaps, sum(duration_ns) AS steady_gap_ns
  FROM listed WHERE in_steady_state GROUP BY ALL),
-- what the host did during the steady-state gaps listed here (idle_gaps, 22_idle_gaps.sql)
causes AS (
  SELECT device_id, pid, first(gap_cause_text(cause, detail) ORDER BY ns DESC, cause, detail)
           FILTER (WHERE gap_cause_text(cause, detail) IS NOT NULL) AS top_cause_text, max(ns) AS top_cause_ns
  FROM (SELECT device_id, pid, cause, detail, sum(duration_ns) AS ns FROM idle_gaps
        WHERE in_steady_state AND duration_ns > $min_gap_ns GROUP BY ALL)
  GROUP BY ALL)
SELECT l.device_id, l.pid, l.start_ns, l.end_ns, l.duration_ns,
       round(100.0 * l.duration_ns / win.span_ns, 2) AS gap_share_pct,
       b.busy_ns, win.span_ns - b.busy_ns AS idle_ns, win.span_ns,
       round(100.0 * b.busy_ns / win.span_ns, 2) AS utilization_pct,
       round(100.0 * (win.span_ns - b.busy_ns) / win.span_ns, 2) AS idle_pct,
       row_number() OVER (PARTITION BY l.device_id, l.pid ORDER BY l.duration_ns DESC, l.start_ns) AS gap_rank,
       l.in_steady_state,
       CASE WHEN l.in_steady_state THEN row_number() OVER (PARTITION BY l.device_id, l.pid, l.in_steady_state
                                                          ORDER BY l.duration_ns DESC, l.start_ns) END AS steady_gap_rank,
       CASE WHEN NOT l.in_steady_state AND l.start_ns < s.steady_start_ns
            THEN row_number() OVER (PARTITION BY l.device_id, l.pid, l.in_steady_state, l.start_ns < s.steady_start_ns
                                    ORDER BY l.duration_ns DESC, l.start_ns) END AS startup_gap_rank,
       s.steady_method, s.steady_start_ns, s.steady_window_ns, s.steady_busy_ns,
       s.steady_window_ns - s.steady_busy_ns AS steady_idle_ns,
       round(100.0 * (s.steady_window_ns - s.steady_busy_ns) / nullif(s.steady_window_ns, 0), 2) AS steady_idle_pct,
       coalesce(sg.steady_gaps, 0) AS steady_gaps, coalesce(sg.steady_gap_ns, 0) AS steady_gap_ns,
       round(100.0 * coalesce(sg.steady_gap_ns, 0) / nullif(s.steady_window_ns, 0), 2) AS steady_gap_pct,
       s.startup_ns, s.module_load_ns, s.first_step_ns,
       coalesce(c.top_cause_text, 'not traced') AS top_cause_text, coalesce(c.top_cause_ns, 0) AS top_cause_ns,
       CAST($min_gap_ns AS BIGINT) AS min_gap_ns
FROM listed l JOIN busy b USING (device_id, pid) CROSS JOIN win
LEFT JOIN steady s USING (device_id, pid) LEFT JOIN steady_gaps sg USING (device_id, pid)
LEFT JOIN causes c USING (device_id, pid)
ORDER BY l.duration_ns DESC, l.start_ns
