-- Idle-gap root cause: for each GPU idle gap of a (device, process), what the host thread that
-- ended it (the one launching the next GPU operation) was doing meanwhile. Linear: prefix sums
-- of per-thread host states, looked up with ASOF joins at the gaps' edges.

-- Host calls that blocked the thread until the GPU caught up: synchronizations, and copy calls
-- between host and device that returned only after their copy finished on the GPU
-- (cudaMemcpy, or cudaMemcpyAsync from/to pageable memory: the `.item()` pattern).
CREATE TABLE blocking_calls AS
SELECT pid, tid, start_ns, end_ns, duration_ns, api, 'sync' AS kind
FROM api_calls WHERE category = 'sync' AND api NOT LIKE '%StreamWaitEvent%'
UNION ALL
SELECT pid, launch_tid, launch_start_ns, launch_end_ns, launch_end_ns - launch_start_ns, launch_api, 'copy ' || kind
FROM memcpys WHERE launch_end_ns >= end_ns AND launch_tid IS NOT NULL AND kind LIKE '%Host%';

-- What a thread does, as disjoint intervals: CUDA API calls and OS runtime calls, the outermost
-- call winning where they nest (a driver call inside a runtime call, a poll inside a sync).
CREATE TABLE host_states AS
WITH calls AS (
  SELECT pid, tid, start_ns, end_ns, api AS name,
         CASE category WHEN 'sync' THEN 'sync' WHEN 'memcpy' THEN 'copy' WHEN 'memset' THEN 'copy'
              WHEN 'launch' THEN 'launch' WHEN 'alloc' THEN 'allocation' WHEN 'free' THEN 'allocation'
              WHEN 'module' THEN 'module-loading' WHEN 'context' THEN 'module-loading' ELSE 'cuda-api' END AS state
  FROM api_calls
  UNION ALL
  SELECT pid, tid, start_ns, end_ns, name, 'os-call' FROM osrt_calls),
ordered AS (
  SELECT *, max(end_ns) OVER (PARTITION BY pid, tid ORDER BY start_ns, end_ns DESC, state, name
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM calls)
SELECT pid, tid, state, name, greatest(start_ns, coalesce(prev_end, start_ns)) AS start_ns, end_ns
FROM ordered WHERE prev_end IS NULL OR end_ns > prev_end;

-- Per thread, the time spent in each state before each interval (one running sum per state),
-- so one ASOF lookup per gap edge gives every state's time up to that instant.
CREATE TABLE host_state_cum AS
SELECT pid, tid, state, name, start_ns, end_ns,
       sum(CASE WHEN state = 'sync' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'sync' THEN end_ns - start_ns ELSE 0 END AS sync_before,
       sum(CASE WHEN state = 'copy' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'copy' THEN end_ns - start_ns ELSE 0 END AS copy_before,
       sum(CASE WHEN state = 'launch' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'launch' THEN end_ns - start_ns ELSE 0 END AS launch_before,
       sum(CASE WHEN state = 'allocation' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'allocation' THEN end_ns - start_ns ELSE 0 END AS allocation_before,
       sum(CASE WHEN state = 'module-loading' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'module-loading' THEN end_ns - start_ns ELSE 0 END AS module_before,
       sum(CASE WHEN state = 'cuda-api' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'cuda-api' THEN end_ns - start_ns ELSE 0 END AS api_before,
       sum(CASE WHEN state = 'os-call' THEN end_ns - start_ns ELSE 0 END) OVER w
         - CASE WHEN state = 'os-call' THEN end_ns - start_ns ELSE 0 END AS osrt_before
FROM host_states
-- inclusive running sums (they stream), minus the row's own time
WINDOW w AS (PARTITION BY pid, tid ORDER BY start_ns ROWS UNBOUNDED PRECEDING);

-- The thread that launches most of a process's GPU work: the stand-in when the operation ending
-- a gap has no known launching thread.
CREATE TABLE main_threads AS
SELECT pid, arg_max(launch_tid, n) AS tid FROM (
  SELECT pid, launch_tid, count(*) AS n FROM gpu_activity WHERE launch_tid IS NOT NULL GROUP BY ALL) GROUP BY pid;

CREATE TABLE raw_gaps AS
WITH g AS (
  SELECT device_id, pid, lag(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns) AS start_ns,
         start_ns AS end_ns
  FROM gpu_busy),
next_op AS (
  SELECT device_id, pid, start_ns, min(launch_tid) AS tid, any_value(global_pid) AS global_pid
  FROM gpu_activity GROUP BY ALL)
SELECT g.device_id, g.pid, g.start_ns, g.end_ns, g.end_ns - g.start_ns AS duration_ns,
       coalesce(n.tid, m.tid, g.pid) AS tid, coalesce(n.global_pid, 0) + coalesce(n.tid, m.tid, g.pid) AS global_tid,
       row_number() OVER (ORDER BY g.device_id, g.pid, g.start_ns) AS gap_id
FROM g LEFT JOIN next_op n ON n.device_id = g.device_id AND n.pid = g.pid AND n.start_ns = g.end_ns
LEFT JOIN main_threads m ON m.pid = g.pid
WHERE g.start_ns IS NOT NULL AND g.end_ns - g.start_ns >= (SELECT value FROM phase_settings WHERE name = 'min_gap_ns');

-- Time of each host state on the gap's thread inside the gap: prefix-sum differences between
-- the gap's end and its start.
CREATE TABLE gap_states AS
WITH edges AS (
  SELECT gap_id, pid, tid, start_ns AS ts, 0 AS side FROM raw_gaps
  UNION ALL
  SELECT gap_id, pid, tid, end_ns, 1 FROM raw_gaps),
looked AS (
  SELECT e.gap_id, e.side,
         coalesce(c.sync_before + CASE WHEN c.state = 'sync' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS sync,
         coalesce(c.copy_before + CASE WHEN c.state = 'copy' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS copy,
         coalesce(c.launch_before + CASE WHEN c.state = 'launch' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS launch,
         coalesce(c.allocation_before + CASE WHEN c.state = 'allocation' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS allocation,
         coalesce(c.module_before + CASE WHEN c.state = 'module-loading' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS module,
         coalesce(c.api_before + CASE WHEN c.state = 'cuda-api' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS api,
         coalesce(c.osrt_before + CASE WHEN c.state = 'os-call' THEN least(e.ts, c.end_ns) - c.start_ns ELSE 0 END, 0) AS osrt
  FROM edges e ASOF LEFT JOIN host_state_cum c ON c.pid = e.pid AND c.tid = e.tid AND c.start_ns <= e.ts)
SELECT gap_id,
       sum(CASE side WHEN 1 THEN sync ELSE -sync END) AS sync_ns,
       sum(CASE side WHEN 1 THEN copy ELSE -copy END) AS copy_ns,
       sum(CASE side WHEN 1 THEN launch ELSE -launch END) AS launch_ns,
       sum(CASE side WHEN 1 THEN allocation ELSE -allocation END) AS allocation_ns,
       sum(CASE side WHEN 1 THEN module ELSE -module END) AS module_ns,
       sum(CASE side WHEN 1 THEN api ELSE -api END) AS api_ns,
       sum(CASE side WHEN 1 THEN osrt ELSE -osrt END) AS osrt_ns
FROM looked GROUP BY gap_id;

-- One row per GPU idle gap of at least min_gap_ns (phase_settings), with its cause: the host
-- state that took most of the gap on the thread that ended it; time in no traced call is
-- 'nvtx' when an NVTX range was open there (host code inside it), else 'untraced'.
CREATE TABLE idle_gaps AS
WITH per_state AS (
  SELECT g.*, greatest(g.sync_ns, g.copy_ns, g.launch_ns, g.allocation_ns, g.module_ns, g.api_ns, g.osrt_ns) AS top_ns,
         CASE greatest(g.sync_ns, g.copy_ns, g.launch_ns, g.allocation_ns, g.module_ns, g.api_ns, g.osrt_ns)
           WHEN 0 THEN NULL
           WHEN g.sync_ns THEN 'sync'
           WHEN g.copy_ns THEN 'copy'
           WHEN g.launch_ns THEN 'launch'
           WHEN g.allocation_ns THEN 'allocation'
           WHEN g.module_ns THEN 'module-loading'
           WHEN g.api_ns THEN 'cuda-api'
           WHEN g.osrt_ns THEN 'os-call' END AS top_state
  FROM gap_states g),
-- the call of the top state last entered before the gap ended names it
named AS (
  SELECT p.*, h.name AS top_name
  FROM (SELECT p.*, r.pid, r.tid, r.end_ns AS gap_end_ns FROM per_state p JOIN raw_gaps r USING (gap_id)) p
  ASOF LEFT JOIN host_states h ON h.pid = p.pid AND h.tid = p.tid AND h.state = p.top_state AND h.start_ns <= p.gap_end_ns),
mid AS (
  SELECT g.gap_id, g.global_tid, g.start_ns + (g.end_ns - g.start_ns) // 2 AS ts FROM raw_gaps g),
mid_depth AS (
  SELECT m.*, p.open_after, p.last_seq
  FROM mid m ASOF LEFT JOIN nvtx_stack_points p ON p.global_tid = m.global_tid AND p.ts <= m.ts),
mid_range AS (
  SELECT d.gap_id, t.name AS nvtx_range
  FROM mid_depth d ASOF LEFT JOIN nvtx_tree t
    ON t.global_tid = d.global_tid AND t.depth = d.open_after - 1 AND t.start_seq <= d.last_seq
  WHERE d.open_after > 0),
blocked AS (
  SELECT g.gap_id, b.api AS after_blocking_api, b.kind AS after_blocking_kind, b.end_ns AS blocking_end_ns,
         b.duration_ns AS blocking_wait_ns
  FROM raw_gaps g ASOF JOIN blocking_calls b ON b.pid = g.pid AND b.tid = g.tid AND b.end_ns <= g.end_ns
  WHERE b.end_ns >= g.start_ns),
stepped AS (
  SELECT g.gap_id, s.step
  FROM raw_gaps g ASOF JOIN steps s ON s.pid = g.pid AND s.start_ns <= g.start_ns
  WHERE g.start_ns < s.end_ns),
classed AS (
  SELECT g.*, coalesce(p.sync_ns, 0) AS sync_ns, coalesce(p.copy_ns, 0) AS copy_ns,
         coalesce(p.launch_ns, 0) AS launch_ns, coalesce(p.allocation_ns, 0) AS allocation_ns,
         coalesce(p.module_ns, 0) AS module_ns, coalesce(p.api_ns, 0) AS api_ns, coalesce(p.osrt_ns, 0) AS osrt_ns,
         p.top_state, p.top_name, coalesce(p.top_ns, 0) AS top_ns, r.nvtx_range,
         b.after_blocking_api, b.after_blocking_kind, b.blocking_end_ns, b.blocking_wait_ns, st.step
  FROM raw_gaps g LEFT JOIN named p USING (gap_id) LEFT JOIN mid_range r USING (gap_id)
  LEFT JOIN blocked b USING (gap_id) LEFT JOIN stepped st USING (gap_id))
SELECT c.device_id, c.pid, c.tid, c.start_ns, c.end_ns, c.duration_ns,
       (c.start_ns >= ss.start_ns AND c.end_ns <= ss.end_ns) AS in_steady_state, c.step,
       CASE WHEN c.top_ns > c.duration_ns - c.sync_ns - c.copy_ns - c.launch_ns - c.allocation_ns - c.module_ns
                           - c.api_ns - c.osrt_ns THEN c.top_state
            WHEN c.nvtx_range IS NOT NULL THEN 'nvtx' ELSE 'untraced' END AS cause,
       CASE WHEN c.top_ns > c.duration_ns - c.sync_ns - c.copy_ns - c.launch_ns - c.allocation_ns - c.module_ns
                           - c.api_ns - c.osrt_ns THEN c.top_name
            ELSE c.nvtx_range END AS detail,
       c.nvtx_range, c.sync_ns, c.copy_ns, c.launch_ns, c.allocation_ns, c.module_ns, c.api_ns, c.osrt_ns,
       c.duration_ns - c.sync_ns - c.copy_ns - c.launch_ns - c.allocation_ns - c.module_ns - c.api_ns - c.osrt_ns
         AS host_ns,
       c.after_blocking_api, c.after_blocking_kind, c.blocking_end_ns, c.blocking_wait_ns
FROM classed c LEFT JOIN steady_state ss ON ss.pid = c.pid;

-- Per (device, process, cause, detail) over the steady state: the time that removing the cause
-- would give back to the GPU (gaps of at least min_gap_ns).
CREATE TABLE idle_gap_causes AS
SELECT g.device_id, g.pid, g.cause, g.detail, count(*) AS gaps, sum(g.duration_ns) AS idle_ns,
       median(g.duration_ns) AS median_gap_ns, max(g.duration_ns) AS max_gap_ns,
       count(*) FILTER (WHERE g.after_blocking_api IS NOT NULL) AS after_blocking_gaps,
       any_value(ss.end_ns - ss.start_ns) AS window_ns
FROM idle_gaps g JOIN steady_state ss ON ss.pid = g.pid
WHERE g.in_steady_state
GROUP BY g.device_id, g.pid, g.cause, g.detail;

-- A gap cause in words, for rule messages: "the host was mostly <text>".
CREATE MACRO gap_cause_text(cause, detail) AS
  CASE cause
    WHEN 'nvtx' THEN 'running code inside NVTX range "' || detail || '" with no CUDA call (Python, framework or host work)'
    WHEN 'untraced' THEN 'running code outside any NVTX range or traced call'
    WHEN 'launch' THEN 'inside launch calls (' || detail || ')'
    WHEN 'sync' THEN 'blocked in ' || detail
    WHEN 'copy' THEN 'inside the copy call ' || detail
    WHEN 'os-call' THEN 'in the OS call ' || detail || ' (waiting on another thread, a process or I/O)'
    WHEN 'allocation' THEN 'allocating or freeing memory (' || detail || ')'
    WHEN 'module-loading' THEN 'loading modules or creating a context (' || detail || ')'
    ELSE 'inside the CUDA call ' || coalesce(detail, '?') END;

-- Intermediates live in the database file, not in memory (temporary tables do not spill
-- until DuckDB's memory limit): dropped once used.
DROP TABLE gap_states;
DROP TABLE raw_gaps;
DROP TABLE main_threads;
DROP TABLE host_state_cum;
DROP TABLE host_states;
DROP TABLE nvtx_stack_points;
