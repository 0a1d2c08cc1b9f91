-- include: normalize, phases

-- NVTX attribution: which range launched each GPU operation, and per range instance the GPU
-- work launched from it and the GPU busy time during it. Linear in ranges + operations: sorts,
-- window functions, ASOF joins (sort-merge) and bucketed lookups, never an interval join.

-- Each GPU operation with the numbers of the rows its lookups find (time_lookup_rows, phases.sql):
-- its thread's stack point and its process's cover at its launch. Apart from the rows' values
-- (range_op_sums), so that one statement does not hold every side's rows and buckets at once: on a
-- thread with five million NVTX ranges that ran out of 500 MB.
CREATE TABLE op_row_numbers AS
WITH ops AS (
  SELECT pid, global_pid + launch_tid AS global_tid, device_id, kind, name, start_ns, end_ns, duration_ns,
         launch_start_ns
  FROM gpu_activity WHERE launch_tid IS NOT NULL AND launch_start_ns IS NOT NULL)
SELECT o.*, lookup_row(bp.ts, bp.first_i, bp.prior, o.launch_start_ns) AS range_i,
       lookup_row(bc.ts, bc.first_i, bc.prior, o.launch_start_ns) AS cover_i
FROM ops o
LEFT JOIN time_lookup_widths wp ON wp.side = 2 AND wp.k1 = o.global_tid AND wp.k2 = 0
LEFT JOIN time_lookup_buckets bp
  ON bp.side = 2 AND bp.k1 = o.global_tid AND bp.k2 = 0 AND bp.b = lookup_bucket(o.launch_start_ns, wp.t0, wp.w, wp.last_b)
LEFT JOIN time_lookup_widths wc ON wc.side = 4 AND wc.k1 = o.pid AND wc.k2 = 0
LEFT JOIN time_lookup_buckets bc
  ON bc.side = 4 AND bc.k1 = o.pid AND bc.k2 = 0 AND bc.b = lookup_bucket(o.launch_start_ns, wc.t0, wc.w, wc.last_b);

-- GPU operations by the innermost open push/pop range on the launching thread at their launch
-- call (its API call's start): the one open after the last NVTX event at or before the launch
-- (nvtx_stack_points). Summed per (range, process, device, kind, name, in the steady state or
-- not), the grain both consumers below need: a row per range and operation name, not one per
-- operation.
-- op_range_id: the same range, else (an operation launched by a helper thread in no range of
-- its own, such as autograd's backward thread) the innermost range of the thread of the
-- process inside a range at the launch (nvtx_process_cover, phases.sql): where the work comes
-- from in the program's words (nvtx_op_time). range_id alone is nsys's same-thread projection.
-- The lookups are hash joins on the operations (time_lookup_rows, phases.sql), none sorting them.
CREATE TABLE range_op_sums AS
WITH own AS (
  SELECT o.* EXCLUDE (range_i, cover_i), rp.v1 AS range_id, rc.v1 AS cover_end, rc.v2 AS cover_tid
  FROM op_row_numbers o
  LEFT JOIN time_lookup_rows rp ON rp.side = 2 AND rp.i = o.range_i
  LEFT JOIN time_lookup_rows rc ON rc.side = 4 AND rc.i = o.cover_i),
placed AS (
  SELECT o.* EXCLUDE (cover_end, cover_tid),
         coalesce(o.range_id, CASE WHEN o.cover_end > o.launch_start_ns THEN rq.v1 END) AS op_range_id
  FROM own o
  LEFT JOIN time_lookup_widths wq ON wq.side = 2 AND wq.k1 = CASE WHEN o.range_id IS NULL THEN o.cover_tid END AND wq.k2 = 0
  LEFT JOIN time_lookup_buckets bq
    ON bq.side = 2 AND bq.k1 = wq.k1 AND bq.k2 = 0 AND bq.b = lookup_bucket(o.launch_start_ns, wq.t0, wq.w, wq.last_b)
  LEFT JOIN time_lookup_rows rq ON rq.side = 2 AND rq.i = lookup_row(bq.ts, bq.first_i, bq.prior, o.launch_start_ns))
SELECT o.range_id, o.op_range_id, o.pid, o.device_id, o.kind, o.name,
       o.start_ns >= s.start_ns AND o.start_ns < s.end_ns AS steady,
       count(*) AS ops, sum(o.duration_ns::DOUBLE)::BIGINT AS gpu_ns,
       min(o.start_ns) AS gpu_start_ns, max(o.end_ns) AS gpu_end_ns
FROM placed o LEFT JOIN steady_state s ON s.pid = o.pid
WHERE o.op_range_id IS NOT NULL
GROUP BY ALL;

-- Per range instance, the GPU operations launched inside it or inside its descendants
-- (what nsys's nvtx_gpu_proj_sum counts): direct aggregates rolled up the parent chain, so the
-- work is ranges-with-GPU-work x depth.
CREATE TABLE nvtx_direct_ops AS
SELECT range_id, sum(ops)::BIGINT AS ops, coalesce(sum(ops) FILTER (WHERE kind = 'kernel'), 0)::BIGINT AS kernels,
       coalesce(sum(ops) FILTER (WHERE kind = 'memcpy'), 0)::BIGINT AS memcpys,
       coalesce(sum(ops) FILTER (WHERE kind = 'memset'), 0)::BIGINT AS memsets,
       coalesce(sum(ops) FILTER (WHERE kind = 'graph'), 0)::BIGINT AS graphs, sum(gpu_ns)::BIGINT AS gpu_ns,
       min(gpu_start_ns) AS gpu_start_ns, max(gpu_end_ns) AS gpu_end_ns
FROM range_op_sums WHERE range_id IS NOT NULL GROUP BY range_id;

CREATE TABLE nvtx_inclusive_ops AS
WITH RECURSIVE up(range_id, anc_id, ops, kernels, memcpys, memsets, graphs, gpu_ns, gpu_start_ns, gpu_end_ns) AS (
  SELECT range_id, range_id, ops, kernels, memcpys, memsets, graphs, gpu_ns, gpu_start_ns, gpu_end_ns FROM nvtx_direct_ops
  UNION ALL
  SELECT u.range_id, t.parent_id, u.ops, u.kernels, u.memcpys, u.memsets, u.graphs, u.gpu_ns, u.gpu_start_ns, u.gpu_end_ns
  FROM up u JOIN nvtx_tree t ON t.range_id = u.anc_id WHERE t.parent_id IS NOT NULL)
-- BIGINT, not sum()'s HUGEINT: counts and GPU time of one range fit, and HUGEINT columns cost
-- several times more to write and read
SELECT anc_id AS range_id, sum(ops)::BIGINT AS ops, sum(kernels)::BIGINT AS kernels, sum(memcpys)::BIGINT AS memcpys,
       sum(memsets)::BIGINT AS memsets, sum(graphs)::BIGINT AS graphs, sum(gpu_ns)::BIGINT AS gpu_ns,
       min(gpu_start_ns) AS gpu_start_ns, max(gpu_end_ns) AS gpu_end_ns
FROM up GROUP BY anc_id;

-- Where GPU work comes from, in the program's words: one row per (process, device, innermost
-- launching range name, operation kind and name), with the steady-state operations (started
-- inside the process's steady_state window) and their GPU time. The launching range is the
-- innermost push/pop range open on the launching thread at the launch call's start, else, for
-- work a helper thread launches outside any range of its own, on the thread of the process
-- inside a range then (nvtx_process_cover).
-- sources: NVTX_EVENTS
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column range_name: name of the innermost NVTX range open at the launch
-- @column kind: kernel, memcpy, memset or graph (gpu_activity.kind)
-- @column name: operation name (gpu_activity.name)
-- @column ops: operations, count
-- @column gpu_ns: their summed GPU durations, ns
CREATE TABLE nvtx_op_time AS
SELECT r.pid, r.device_id, t.name AS range_name, r.kind, r.name, sum(r.ops)::BIGINT AS ops, sum(r.gpu_ns)::BIGINT AS gpu_ns
FROM range_op_sums r JOIN nvtx_tree t ON t.range_id = r.op_range_id
WHERE r.steady
GROUP BY ALL;

-- One row per (process, device, innermost launching range name): the steady-state GPU operations
-- that range launches and their GPU time, summed over operation kinds and names (nvtx_op_time):
-- how many operations a place in the program issues, for the rules that judge it by them.
-- sources: NVTX_EVENTS
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column range_name: name of the innermost NVTX range open at the launch
-- @column ops: operations, count
-- @column gpu_ns: their summed GPU durations, ns
CREATE VIEW nvtx_range_ops AS
SELECT pid, device_id, range_name, sum(ops)::BIGINT AS ops, sum(gpu_ns)::BIGINT AS gpu_ns FROM nvtx_op_time GROUP BY ALL;

-- One row per gpu_busy interval with the busy time of its (device, process) before it: a
-- prefix sum, so busy time in [a, b] = busy_before(b) - busy_before(a). A view: no ingest statement
-- reads it (nvtx_range_stats sweeps gpu_busy itself), so only a query that reads it pays its sort.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column start_ns: start of the busy interval on the session clock, ns
-- @column end_ns: end of the busy interval on the session clock, ns
-- @column busy_before_ns: busy time of the (device, process) before start_ns, ns
-- One running sum over a stream sorted by (device, process, start), less the partitions before
-- (parts.before): a partitioned window sorts each partition apart (1e7 operations: 1.4-1.6 s
-- wall, 2.5-2.7 CPU s, against 1.1 s and 1.3 CPU s so). Inclusive running sums stream; the
-- exclusive frame (... AND 1 PRECEDING) does not. In DOUBLE, cast back: exact below 2^53 ns, and
-- five times cheaper than a HUGEINT running sum.
CREATE VIEW gpu_busy_cum AS
WITH parts AS (
  SELECT device_id, pid, coalesce(sum(ns) OVER (ORDER BY device_id NULLS FIRST, pid NULLS FIRST
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
  FROM (SELECT device_id, pid, sum(duration_ns::DOUBLE) AS ns FROM gpu_busy GROUP BY ALL)),
run AS (
  SELECT *, sum(duration_ns::DOUBLE) OVER (ROWS UNBOUNDED PRECEDING) AS cum
  FROM (SELECT device_id, pid, start_ns, end_ns, duration_ns FROM gpu_busy
        ORDER BY device_id NULLS FIRST, pid NULLS FIRST, start_ns))
SELECT r.device_id, r.pid, r.start_ns, r.end_ns, (r.cum - r.duration_ns - p.before)::BIGINT AS busy_before_ns
FROM run r JOIN parts p ON p.device_id IS NOT DISTINCT FROM r.device_id AND p.pid IS NOT DISTINCT FROM r.pid;

-- One row per NVTX range instance: its place in the stack, the GPU work launched from it
-- (inclusive of nested ranges, as nsys's nvtx_gpu_proj_sum counts; work is attributed to
-- push/pop ranges only), and the busy time of its process's GPUs during its wall time.
-- sources: NVTX_EVENTS
-- @column range_id: the range (nvtx_tree.range_id)
-- @column pid: OS process id
-- @column tid: OS thread id that opened the range
-- @column name: the range's message
-- @column style: push_pop or start_end
-- @column domain: NVTX domain name, NULL for the default domain
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column depth: stack depth, 0 at top level; NULL when not on a stack
-- @column parent_id: range_id of the enclosing range, NULL at top level
-- @column children: directly nested ranges, count
-- @column ops: GPU operations launched inside it or its nested ranges, count
-- @column kernels: of those, kernels, count
-- @column memcpys: of those, memcpys, count
-- @column memsets: of those, memsets, count
-- @column graphs: of those, graph replays, count
-- @column gpu_ns: summed GPU durations of those operations, ns
-- @column gpu_start_ns: earliest start of those operations, ns; NULL without any
-- @column gpu_end_ns: latest end of those operations, ns; NULL without any
-- @column gpu_proj_ns: gpu_end_ns - gpu_start_ns, the range projected onto the GPU, ns (0 without
-- operations)
-- @column busy_during_ns: GPU busy time of the process on its devices during the range's wall
-- time, summed over devices, ns
-- @column devices: devices the process has GPU work on, count
CREATE TABLE nvtx_range_stats AS
WITH devs AS (SELECT DISTINCT pid, device_id FROM gpu_busy WHERE pid IN (SELECT pid FROM nvtx_tree)),
-- The busy time of the range's devices before each of its edges, from one stream of the busy
-- intervals and the edges sorted by (device, process, time), the edges after the intervals that
-- start with them: the durations before an edge, less the part of the last interval still
-- running at the edge (intervals lie apart, so it is the one with the latest end), less the
-- partitions before (before). The latest end is a running max of ends offset above every earlier
-- partition's (base, as gpu_openers does, normalize.sql): below the edge's base it belongs to an
-- earlier partition. Sums in DOUBLE, exact below 2^53 ns.
parts AS (
  SELECT device_id, pid, lo,
         coalesce(sum(hi - lo + 1) OVER p, 0) AS base, coalesce(sum(ns) OVER p, 0) AS before
  FROM (SELECT b.device_id, b.pid, min(b.start_ns)::HUGEINT AS lo, max(b.end_ns)::HUGEINT AS hi,
               sum(b.duration_ns::DOUBLE) AS ns
        FROM gpu_busy b SEMI JOIN devs d ON d.device_id = b.device_id AND d.pid = b.pid GROUP BY ALL)
  WINDOW p AS (ORDER BY device_id, pid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
stream AS (
  SELECT b.device_id, b.pid, b.start_ns AS ts, false AS edge, b.duration_ns::DOUBLE AS ns,
         b.end_ns - p.lo + p.base AS e, NULL::BIGINT AS range_id, NULL::INTEGER AS side
  FROM gpu_busy b JOIN parts p ON p.device_id = b.device_id AND p.pid = b.pid
  UNION ALL
  SELECT d.device_id, t.pid, t.start_ns, true, 0, NULL, t.range_id, 0 FROM nvtx_tree t JOIN devs d USING (pid)
  UNION ALL
  SELECT d.device_id, t.pid, t.end_ns, true, 0, NULL, t.range_id, 1 FROM nvtx_tree t JOIN devs d USING (pid)),
swept AS (
  SELECT *, sum(ns) OVER w AS cum, max(e) OVER w AS m
  FROM (SELECT * FROM stream ORDER BY device_id, pid, ts, edge)
  WINDOW w AS (ROWS UNBOUNDED PRECEDING)),
at_edge AS (
  SELECT s.range_id, s.side,
         CASE WHEN s.m >= p.base
              THEN s.cum - p.before - greatest((s.m - p.base + p.lo)::DOUBLE - s.ts, 0) ELSE 0 END AS busy_before
  FROM swept s JOIN parts p ON p.device_id = s.device_id AND p.pid = s.pid
  WHERE s.edge AND s.ts IS NOT NULL),
busy AS (
  SELECT range_id, sum(CASE side WHEN 1 THEN busy_before ELSE -busy_before END)::BIGINT AS busy_during_ns
  FROM at_edge GROUP BY range_id),
children AS (SELECT parent_id AS range_id, count(*) AS children FROM nvtx_tree WHERE parent_id IS NOT NULL GROUP BY 1)
SELECT t.range_id, t.pid, t.tid, t.name, t.style, t.domain, t.start_ns, t.end_ns, t.duration_ns, t.depth,
       t.parent_id, coalesce(c.children, 0) AS children,
       coalesce(o.ops, 0) AS ops, coalesce(o.kernels, 0) AS kernels, coalesce(o.memcpys, 0) AS memcpys,
       coalesce(o.memsets, 0) AS memsets, coalesce(o.graphs, 0) AS graphs, coalesce(o.gpu_ns, 0) AS gpu_ns,
       o.gpu_start_ns, o.gpu_end_ns, coalesce(o.gpu_end_ns - o.gpu_start_ns, 0) AS gpu_proj_ns,
       coalesce(b.busy_during_ns, 0) AS busy_during_ns,
       coalesce(dc.devices, 0) AS devices
FROM nvtx_tree t
LEFT JOIN (SELECT pid, count(*) AS devices FROM devs GROUP BY pid) dc USING (pid)
LEFT JOIN nvtx_inclusive_ops o USING (range_id)
LEFT JOIN busy b USING (range_id)
LEFT JOIN children c USING (range_id);

-- Intermediates live in the database file, not in memory (temporary tables do not spill
-- until DuckDB's memory limit): dropped once used.
DROP TABLE nvtx_inclusive_ops;
DROP TABLE nvtx_direct_ops;
DROP TABLE range_op_sums;
DROP TABLE op_row_numbers;
