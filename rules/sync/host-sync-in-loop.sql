-- One row per (process, blocking call) in the steady state: how many steps make the call, and
-- the GPU idle time in the gaps that begin as it returns (the GPU drained while the host waited).
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
st AS (
  SELECT s.pid, count(*) AS steps FROM steps s JOIN ss USING (pid)
  WHERE s.start_ns >= ss.start_ns AND s.start_ns < ss.end_ns GROUP BY s.pid),
calls AS (
  SELECT b.pid, b.api, b.kind, b.duration_ns, s.step
  FROM blocking_calls b JOIN ss USING (pid)
  ASOF LEFT JOIN steps s ON s.pid = b.pid AND s.start_ns <= b.start_ns
  WHERE b.start_ns >= ss.start_ns AND b.start_ns < ss.end_ns),
per_call AS (
  SELECT pid, api, any_value(kind) AS kind, count(*) AS calls, sum(duration_ns) AS wait_ns,
         count(DISTINCT step) AS steps_with_call
  FROM calls GROUP BY pid, api),
-- Without the call the host would have run ahead by the time it waited, so each gap after it
-- shrinks by at most that wait: min(gap, wait) is the time at stake.
after AS (
  SELECT pid, after_blocking_api AS api, count(*) AS idle_gaps, sum(duration_ns) AS idle_after_ns,
         sum(least(duration_ns, blocking_wait_ns)) AS recoverable_ns
  FROM idle_gaps WHERE in_steady_state AND after_blocking_api IS NOT NULL GROUP BY ALL)
SELECT c.pid, c.api, c.kind, c.calls, c.wait_ns, st.steps, c.steps_with_call,
       round(100.0 * c.steps_with_call / nullif(st.steps, 0), 2) AS steps_pct,
       CAST(round(c.calls / nullif(st.steps, 0)) AS BIGINT) AS calls_per_step,
       coalesce(a.idle_gaps, 0) AS idle_gaps, coalesce(a.idle_after_ns, 0) AS idle_after_ns,
       coalesce(a.recoverable_ns, 0) AS recoverable_ns, ss.window_ns,
       round(100.0 * coalesce(a.recoverable_ns, 0) / nullif(ss.window_ns, 0), 2) AS recoverable_pct
FROM per_call c JOIN ss USING (pid) LEFT JOIN st USING (pid) LEFT JOIN after a USING (pid, api)
ORDER BY recoverable_ns DESC, c.pid, c.api
