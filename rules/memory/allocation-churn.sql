-- One row per process with CUDA allocation or free calls in its steady state (stream-ordered
-- ones only counted apart).
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
traced AS (SELECT DISTINCT pid FROM memory_events),
freed AS (SELECT DISTINCT pid, correlation_id FROM memory_events WHERE operation = 'free'),
in_window AS (
  SELECT a.pid, a.api, a.category, a.start_ns, a.duration_ns, a.correlation_id,
         -- stream-ordered calls (cudaMallocAsync, cudaFreeAsync, cuMemAllocFromPoolAsync, ...)
         -- take from and return to a pool without synchronizing: they are the fix, not churn
         a.api ILIKE '%Async%' AS stream_ordered
  FROM api_calls a JOIN ss USING (pid)
  WHERE a.category IN ('alloc', 'free') AND a.start_ns >= ss.start_ns AND a.start_ns < ss.end_ns),
stream_ordered AS (SELECT pid, count(*) AS stream_ordered_calls FROM in_window WHERE stream_ordered GROUP BY pid),
calls AS (
  SELECT a.pid, a.api, a.category, a.start_ns, a.duration_ns
  FROM in_window a
  WHERE NOT a.stream_ordered
    -- cudaFree(NULL), which PyTorch and cuBLAS call to make sure a context exists, frees
    -- nothing: with memory-usage tracing on, a cudaFree without a free event is one of those
    AND NOT (a.api IN ('cudaFree', 'cuMemFree') AND a.pid IN (SELECT pid FROM traced)
             AND NOT EXISTS (SELECT 1 FROM freed f WHERE f.pid = a.pid AND f.correlation_id = a.correlation_id))),
step_units AS (
  SELECT st.pid, st.start_ns, 'step' AS unit_kind
  FROM steps st JOIN ss USING (pid)
  WHERE st.start_ns >= ss.start_ns AND st.start_ns < ss.end_ns),
-- without steps, "every step" becomes "all through the steady state": equal time slices
slice_units AS (
  SELECT ss.pid, ss.start_ns + (ss.window_ns * i) // $slices AS start_ns, 'slice' AS unit_kind
  FROM ss CROSS JOIN range($slices) AS t(i)
  WHERE ss.pid NOT IN (SELECT pid FROM step_units)),
units AS (SELECT * FROM step_units UNION ALL SELECT * FROM slice_units),
unit_counts AS (SELECT pid, any_value(unit_kind) AS unit_kind, count(*) AS units FROM units GROUP BY pid),
placed AS (
  SELECT c.*, u.start_ns AS unit_start_ns
  FROM calls c ASOF LEFT JOIN units u ON u.pid = c.pid AND c.start_ns >= u.start_ns),
allocated AS (
  SELECT e.pid, sum(e.bytes) AS alloc_bytes
  FROM memory_events e JOIN ss USING (pid)
  WHERE e.operation = 'alloc' AND e.ts_ns >= ss.start_ns AND e.ts_ns < ss.end_ns GROUP BY e.pid),
per_process AS (
  SELECT pid, count(*) AS calls, count(*) FILTER (WHERE category = 'alloc') AS alloc_calls,
         count(*) FILTER (WHERE category = 'free') AS free_calls, sum(duration_ns) AS api_ns,
         max(duration_ns) AS max_call_ns, mode(api) AS top_api,
         count(*) FILTER (WHERE regexp_matches(api, 'HostAlloc|MallocHost|HostRegister|MemHostAlloc')) AS host_alloc_calls,
         count(DISTINCT unit_start_ns) AS units_with_calls
  FROM placed GROUP BY pid)
SELECT p.pid, u.unit_kind, u.units, p.units_with_calls,
       round(100.0 * p.units_with_calls / nullif(u.units, 0), 1) AS unit_share_pct,
       p.calls, p.alloc_calls, p.free_calls, round(p.calls / nullif(u.units, 0), 1) AS calls_per_unit,
       p.top_api, p.host_alloc_calls, p.api_ns, p.max_call_ns, coalesce(a.alloc_bytes, 0) AS alloc_bytes, ss.window_ns,
       round(100.0 * p.api_ns / nullif(ss.window_ns, 0), 2) AS window_share_pct,
       coalesce(o.stream_ordered_calls, 0) AS stream_ordered_calls
FROM per_process p JOIN ss USING (pid) JOIN unit_counts u USING (pid) LEFT JOIN allocated a USING (pid)
LEFT JOIN stream_ordered o USING (pid)
ORDER BY p.api_ns DESC, p.pid
