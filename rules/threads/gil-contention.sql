-- One row per (device, process) whose GPU idles while a thread that launches its work waits for
-- a lock held by another thread of the process (lock_waits: in a Python process, the GIL), with
-- the other thread most likely to hold it: the one whose NVTX ranges cover most of the window.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
feeding AS (
  SELECT g.device_id, g.pid, g.tid, count(*) AS gaps, sum(g.duration_ns) AS idle_ns
  FROM idle_gaps g JOIN lock_waits l ON l.pid = g.pid AND l.tid = g.tid
  WHERE g.in_steady_state AND g.cause = 'os-call' AND g.detail = 'pthread_cond_timedwait'
  GROUP BY ALL),
per_device AS (
  SELECT device_id, pid, sum(gaps)::BIGINT AS gaps, sum(idle_ns)::BIGINT AS idle_ns,
         count(*) AS waiting_threads, arg_max(tid, idle_ns) AS tid
  FROM feeding GROUP BY ALL),
-- the likely holder: the other thread of the process that runs most, outside OS calls, inside its
-- innermost NVTX ranges (a step range names the loop, not the work), and the range it runs in most
leaves AS (
  SELECT r.range_id, r.pid, r.tid, r.name, greatest(r.start_ns, ss.start_ns) AS start_ns,
         least(r.end_ns, ss.end_ns) AS end_ns
  FROM nvtx_range_stats r JOIN ss USING (pid)
  WHERE r.children = 0 AND r.end_ns > ss.start_ns AND r.start_ns < ss.end_ns
    AND r.pid IN (SELECT pid FROM per_device)
    AND r.name NOT IN (SELECT DISTINCT name FROM steps WHERE pid = r.pid AND name IS NOT NULL)),
running AS (
  SELECT l.pid, l.tid, l.name,
         sum(l.end_ns - l.start_ns) - coalesce(sum(o.ns), 0) AS ns
  FROM leaves l
  LEFT JOIN (SELECT l2.range_id, sum(least(o.end_ns, l2.end_ns) - greatest(o.start_ns, l2.start_ns)) AS ns
             FROM leaves l2 JOIN osrt_calls o ON o.pid = l2.pid AND o.tid = l2.tid
               AND o.end_ns > l2.start_ns AND o.start_ns < l2.end_ns
             GROUP BY l2.range_id) o ON o.range_id = l.range_id
  GROUP BY l.pid, l.tid, l.name),
holders AS (
  SELECT p.device_id, p.pid, arg_max(r.tid, r.ns) AS holder_tid, arg_max(r.name, r.ns) AS holder_range,
         max(r.ns) AS holder_ns
  FROM per_device p JOIN running r ON r.pid = p.pid AND r.tid <> p.tid GROUP BY ALL)
SELECT p.device_id, p.pid, p.tid, l.calls, l.timeouts, l.cap_ns, l.wait_ns, l.python,
       CASE WHEN l.python THEN 'the Python GIL' ELSE 'a lock another thread holds' END AS lock,
       p.waiting_threads, p.gaps, p.idle_ns, ss.window_ns,
       round(100.0 * p.idle_ns / ss.window_ns, 2) AS idle_window_pct,
       h.holder_tid, h.holder_range,
       round(100.0 * h.holder_ns / ss.window_ns, 1) AS holder_pct,
       CASE WHEN h.holder_tid IS NULL THEN 'other threads of the process'
            ELSE 'thread ' || h.holder_tid || ' in "' || h.holder_range || '"' END AS holder
FROM per_device p JOIN ss USING (pid) JOIN lock_waits l ON l.pid = p.pid AND l.tid = p.tid
LEFT JOIN holders h ON h.device_id = p.device_id AND h.pid = p.pid
ORDER BY p.idle_ns DESC, p.device_id, p.pid
