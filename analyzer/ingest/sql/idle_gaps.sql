-- include: normalize, phases

-- Idle-gap root cause: for each GPU idle gap of a (device, process), what the host thread that
-- ended it (the one launching the next GPU operation) was doing meanwhile. Linear: per-thread
-- host states found with ASOF joins at the gaps' edges, the overlaps summed per gap.

-- One row per host call that blocked its thread until the GPU caught up: synchronizations
-- (but not stream-wait-event, which does not block the host), copy calls between host and
-- device that returned only after their copy finished on the GPU (cudaMemcpy, or
-- cudaMemcpyAsync from/to pageable memory: the `.item()` pattern), and polls: an event or
-- stream query that succeeds after back-to-back not-ready ones (the thread spun until the GPU
-- caught up), timed from the first query of the run.
-- sources: CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id
-- @column tid: OS thread id of the call
-- @column start_ns: call start on the session clock, ns
-- @column end_ns: call end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column api: API name without version suffix
-- @column kind: sync, poll, or 'copy ' and the copy kind (copy Device-to-Host, ...)
CREATE TABLE blocking_calls AS
-- each query with the not-ready ones before it since the thread's last successful query of
-- that API (run); a spin is at least one not-ready query, each within 100 us of the one before
-- (a query now and then, as a caching allocator makes, is not a wait)
WITH queries AS (
  SELECT pid, tid, api, start_ns, end_ns, return_value, start_ns - lag(end_ns) OVER w AS since_prev_ns,
         coalesce(lag(return_value) OVER w = 0, true) AS opens_run,
         coalesce(sum((return_value = 0)::INTEGER) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS run
  FROM api_calls WHERE category IN ('event', 'stream') AND api LIKE '%Query'
  WINDOW w AS (PARTITION BY pid, tid, api ORDER BY start_ns)),
polls AS (
  SELECT pid, tid, api, min(start_ns) AS start_ns, max(end_ns) AS end_ns
  FROM queries GROUP BY pid, tid, api, run
  HAVING count(*) >= 2 AND bool_or(return_value = 0) AND max(since_prev_ns) FILTER (WHERE NOT opens_run) <= 100000)
SELECT pid, tid, start_ns, end_ns, duration_ns, api, 'sync'::call_label AS kind
FROM api_calls WHERE category = 'sync' AND api NOT LIKE '%StreamWaitEvent%'
UNION ALL
SELECT pid, launch_tid, launch_start_ns, launch_end_ns, launch_end_ns - launch_start_ns, launch_api, ('copy ' || kind)::call_label
FROM memcpys WHERE launch_end_ns >= end_ns AND launch_tid IS NOT NULL AND kind LIKE '%Host%'
UNION ALL
SELECT pid, tid, start_ns, end_ns, end_ns - start_ns, api, 'poll'::call_label FROM polls;

-- Per (device, process), the steady state's kernels launched one by one (not replayed in a CUDA
-- graph) that outlast any launch call's own cost (sync_launch_min_kernel_ns), and how many of their
-- launch calls returned only after the kernel had finished. An asynchronous launch returns while its
-- kernel is queued or running (one stuck behind a full launch queue returns while older work runs,
-- long before its own kernel ends); a launch that returns after its kernel waited for it: launches
-- made synchronous by CUDA_LAUNCH_BLOCKING=1, a debugger or a sanitizer.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column kernels: steady-state kernels of at least sync_launch_min_kernel_ns with a launch call of their own, count
-- @column waited: of them, kernels whose launch call ended at or after the kernel did, count
-- @column waited_pct: waited over kernels, %
-- @column waited_ns: host time those launch calls spent after their kernel started, ns
-- @column synchronous: true when waited_pct is at least sync_launch_min_pct: every launch waits for
-- its kernel, so the host can never queue work ahead of the GPU
CREATE TABLE launch_waits AS
SELECT k.device_id, k.pid, count(*) AS kernels, count(*) FILTER (WHERE k.launch_end_ns >= k.end_ns) AS waited,
       round(100.0 * count(*) FILTER (WHERE k.launch_end_ns >= k.end_ns) / count(*), 2) AS waited_pct,
       coalesce(sum(k.launch_end_ns - greatest(k.start_ns, k.launch_start_ns)) FILTER (WHERE k.launch_end_ns >= k.end_ns), 0)::BIGINT
         AS waited_ns,
       100.0 * count(*) FILTER (WHERE k.launch_end_ns >= k.end_ns) / count(*)
         >= (SELECT value FROM phase_settings WHERE name = 'sync_launch_min_pct') AS synchronous
FROM kernels k JOIN steady_state s ON s.pid = k.pid
WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns AND k.graph_id IS NULL AND k.launch_end_ns IS NOT NULL
  AND k.duration_ns >= (SELECT value FROM phase_settings WHERE name = 'sync_launch_min_kernel_ns')
GROUP BY k.device_id, k.pid;

-- The thread that launches most of a process's GPU work: the stand-in when the operation ending
-- a gap has no known launching thread.
CREATE TEMP TABLE main_threads AS
SELECT pid, first(launch_tid ORDER BY n DESC, launch_tid) AS tid FROM (
  SELECT pid, launch_tid, count(*) AS n FROM gpu_activity WHERE launch_tid IS NOT NULL GROUP BY ALL) GROUP BY pid;

-- A gap runs from the end of one busy interval to the start of the next: the openers of
-- gpu_busy (10_normalize.sql) carry both edges and the thread that launched the next operation
-- (the lowest launching thread among those starting there). Without a device or process there
-- is no next operation to match, as with an equi-join. gap_id is any unique number.
CREATE TABLE raw_gaps AS
SELECT o.device_id, o.pid, o.prev_end AS start_ns, o.start_ns AS end_ns, o.start_ns - o.prev_end AS duration_ns,
       coalesce(n.tid, m.tid, o.pid) AS tid, coalesce(n.global_pid, 0) + coalesce(n.tid, m.tid, o.pid) AS global_tid,
       o.kind AS next_kind, row_number() OVER () AS gap_id
FROM gpu_openers o
CROSS JOIN LATERAL (SELECT CASE WHEN o.device_id IS NOT NULL AND o.pid IS NOT NULL THEN o.launch_tid END AS tid,
                           CASE WHEN o.device_id IS NOT NULL AND o.pid IS NOT NULL THEN o.global_pid END AS global_pid) n
LEFT JOIN main_threads m ON m.pid = o.pid
WHERE o.prev_end IS NOT NULL AND o.start_ns - o.prev_end >= (SELECT value FROM phase_settings WHERE name = 'dispatch_gap_ns');

-- Host states, coded in the order of their names (so that sorting by code sorts by name).
CREATE TEMP TABLE host_state_names(code UTINYINT, state VARCHAR);
INSERT INTO host_state_names VALUES (1, 'allocation'), (2, 'copy'), (3, 'cuda-api'), (4, 'launch'),
  (5, 'module-loading'), (6, 'os-call'), (7, 'sync');

-- Threads that end some gap: only their host states are ever looked at.
CREATE TEMP TABLE gap_threads AS
SELECT pid, tid, row_number() OVER () AS thread_no FROM (SELECT DISTINCT pid, tid FROM raw_gaps);

-- Each CUDA graph capture of a gap thread, as one call: from its stream's Begin Capture to the end
-- of the last End Capture or instantiation after it (before the thread's next capture), and on to
-- the graph's launch when that comes within the capture's own length after it (the capture's
-- tail: torch.cuda.graph's exit, the replay's set-up). Launches, allocations and host code inside
-- it build a graph instead of feeding the GPU, so the capture holds them, as the outermost call
-- (host_states), named by its Begin Capture call.
CREATE TEMP TABLE graph_captures AS
WITH marks AS (
  SELECT a.pid, a.tid, a.start_ns, a.end_ns, a.api, a.category = 'launch' AS launch,
         sum((a.api LIKE '%StreamBeginCapture%')::INTEGER) OVER (PARTITION BY a.pid, a.tid ORDER BY a.start_ns, a.end_ns)
           AS capture
  FROM api_calls a SEMI JOIN gap_threads g ON g.pid = a.pid AND g.tid = a.tid
  WHERE (a.category IN ('stream', 'graph')
         AND (a.api LIKE '%StreamBeginCapture%' OR a.api LIKE '%StreamEndCapture%' OR a.api LIKE '%GraphInstantiate%'))
     OR (a.category = 'launch' AND a.api LIKE '%GraphLaunch%')),
built AS (
  SELECT *, max(end_ns) FILTER (WHERE NOT launch) OVER (PARTITION BY pid, tid, capture) AS built_ns,
         min(start_ns) FILTER (WHERE NOT launch) OVER (PARTITION BY pid, tid, capture) AS begin_ns
  FROM marks WHERE capture > 0)
SELECT pid, tid, min(start_ns) FILTER (WHERE NOT launch) AS start_ns,
       coalesce(min(start_ns) FILTER (WHERE launch AND start_ns >= built_ns AND start_ns - built_ns <= built_ns - begin_ns),
                max(end_ns) FILTER (WHERE NOT launch)) AS end_ns,
       first(api ORDER BY start_ns) FILTER (WHERE NOT launch) AS name
FROM built GROUP BY pid, tid, capture HAVING count(*) FILTER (WHERE NOT launch) > 0;

-- What a thread does, as disjoint intervals: CUDA API calls and OS runtime calls, the outermost
-- call winning where they nest (a driver call inside a runtime call, a poll inside a sync, the
-- launches inside a graph capture).
-- k numbers the calls in start order, thread by thread (thread_no * 2^32 + position), skipping
-- the nested calls dropped: states are disjoint, so their starts and ends both increase with k.
CREATE TABLE host_states AS
WITH calls AS (
  SELECT g.thread_no, a.start_ns, a.end_ns, a.api AS name,
         CASE a.category WHEN 'sync' THEN 7 WHEN 'memcpy' THEN 2 WHEN 'memset' THEN 2 WHEN 'launch' THEN 4
              WHEN 'alloc' THEN 1 WHEN 'free' THEN 1 WHEN 'module' THEN 5 WHEN 'context' THEN 5
              -- an event or stream query in an idle gap is a thread polling for the GPU: a wait
              ELSE CASE WHEN a.category IN ('event', 'stream') AND a.api LIKE '%Query' THEN 7 ELSE 3 END
              END::UTINYINT AS code
  FROM api_calls a JOIN gap_threads g ON g.pid = a.pid AND g.tid = a.tid
  UNION ALL
  SELECT g.thread_no, o.start_ns, o.end_ns, o.name, 6::UTINYINT
  FROM osrt_calls o JOIN gap_threads g ON g.pid = o.pid AND g.tid = o.tid
  UNION ALL
  SELECT g.thread_no, c.start_ns, c.end_ns, c.name, 3::UTINYINT
  FROM graph_captures c JOIN gap_threads g ON g.pid = c.pid AND g.tid = c.tid),
ordered AS (
  SELECT thread_no, start_ns, end_ns, code, name,
         max(end_ns) OVER w AS prev_end, (thread_no << 32) + row_number() OVER w AS k
  FROM calls
  -- names are labels, which sort as their strings (10_normalize.sql)
  WINDOW w AS (PARTITION BY thread_no ORDER BY start_ns, end_ns DESC, code, name
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
SELECT thread_no, k, code, name, greatest(start_ns, coalesce(prev_end, start_ns)) AS start_ns, end_ns
FROM ordered WHERE prev_end IS NULL OR end_ns > prev_end;

-- Each gap with the range of host states that can overlap it, and its slice. Every state
-- overlapping a gap lies between the last state started at or before the end of the previous gap
-- on that device and thread, and the last one started at or before this gap's end (one ASOF
-- lookup per gap): over a device's gaps these ranges add up to at most gaps + states, so
-- expanding them is linear. A slice is 500,000 consecutive gaps in (device, thread, time) order,
-- so it covers a run of consecutive host states: gap_states handles one slice per statement,
-- which keeps its per-gap hash join and aggregate within the ingest's memory limit (past it
-- they spill, and at 1e7 gaps one statement took twice the time per gap). The previous gap and
-- the row number come from one stream sorted in that order (lag() kept where the row before is
-- of the same device and thread), not from a window partitioned by (device, thread), which sorts
-- each partition apart.
CREATE TABLE gap_ranges AS
WITH last_state AS (
  SELECT g.gap_id, g.device_id, t.thread_no, g.start_ns, g.end_ns, h.k AS k_last
  FROM raw_gaps g JOIN gap_threads t ON t.pid = g.pid AND t.tid = g.tid
  ASOF JOIN host_states h ON h.thread_no = t.thread_no AND h.start_ns <= g.end_ns)
SELECT gap_id, start_ns, end_ns, k_last,
       coalesce(CASE WHEN lag(device_id) OVER () IS NOT DISTINCT FROM device_id AND lag(thread_no) OVER () = thread_no
                     THEN lag(k_last) OVER () END, thread_no << 32) AS k_first,
       ((row_number() OVER () - 1) // 500000)::INTEGER AS slice
FROM (SELECT * FROM last_state ORDER BY device_id NULLS FIRST, thread_no, start_ns);

-- Time of each host state on the gap's thread inside the gap, over its range (gap_ranges). The
-- top state is named after its last state started before the gap ended (the highest k of that
-- code in the range, zero-length ones included); an OS call, whose name says what it waits on,
-- after the one that held most of the gap (the latest on a tie): a short read after a long poll
-- is no file I/O, a recv after epoll_wait no wait of its own. The sums run in DOUBLE, exact as each is at
-- most the gap's length (below 2^53 ns), and are stored as BIGINT: a BIGINT sum accumulates in
-- HUGEINT, 20% slower here, and HUGEINT columns cost several times more to write and read.
CREATE TABLE gap_states(gap_id BIGINT, sync_ns BIGINT, copy_ns BIGINT, launch_ns BIGINT, allocation_ns BIGINT,
                        module_ns BIGINT, api_ns BIGINT, osrt_ns BIGINT, top_ns BIGINT, top_state VARCHAR,
                        top_name call_label);
-- @each slice: SELECT DISTINCT slice FROM gap_ranges ORDER BY slice
INSERT INTO gap_states
WITH pairs AS (
  SELECT gap_id, start_ns AS gap_start, end_ns AS gap_end, unnest(range(k_first, k_last + 1)) AS k
  FROM gap_ranges WHERE slice = $slice),
covered AS (
  SELECT p.gap_id, h.code, h.k, greatest(least(h.end_ns, p.gap_end) - greatest(h.start_ns, p.gap_start), 0) AS ns
  FROM pairs p JOIN host_states h ON h.k = p.k
  -- states that ended before the gap play no part (a zero-length one at its start may name it)
  WHERE h.end_ns > p.gap_start OR h.start_ns >= p.gap_start),
sums AS (
  SELECT gap_id,
         sum(CASE WHEN code = 7 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS sync_ns,
         sum(CASE WHEN code = 2 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS copy_ns,
         sum(CASE WHEN code = 4 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS launch_ns,
         sum(CASE WHEN code = 1 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS allocation_ns,
         sum(CASE WHEN code = 5 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS module_ns,
         sum(CASE WHEN code = 3 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS api_ns,
         sum(CASE WHEN code = 6 THEN ns::DOUBLE ELSE 0 END)::BIGINT AS osrt_ns,
         max(CASE WHEN code = 7 THEN k ELSE 0 END) AS sync_k, max(CASE WHEN code = 2 THEN k ELSE 0 END) AS copy_k,
         max(CASE WHEN code = 4 THEN k ELSE 0 END) AS launch_k, max(CASE WHEN code = 1 THEN k ELSE 0 END) AS allocation_k,
         max(CASE WHEN code = 5 THEN k ELSE 0 END) AS module_k, max(CASE WHEN code = 3 THEN k ELSE 0 END) AS api_k,
         max({'ns': ns, 'k': k}) FILTER (WHERE code = 6).k AS osrt_k
  FROM covered GROUP BY gap_id),
-- on a tie the first state in this order wins
per_state AS (
  SELECT gap_id, sync_ns, copy_ns, launch_ns, allocation_ns, module_ns, api_ns, osrt_ns,
         greatest(sync_ns, copy_ns, launch_ns, allocation_ns, module_ns, api_ns, osrt_ns) AS top_ns,
         CASE greatest(sync_ns, copy_ns, launch_ns, allocation_ns, module_ns, api_ns, osrt_ns)
           WHEN 0 THEN NULL
           WHEN sync_ns THEN sync_k WHEN copy_ns THEN copy_k WHEN launch_ns THEN launch_k
           WHEN allocation_ns THEN allocation_k WHEN module_ns THEN module_k WHEN api_ns THEN api_k
           WHEN osrt_ns THEN osrt_k END AS top_k
  FROM sums)
SELECT p.gap_id, p.sync_ns, p.copy_ns, p.launch_ns, p.allocation_ns, p.module_ns, p.api_ns, p.osrt_ns,
       p.top_ns, sn.state AS top_state, h.name AS top_name
FROM per_state p
LEFT JOIN host_states h ON h.k = p.top_k
LEFT JOIN host_state_names sn ON sn.code = h.code;

-- The blocking calls as the third lookup of time_lookup_rows (phases.sql): a gap's thread's last
-- blocking call ended at or before the gap's end.
INSERT INTO time_lookup_rows
SELECT 3, pid, tid, end_ns, row_number() OVER (ORDER BY pid, tid, end_ns, start_ns, api, kind), end_ns, duration_ns, api, kind
FROM blocking_calls WHERE pid IS NOT NULL AND tid IS NOT NULL AND end_ns IS NOT NULL;
INSERT INTO time_lookup_widths FROM time_lookup_width_rows WHERE side = 3;
INSERT INTO time_lookup_buckets FROM time_lookup_bucket_rows WHERE side = 3;

-- Each gap's lookups (time_lookup_rows' sides, phases.sql) in two statements, for fewer hash
-- tables at once: the buckets first, giving the numbers of the rows looked up, then the rows. (One
-- statement held every side's rows and buckets at once: on a thread with five million NVTX ranges
-- it ran out of 1 GB.) Hash joins on the gap rows, none sorting them; the chain carries numbers
-- only (a range's id, not its name: strings cost several times their numbers in every operator),
-- names are joined last.
CREATE TABLE gap_row_numbers AS
WITH keyed AS (
  SELECT g.*, g.start_ns + (g.end_ns - g.start_ns) // 2 AS mid_ns FROM raw_gaps g)
SELECT g.gap_id, g.device_id, g.pid, g.tid, g.start_ns, g.end_ns, g.duration_ns, g.next_kind, g.mid_ns,
       lookup_row(bs.ts, bs.first_i, bs.prior, g.start_ns) AS step_i,
       lookup_row(bp.ts, bp.first_i, bp.prior, g.mid_ns) AS range_i,
       lookup_row(bb.ts, bb.first_i, bb.prior, g.end_ns) AS blocking_i,
       lookup_row(bc.ts, bc.first_i, bc.prior, g.mid_ns) AS cover_i
FROM keyed g
LEFT JOIN time_lookup_widths ws ON ws.side = 1 AND ws.k1 = g.pid AND ws.k2 = 0
LEFT JOIN time_lookup_buckets bs
  ON bs.side = 1 AND bs.k1 = g.pid AND bs.k2 = 0 AND bs.b = lookup_bucket(g.start_ns, ws.t0, ws.w, ws.last_b)
LEFT JOIN time_lookup_widths wp ON wp.side = 2 AND wp.k1 = g.global_tid AND wp.k2 = 0
LEFT JOIN time_lookup_buckets bp
  ON bp.side = 2 AND bp.k1 = g.global_tid AND bp.k2 = 0 AND bp.b = lookup_bucket(g.mid_ns, wp.t0, wp.w, wp.last_b)
LEFT JOIN time_lookup_widths wb ON wb.side = 3 AND wb.k1 = g.pid AND wb.k2 = g.tid
LEFT JOIN time_lookup_buckets bb
  ON bb.side = 3 AND bb.k1 = g.pid AND bb.k2 = g.tid AND bb.b = lookup_bucket(g.end_ns, wb.t0, wb.w, wb.last_b)
LEFT JOIN time_lookup_widths wc ON wc.side = 4 AND wc.k1 = g.pid AND wc.k2 = 0
LEFT JOIN time_lookup_buckets bc
  ON bc.side = 4 AND bc.k1 = g.pid AND bc.k2 = 0 AND bc.b = lookup_bucket(g.mid_ns, wc.t0, wc.w, wc.last_b);

-- Library ranges in a domain of their own (library_ranges: XLA's compiler passes and thunks, NCCL,
-- CUB) name a library's internals, not a place in the program: a gap inside one is placed in its
-- innermost ancestor that is not such a range (NULL where there is none). Walks up the few
-- library ranges only; an export without them does one scan of the range names.
CREATE TEMP TABLE library_places AS
WITH RECURSIVE lib AS (
  SELECT t.range_id, t.parent_id FROM nvtx_tree t
  JOIN library_ranges l ON l.domain IS NOT NULL AND l.domain = t.domain AND t.name LIKE l.pattern),
up AS (
  SELECT range_id, parent_id AS place_id FROM lib
  UNION ALL
  SELECT u.range_id, l.parent_id FROM up u JOIN lib l ON l.range_id = u.place_id)
SELECT range_id, place_id FROM up WHERE place_id IS NULL OR place_id NOT IN (SELECT range_id FROM lib);

-- One row per GPU idle gap of a (device, process) of at least dispatch_gap_ns (settings.sql):
-- between two gpu_busy intervals, with what the host thread that ended it (the one launching
-- the next GPU operation) was doing meanwhile. Per-thread host states (CUDA API and OS calls,
-- the outermost winning where they nest) are found with ASOF joins at the gap's edges and
-- their overlaps with the gap summed (linear).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column tid: OS thread id that launched the operation ending the gap (else the thread that
-- launches most of the process's GPU work)
-- @column start_ns: gap start (end of the busy interval before it) on the session clock, ns
-- @column end_ns: gap end (start of the next GPU operation) on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column in_steady_state: true when the gap lies inside the process's steady_state window
-- @column step: the step (steps.step) the gap starts in, NULL outside steps
-- @column cause: the thread's state that took most of the gap (allocation, copy, cuda-api, launch,
-- module-loading, os-call, sync) when it took more than untraced host time (host_ns); else nvtx
-- when a thread of the process was inside an NVTX range (nvtx_range), else untraced
-- @column detail: the call of that state (API or OS function name: the last such call in the gap,
-- for OS calls the one that held most of it; a CUDA graph capture, which holds the calls made
-- while capturing, is its Begin Capture call), the NVTX range for nvtx, NULL for untraced
-- @column nvtx_range: innermost push/pop range open at the gap's middle on the thread, else (NVTX
-- ranges are per thread, and helper threads work for the step the main thread is in) on the
-- thread of the process inside a range then; NULL when no thread of the process was in one. A
-- library's range in a domain of its own (XLA, NCCL, CUB: library_ranges) gives way to its
-- innermost ancestor that is not one (library_places)
-- @column sync_ns: time of the thread in sync calls inside the gap, ns
-- @column copy_ns: time in memcpy and memset calls inside the gap, ns
-- @column launch_ns: time in launch calls inside the gap, ns
-- @column allocation_ns: time in alloc and free calls inside the gap, ns
-- @column module_ns: time in module-loading and context calls inside the gap, ns
-- @column api_ns: time in other CUDA API calls inside the gap, ns
-- @column osrt_ns: time in OS runtime calls inside the gap, ns
-- @column host_ns: the rest of the gap, in no traced call (host code), ns
-- @column after_blocking_api: API of the thread's last blocking call (blocking_calls) ended at or
-- before the gap's end, when it ended at or after the gap's start; else NULL
-- @column after_blocking_kind: that call's kind (blocking_calls.kind), else NULL
-- @column blocking_end_ns: that call's end on the session clock, ns; else NULL
-- @column blocking_wait_ns: that call's duration, ns; else NULL
-- @column next_kind: kind of the GPU operation that ends the gap (gpu_activity.kind: kernel,
-- memcpy, memset or graph): what the host was issuing when the GPU got work again
CREATE TABLE idle_gaps AS
-- The rows those numbers name. A gap whose thread was in no range takes the innermost range of
-- the thread of the process that was in one then (nvtx_process_cover).
WITH own AS (
  SELECT g.* EXCLUDE (step_i, range_i, blocking_i, cover_i),
         CASE WHEN g.start_ns < rs.v2 THEN rs.v1 END AS step, rp.v1 AS own_range_id,
         rb.v1 >= g.start_ns AS after_blocking, rb.n1 AS blocking_api, rb.n2 AS blocking_kind,
         rb.v1 AS blocking_end_ns, rb.v2 AS blocking_wait_ns, rc.v1 AS cover_end, rc.v2 AS cover_tid
  FROM gap_row_numbers g
  LEFT JOIN time_lookup_rows rs ON rs.side = 1 AND rs.i = g.step_i
  LEFT JOIN time_lookup_rows rp ON rp.side = 2 AND rp.i = g.range_i
  LEFT JOIN time_lookup_rows rb ON rb.side = 3 AND rb.i = g.blocking_i
  LEFT JOIN time_lookup_rows rc ON rc.side = 4 AND rc.i = g.cover_i),
looked AS (
  SELECT g.* EXCLUDE (own_range_id, cover_end, cover_tid, mid_ns),
         coalesce(g.own_range_id, CASE WHEN g.cover_end > g.mid_ns THEN rq.v1 END) AS range_id
  FROM own g
  LEFT JOIN time_lookup_widths wq ON wq.side = 2 AND wq.k1 = CASE WHEN g.own_range_id IS NULL THEN g.cover_tid END AND wq.k2 = 0
  LEFT JOIN time_lookup_buckets bq
    ON bq.side = 2 AND bq.k1 = wq.k1 AND bq.k2 = 0 AND bq.b = lookup_bucket(g.mid_ns, wq.t0, wq.w, wq.last_b)
  LEFT JOIN time_lookup_rows rq ON rq.side = 2 AND rq.i = lookup_row(bq.ts, bq.first_i, bq.prior, g.mid_ns)),
classed AS (
  SELECT g.*, r.name AS nvtx_range, coalesce(p.sync_ns, 0) AS sync_ns, coalesce(p.copy_ns, 0) AS copy_ns,
         coalesce(p.launch_ns, 0) AS launch_ns, coalesce(p.allocation_ns, 0) AS allocation_ns,
         coalesce(p.module_ns, 0) AS module_ns, coalesce(p.api_ns, 0) AS api_ns, coalesce(p.osrt_ns, 0) AS osrt_ns,
         p.top_state, p.top_name, coalesce(p.top_ns, 0) AS top_ns
  FROM looked g LEFT JOIN gap_states p USING (gap_id) LEFT JOIN library_places lp ON lp.range_id = g.range_id
  LEFT JOIN nvtx_tree r ON r.range_id = CASE WHEN lp.range_id IS NULL THEN g.range_id ELSE lp.place_id END)
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
       CASE WHEN c.after_blocking THEN c.blocking_api END AS after_blocking_api,
       CASE WHEN c.after_blocking THEN c.blocking_kind END AS after_blocking_kind,
       CASE WHEN c.after_blocking THEN c.blocking_end_ns END AS blocking_end_ns,
       CASE WHEN c.after_blocking THEN c.blocking_wait_ns END AS blocking_wait_ns,
       c.next_kind
FROM classed c LEFT JOIN steady_state ss ON ss.pid = c.pid;

-- One row per (device, process, cause, detail) over the steady state: the idle time that
-- removing the cause would give back to the GPU (gaps of at least min_gap_ns).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column cause: idle_gaps.cause
-- @column detail: idle_gaps.detail
-- @column gaps: steady-state gaps, count
-- @column idle_ns: their summed duration, ns
-- @column median_gap_ns: their median duration, ns
-- @column max_gap_ns: the longest one, ns
-- @column after_blocking_gaps: of them, gaps that follow a blocking call, count
-- @column window_ns: length of the process's steady-state window, ns
CREATE TABLE idle_gap_causes AS
SELECT g.device_id, g.pid, g.cause, g.detail, count(*) AS gaps, sum(g.duration_ns) AS idle_ns,
       median(g.duration_ns) AS median_gap_ns, max(g.duration_ns) AS max_gap_ns,
       count(*) FILTER (WHERE g.after_blocking_api IS NOT NULL) AS after_blocking_gaps,
       any_value(ss.end_ns - ss.start_ns) AS window_ns
FROM idle_gaps g JOIN steady_state ss ON ss.pid = g.pid
WHERE g.in_steady_state
GROUP BY g.device_id, g.pid, g.cause, g.detail;

-- What an OS call waits on, by its name: 'sleep' (a deliberate pause), 'file I/O', 'child
-- process' (reaping a child the thread started: subprocess.run and os.system end so, after
-- reading the child's output), or 'wait' (on another thread, a process or a device: locks,
-- queues, polls).
CREATE MACRO os_wait_kind(name) AS
  CASE WHEN regexp_matches(name, '^(clock_)?nanosleep$|^u?sleep$') THEN 'sleep'
       WHEN regexp_matches(name, '^(waitpid|wait[34]?|waitid|system|pclose)$') THEN 'child process'
       WHEN regexp_matches(name, '^(p?writev?(64)?|fwrite|f?sync|fdatasync|fflush|f?close|f?open(at)?(64)?|'
                                 || 'p?readv?(64)?|fread|msync|sync_file_range|f?truncate(64)?)$') THEN 'file I/O'
       ELSE 'wait' END;

-- Whether a thread reaps a child process between two times (start excluded): a gap that ends so
-- waited for a program the thread ran (subprocess.run: poll on its output, then waitpid). Not
-- where DataLoader workers (threads named pt_data_worker) are in the trace: a loader that
-- restarts them reaps them at each epoch's end, while the thread waits for its next batch.
CREATE MACRO reaps_child(p, t, s, e) AS
  EXISTS (SELECT 1 FROM osrt_calls o
          WHERE o.pid = p AND o.tid = t AND o.end_ns > s AND o.end_ns <= e AND os_wait_kind(o.name) = 'child process')
  AND NOT EXISTS (SELECT 1 FROM threads WHERE name = 'pt_data_worker');

-- Whether a gap's cause is a CUDA graph capture (graph_captures: a cuda-api state named by its
-- Begin Capture call), for the rules that advise on it.
CREATE MACRO is_graph_capture(cause, detail) AS coalesce(cause = 'cuda-api' AND detail LIKE '%StreamBeginCapture%', false);

-- A gap cause in words, for rule messages: "the host was mostly <text>".
CREATE MACRO gap_cause_text(cause, detail) AS
  CASE cause
    WHEN 'nvtx' THEN 'running code inside NVTX range "' || detail || '" with no CUDA call (Python, framework or host work)'
    WHEN 'untraced' THEN 'running code outside any NVTX range or traced call'
    WHEN 'launch' THEN 'inside launch calls (' || detail || ')'
    WHEN 'sync' THEN 'blocked in ' || detail
    WHEN 'copy' THEN 'inside the copy call ' || detail
    WHEN 'os-call' THEN CASE os_wait_kind(detail) WHEN 'sleep' THEN 'sleeping in ' || detail
                             WHEN 'file I/O' THEN 'in the file I/O call ' || detail
                             WHEN 'child process' THEN 'waiting for a child process to end (' || detail || ')'
                             ELSE 'in the OS call ' || detail || ' (waiting on another thread, a process or I/O)' END
    WHEN 'allocation' THEN 'allocating or freeing memory (' || detail || ')'
    WHEN 'module-loading' THEN 'loading modules or creating a context (' || detail || ')'
    ELSE CASE WHEN is_graph_capture(cause, detail)
              THEN 'capturing a CUDA graph (' || detail || ' to its instantiation)'
              ELSE 'inside the CUDA call ' || coalesce(detail, '?') END END;

-- Intermediates, dropped once used: the big ones (a row per gap or host call) live in the
-- database file, as temporary tables hold the ingest memory limit and spill uncompressed; the
-- small ones are temporary.
DROP TABLE gap_row_numbers;
DROP TABLE library_places;
DROP TABLE gap_states;
DROP TABLE gap_ranges;
DROP TABLE host_state_names;
DROP TABLE graph_captures;
DROP TABLE gap_threads;
DROP TABLE raw_gaps;
DROP TABLE main_threads;
DROP TABLE host_states;
DROP TABLE gpu_openers;
DROP TABLE nvtx_stack_points;
DROP TABLE nvtx_process_cover;
DROP VIEW time_lookup_bucket_rows;
DROP VIEW time_lookup_width_rows;
DROP TABLE time_lookup_buckets;
DROP TABLE time_lookup_widths;
DROP TABLE time_lookup_rows;
DROP MACRO lookup_row;
DROP MACRO lookup_bucket;
