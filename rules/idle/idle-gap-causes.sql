-- One row per (device, process, cause, detail): the steady-state GPU idle gaps whose host-side
-- cause is the same, the time they cost, largest first (see analyzer/sql/22_idle_gaps.sql).
WITH totals AS (SELECT device_id, pid, sum(idle_ns) AS all_idle_ns FROM idle_gap_causes GROUP BY ALL),
-- the GPU operations of each steady state: host code before most of them is a per-operation cost
ops AS (
  SELECT a.device_id, a.pid, count(*) AS ops, count(*) FILTER (WHERE a.kind = 'graph') AS graphs
  FROM gpu_activity a JOIN steady_state s USING (pid)
  WHERE a.start_ns >= s.start_ns AND a.start_ns < s.end_ns GROUP BY ALL),
-- copies of at least roundtrip_min_bytes off the GPU (by where they end) and onto it (by where
-- they start): a gap between two such is a round trip of data through the host
off_gpu AS (
  SELECT DISTINCT device_id, pid, end_ns FROM memcpys WHERE kind = 'Device-to-Host' AND bytes >= $roundtrip_min_bytes),
onto_gpu AS (
  SELECT DISTINCT device_id, pid, start_ns FROM memcpys WHERE kind = 'Host-to-Device' AND bytes >= $roundtrip_min_bytes),
-- one pass over the gaps: where a cause happens (the innermost NVTX range holding most of its
-- idle time; an nvtx cause is its own range), how much of it follows a blocking call and how
-- much lies between a copy off the GPU and one back onto it
by_range AS (
  SELECT g.device_id, g.pid, g.cause, g.detail, g.nvtx_range, sum(g.duration_ns) AS ns,
         sum(g.duration_ns) FILTER (WHERE g.after_blocking_api IS NOT NULL) AS blocked_ns,
         sum(g.duration_ns) FILTER (WHERE o.end_ns IS NOT NULL AND b.start_ns IS NOT NULL) AS roundtrip_ns
  FROM idle_gaps g
  LEFT JOIN off_gpu o ON o.device_id = g.device_id AND o.pid = g.pid AND o.end_ns = g.start_ns
  LEFT JOIN onto_gpu b ON b.device_id = g.device_id AND b.pid = g.pid AND b.start_ns = g.end_ns
  WHERE g.in_steady_state GROUP BY ALL),
-- XLA's host callbacks (jax.debug.callback, pure_callback, io_callback): the thunk ranges XLA
-- writes around them, and each cause's idle time inside one: per gap, the last callback started
-- before the gap ends (one ASOF lookup, over the gaps of processes that have callbacks only)
callbacks AS (
  SELECT pid, start_ns, end_ns, regexp_extract(name, $host_callback_pattern, 0) AS callback
  FROM nvtx_tree WHERE domain = 'TSL' AND name LIKE 'Thunk:%' AND regexp_matches(name, $host_callback_pattern)),
in_callbacks AS (
  SELECT g.device_id, g.pid, g.cause, g.detail,
         sum(least(g.end_ns, c.end_ns) - greatest(g.start_ns, c.start_ns)) AS callback_ns,
         mode(c.callback) AS callback
  FROM (SELECT * FROM idle_gaps WHERE in_steady_state AND pid IN (SELECT pid FROM callbacks)) g
  ASOF JOIN callbacks c ON c.pid = g.pid AND g.end_ns >= c.start_ns
  WHERE c.end_ns > g.start_ns GROUP BY ALL),
-- where a cause's idle time falls step by step: the steps in which it alone idles the GPU
-- stall_step_factor times the process's median step or longer (stall steps), and how regularly
-- they come
by_step AS (
  SELECT g.device_id, g.pid, g.cause, g.detail, g.step, sum(g.duration_ns) AS ns
  FROM idle_gaps g WHERE g.in_steady_state AND g.step IS NOT NULL GROUP BY ALL),
steady_steps AS (
  SELECT t.pid, count(*) AS steps, median(t.duration_ns) AS median_step_ns
  FROM steps t JOIN steady_state s USING (pid)
  WHERE t.start_ns >= s.start_ns AND t.end_ns <= s.end_ns GROUP BY t.pid),
stall_steps AS (
  SELECT b.*, t.steps, b.step - lag(b.step) OVER (PARTITION BY b.device_id, b.pid, b.cause, b.detail ORDER BY b.step) AS apart
  FROM by_step b JOIN steady_steps t ON t.pid = b.pid
  WHERE b.ns > $stall_step_factor * t.median_step_ns),
stalls AS (
  SELECT device_id, pid, cause, detail, any_value(steps) AS steady_steps,
         count(*) AS stall_steps, sum(ns) AS stall_ns, min(ns) AS stall_min_ns, max(ns) AS stall_max_ns,
         string_agg(step::VARCHAR, ', ' ORDER BY step) AS stall_step_numbers,
         -- every k-th step: the stall steps' spacing, where it is always the same
         CASE WHEN count(*) >= 3 AND min(apart) = max(apart) THEN min(apart) END AS stall_every
  FROM stall_steps GROUP BY ALL),
-- the host code gaps in which the process took CPU page faults on managed memory (each fault to
-- the gap started last before it, when the gap is still open then)
fault_gaps AS (
  SELECT g.device_id, g.pid, g.cause, g.detail, g.start_ns, any_value(g.duration_ns) AS ns, count(*) AS faults
  FROM um_page_faults f
  ASOF JOIN (SELECT * FROM idle_gaps WHERE in_steady_state AND cause IN ('nvtx', 'untraced')) g
    ON g.pid = f.pid AND g.start_ns <= f.start_ns
  WHERE f.side = 'cpu' AND f.start_ns < g.end_ns
  GROUP BY ALL),
faulted AS (
  SELECT device_id, pid, cause, detail, count(*) AS fault_gaps, sum(faults) AS cpu_faults, sum(ns) AS fault_gap_ns
  FROM fault_gaps GROUP BY ALL),
-- the OS-call gaps in which the thread reaps a child process (waitpid after reading its output:
-- subprocess.run), whatever call held most of the gap
reaped AS (
  SELECT g.device_id, g.pid, g.detail, sum(g.duration_ns) AS ns
  FROM idle_gaps g
  WHERE g.in_steady_state AND g.cause = 'os-call' AND reaps_child(g.pid, g.tid, g.start_ns, g.end_ns)
  GROUP BY ALL),
-- the child processes each process starts in its steady state (spawn_pattern: fork, posix_spawn):
-- several a step are a pool of workers started anew every step, not one program run
spawns AS (
  SELECT o.pid, count(*) AS spawns, median(o.end_ns - o.start_ns) AS spawn_median_ns,
         string_agg(DISTINCT o.name::VARCHAR, ', ' ORDER BY o.name::VARCHAR) AS spawn_calls
  FROM osrt_calls o JOIN steady_state s USING (pid)
  -- (the pattern matched once per distinct name, not once per call)
  WHERE o.start_ns >= s.start_ns AND o.start_ns < s.end_ns
    AND o.name IN (SELECT n FROM (SELECT DISTINCT name AS n FROM osrt_calls) WHERE regexp_matches(n, $spawn_pattern))
  GROUP BY o.pid),
-- the OS-wait gaps next to a copy off the GPU (ending where one starts or starting where one
-- ends), with the thread already in the call that holds the gap when the GPU went idle and out of
-- it within read_wake_max_ns: it was waiting for a value the GPU computes and copies back (float()
-- of a JAX array, jax.device_get: a helper thread waits for the result to be ready, then copies
-- it and wakes the thread that reads it), a synchronization by other means, not a wait of its own
-- (a wait that outlasts the GPU's work by more is for something else: a compiler, a loader)
d2h AS (SELECT device_id, pid, start_ns, end_ns FROM memcpys WHERE kind = 'Device-to-Host'),
read_gaps AS (
  SELECT g.device_id, g.pid, g.tid, g.detail, g.start_ns, g.duration_ns FROM idle_gaps g
  -- (a lock is contention between threads, not a wait for a result)
  WHERE g.in_steady_state AND g.cause = 'os-call' AND os_wait_kind(g.detail) = 'wait'
    AND NOT regexp_matches(g.detail, 'mutex|rwlock|spin')
    AND (EXISTS (SELECT 1 FROM d2h d WHERE d.device_id = g.device_id AND d.pid = g.pid AND d.end_ns = g.start_ns)
         OR EXISTS (SELECT 1 FROM d2h d WHERE d.device_id = g.device_id AND d.pid = g.pid AND d.start_ns = g.end_ns))),
-- (the OS calls of those threads and names only: an ASOF join sorts every row of its right side)
read_waits AS (
  SELECT g.device_id, g.pid, g.detail, sum(g.duration_ns) AS ns
  FROM read_gaps g
  ASOF JOIN (SELECT o.pid, o.tid, o.name, o.start_ns, o.end_ns FROM osrt_calls o
             SEMI JOIN (SELECT DISTINCT pid, tid, detail FROM read_gaps) r
               ON r.pid = o.pid AND r.tid = o.tid AND r.detail = o.name) o
    ON o.pid = g.pid AND o.tid = g.tid AND o.name = g.detail AND o.start_ns < g.start_ns
  WHERE o.end_ns > g.start_ns AND o.end_ns - g.start_ns <= $read_wake_max_ns
  GROUP BY ALL),
places AS (
  SELECT device_id, pid, cause, detail, first(nvtx_range ORDER BY ns DESC, nvtx_range) FILTER (WHERE nvtx_range IS NOT NULL) AS nvtx_range,
         sum(blocked_ns) AS after_blocking_ns, sum(roundtrip_ns) AS roundtrip_ns
  FROM by_range GROUP BY ALL),
-- the CPU samples of host-code gaps (gap_samples): the function and the library holding most of
-- them (each with its own row's module, ties broken by name), and the top three functions in words
sampled AS (
  SELECT device_id, pid, cause, detail, any_value(cause_samples) AS samples,
         any_value(function) FILTER (WHERE k = 1) AS top_function, any_value(module) FILTER (WHERE k = 1) AS function_module,
         max(samples) AS top_function_samples,
         string_agg(function || ' (' || module || ') '
                    || round(100.0 * samples / cause_samples)::INTEGER || ' %', ', ' ORDER BY samples DESC, function)
           FILTER (WHERE k <= 3) AS top_functions
  FROM (SELECT *, row_number() OVER (PARTITION BY device_id, pid, cause, detail ORDER BY samples DESC, function) AS k
        FROM gap_samples) GROUP BY ALL),
-- (a library named in words differs from every module's file name; one that is not is its module)
sampled_libraries AS (
  SELECT device_id, pid, cause, detail, library AS top_library, n AS top_library_samples,
         library <> module AS known_library, module AS library_module
  FROM (SELECT device_id, pid, cause, detail, library, arg_max(module, samples) AS module, sum(samples) AS n,
               row_number() OVER (PARTITION BY device_id, pid, cause, detail ORDER BY sum(samples) DESC, library) AS k
        FROM gap_samples GROUP BY device_id, pid, cause, detail, library)
  WHERE k = 1),
-- what the samples name: a library known by its words (library_words) holding hot_module_pct,
-- else one function holding hot_function_pct, else any library holding hot_module_pct
picked AS (
  SELECT s.*, m.top_library, m.top_library_samples, m.library_module,
         CASE WHEN m.known_library AND m.top_library_samples >= $hot_module_pct / 100.0 * s.samples THEN 'words'
              WHEN s.top_function_samples >= $hot_function_pct / 100.0 * s.samples AND s.top_function <> '[unresolved]'
                THEN 'function'
              WHEN m.top_library_samples >= $hot_module_pct / 100.0 * s.samples THEN 'library' END AS named_by
  FROM sampled s JOIN sampled_libraries m
    ON m.device_id = s.device_id AND m.pid = s.pid AND m.cause = s.cause AND m.detail IS NOT DISTINCT FROM s.detail
  WHERE s.samples >= $min_samples),
hot AS (
  SELECT device_id, pid, cause, detail, samples, top_functions,
         CASE named_by WHEN 'words' THEN top_library || ' (' || library_module || ')'
                       WHEN 'function' THEN top_function || ' in ' || function_module
                       WHEN 'library' THEN 'code in ' || top_library END AS hot_code,
         CASE WHEN named_by = 'function' THEN top_function WHEN named_by IS NOT NULL THEN top_library END AS hot_name,
         round(100.0 * CASE WHEN named_by = 'function' THEN top_function_samples
                            WHEN named_by IS NOT NULL THEN top_library_samples END / samples, 1) AS hot_pct
  FROM picked)
SELECT c.device_id, c.pid, c.cause, c.detail,
       CASE WHEN child.waits THEN 'waiting for a child process it started (in ' || c.detail || ', then reaping it)'
            WHEN read.waits THEN 'waiting in ' || c.detail || ' for values read back from the GPU (the gaps lie next to '
                                 || 'device-to-host copies, the thread already waiting when the GPU went idle)'
            ELSE gap_cause_text(c.cause, c.detail) END
         || CASE WHEN c.cause <> 'nvtx' AND p.nvtx_range IS NOT NULL
                 THEN ' in NVTX range "' || p.nvtx_range || '"' ELSE '' END AS cause_text,
       -- the same cause in the budget's words (40_budget.sql), for the slice it claims
       CASE c.cause WHEN 'nvtx' THEN 'host code' WHEN 'untraced' THEN 'untraced host code' WHEN 'os-call' THEN 'OS wait'
                    WHEN 'module-loading' THEN 'module loading' WHEN 'cuda-api' THEN 'other CUDA calls'
                    ELSE c.cause END AS budget_cause,
       kind.wait_kind,
       is_graph_capture(c.cause, c.detail) AS graph_capture,
       -- what host code between GPU work looks like, for the advice: data through the host and
       -- back; computation after each wait; short round trips after waits; or host code alone
       CASE WHEN c.cause IN ('nvtx', 'untraced') THEN
         CASE WHEN coalesce(fl.fault_gap_ns, 0) >= 0.5 * c.idle_ns THEN 'managed memory faults'
              WHEN coalesce(p.roundtrip_ns, 0) >= 0.5 * c.idle_ns THEN 'round trip'
              -- most of it in a few steps, each idle longer than a usual step: a periodic stall
              WHEN st.stall_ns >= $stall_idle_pct / 100.0 * c.idle_ns
                   AND st.stall_steps * 100 <= $stall_steps_pct * st.steady_steps THEN 'stalls in a few steps'
              WHEN coalesce(p.after_blocking_ns, 0) >= 0.5 * c.idle_ns
                THEN CASE WHEN coalesce(p.after_blocking_ns // nullif(c.after_blocking_gaps, 0), 0) >= $host_compute_gap_ns
                          THEN 'computes after waits' ELSE 'waits' END
              -- host code between launches that wait for their kernels: exposed by them, not a cost of its own
              WHEN coalesce(lw.synchronous, false) THEN 'behind synchronous launches'
              WHEN c.median_gap_ns < $host_compute_gap_ns
                   AND ((2 * c.gaps >= coalesce(o.ops, 0) AND o.ops > 0) OR (2 * c.gaps >= ro.ops AND ro.ops > 0))
                THEN 'per operation'
              -- gaps as short as dispatching one operation, before a good share of the range's
              -- operations: that cost again, where the other operations queue behind earlier ones
              -- (unless blocking calls come before many of them: the syncs shape those gaps)
              WHEN c.median_gap_ns < $dispatch_gap_max_ns
                   AND 100 * c.gaps >= $dispatch_gap_share_pct * coalesce(ro.ops, o.ops) AND coalesce(ro.ops, o.ops) > 0
                   AND 100 * c.after_blocking_gaps <= $dispatch_max_blocking_pct * c.gaps
                THEN 'per operation'
              ELSE 'host code' END END AS host_pattern,
       CASE WHEN c.cause = 'nvtx' THEN c.detail ELSE p.nvtx_range END AS nvtx_range,
       coalesce(o.ops, 0) AS window_ops, coalesce(o.graphs, 0) AS window_graphs, c.gaps, c.idle_ns, c.median_gap_ns, c.max_gap_ns, c.after_blocking_gaps,
       coalesce(p.after_blocking_ns, 0) AS after_blocking_ns,
       coalesce(p.after_blocking_ns // nullif(c.after_blocking_gaps, 0), 0) AS after_blocking_mean_ns,
       coalesce(p.roundtrip_ns, 0) AS roundtrip_ns,
       coalesce(fl.cpu_faults, 0) AS cpu_page_faults, coalesce(fl.fault_gaps, 0) AS fault_gaps,
       coalesce(fl.fault_gap_ns, 0) AS fault_gap_ns,
       st.steady_steps, st.stall_steps, st.stall_step_numbers, st.stall_every, st.stall_ns, st.stall_min_ns, st.stall_max_ns,
       CASE WHEN st.stall_every IS NOT NULL THEN ', every ' || st.stall_every || ' steps' ELSE '' END AS stall_every_text,
       coalesce(h.samples, 0) AS cpu_samples, h.hot_code, h.hot_pct,
       CASE WHEN h.samples IS NOT NULL THEN ' CPU samples in these gaps (' || h.samples || '): ' || h.top_functions || '.'
            ELSE '' END AS samples_text,
       -- short (the headline has thirty words): the function alone, or the library
       CASE WHEN read.waits THEN 'host waits on device-to-host reads' ELSE 'idle in ' || budget_cause END
         || CASE WHEN h.hot_code IS NOT NULL THEN ' (mostly ' || h.hot_name || ')' ELSE '' END AS headline_cause,
       c.window_ns,
       round(100.0 * c.idle_ns / nullif(c.window_ns, 0), 2) AS window_pct,
       round(100.0 * c.idle_ns / nullif(t.all_idle_ns, 0), 2) AS idle_share_pct,
       row_number() OVER (PARTITION BY c.device_id, c.pid ORDER BY c.idle_ns DESC, c.cause, c.detail) AS rank,
       coalesce(fw.framework, 'other') AS framework, coalesce(fw.compiled, false) AS compiled,
       CASE WHEN cb.callback_ns >= 0.5 * c.idle_ns THEN cb.callback END AS host_callback,
       -- the operations the per-operation test counted: the range's own where the window's are too many
       CASE WHEN 2 * c.gaps >= coalesce(o.ops, 0) AND o.ops > 0 OR ro.ops IS NULL
            THEN format('{:,} gaps for {:,} operations in the steady state', c.gaps, coalesce(o.ops, 0))
            ELSE format('{:,} gaps for the {:,} operations launched in "{}", of {:,} in the steady state',
                        c.gaps, ro.ops, c.detail, coalesce(o.ops, 0)) END AS ops_text,
       coalesce(sw.spawns, 0) AS spawns, round(sw.spawns / ss.steps, 1) AS spawns_per_step,
       sw.spawn_median_ns, sw.spawn_calls,
       coalesce(kind.wait_kind = 'child process' AND sw.spawns / ss.steps >= $pool_min_spawns_per_step, false)
         AS pool_per_step
FROM idle_gap_causes c JOIN totals t USING (device_id, pid)
LEFT JOIN spawns sw ON sw.pid = c.pid
LEFT JOIN steady_steps ss ON ss.pid = c.pid
LEFT JOIN process_frameworks fw ON fw.pid = c.pid
LEFT JOIN places p ON p.device_id = c.device_id AND p.pid = c.pid AND p.cause = c.cause
                  AND p.detail IS NOT DISTINCT FROM c.detail
LEFT JOIN ops o ON o.device_id = c.device_id AND o.pid = c.pid
LEFT JOIN launch_waits lw ON lw.device_id = c.device_id AND lw.pid = c.pid
LEFT JOIN in_callbacks cb ON cb.device_id = c.device_id AND cb.pid = c.pid AND cb.cause = c.cause
                         AND cb.detail IS NOT DISTINCT FROM c.detail
-- an NVTX range's own steady-state operations: host code before most of them is a per-operation
-- cost there, even where the range launches a small part of the step's operations
LEFT JOIN nvtx_range_ops ro ON c.cause = 'nvtx' AND ro.device_id = c.device_id AND ro.pid = c.pid AND ro.range_name = c.detail
LEFT JOIN hot h ON h.device_id = c.device_id AND h.pid = c.pid AND h.cause = c.cause AND h.detail IS NOT DISTINCT FROM c.detail
LEFT JOIN faulted fl ON fl.device_id = c.device_id AND fl.pid = c.pid AND fl.cause = c.cause
                     AND fl.detail IS NOT DISTINCT FROM c.detail
LEFT JOIN stalls st ON st.device_id = c.device_id AND st.pid = c.pid AND st.cause = c.cause
                   AND st.detail IS NOT DISTINCT FROM c.detail
LEFT JOIN reaped r ON c.cause = 'os-call' AND r.device_id = c.device_id AND r.pid = c.pid AND r.detail = c.detail
LEFT JOIN read_waits rw ON c.cause = 'os-call' AND rw.device_id = c.device_id AND rw.pid = c.pid AND rw.detail = c.detail
-- most of the time in gaps that end with reaping a child: the thread waits for that child
CROSS JOIN LATERAL (SELECT coalesce(r.ns >= 0.5 * c.idle_ns, false) AND os_wait_kind(c.detail) <> 'child process' AS waits) child
-- most of it in gaps after a device-to-host copy the thread waited for
-- (not where an XLA host callback holds it: the callback is the cause)
CROSS JOIN LATERAL (SELECT NOT child.waits AND coalesce(rw.ns >= 0.5 * c.idle_ns, false)
                           AND NOT coalesce(cb.callback_ns >= 0.5 * c.idle_ns, false) AS waits) read
CROSS JOIN LATERAL (SELECT CASE WHEN child.waits THEN 'child process' WHEN read.waits THEN 'device read'
                                WHEN c.cause = 'os-call' THEN os_wait_kind(c.detail) END AS wait_kind) kind
ORDER BY c.idle_ns DESC, c.device_id, c.pid, c.cause, c.detail
