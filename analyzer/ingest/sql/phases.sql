-- include: normalize, settings

-- Phases of a run: the NVTX stack, training steps, and the steady-state window per process.
-- Ingest SQL takes no CLI parameters, so the knobs are data: the step-name patterns below
-- (step_patterns), the thresholds in settings.sql (phase_settings; a run sets them with --set
-- NAME=VALUE). To change a default, edit its row (the cache key hashes these files, so every
-- export is re-ingested with the new values).

-- One row per NVTX range name pattern that marks one training/iteration step (ILIKE,
-- case-insensitive). Lower priority wins when a process has several kinds. Suffix patterns such
-- as '%step' are left out on purpose: PyTorch's "Optimizer.step#Adam.step" is a phase inside a step.
-- sources: always
-- @column priority: preference, lowest first
-- @column pattern: ILIKE pattern on the range name
CREATE TABLE step_patterns(priority INTEGER, pattern VARCHAR);
INSERT INTO step_patterns VALUES
  (1, 'ProfilerStep#%'),
  (2, 'train_step%'), (2, 'training_step%'), (2, 'train step%'), (2, 'training step%'),
  (2, 'train_iter%'), (2, 'train iteration%'),
  (3, 'step'), (3, 'step %'), (3, 'step_%'), (3, 'step#%'), (3, 'step:%'), (3, 'step-%'),
  (4, 'iteration'), (4, 'iteration %'), (4, 'iteration_%'), (4, 'iteration#%'), (4, 'iteration:%'),
  (4, 'iter'), (4, 'iter %'), (4, 'iter_%'), (4, 'iter#%'), (4, 'iter:%'),
  (5, 'batch'), (5, 'batch %'), (5, 'batch_%'), (5, 'batch#%'), (5, 'batch:%');

-- The settings of the phase and gap detection, by name: their rows of settings.sql, which
-- declares each with its type, unit, range and reason (`nsys-diagnose explain settings`).
-- sources: always
-- @column name: setting name (settings.name)
-- @column value: setting value (count, ns or ratio, as its name says)
CREATE TABLE phase_settings AS SELECT name, value FROM settings WHERE read_by = 'phase_settings';

-- The per-thread NVTX stack, by one sort of push/pop events (linear, no interval join).
-- depth: 0 for a top-level push/pop range; parent_id: the enclosing range on the same thread.
-- At equal timestamps ends sort before starts (back-to-back siblings), outer starts before inner
-- ones, and a zero-length range's end after its own start. Start/end ranges (which may cross
-- threads and overlap freely) get no depth or parent.
CREATE TABLE nvtx_numbered AS
SELECT row_number() OVER (ORDER BY global_tid, start_ns, end_ns DESC, name) AS range_id, * FROM nvtx_ranges;

CREATE TABLE nvtx_stack_events AS
WITH stacked AS (SELECT * FROM nvtx_numbered WHERE style = 'push_pop' AND same_thread),
ev AS (
  SELECT global_tid, range_id, start_ns AS ts, 1 AS ord, -end_ns AS tie, 1 AS delta FROM stacked
  UNION ALL
  SELECT global_tid, range_id, end_ns, CASE WHEN end_ns = start_ns THEN 2 ELSE 0 END, -start_ns, -1 FROM stacked)
SELECT global_tid, range_id, ts, delta,
       row_number() OVER (PARTITION BY global_tid ORDER BY ts, ord, tie, range_id) AS seq,
       -- A running sum in DOUBLE, cast back: exact for integers below 2^53, and five times cheaper
       -- than sum()'s HUGEINT running sum (the depth column is stored as BIGINT)
       (sum(delta::DOUBLE) OVER (PARTITION BY global_tid ORDER BY ts, ord, tie, range_id ROWS UNBOUNDED PRECEDING))::BIGINT AS open_after
FROM ev;

-- One row per NVTX range with its place in its thread's push/pop stack, found by one sort of
-- push/pop events (linear, no interval join). At equal timestamps ends sort before starts,
-- outer starts before inner ones. Start/end ranges, and push/pop ranges ended on another
-- thread, get no depth or parent.
-- sources: NVTX_EVENTS
-- @column range_id: unique id of the range (numbered by thread, then start)
-- @column pid: OS process id
-- @column tid: OS thread id that opened the range
-- @column global_tid: nsys's serialized globalTid of that thread
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: the range's message, '' when it has none
-- @column domain: NVTX domain name, NULL for the default domain
-- @column style: push_pop or start_end
-- @column depth: stack depth, 0 for a top-level range; NULL when not on a stack
-- @column parent_id: range_id of the enclosing range on the same thread, NULL at top level
-- @column start_seq: position of the range's start among its thread's push/pop events (the
-- ASOF key that finds the innermost open range at a time)
CREATE TABLE nvtx_tree AS
WITH starts AS (SELECT global_tid, range_id, seq, open_after - 1 AS depth FROM nvtx_stack_events WHERE delta = 1),
parented AS (
  SELECT c.range_id, c.depth, c.seq, p.range_id AS parent_id
  FROM starts c ASOF LEFT JOIN starts p
    ON p.global_tid = c.global_tid AND p.depth = c.depth - 1 AND p.seq < c.seq)
SELECT n.range_id, n.pid, n.tid, n.global_tid, n.start_ns, n.end_ns, n.duration_ns, n.name, n.domain,
       n.style, p.depth, p.parent_id, p.seq AS start_seq
FROM nvtx_numbered n LEFT JOIN parented p USING (range_id);

-- The stack height after the last event at each timestamp of a thread, and the innermost range
-- open then (the last one started at the depth below that height): the lookup for "which range
-- is innermost at time t", one ASOF join for each consumer (21_nvtx.sql, 22_idle_gaps.sql).
CREATE TABLE nvtx_stack_points AS
WITH points AS (
  SELECT global_tid, ts, arg_max(open_after, seq) AS open_after, max(seq) AS last_seq
  FROM nvtx_stack_events GROUP BY global_tid, ts)
SELECT p.global_tid, p.ts, p.open_after, CASE WHEN p.open_after > 0 THEN t.range_id END AS range_id
FROM points p ASOF LEFT JOIN nvtx_tree t
  ON t.global_tid = p.global_tid AND t.depth = p.open_after - 1 AND t.start_seq <= p.last_seq;

-- NVTX ranges are per thread, but a process's helper threads (autograd's backward thread, loader
-- or serving threads) work for the step its main thread is in. Per process, its top-level
-- push/pop ranges in start order, each with the thread of the one reaching furthest among those
-- started so far: at time t, the last row started at or before t (one ASOF lookup) says whether
-- any thread of the process is inside a range (cover_end > t) and which thread to ask
-- nvtx_stack_points for its innermost one (nvtx.sql, idle_gaps.sql). A running max, linear
-- after the sort.
CREATE TABLE nvtx_process_cover AS
SELECT pid, start_ns, max(end_ns) OVER w AS cover_end, -- (ties: the lowest thread id, so that row order never decides)
       arg_max(global_tid, struct_pack(e := end_ns, t := -global_tid)) OVER w AS cover_tid
FROM nvtx_tree WHERE depth = 0
WINDOW w AS (PARTITION BY pid ORDER BY start_ns, range_id ROWS UNBOUNDED PRECEDING);

-- NVTX ranges that libraries emit around their own operations: one per operator, compile pass or
-- collective, not a program's loop, so never a step (a per-operator range repeats more often than
-- any step). domain NULL: any domain; pattern: LIKE on the range name.
-- sources: always
-- @column domain: NVTX domain the library writes to, NULL for any
-- @column pattern: LIKE pattern on the range name
-- @column library: who emits them
CREATE TABLE library_ranges(domain VARCHAR, pattern VARCHAR, library VARCHAR);
INSERT INTO library_ranges VALUES
  ('TSL', '%', 'XLA (JAX, TensorFlow): executables, thunks and compiler passes'),
  ('NCCL', '%', 'NCCL collectives'),
  ('CCCL', '%', 'CUB and Thrust device algorithms (CuPy, RAPIDS, PyTorch sorts)'),
  (NULL, 'aten::%', 'PyTorch operators (emit_nvtx, record_function)'),
  (NULL, 'autograd::%', 'PyTorch autograd engine'),
  (NULL, 'nn.Module: %', 'PyTorch module hooks');

-- the (domain, name) pairs of the trace's library ranges (sequence_steps, repeated_steps)
CREATE TEMP TABLE library_range_names AS
SELECT DISTINCT t.domain, t.name FROM (SELECT DISTINCT domain, name FROM nvtx_tree) t
JOIN library_ranges l ON (l.domain IS NULL OR l.domain = t.domain) AND t.name LIKE l.pattern;

-- Pattern priority per distinct range name (names repeat: match each once).
CREATE TABLE step_names AS
SELECT n.name, min(sp.priority) AS priority
FROM (SELECT DISTINCT name FROM nvtx_tree) n JOIN step_patterns sp ON n.name ILIKE sp.pattern GROUP BY n.name;

-- Ranges named as steps, each with the depth its group is keyed on. Step ranges of one name
-- nested two or more at a time in one of the same name on a thread mean a lost pop (an exception
-- skipped range_pop): that step never closed, and the later ones sit a level deeper. Such a name
-- is grouped at its shallowest depth, so that the steps stay one loop however deep the stack has
-- climbed. (One inside each, as a decorated function called in a range of its name, is two
-- loops at two depths, as before.)
CREATE TEMP TABLE step_hits AS
WITH hits AS (
  SELECT t.range_id, t.pid, t.tid, t.global_tid, t.name, t.start_ns, t.end_ns, t.parent_id,
         coalesce(t.depth, 0) AS depth, sn.priority
  FROM nvtx_tree t JOIN step_names sn USING (name)),
self_nested AS (
  SELECT DISTINCT global_tid, name FROM (
    SELECT c.global_tid, c.name FROM hits c JOIN hits p ON p.range_id = c.parent_id AND p.name = c.name
    GROUP BY c.global_tid, c.name, p.range_id HAVING count(*) >= 2))
SELECT h.*, CASE WHEN s.name IS NULL THEN h.depth
                 ELSE min(h.depth) OVER (PARTITION BY h.global_tid, h.name) END AS group_depth
FROM hits h LEFT JOIN self_nested s USING (global_tid, name);

-- Candidate step ranges by name: one group per (process, thread, pattern, depth).
CREATE TABLE named_step_groups AS
WITH grouped AS (
  SELECT pid, tid, global_tid, priority, group_depth AS depth, count(*) AS n,
         -- ProfilerStep#1, #2, ... differ per step: the group's name is its first range's
         arg_min(name, start_ns) AS first_name
  FROM step_hits GROUP BY pid, tid, global_tid, priority, group_depth)
SELECT *, row_number() OVER (PARTITION BY pid ORDER BY priority, n DESC, depth, tid) AS choice
FROM grouped WHERE n >= (SELECT value FROM phase_settings WHERE name = 'min_loop_steps');

-- A step left open ends where the next one starts (not at the end of the capture).
CREATE TABLE named_steps AS
SELECT h.pid, h.tid, h.name, h.start_ns,
       least(h.end_ns, coalesce(lead(h.start_ns) OVER (PARTITION BY h.pid ORDER BY h.start_ns, h.range_id), h.end_ns)) AS end_ns
FROM named_step_groups g JOIN step_hits h
  ON h.global_tid = g.global_tid AND h.group_depth = g.depth AND h.priority = g.priority
WHERE g.choice = 1;

-- No step-named ranges: a repeating sequence of the program's own push/pop ranges (e.g. "Data
-- Loading", "Model Computation", "Backward Pass" every step; not library_ranges). On the
-- shallowest depth of a thread where some name repeats, the names repeated most often form the
-- sequence; its earliest-starting name opens each step, which lasts until the next one opens.
CREATE TABLE sequence_steps AS
WITH names AS (
  SELECT pid, tid, global_tid, depth, name, count(*) AS n, min(start_ns) AS first_start
  FROM nvtx_tree t WHERE depth IS NOT NULL
    AND pid NOT IN (SELECT pid FROM named_steps)
    AND NOT EXISTS (SELECT 1 FROM library_range_names l WHERE l.domain IS NOT DISTINCT FROM t.domain AND l.name = t.name)
  GROUP BY pid, tid, global_tid, depth, name
  HAVING count(*) >= (SELECT value FROM phase_settings WHERE name = 'min_loop_steps')),
levels AS (
  SELECT pid, tid, global_tid, depth, max(n) AS k, sum(n) AS ranges,
         row_number() OVER (PARTITION BY pid ORDER BY depth, max(n) DESC, sum(n) DESC, tid) AS choice
  FROM names GROUP BY pid, tid, global_tid, depth),
seq_names AS (
  SELECT n.*, row_number() OVER (PARTITION BY n.pid ORDER BY n.first_start, n.name) AS pos
  FROM names n JOIN levels l USING (pid, tid, global_tid, depth)
  WHERE l.choice = 1 AND n.n = l.k),
leader AS (SELECT * FROM seq_names WHERE pos = 1),
members AS (
  SELECT t.pid, t.tid, t.start_ns, t.end_ns, t.name, t.name = ld.name AS is_leader
  FROM nvtx_tree t JOIN leader ld ON t.global_tid = ld.global_tid AND t.depth = ld.depth
  WHERE t.name IN (SELECT s.name FROM seq_names s WHERE s.pid = ld.pid)),
opened AS (
  SELECT *, (sum(CASE WHEN is_leader THEN 1 ELSE 0 END::DOUBLE) OVER (PARTITION BY pid ORDER BY start_ns, end_ns
                                                                      ROWS UNBOUNDED PRECEDING))::BIGINT AS step_no
  FROM members)
SELECT pid, any_value(tid) AS tid, step_no, arg_min(name, start_ns) AS name,
       min(start_ns) AS start_ns, max(end_ns) AS last_end_ns
FROM opened WHERE step_no > 0 GROUP BY pid, step_no;

-- No NVTX loop either: a marker that occurs once per step. Candidates: each kernel (GPU start
-- times), CUDA graph replays, each synchronizing API call and each top-level library NVTX range
-- (host start times: XLA's per-executable ranges mark a jitted step). A step repeats one sequence
-- of work, so the best marker always has the same launches (kernels and graph replays, in launch
-- order; the same number, two or more, and the same names) between two occurrences after its
-- first, which set-up can lengthen, and spans most of the process's launches or of its kernel
-- time: that holds however bursty the loop's timing (a DataLoader's workers, the host running
-- ahead until a sync). A process without one falls back to the marker most regular in time
-- (period CV at most max_period_cv), then the one with the most occurrences.
CREATE TABLE repeated_steps AS
WITH looking AS (
  SELECT DISTINCT pid FROM (SELECT pid FROM kernels UNION ALL SELECT pid FROM api_calls)
  WHERE pid NOT IN (SELECT pid FROM named_steps) AND pid NOT IN (SELECT pid FROM sequence_steps)),
-- each marker by a key, its kind and name hashed: the windows sort numbers, not names
markers AS (
  SELECT pid, hash('kernel', name) AS marker_key, start_ns, coalesce(launch_start_ns, start_ns) AS host_ns,
         1 AS launches, duration_ns::DOUBLE AS work_ns
  FROM kernels WHERE pid IN (SELECT pid FROM looking)
  UNION ALL
  SELECT pid, hash('graph'), start_ns, coalesce(launch_start_ns, start_ns), 1, 0.0
  FROM graph_launches WHERE pid IN (SELECT pid FROM looking)
  UNION ALL
  SELECT pid, hash('call', api), start_ns, start_ns, 0, 0.0 FROM api_calls
  WHERE category = 'sync' AND api NOT LIKE '%StreamWaitEvent%' AND pid IN (SELECT pid FROM looking)
  UNION ALL
  SELECT t.pid, hash('range', t.name), t.start_ns, t.start_ns, 0, 0.0
  FROM nvtx_tree t JOIN library_range_names l ON l.domain IS NOT DISTINCT FROM t.domain AND l.name = t.name
  WHERE t.depth = 0 AND t.pid IN (SELECT pid FROM looking)),
totals AS (SELECT pid, sum(launches) AS all_launches, sum(work_ns) AS all_work FROM markers GROUP BY pid),
counted AS (
  -- sig: a running sum of a number per kernel name, whose difference between two occurrences
  -- stands for the names launched between them (exact in DOUBLE below 2^53)
  SELECT *, sum(launches) OVER w AS launched, sum(work_ns) OVER w AS worked,
         sum(launches * (marker_key % 1000003)::DOUBLE) OVER w AS sig
  FROM markers WINDOW w AS (PARTITION BY pid ORDER BY host_ns, launches, start_ns, marker_key ROWS UNBOUNDED PRECEDING)),
spaced AS (
  SELECT *, lead(launched) OVER w - launched AS launches_apart, lead(sig) OVER w - sig AS names_apart,
         row_number() OVER w AS occurrence,
         lead(start_ns) OVER (PARTITION BY pid, marker_key ORDER BY start_ns) - start_ns AS period_ns
  FROM counted WINDOW w AS (PARTITION BY pid, marker_key ORDER BY host_ns, start_ns)),
scored AS (
  SELECT s.pid, s.marker_key, count(*) AS n, avg(period_ns) AS mean_period,
         stddev_pop(period_ns) / nullif(avg(period_ns), 0) AS cv, stddev_pop(period_ns) AS jitter_ns,
         min(start_ns) AS first_ns,
         count(*) > (SELECT value FROM phase_settings WHERE name = 'min_loop_steps')
           AND min(launches_apart) FILTER (WHERE occurrence > 1) = max(launches_apart) FILTER (WHERE occurrence > 1)
           AND min(names_apart) FILTER (WHERE occurrence > 1) = max(names_apart) FILTER (WHERE occurrence > 1)
           AND min(launches_apart) FILTER (WHERE occurrence > 1) >= 2  -- one launch apart: no sequence
           AND (max(launched) - min(launched) >= any_value(t.all_launches) * (SELECT value FROM phase_settings WHERE name = 'min_loop_coverage')
                OR max(worked) - min(worked) >= any_value(t.all_work) * (SELECT value FROM phase_settings WHERE name = 'min_loop_coverage'))
           AS same_work
  FROM spaced s JOIN totals t USING (pid) GROUP BY s.pid, s.marker_key),
eligible AS (
  SELECT *, min(jitter_ns) FILTER (WHERE same_work) OVER (PARTITION BY pid) AS least_jitter_ns FROM scored
  WHERE n >= (SELECT value FROM phase_settings WHERE name = 'min_loop_steps')
    AND mean_period >= (SELECT value FROM phase_settings WHERE name = 'min_period_ns')),
-- Of the markers that repeat the same work, those whose period varies about as little as the
-- steadiest one's (in ns, not relative: a marker every few steps, such as a periodic sync, varies
-- as much per occurrence, less per ns of period; one in every layer varies far more, as the
-- step's other work falls between two of them), the one with the most occurrences
best AS (
  SELECT *, row_number() OVER (PARTITION BY pid ORDER BY same_work DESC, CASE WHEN same_work THEN -n END,
                                                         cv, n DESC, first_ns, marker_key) AS choice
  FROM eligible
  WHERE CASE WHEN same_work
             THEN jitter_ns <= least_jitter_ns * (SELECT value FROM phase_settings WHERE name = 'marker_jitter_ratio')
             ELSE cv <= (SELECT value FROM phase_settings WHERE name = 'max_period_cv') END),
chosen AS (SELECT pid, marker_key FROM best WHERE choice = 1),
-- the chosen marker's occurrences, named
named AS (
  SELECT k.pid, k.launch_tid AS tid, 'kernel ' || k.name AS name, k.start_ns, k.end_ns, true AS gpu_clock
  FROM kernels k JOIN chosen c ON c.pid = k.pid AND c.marker_key = hash('kernel', k.name)
  UNION ALL
  SELECT g.pid, g.launch_tid, 'graph replay', g.start_ns, g.end_ns, true
  FROM graph_launches g JOIN chosen c ON c.pid = g.pid AND c.marker_key = hash('graph')
  UNION ALL
  SELECT a.pid, a.tid, a.api, a.start_ns, a.end_ns, false
  FROM api_calls a JOIN chosen c ON c.pid = a.pid AND c.marker_key = hash('call', a.api)
  WHERE a.category = 'sync'
  UNION ALL
  SELECT t.pid, t.tid, 'range ' || t.name, t.start_ns, t.end_ns, false
  FROM nvtx_tree t JOIN chosen c ON c.pid = t.pid AND c.marker_key = hash('range', t.name)
  WHERE t.depth = 0)
SELECT pid, tid, name, start_ns,
       coalesce(lead(start_ns) OVER (PARTITION BY pid ORDER BY start_ns), end_ns) AS end_ns, gpu_clock
FROM named;

DROP TABLE library_range_names;

-- One row per training step per process, found in order of preference: NVTX ranges named as
-- step_patterns says; else a repeating sequence of push/pop ranges, a step running from its
-- leader's start to the next leader's start; else the regular recurrence of a marker kernel
-- (GPU start times) or sync call (host start times), one occurrence per step.
-- sources: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id
-- @column tid: OS thread id of the step's range or marker call (launching thread for a kernel)
-- @column step: step number within the process in start order, from 1
-- @column name: range name, or the marker: 'kernel <name>' or the sync call's API name
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column source: nvtx (named or sequence ranges) or repeated (a marker kernel, graph replay, sync or library range)
-- @column gpu_clock: true when start_ns and end_ns are GPU start times (a marker kernel or graph replay)
CREATE TABLE steps AS
WITH all_steps AS (
  SELECT pid, tid, name, start_ns, end_ns, 'nvtx' AS source, false AS gpu_clock FROM named_steps
  UNION ALL
  SELECT pid, tid, name, start_ns,
         coalesce(lead(start_ns) OVER (PARTITION BY pid ORDER BY step_no), last_end_ns), 'nvtx', false
  FROM sequence_steps
  UNION ALL
  SELECT pid, tid, name, start_ns, end_ns, 'repeated', gpu_clock FROM repeated_steps)
SELECT pid, tid, row_number() OVER (PARTITION BY pid ORDER BY start_ns, end_ns) AS step, name,
       start_ns, end_ns, end_ns - start_ns AS duration_ns, source, gpu_clock
FROM all_steps;

-- One row per process with two steps or GPU work: its steady-state window, from the second
-- step's start (the first step pays for lazy module loading, cuDNN/cuBLAS heuristics, allocator
-- warm-up) to the end of the last step, or later while GPU work launched in the steps still
-- runs. Without two steps: after the module loading that precedes the second half of the
-- process's GPU work (in time and in operations), else its whole GPU activity.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, NVTX_EVENTS
-- @column pid: OS process id
-- @column start_ns: window start on the session clock, ns
-- @column end_ns: window end on the session clock, ns
-- @column startup_ns: start_ns - process_start_ns: the start-up left out, ns
-- @column method: how the window was found: steps, after-module-loading or gpu-activity
-- @column duration_ns: end_ns - start_ns, ns
-- @column process_start_ns: the process's first API call, GPU operation or NVTX range, ns
-- @column steps: steps in the window (all but the first), count; NULL without steps
-- @column first_step_ns: duration of step 1, ns; NULL without steps
-- @column module_load_ns: time in module-loading API calls started before the window, ns
-- @column module_load_calls: module-loading API calls started before the window, count
-- @column context_ns: time in context API calls (cuInit, cuCtx*, ...) started before the window, ns
CREATE TABLE steady_state AS
WITH activity AS (
  SELECT pid, min(start_ns) AS first_ns, max(end_ns) AS last_ns FROM (
    SELECT pid, start_ns, end_ns FROM api_calls UNION ALL SELECT pid, start_ns, end_ns FROM gpu_activity
    UNION ALL SELECT pid, start_ns, end_ns FROM nvtx_ranges) GROUP BY pid),
gpu AS (SELECT pid, min(start_ns) AS first_ns, max(end_ns) AS last_ns FROM gpu_activity GROUP BY pid),
step_span AS (
  SELECT pid, count(*) AS n, min(start_ns) FILTER (WHERE step = 2) AS second_start,
         max(end_ns) AS last_end, min(duration_ns) FILTER (WHERE step = 1) AS first_step_ns,
         any_value(source) AS source
  FROM steps GROUP BY pid HAVING count(*) >= 2),
by_steps AS (
  SELECT s.pid, s.second_start AS start_ns,
         greatest(s.last_end, coalesce((SELECT max(a.end_ns) FROM gpu_activity a WHERE a.pid = s.pid
                                          AND a.launch_start_ns BETWEEN s.second_start AND s.last_end), s.last_end)) AS end_ns,
         'steps' AS method, s.n - 1 AS steps, s.first_step_ns
  FROM step_span s),
-- cumulative GPU busy time and operations per process, to find the time by which half of both
-- have run: set-up can hold most of either, not of both (one-off bulk work such as the model's
-- weights uploaded outlasts a loop of short steps; thousands of tiny initialization kernels
-- outnumber a few steps). Only for processes without steps (fallback), as running sums over one
-- stream sorted by (process, start) less the processes before (a window partitioned by process
-- sorts each process apart). In DOUBLE: exact below 2^53, much cheaper as a running sum than HUGEINT.
unstepped AS (SELECT pid, start_ns, end_ns, duration_ns, ops FROM gpu_busy WHERE pid NOT IN (SELECT pid FROM step_span WHERE pid IS NOT NULL)),
totals AS (
  SELECT pid, total_ns, total_ops,
         coalesce(sum(total_ns) OVER p, 0) AS before_ns, coalesce(sum(total_ops) OVER p, 0) AS before_ops
  FROM (SELECT pid, sum(duration_ns::DOUBLE) AS total_ns, sum(ops::DOUBLE) AS total_ops FROM unstepped GROUP BY pid)
  WINDOW p AS (ORDER BY pid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
busy_cum AS (
  SELECT r.pid, r.end_ns, r.cum_ns - t.before_ns AS cum_ns, t.total_ns, r.cum_ops - t.before_ops AS cum_ops, t.total_ops
  FROM (SELECT *, sum(duration_ns::DOUBLE) OVER w AS cum_ns, sum(ops::DOUBLE) OVER w AS cum_ops
        FROM (SELECT * FROM unstepped ORDER BY pid, start_ns, end_ns) WINDOW w AS (ROWS UNBOUNDED PRECEDING)) r
  JOIN totals t USING (pid)),
half AS (
  SELECT pid, greatest(min(end_ns) FILTER (WHERE 2 * cum_ns >= total_ns),
                       min(end_ns) FILTER (WHERE 2 * cum_ops >= total_ops)) AS half_ns
  FROM busy_cum GROUP BY pid),
loads AS (
  SELECT a.pid, max(a.end_ns) AS loaded_ns FROM api_calls a JOIN half h USING (pid)
  WHERE a.category IN ('module', 'context') AND a.end_ns <= h.half_ns GROUP BY a.pid),
fallback AS (
  SELECT g.pid, CASE WHEN l.loaded_ns > g.first_ns THEN l.loaded_ns ELSE g.first_ns END AS start_ns,
         g.last_ns AS end_ns,
         CASE WHEN l.loaded_ns > g.first_ns THEN 'after-module-loading' ELSE 'gpu-activity' END AS method,
         NULL::BIGINT AS steps, NULL::BIGINT AS first_step_ns
  FROM gpu g LEFT JOIN loads l USING (pid)
  WHERE g.pid NOT IN (SELECT pid FROM by_steps WHERE pid IS NOT NULL)),
chosen AS (SELECT * FROM by_steps UNION ALL SELECT * FROM fallback)
SELECT c.pid, c.start_ns, c.end_ns, c.start_ns - a.first_ns AS startup_ns, c.method,
       c.end_ns - c.start_ns AS duration_ns, a.first_ns AS process_start_ns, c.steps, c.first_step_ns,
       (SELECT coalesce(sum(x.duration_ns), 0) FROM api_calls x
        WHERE x.pid = c.pid AND x.category = 'module' AND x.start_ns < c.start_ns) AS module_load_ns,
       (SELECT count(*) FROM api_calls x
        WHERE x.pid = c.pid AND x.category = 'module' AND x.start_ns < c.start_ns) AS module_load_calls,
       (SELECT coalesce(sum(x.duration_ns), 0) FROM api_calls x
        WHERE x.pid = c.pid AND x.category = 'context' AND x.start_ns < c.start_ns) AS context_ns
FROM chosen c JOIN activity a USING (pid);

-- One row per (process, device) whose steady state replays CUDA graphs: the replays, their GPU
-- time and whether the kernels inside them were traced (--cuda-graph-trace=node) or not (graph,
-- nsys's default: node_kernels 0). Read by cuda-graph-opaque and the report's coverage.
-- sources: CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column replays: graph replays that start in the steady state
-- @column graphs: distinct executable graphs among them
-- @column replay_ns: their GPU time, ns
-- @column window_ns: the steady-state window, ns
-- @column node_kernels: kernels of the process traced inside graphs over the whole trace (0 with --cuda-graph-trace=graph)
CREATE VIEW steady_graph_replays AS
WITH replays AS (
  SELECT g.pid, g.device_id, count(*) AS replays, count(DISTINCT g.graph_exec_id) AS graphs,
         sum(g.duration_ns)::BIGINT AS replay_ns, any_value(s.end_ns - s.start_ns) AS window_ns
  FROM graph_launches g JOIN steady_state s USING (pid) WHERE g.start_ns >= s.start_ns AND g.start_ns < s.end_ns
  GROUP BY ALL),
node_kernels AS (SELECT pid, count(*) AS node_kernels FROM kernels WHERE graph_node_id IS NOT NULL GROUP BY pid)
SELECT r.*, coalesce(n.node_kernels, 0) AS node_kernels FROM replays r LEFT JOIN node_kernels n USING (pid);

-- One row per process with GPU work whose steady state was not found from steps, though it has
-- NVTX ranges named like steps (step_patterns), fewer than min_loop_steps: too few to make a loop, so
-- the capture stops before its steady state (the report's coverage, gap startup-only). Only such
-- processes' ranges are read: usually there are none.
-- sources: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column pid: OS process id
-- @column step_ranges: its ranges named like steps, count
-- @column name: the first of their names, alphabetically
CREATE TABLE cut_short AS
WITH candidates AS (SELECT pid FROM steady_state WHERE method <> 'steps'),
ranges AS (SELECT pid, name FROM nvtx_tree WHERE pid IN (SELECT pid FROM candidates)),
stepish AS (SELECT n.name FROM (SELECT DISTINCT name FROM ranges) n
            WHERE EXISTS (SELECT 1 FROM step_patterns p WHERE n.name ILIKE p.pattern))
SELECT r.pid, count(*) AS step_ranges, min(r.name) AS name
FROM ranges r JOIN stepish USING (name)
GROUP BY r.pid
HAVING count(*) < (SELECT value FROM phase_settings WHERE name = 'min_loop_steps')
ORDER BY r.pid;

-- Intermediates live in the database file, not in memory (temporary tables do not spill
-- until DuckDB's memory limit): dropped once used.
DROP TABLE repeated_steps;
DROP TABLE sequence_steps;
DROP TABLE named_steps;
DROP TABLE named_step_groups;
DROP TABLE step_hits;
DROP TABLE step_names;
DROP TABLE nvtx_stack_events;
DROP TABLE nvtx_numbered;

-- "The last row at or before a time, on a key" (what an ASOF join gives), for the lookups whose
-- rows are few and whose probes are many: the NVTX range of every GPU operation's launch
-- (nvtx.sql), the step, range and blocking call of every idle gap (idle_gaps.sql). An ASOF join
-- sorts every probe with all it carries, which past the ingest's memory limit spills and grows
-- faster than the probes (idle_gaps at 1e7 gaps: three lookups took 51 of its 97 CPU s). So each
-- key's rows go into buckets of time (about two per row), each bucket holding the times and
-- numbers of the rows started in it and the number of the last row before it, and a probe reads
-- its bucket through hash joins (the buckets are the build side, the probes stream through), as
-- step_ops (step_times.sql) does. One row per row looked up: the lookup (side: 1 steps by process,
-- 2 nvtx_stack_points by thread, 3 blocking_calls by (process, thread), which idle_gaps.sql adds,
-- 4 nvtx_process_cover by process), its key (k1, k2), its time t, its number i in (key, t) order
-- (ties: the one whose running values hold the others' too), and what the lookup returns (v1, v2,
-- n1, n2).
CREATE TEMP TABLE time_lookup_rows AS
SELECT 1::UTINYINT AS side, pid AS k1, 0::BIGINT AS k2, start_ns AS t, row_number() OVER (ORDER BY pid, start_ns, step) AS i,
       step AS v1, end_ns AS v2, NULL::call_label AS n1, NULL::call_label AS n2
FROM steps WHERE pid IS NOT NULL AND start_ns IS NOT NULL
UNION ALL
-- (a thread's stack points hold one row per time)
SELECT 2, global_tid, 0, ts, row_number() OVER (ORDER BY global_tid, ts), range_id, NULL, NULL, NULL
FROM nvtx_stack_points WHERE global_tid IS NOT NULL AND ts IS NOT NULL
UNION ALL
-- (rows started at one time: the last holds the running maximum over them all)
SELECT 4, pid, 0, start_ns, row_number() OVER (ORDER BY pid, start_ns, cover_end, -cover_tid), cover_end, cover_tid, NULL, NULL
FROM nvtx_process_cover WHERE pid IS NOT NULL AND start_ns IS NOT NULL;

-- Per (side, key): the buckets' origin and width, and the last bucket's number. A time t's
-- bucket is t // w - t0 // w: monotonic in t, and in BIGINT for any times, as w is at least 2
-- (a broken export's times can lie further apart than BIGINT holds: the span is a HUGEINT).
-- Two buckets a row, at most a million a key: each bucket is a group of lists below, and the
-- twenty million of a thread with five million NVTX ranges ran out of 4 GB.
CREATE TEMP VIEW time_lookup_width_rows AS
WITH spans AS (SELECT side, k1, k2, min(t) AS t0, max(t) AS t1, count(*) AS n FROM time_lookup_rows GROUP BY ALL),
widths AS (SELECT *, greatest((t1::HUGEINT - t0) // least(2 * n, 1000000), 2)::BIGINT AS w FROM spans)
SELECT side, k1, k2, t0, w, t1 // w - t0 // w AS last_b FROM widths;
CREATE TEMP TABLE time_lookup_widths AS FROM time_lookup_width_rows;

-- Every bucket of every (side, key), with the times of the rows started in it (in no order), the
-- number of its first row and the number of the last row before it. A key's rows are numbered in
-- time order, so a bucket's rows are numbered first_i, first_i + 1, ...: the last at or before t
-- is first_i - 1 + the count of its times <= t. (Lists sorted by number cost an ordered
-- aggregate's state per bucket: a million buckets ran out of 1 GB. Carrying the rows' values in
-- the buckets, so that a lookup needs no join on the rows, ran out of 1 GB too.)
CREATE TEMP VIEW time_lookup_bucket_rows AS
WITH in_bucket AS (
  SELECT r.side, r.k1, r.k2, r.t // w.w - w.t0 // w.w AS b, list(r.t) AS ts, min(r.i) AS first_i, max(r.i) AS last_i
  FROM time_lookup_rows r JOIN time_lookup_widths w USING (side, k1, k2) GROUP BY ALL)
SELECT w.side, w.k1, w.k2, g.b, i.ts, i.first_i,
       last_value(i.last_i IGNORE NULLS) OVER (PARTITION BY w.side, w.k1, w.k2 ORDER BY g.b
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior
FROM time_lookup_widths w CROSS JOIN LATERAL (SELECT unnest(range(0, w.last_b + 1)) AS b) g
LEFT JOIN in_bucket i ON i.side = w.side AND i.k1 = w.k1 AND i.k2 = w.k2 AND i.b = g.b;
CREATE TEMP TABLE time_lookup_buckets AS FROM time_lookup_bucket_rows;

-- A time's bucket (NULL before the key's first row), and the number of the last row at or
-- before it in that bucket, else the bucket's prior.
CREATE TEMP MACRO lookup_bucket(t, t0, w, last_b) AS CASE WHEN t >= t0 THEN least(t // w - t0 // w, last_b) END;
CREATE TEMP MACRO lookup_row(ts, first_i, prior, t) AS coalesce(first_i - 1 + nullif(len(list_filter(ts, x -> x <= t)), 0), prior);

-- One row per (process, device): its GPU busy time inside the process's steady-state window,
-- the denominator of the steady-state shares that several rules report.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column busy_ns: busy time (gpu_busy) inside steady_state's window, ns
-- @column kernel_sum_ns: the durations of the kernels started in the window, summed, ns: above
-- busy_ns where kernels run side by side (several streams); busy_ns over it turns the kernels'
-- summed time into busy time
-- @column kernel_share_ns: what a kernel's share is taken of, so that no share passes 100 %: the
-- larger of busy_ns and kernel_sum_ns, ns
-- @column copy_share_ns: what a copy's share is taken of: the larger of busy_ns and the durations of
-- the copies and memsets started in the window, summed (above busy_ns where copies run side by
-- side, on several copy engines), ns
CREATE TABLE steady_busy AS
-- (one scan of the window's operations for both sums: gpu_activity's kernel rows are kernels')
WITH sums AS (
  SELECT a.pid, a.device_id, sum(a.duration_ns) FILTER (WHERE a.kind = 'kernel')::BIGINT AS kernel_sum_ns,
         sum(a.duration_ns) FILTER (WHERE a.kind IN ('memcpy', 'memset'))::BIGINT AS copy_sum_ns
  FROM gpu_activity a JOIN steady_state s ON s.pid = a.pid
  WHERE a.start_ns >= s.start_ns AND a.start_ns < s.end_ns GROUP BY ALL),
busy AS (
  SELECT b.pid, b.device_id, sum(least(b.end_ns, s.end_ns) - greatest(b.start_ns, s.start_ns))::BIGINT AS busy_ns,
         coalesce(any_value(k.kernel_sum_ns), 0) AS kernel_sum_ns, coalesce(any_value(k.copy_sum_ns), 0) AS copy_sum_ns
  FROM gpu_busy b JOIN steady_state s ON s.pid = b.pid
  LEFT JOIN sums k ON k.pid = b.pid AND k.device_id IS NOT DISTINCT FROM b.device_id
  WHERE b.end_ns > s.start_ns AND b.start_ns < s.end_ns
  GROUP BY b.pid, b.device_id)
SELECT pid, device_id, busy_ns, kernel_sum_ns, greatest(busy_ns, kernel_sum_ns) AS kernel_share_ns,
       greatest(busy_ns, copy_sum_ns) AS copy_share_ns
FROM busy;

-- One row per distinct kernel name. Rules match name patterns here, once per name, and join
-- back on the name: a regular expression on every kernel row costs seconds at 1e7 kernels.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column name: kernel name (kernels.name)
-- @column instances: kernels of that name, count
CREATE TABLE kernel_names AS
SELECT name, count(*) AS instances FROM kernels GROUP BY name;
