-- include: normalize, phases, nvtx, step_times
-- What `compare` measures on each run (compare/): the steps, the per-step time of each kernel,
-- copy kind, CUDA API and NVTX range, and the facts its preflight checks. Per step, GPU work
-- counts in the step it was issued in (by its launch call, or by its GPU start where the steps
-- are a marker kernel's GPU starts) and API calls and NVTX ranges in the step they start in.
-- NVTX ranges come from nvtx_range_stats, which adds the GPU time of the work launched inside
-- each range (nested ranges included), as nsys's nvtx_gpu_proj_sum.

-- One row per step: its host start, the next step's, and the earliest GPU start of the work
-- launched in between (step_times, shared with the budget's step time).
-- query: compare_steps
-- @column pid: OS process id
-- @column step: step number within the process, from 1
-- @column name: the step's range or marker name
-- @column source: how the steps were found: nvtx or repeated
-- @column start_ns: step start, ns
-- @column next_start_ns: the next step's start, ns; null for the last
-- @column gpu_first_ns: earliest GPU start of the work launched in the step, ns
-- @column gpu_clock: whether the steps are a marker kernel's GPU starts
SELECT pid, step, name, source, start_ns, next_start_ns, gpu_first_ns, gpu_clock
FROM step_times ORDER BY pid, step;

-- Where each process's steady state starts, when it was found from steps.
-- query: compare_steady_starts
-- @column pid: OS process id
-- @column start_ns: steady-state start, ns
SELECT pid, start_ns FROM steady_state WHERE method = 'steps';

-- GPU work per process, step, kind and name.
-- query: compare_gpu_by_step
-- @column pid: OS process id
-- @column step: step number
-- @column kind: kernel, memcpy, memset or graph
-- @column name: the kernel's name, or the copy's or memset's kind
-- @column count: operations
-- @column ns: their summed duration, ns
-- @column gpu_ns: null (GPU work has no GPU time inside it)
WITH s AS (SELECT pid, step, start_ns, lead(start_ns) OVER (PARTITION BY pid ORDER BY step) AS next_start_ns FROM steps),
clock AS (SELECT pid, bool_or(gpu_clock) AS gpu_clock FROM steps GROUP BY pid),
x AS (SELECT g.pid, g.kind, g.name, g.duration_ns,
             CASE WHEN c.gpu_clock THEN g.start_ns ELSE coalesce(g.launch_start_ns, g.start_ns) END AS t
      FROM gpu_activity g JOIN clock c USING (pid))
SELECT x.pid, s.step, x.kind, x.name, count(*) AS count, sum(x.duration_ns)::BIGINT AS ns, NULL AS gpu_ns
FROM x ASOF JOIN s ON x.pid = s.pid AND x.t >= s.start_ns WHERE x.t < s.next_start_ns GROUP BY ALL;

-- CUDA API calls and NVTX ranges per process, step, kind and name.
-- query: compare_host_by_step
-- @column pid: OS process id
-- @column step: step number
-- @column kind: api or nvtx
-- @column name: the API's or the range's name
-- @column count: calls or ranges
-- @column ns: their summed duration, ns
-- @column gpu_ns: ranges: the summed GPU time of the work launched inside them, ns; calls: null
WITH s AS (SELECT pid, step, start_ns, lead(start_ns) OVER (PARTITION BY pid ORDER BY step) AS next_start_ns FROM steps),
x AS (SELECT pid, 'api' AS kind, api AS name, duration_ns, start_ns AS t, NULL::BIGINT AS gpu_ns FROM api_calls
      UNION ALL SELECT pid, 'nvtx', name, duration_ns, start_ns, gpu_ns FROM nvtx_range_stats WHERE name <> '')
SELECT x.pid, s.step, x.kind, x.name, count(*) AS count, sum(x.duration_ns)::BIGINT AS ns, sum(x.gpu_ns)::BIGINT AS gpu_ns
FROM x ASOF JOIN s ON x.pid = s.pid AND x.t >= s.start_ns WHERE x.t < s.next_start_ns GROUP BY ALL;

-- GPU work, CUDA API calls and NVTX ranges over the whole run, per kind and name (a run
-- without steps).
-- query: compare_whole_run
-- @column kind: kernel, memcpy, memset, graph, api or nvtx
-- @column name: the kernel's, copy kind's, API's or range's name
-- @column count: operations, calls or ranges
-- @column ns: their summed duration, ns
-- @column gpu_ns: ranges: the summed GPU time of the work launched inside them, ns; else null
SELECT kind, name, count(*) AS count, sum(duration_ns)::BIGINT AS ns, NULL AS gpu_ns FROM gpu_activity GROUP BY ALL
UNION ALL SELECT 'api', api, count(*), sum(duration_ns)::BIGINT, NULL FROM api_calls GROUP BY ALL
UNION ALL SELECT 'nvtx', name, count(*), sum(duration_ns)::BIGINT, sum(gpu_ns)::BIGINT
FROM nvtx_range_stats WHERE name <> '' GROUP BY ALL;

-- A process's GPU busy time (the union over its operations) inside [$s, $e).
-- query: compare_steady_busy
-- @param pid: OS process id
-- @param s: window start, ns
-- @param e: window end, ns
-- @column busy_ns: busy time inside the window, ns
SELECT coalesce(sum(least(end_ns, $e) - greatest(start_ns, $s)), 0)::BIGINT AS busy_ns FROM gpu_busy
WHERE pid = $pid AND end_ns > $s AND start_ns < $e;

-- The GPUs that ran work.
-- query: compare_gpus
-- @column name: the device's name
-- @column device_id: CUDA device ordinal
SELECT name, device_id FROM devices WHERE has_activity ORDER BY device_id;

-- NVTX ranges per name.
-- query: compare_nvtx_names
-- @column name: the range's name
-- @column ranges: ranges of that name
SELECT name, count(*) AS ranges FROM nvtx_ranges WHERE name <> '' GROUP BY name;

-- GPU time per kernel name.
-- query: compare_kernel_ns
-- @column name: the kernel's name
-- @column ns: its summed duration, ns
SELECT name, sum(duration_ns)::BIGINT AS ns FROM kernels GROUP BY name;
