-- include: normalize, phases

-- Multi-GPU communication: NCCL kernels, their overlap with compute on each device, and the
-- matching of one collective's instances across ranks. Runs at ingest after 10_normalize.sql.
-- A rank is a (device, process) pair, so one process per GPU (torchrun) and one process
-- driving several GPUs both work. Nothing here needs a kernel's launch (runtime) row: name,
-- device, process and times come from the kernel row itself, so traces whose correlations
-- dangle (derived time windows) are counted in full. The launch row is used only to find
-- kernels launched from inside NCCL's own NVTX ranges.

-- One row per collective name token as NCCL spells it in kernel names
-- (ncclDevKernel_AllReduce_Sum_f32_RING_LL, ncclKernel_AllGather_RING_LL_Sum_int8_t,
-- ncclAllReduceRingLLKernel_sum_f32, ncclSymkDevKernel_ReduceScatter_LD_sum_bf16) and in its
-- NVTX ranges (ncclAllReduce, ncclSend). Matched case-insensitively, lowest priority first, so
-- longer names win over their parts.
-- sources: always
-- @column priority: match order, lowest first
-- @column token: substring of the kernel or range name
-- @column collective: the collective it names (AllReduce, AllGather, Send, ...)
-- @column synchronizing: every rank of the communicator takes part, so the k-th instance on each
-- rank is the same operation and arrival times can be compared (point-to-point is not)
CREATE TABLE comm_collective_names(priority INTEGER, token VARCHAR, collective VARCHAR, synchronizing BOOLEAN);
INSERT INTO comm_collective_names VALUES
  (1, 'ReduceScatter', 'ReduceScatter', true), (2, 'AllReduce', 'AllReduce', true),
  (3, 'AllGather', 'AllGather', true), (4, 'AllToAll', 'AllToAll', true),
  (5, 'Broadcast', 'Broadcast', true), (5, 'Bcast', 'Broadcast', true),
  (6, 'SendRecv', 'SendRecv', false), (7, 'Reduce', 'Reduce', true),
  (8, 'Send', 'Send', false), (9, 'Recv', 'Recv', false), (10, 'Generic', 'Generic', false);

-- One row per element type token in NCCL kernel names: NCCL >= 2.19 short names (f32, bf16),
-- 2.8-2.18 C types (float, __nv_bfloat16). Only reductions carry a meaningful one: copies
-- (AllGather, Broadcast, SendRecv) move bytes and their kernels are named after a placeholder type.
-- sources: always
-- @column token: the type as it appears in the name, between underscores
-- @column dtype: the element type, short name (f32, bf16, i8, ...)
CREATE TABLE comm_dtype_names(token VARCHAR, dtype VARCHAR);
INSERT INTO comm_dtype_names VALUES
  ('i8', 'i8'), ('u8', 'u8'), ('i32', 'i32'), ('u32', 'u32'), ('i64', 'i64'), ('u64', 'u64'),
  ('f16', 'f16'), ('f32', 'f32'), ('f64', 'f64'), ('bf16', 'bf16'), ('f8e4m3', 'f8e4m3'), ('f8e5m2', 'f8e5m2'),
  ('int8_t', 'i8'), ('uint8_t', 'u8'), ('int32_t', 'i32'), ('uint32_t', 'u32'), ('int64_t', 'i64'),
  ('uint64_t', 'u64'), ('half', 'f16'), ('float', 'f32'), ('double', 'f64'), ('__nv_bfloat16', 'bf16'),
  ('__nv_fp8_e4m3', 'f8e4m3'), ('__nv_fp8_e5m2', 'f8e5m2');

-- One row per distinct kernel name: is it an NCCL kernel by name, and what does the name say.
-- fn is the function name without "void " and without its parameter or template list.
CREATE TEMP TABLE comm_kernel_names AS
WITH names AS (SELECT name, any_value(short_name) AS short_name FROM kernels GROUP BY name),
fns AS (
  SELECT name, regexp_replace(regexp_replace(coalesce(short_name, name), '^void ', ''), '[(<].*$', '') AS fn
  FROM names)
SELECT name, fn, regexp_matches(fn, '^nccl[A-Za-z0-9]*Kernel') AS by_name,
       (SELECT c.collective FROM comm_collective_names c WHERE fn ILIKE 'nccl%' || c.token || '%'
        ORDER BY c.priority LIMIT 1) AS name_collective,
       -- the token between underscores or at an end, without a regular expression: one built
       -- from a joined row is compiled again for every name (1e5 names: minutes, issue 36)
       (SELECT d.dtype FROM comm_dtype_names d
        WHERE fn = d.token OR starts_with(fn, d.token || '_') OR ends_with(fn, '_' || d.token)
              OR contains(fn, '_' || d.token || '_')
        ORDER BY length(d.token) DESC LIMIT 1) AS name_dtype
FROM fns;

-- One row per NCCL NVTX range (domain "NCCL"; NCCL >= 2.12 names them after the API call).
-- sources: NVTX_EVENTS
-- @column pid: OS process id
-- @column tid: OS thread id of the range
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: range name (ncclAllReduce, ncclSend, ...)
-- @column collective: the collective it names (comm_collective_names), NULL if none
CREATE TABLE comm_nvtx AS
SELECT n.pid, n.tid, n.start_ns, n.end_ns, n.duration_ns, n.name,
       (SELECT c.collective FROM comm_collective_names c WHERE n.name ILIKE 'nccl' || c.token || '%'
        ORDER BY c.priority LIMIT 1) AS collective
FROM nvtx_ranges n WHERE n.domain = 'NCCL';

-- Kernels launched from inside an NCCL NVTX range on the same thread are NCCL's work whatever
-- their name. Only kernels with a launch row can be matched; the others go by name alone.
CREATE TEMP TABLE comm_launched AS
WITH k AS (
  SELECT global_pid, pid, correlation_id, device_id, start_ns, launch_tid, launch_start_ns FROM kernels
  WHERE launch_start_ns IS NOT NULL AND EXISTS (
    SELECT 1 FROM comm_nvtx c WHERE c.pid = kernels.pid AND c.tid = kernels.launch_tid))
SELECT k.global_pid, k.correlation_id, k.device_id, k.start_ns, r.name AS nccl_api,
       CASE WHEN r.collective IN ('Send', 'Recv') THEN 'SendRecv' ELSE r.collective END AS api_collective
FROM k ASOF JOIN comm_nvtx r ON r.pid = k.pid AND r.tid = k.launch_tid AND k.launch_start_ns >= r.start_ns
WHERE r.end_ns >= k.launch_start_ns;

-- One row per NCCL kernel: named like one (ncclDevKernel_..., ncclKernel_...), or launched from
-- inside an NCCL NVTX range on the same thread whatever its name (kernels with a launch row
-- only). Name, device, process and times come from the kernel row itself, so kernels whose
-- launch row is missing are counted too.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process
-- @column device_id: CUDA device ordinal
-- @column stream_id: CUDA stream id
-- @column correlation_id: CUPTI correlation id of the launch call
-- @column start_ns: start on the GPU, session clock, ns
-- @column end_ns: end on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: kernel name
-- @column collective: collective from the kernel name, else from the enclosing NCCL range (Send
-- and Recv as SendRecv), else unknown
-- @column dtype: element type from the name, for reductions only (AllReduce, Reduce,
-- ReduceScatter); else NULL
-- @column recognised_by: name, nvtx or name+nvtx
-- @column nccl_api: name of the enclosing NCCL NVTX range at the launch, NULL if none
-- @column launch_tid: OS thread id of the launch call, NULL when none matched
CREATE TABLE comm_kernels AS
SELECT k.pid, k.global_pid, k.device_id, k.stream_id, k.correlation_id, k.start_ns, k.end_ns, k.duration_ns,
       k.name, coalesce(n.name_collective, l.api_collective, 'unknown') AS collective,
       CASE WHEN coalesce(n.name_collective, l.api_collective) IN ('AllReduce', 'Reduce', 'ReduceScatter')
            THEN n.name_dtype END AS dtype,
       CASE WHEN n.by_name AND l.nccl_api IS NOT NULL THEN 'name+nvtx' WHEN n.by_name THEN 'name' ELSE 'nvtx' END
         AS recognised_by,
       l.nccl_api, k.launch_tid
FROM kernels k JOIN comm_kernel_names n ON n.name = k.name
LEFT JOIN comm_launched l ON l.global_pid = k.global_pid AND l.correlation_id = k.correlation_id
  AND l.device_id = k.device_id AND l.start_ns = k.start_ns
WHERE n.by_name OR l.nccl_api IS NOT NULL;

-- One row per busy interval of a (device, process)'s NCCL kernels: their union, so
-- overlapping kernels (several streams) count once. Same sweep as gpu_busy.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column start_ns: start of the interval on the session clock, ns
-- @column end_ns: end of the interval on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column kernels: NCCL kernels in the interval, count
CREATE TABLE comm_busy AS
WITH marked AS (
  SELECT device_id, pid, start_ns, end_ns,
         max(end_ns) OVER (PARTITION BY device_id, pid ORDER BY start_ns, end_ns
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM comm_kernels),
grouped AS (
  SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY device_id, pid ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS grp
  FROM marked)
SELECT device_id, pid, min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(end_ns) - min(start_ns) AS duration_ns,
       count(*) AS kernels
FROM grouped GROUP BY device_id, pid, grp;

-- One row per busy interval of a device's non-NCCL kernels, over all processes (their union).
-- Built only when the trace has NCCL kernels to compare it with (empty otherwise), so traces
-- without NCCL pay nothing for it.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column device_id: CUDA device ordinal
-- @column start_ns: start of the interval on the session clock, ns
-- @column end_ns: end of the interval on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column kernels: non-NCCL kernels in the interval, count
CREATE TABLE comm_compute_busy AS
WITH compute AS (
  SELECT k.device_id, k.start_ns, k.end_ns FROM kernels k JOIN comm_kernel_names n ON n.name = k.name
  WHERE EXISTS (SELECT 1 FROM comm_kernels) AND NOT n.by_name AND NOT EXISTS (
    SELECT 1 FROM comm_launched l WHERE l.global_pid = k.global_pid AND l.correlation_id = k.correlation_id
      AND l.device_id = k.device_id AND l.start_ns = k.start_ns)),
marked AS (
  SELECT device_id, start_ns, end_ns,
         max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
  FROM compute),
grouped AS (
  SELECT *, sum(CASE WHEN prev_end IS NULL OR start_ns > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS grp
  FROM marked)
SELECT device_id, min(start_ns) AS start_ns, max(end_ns) AS end_ns, max(end_ns) - min(start_ns) AS duration_ns,
       count(*) AS kernels
FROM grouped GROUP BY device_id, grp;

-- One row per (device, process) with NCCL kernels: communication time (union), the part of it
-- during which a non-NCCL kernel runs on the same device (overlapped) and the rest (exposed),
-- over the whole trace and over the process's steady state (steady_state, else the trace
-- window), so that start-up such as DDP's initial broadcast does not dilute or inflate the
-- verdict. One sweep over the start/end events of both unions (linear after a sort).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column comm_kernels: NCCL kernels, count
-- @column comm_kernel_ns: their summed durations, ns
-- @column comm_ns: communication time, the union of the NCCL kernels (comm_busy), ns
-- @column overlapped_ns: of comm_ns, time with a non-NCCL kernel running on the device, ns
-- @column exposed_ns: comm_ns - overlapped_ns, ns
-- @column compute_ns: busy time of the device's non-NCCL kernels (comm_compute_busy), ns
-- @column window_start_ns: steady-state window start (else the trace's start), ns
-- @column window_end_ns: steady-state window end (else the trace's end), ns
-- @column window_ns: window_end_ns - window_start_ns, ns
-- @column steady_comm_ns: communication time inside the window, ns
-- @column steady_overlapped_ns: overlapped time inside the window, ns
-- @column steady_exposed_ns: steady_comm_ns - steady_overlapped_ns, ns
CREATE TABLE comm_exposure AS
WITH comm AS (SELECT device_id, pid, sum(duration_ns) AS comm_ns FROM comm_busy GROUP BY ALL),
counts AS (SELECT device_id, pid, count(*) AS comm_kernels, sum(duration_ns) AS comm_kernel_ns
           FROM comm_kernels GROUP BY ALL),
win AS (
  SELECT c.device_id, c.pid, coalesce(s.start_ns, t.start_ns) AS window_start_ns,
         coalesce(s.end_ns, t.end_ns) AS window_end_ns
  FROM comm c CROSS JOIN trace_window t LEFT JOIN steady_state s ON s.pid = c.pid),
ev AS (
  SELECT device_id, pid, start_ns AS ts, 1 AS dc, 0 AS dk FROM comm_busy
  UNION ALL SELECT device_id, pid, end_ns, -1, 0 FROM comm_busy
  UNION ALL SELECT c.device_id, c.pid, k.start_ns, 0, 1 FROM comm_compute_busy k JOIN comm c USING (device_id)
  UNION ALL SELECT c.device_id, c.pid, k.end_ns, 0, -1 FROM comm_compute_busy k JOIN comm c USING (device_id)),
points AS (SELECT device_id, pid, ts, sum(dc) AS dc, sum(dk) AS dk FROM ev GROUP BY ALL),
state AS (
  SELECT device_id, pid, ts,
         sum(dc) OVER (PARTITION BY device_id, pid ORDER BY ts ROWS UNBOUNDED PRECEDING) AS comm_open,
         sum(dk) OVER (PARTITION BY device_id, pid ORDER BY ts ROWS UNBOUNDED PRECEDING) AS compute_open,
         lead(ts) OVER (PARTITION BY device_id, pid ORDER BY ts) AS next_ts
  FROM points),
segments AS (
  SELECT st.device_id, st.pid, st.next_ts - st.ts AS length_ns,
         greatest(least(st.next_ts, w.window_end_ns) - greatest(st.ts, w.window_start_ns), 0) AS steady_ns,
         st.compute_open > 0 AS both_on
  FROM state st JOIN win w USING (device_id, pid)
  WHERE st.next_ts IS NOT NULL AND st.comm_open > 0),
sums AS (
  SELECT device_id, pid, coalesce(sum(length_ns) FILTER (WHERE both_on), 0) AS overlapped_ns,
         sum(steady_ns) AS steady_comm_ns, coalesce(sum(steady_ns) FILTER (WHERE both_on), 0) AS steady_overlapped_ns
  FROM segments GROUP BY ALL),
compute AS (SELECT device_id, sum(duration_ns) AS compute_ns FROM comm_compute_busy GROUP BY ALL)
SELECT c.device_id, c.pid, n.comm_kernels, n.comm_kernel_ns, c.comm_ns,
       coalesce(o.overlapped_ns, 0) AS overlapped_ns, c.comm_ns - coalesce(o.overlapped_ns, 0) AS exposed_ns,
       coalesce(p.compute_ns, 0) AS compute_ns,
       w.window_start_ns, w.window_end_ns, w.window_end_ns - w.window_start_ns AS window_ns,
       coalesce(o.steady_comm_ns, 0) AS steady_comm_ns, coalesce(o.steady_overlapped_ns, 0) AS steady_overlapped_ns,
       coalesce(o.steady_comm_ns, 0) - coalesce(o.steady_overlapped_ns, 0) AS steady_exposed_ns
FROM comm c JOIN counts n USING (device_id, pid) JOIN win w USING (device_id, pid)
LEFT JOIN sums o USING (device_id, pid) LEFT JOIN compute p USING (device_id);

-- One row per kernel of a synchronizing collective, numbered so that the same instance on
-- every rank (device, process) is one operation. A capture that starts or is cut while a
-- collective is in flight can drop the first instance on some ranks only; so each rank is
-- aligned to the rank with the most instances by the shift (at most 3) that makes the
-- instances end together. Shift 0 is kept unless another halves the median end-time gap.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column collective_key: collective and element type ('AllReduce bf16'): what is matched across ranks
-- @column collective: collective name (comm_kernels.collective)
-- @column dtype: element type, NULL where the name gives none
-- @column seq: position among this rank's kernels of the key, in start order, from 1
-- @column instance: seq shifted to the reference rank: equal on every rank for one operation
-- @column start_ns: kernel start on the GPU, session clock, ns
-- @column end_ns: kernel end on the GPU, session clock, ns
-- @column in_steady_state: true when the kernel starts inside the process's steady-state window
-- (else the trace window), as comm_exposure's steady_* columns
CREATE TABLE comm_instances AS
WITH k AS (
  SELECT device_id, pid, collective || coalesce(' ' || dtype, '') AS collective_key, collective, dtype,
         start_ns, end_ns,
         row_number() OVER (PARTITION BY device_id, pid, collective, dtype ORDER BY start_ns, end_ns) AS seq
  FROM comm_kernels
  WHERE collective IN (SELECT collective FROM comm_collective_names WHERE synchronizing)),
ranks AS (SELECT collective_key, device_id, pid, count(*) AS n FROM k GROUP BY ALL),
ref AS (
  SELECT collective_key, device_id, pid FROM (
    SELECT *, row_number() OVER (PARTITION BY collective_key ORDER BY n DESC, device_id, pid) AS r FROM ranks)
  WHERE r = 1),
shifts AS (SELECT unnest(range(-3, 4)) AS shift),
others AS (
  SELECT o.collective_key, o.device_id, o.pid, o.end_ns, s.shift, o.seq + s.shift AS ref_seq,
         f.device_id AS ref_device_id, f.pid AS ref_pid
  FROM k o JOIN ref f ON f.collective_key = o.collective_key
  CROSS JOIN shifts s
  WHERE NOT (f.device_id = o.device_id AND f.pid = o.pid)),
cand AS (
  SELECT o.collective_key, o.device_id, o.pid, o.shift, median(abs(o.end_ns - r.end_ns)) AS end_gap_ns
  FROM others o JOIN k r ON r.collective_key = o.collective_key AND r.device_id = o.ref_device_id
    AND r.pid = o.ref_pid AND r.seq = o.ref_seq
  GROUP BY ALL),
best AS (
  SELECT *, row_number() OVER (PARTITION BY collective_key, device_id, pid ORDER BY end_gap_ns, abs(shift)) AS r
  FROM cand),
chosen AS (
  SELECT b.collective_key, b.device_id, b.pid,
         CASE WHEN z.end_gap_ns IS NULL OR b.end_gap_ns < 0.5 * z.end_gap_ns THEN b.shift ELSE 0 END AS shift
  FROM best b LEFT JOIN (SELECT * FROM cand WHERE shift = 0) z USING (collective_key, device_id, pid)
  WHERE b.r = 1)
SELECT k.device_id, k.pid, k.collective_key, k.collective, k.dtype, k.seq,
       k.seq + coalesce(c.shift, 0) AS instance, k.start_ns, k.end_ns,
       -- inside its process's steady state (after start-up), as comm_exposure's steady_* columns
       k.start_ns BETWEEN coalesce(s.start_ns, t.start_ns) AND coalesce(s.end_ns, t.end_ns) AS in_steady_state
FROM k LEFT JOIN chosen c USING (collective_key, device_id, pid)
CROSS JOIN trace_window t LEFT JOIN steady_state s ON s.pid = k.pid;
