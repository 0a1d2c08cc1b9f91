-- include: normalize, phases

-- What an OS call starts, by its name: 'program' (a compiler or another tool: posix_spawn, vfork,
-- execve) or 'fork' (a copy of this process: multiprocessing's workers, a DataLoader's); NULL for
-- every other call.
CREATE MACRO process_start(name) AS
  CASE WHEN name IN ('posix_spawn', 'posix_spawnp', 'vfork', 'execve') THEN 'program'
       WHEN name = 'fork' THEN 'fork' END;

-- A CUDA call that loads GPU code (cuModuleLoad*, cuLibraryLoad*: kernels compiled or first used
-- now), by its API name.
CREATE MACRO is_module_load(api) AS regexp_matches(api, '^cu(da)?(Module|Library)Load');

-- An NVTX range in which a library compiles GPU code, by its domain and name: XLA's compilation of
-- a module (jax.jit, tf.function), whose passes run on worker threads while the calling thread
-- waits inside it.
CREATE MACRO is_compile_range(domain, name) AS coalesce(domain = 'TSL' AND name LIKE 'XlaCompile:%', false);

-- The GPU operations of each step (see step_times), one pass shared by step_times and
-- step_profile: one row per (step, operation kind, name, launch shape), the grain both need.
-- shape: a hash of a kernel's grid and block sizes (0 for other operations).
-- Each operation takes the last step started at or before its time t (what an ASOF join gives),
-- found without sorting the operations: a process's steps go into buckets of time (about four
-- per step), each bucket holding the steps started in it and the last step before it, and an
-- operation reads its bucket through a hash join (the few buckets are the build side, the
-- operations stream through into the aggregate). An ASOF join sorted every operation with all
-- its columns, which past the ingest's memory limit spilled and grew faster than the rows.
CREATE TABLE step_ops AS
WITH s AS (SELECT pid, step, start_ns FROM steps WHERE start_ns IS NOT NULL),
clock AS (SELECT pid, bool_or(gpu_clock) AS gpu_clock FROM steps GROUP BY pid),
widths AS (
  SELECT pid, min(start_ns) AS t0, greatest((max(start_ns) - min(start_ns)) // (4 * count(*)), 1) AS w,
         (max(start_ns) - min(start_ns)) // greatest((max(start_ns) - min(start_ns)) // (4 * count(*)), 1) AS last_b
  FROM s GROUP BY pid),
in_bucket AS (
  SELECT s.pid, (s.start_ns - w.t0) // w.w AS b, list(s.start_ns ORDER BY s.start_ns, s.step) AS starts,
         list(s.step ORDER BY s.start_ns, s.step) AS steps
  FROM s JOIN widths w USING (pid) GROUP BY ALL),
buckets AS MATERIALIZED (
  SELECT w.pid, w.t0, w.w, w.last_b, g.b, i.starts, i.steps,
         -- the last step started in an earlier bucket
         last_value(i.steps[-1] IGNORE NULLS) OVER (PARTITION BY w.pid ORDER BY g.b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior
  FROM widths w CROSS JOIN LATERAL (SELECT unnest(range(0, w.last_b + 1)) AS b) g
  LEFT JOIN in_bucket i ON i.pid = w.pid AND i.b = g.b),
ops AS (
  SELECT k.pid, 'kernel'::label AS kind, k.name, hash(k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z) AS shape,
         k.start_ns, k.end_ns, k.duration_ns, CASE WHEN c.gpu_clock THEN k.start_ns ELSE k.launch_start_ns END AS t
  FROM kernels k JOIN clock c USING (pid)
  UNION ALL
  SELECT g.pid, g.kind, g.name, 0::UBIGINT, g.start_ns, g.end_ns, g.duration_ns,
         CASE WHEN c.gpu_clock THEN g.start_ns ELSE g.launch_start_ns END
  FROM (SELECT pid, 'memcpy'::label AS kind, kind::label AS name, start_ns, end_ns, duration_ns, launch_start_ns FROM memcpys
        UNION ALL SELECT pid, 'memset'::label, '[memset]'::label, start_ns, end_ns, duration_ns, launch_start_ns FROM memsets
        UNION ALL SELECT pid, 'graph'::label, '[CUDA graph]'::label, start_ns, end_ns, duration_ns, launch_start_ns
        FROM graph_launches) g
  JOIN clock c USING (pid)),
keyed AS (
  SELECT o.*, least((o.t - w.t0) // w.w, w.last_b) AS bk
  FROM ops o JOIN widths w ON w.pid = o.pid WHERE o.t >= w.t0),
placed AS (
  SELECT o.pid, o.kind, o.name, o.shape, o.start_ns, o.end_ns, o.duration_ns,
         coalesce(b.steps[len(list_filter(b.starts, x -> x <= o.t))], b.prior) AS step
  FROM keyed o JOIN buckets b ON b.pid = o.pid AND b.b = o.bk)
SELECT pid, step, kind, name, shape, count(*) AS n, sum(duration_ns::DOUBLE)::BIGINT AS ns,
       min(start_ns) AS first_start_ns, max(end_ns) AS last_end_ns
FROM placed WHERE step IS NOT NULL
GROUP BY ALL;

-- One row per step on both timelines, the one definition that compare (compare/steps.py) and
-- the budget's step time (40_budget.sql) share: its host start, the next step's, and the first
-- GPU operation of the work launched in between (an ASOF join gives each operation the last
-- step that began before its launch call, across all threads of the process: PyTorch launches
-- backward from its own thread). Steps found from a marker kernel are on the GPU clock already
-- (gpu_clock): their operations are placed by GPU start time.
-- sources: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id
-- @column step: step number (steps.step)
-- @column name: step name (steps.name)
-- @column source: nvtx or repeated (steps.source)
-- @column start_ns: step start on the session clock, ns (host side; GPU side when gpu_clock)
-- @column next_start_ns: the next step's start, ns; NULL for the last step
-- @column gpu_first_ns: earliest GPU start of the operations launched in the step, ns; NULL when
-- it launched none
-- @column gpu_start_ns: running maximum of gpu_first_ns over the steps so far, ns (a later
-- step's work never starts before an earlier one's)
-- @column gpu_clock: true when the process's steps are a marker kernel's GPU start times
CREATE TABLE step_times AS
WITH s AS (
  SELECT pid, step, name, source, start_ns,
         lead(start_ns) OVER (PARTITION BY pid ORDER BY step) AS next_start_ns
  FROM steps),
clock AS (SELECT pid, bool_or(gpu_clock) AS gpu_clock FROM steps GROUP BY pid),
owned AS (SELECT pid, step, min(first_start_ns) AS gpu_first_ns FROM step_ops GROUP BY ALL)
SELECT s.pid, s.step, s.name, s.source, s.start_ns, s.next_start_ns, o.gpu_first_ns,
       max(o.gpu_first_ns) OVER (PARTITION BY s.pid ORDER BY s.step ROWS UNBOUNDED PRECEDING) AS gpu_start_ns,
       c.gpu_clock
FROM s LEFT JOIN owned o USING (pid, step) JOIN clock c USING (pid);

-- Steps that do not repeat. A training or serving loop repeats one step; where steps differ
-- (other kernels, other shapes) and take longer, the trace says why: an algorithm search (storms
-- of event and synchronize calls around trial kernels: cuDNN's benchmark mode meeting a new
-- shape, Triton/Inductor autotuning), recompilation (module loads, compiler processes), warm-up
-- still going on, or shapes that change. step_profile measures each step, step_churn says
-- which steps are churn and how much of them; the budget (budget.sql) gives that share the
-- cause 'step churn' and the rule unsteady-steps reports it.
-- (the knobs: phase_settings, phases.sql)

-- One row per step of a process: its span on the critical path, the kernels launched in it (by
-- their launch call's start, on any thread of the process, as step_times), their set and shapes
-- as signatures, and the calls that mark an algorithm search or a recompilation in it.
-- sources: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id
-- @column step: step number (steps.step)
-- @column start_ns: step start on the session clock (steps.start_ns), ns
-- @column bound_ns: the step's start on the critical path: its host start, or the end of the GPU
-- work of the steps before it where that is later (a GPU-bound loop, the host ahead), but never
-- after its own first GPU operation, ns
-- @column period_ns: the next step's bound_ns - bound_ns, ns; NULL for the last step
-- @column timed: true for a step of the steady state (steady_state) with a period
-- @column kernels: kernels launched in the step, count
-- @column kernel_names: distinct kernel names among them, count
-- @column new_kernel_names: of those, names the process runs here for the first time, count
-- @column triton_names: of those, Triton kernels (triton_*: Inductor's, torch.compile), count
-- @column cudnn_generated_names: of those, kernels cuDNN compiles at run time (cudnn_generated_*:
-- its runtime-fusion engines and SDPA, built for each new shape), count
-- @column shapes: distinct (name, grid, block) among them, count
-- @column kernel_ns: their summed GPU durations, ns
-- @column kernel_set: a signature of the set of kernel names (equal sets, equal signatures)
-- @column shape_set: a signature of the set of (name, grid, block)
-- @column search_calls: event calls (record, synchronize, query, elapsed time) and
-- device or stream synchronizations started in the step, count
-- @column module_loads: cuModuleLoad*/cuLibraryLoad* calls started in the step, count
-- @column load_ns: their summed durations, ns
-- @column spawns: programs started in the step (posix_spawn, vfork, execve: compilers; 0 without OS tracing), count
-- @column forks: copies of the process started in the step (fork: worker processes; 0 without OS tracing), count
-- @column compile_ranges: NVTX ranges in which a library compiles GPU code (is_compile_range: XLA)
-- started in the step, count
-- @column marks_start_ns: start of the first event call, module load or spawn of the step, ns; NULL without one
-- @column marks_end_ns: end of the last of them, ns; NULL without one
CREATE TABLE step_profile AS
WITH st AS (SELECT pid, step, start_ns, gpu_first_ns FROM step_times),
shaped AS (SELECT pid, step, name, shape, n, ns, last_end_ns FROM step_ops WHERE kind = 'kernel'),
named AS (SELECT pid, step, name, sum(n) AS n, sum(ns) AS ns FROM shaped GROUP BY ALL),
firsts AS (SELECT pid, name, min(step) AS first_step FROM named GROUP BY ALL),
per_name AS (
  SELECT n.pid, n.step, sum(n.n)::BIGINT AS kernels, count(*) AS kernel_names, sum(n.ns)::BIGINT AS kernel_ns,
         count(*) FILTER (WHERE f.first_step = n.step) AS new_kernel_names, bit_xor(hash(n.name)) AS kernel_set,
         count(*) FILTER (WHERE n.name LIKE 'triton\_%' ESCAPE '\') AS triton_names,
         count(*) FILTER (WHERE n.name LIKE 'cudnn\_generated%' ESCAPE '\') AS cudnn_generated_names
  FROM named n JOIN firsts f USING (pid, name) GROUP BY ALL),
per_shape AS (
  SELECT pid, step, count(*) AS shapes, max(last_end_ns) AS last_end_ns, bit_xor(hash(name, shape)) AS shape_set
  FROM shaped GROUP BY ALL),
bounds AS (
  SELECT s.pid, s.step, s.start_ns,
         greatest(s.start_ns, least(coalesce(s.gpu_first_ns, s.start_ns), coalesce(
           max(k.last_end_ns) OVER (PARTITION BY s.pid ORDER BY s.step ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
           s.start_ns))) AS bound_ns
  FROM st s LEFT JOIN per_shape k USING (pid, step)),
marks AS (
  SELECT pid, start_ns, end_ns, (category = 'sync' OR api LIKE '%Event%') AND api NOT LIKE '%StreamWaitEvent%' AS search,
         api LIKE '%Event%' AND api NOT LIKE '%StreamWaitEvent%' AS event,
         is_module_load(api) AS load, false AS spawn, false AS fork, false AS compile, duration_ns
  FROM api_calls WHERE category IN ('event', 'sync', 'module')
  UNION ALL
  SELECT pid, start_ns, end_ns, false, false, false, process_start(name) = 'program', process_start(name) = 'fork', false, 0
  FROM osrt_calls WHERE process_start(name) IS NOT NULL
  UNION ALL
  SELECT pid, start_ns, end_ns, false, false, false, false, false, true, 0
  FROM nvtx_ranges WHERE domain = 'TSL' AND is_compile_range(domain, name)),
per_marks AS (
  SELECT s.pid, s.step, count(*) FILTER (WHERE m.search) AS search_calls, count(*) FILTER (WHERE m.load) AS module_loads,
         sum(m.duration_ns) FILTER (WHERE m.load) AS load_ns,
         count(*) FILTER (WHERE m.spawn) AS spawns, count(*) FILTER (WHERE m.fork) AS forks,
         count(*) FILTER (WHERE m.compile) AS compile_ranges,
         min(m.start_ns) FILTER (WHERE m.event OR m.load OR m.spawn OR m.fork) AS marks_start_ns,
         max(m.end_ns) FILTER (WHERE m.event OR m.load OR m.spawn OR m.fork) AS marks_end_ns
  FROM marks m ASOF JOIN st s ON m.pid = s.pid AND m.start_ns >= s.start_ns
  WHERE m.search OR m.load OR m.spawn OR m.fork OR m.compile GROUP BY ALL)
SELECT b.pid, b.step, b.start_ns, b.bound_ns,
       lead(b.bound_ns) OVER (PARTITION BY b.pid ORDER BY b.step) - b.bound_ns AS period_ns,
       coalesce(b.step > 1 AND b.start_ns >= w.start_ns AND b.start_ns < w.end_ns
                AND lead(b.bound_ns) OVER (PARTITION BY b.pid ORDER BY b.step) IS NOT NULL, false) AS timed,
       coalesce(k.kernels, 0) AS kernels, coalesce(k.kernel_names, 0) AS kernel_names,
       coalesce(k.new_kernel_names, 0) AS new_kernel_names, coalesce(k.triton_names, 0) AS triton_names,
       coalesce(k.cudnn_generated_names, 0) AS cudnn_generated_names, coalesce(p.shapes, 0) AS shapes,
       coalesce(k.kernel_ns, 0) AS kernel_ns, coalesce(k.kernel_set, 0) AS kernel_set, coalesce(p.shape_set, 0) AS shape_set,
       coalesce(m.search_calls, 0) AS search_calls, coalesce(m.module_loads, 0) AS module_loads,
       coalesce(m.load_ns, 0)::BIGINT AS load_ns,
       coalesce(m.spawns, 0) AS spawns, coalesce(m.forks, 0) AS forks, coalesce(m.compile_ranges, 0) AS compile_ranges,
       m.marks_start_ns, m.marks_end_ns
FROM bounds b LEFT JOIN steady_state w USING (pid) LEFT JOIN per_name k USING (pid, step)
LEFT JOIN per_shape p USING (pid, step) LEFT JOIN per_marks m USING (pid, step);

-- One row per timed step (step_profile.timed): whether it repeats the process's usual step, and
-- if not, whether it is churn, why, and how much of it. The usual step is the most common shape
-- set among the timed steps when two share one, else the most common kernel set (shapes that
-- change every step); a step is alike when it has that set. A step that is not alike, or that
-- starts processes, is churn
-- when it takes churn_slow_factor times the alike steps' median period or more, unless nothing is
-- searched, loaded or compiled in it and its extra GPU time is most of its extra period; where no two
-- steps are alike, a step is churn when it holds an algorithm search or a recompilation. Its
-- churn window is the time the budget gives to 'step churn': its period beyond the usual one
-- (share of the period), or, with no usual step to compare, the span of its event calls, module
-- loads and spawns (share 1).
-- sources: NVTX_EVENTS, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id
-- @column step: step number (steps.step)
-- @column period_ns: the step's period (step_profile.period_ns), ns
-- @column alike_by: shape or kernels: what the usual step is matched on; NULL when no two timed steps match
-- @column alike: true when the step has the usual step's set
-- @column same_kernels: true when it runs the usual step's kernel set (other shapes at most)
-- @column usual_period_ns: median period of the alike steps, ns; NULL without
-- @column usual_search_calls: median search_calls of the alike steps, count (0 without)
-- @column search: true when search_calls is at least search_min_calls and search_factor times usual_search_calls
-- @column churn: true for a churn step
-- @column mechanism: for a churn step: worker start-up (forks and no spawns: worker processes
-- started anew), periodic phase (no spawns, kernels the usual step does not
-- run, and another churn step runs them in the same shapes: work the loop does every N steps),
-- recompilation (spawns, or module loads around other host work), module loading (the load calls
-- themselves take at least half of the churn: code loaded lazily on its first use,
-- CUDA_MODULE_LOADING=LAZY), algorithm search (search), changing shapes (same kernels, other
-- shapes) or different work; else NULL
-- @column churn_ns: a churn step's period beyond usual_period_ns, ns; NULL when there is no usual step
-- @column window_start_ns: start of the churn window (bound_ns, or marks_start_ns without a usual step), ns
-- @column window_end_ns: end of the churn window, ns
-- @column share: the part of the idle time in the window that is churn (churn_ns / period_ns, or 1)
CREATE TABLE step_churn AS
WITH p AS (SELECT * FROM step_profile WHERE timed),
settings AS (
  SELECT max(value) FILTER (WHERE name = 'churn_slow_factor') AS slow,
         max(value) FILTER (WHERE name = 'search_min_calls') AS min_calls,
         max(value) FILTER (WHERE name = 'search_factor') AS factor
  FROM phase_settings),
by_shape AS (
  SELECT pid, arg_max(shape_set, struct_pack(n := n, f := -first)) AS shape_set, max(n) AS n FROM (
    SELECT pid, shape_set, count(*) AS n, min(step) AS first FROM p GROUP BY ALL) GROUP BY pid),
by_kernels AS (
  SELECT pid, arg_max(kernel_set, struct_pack(n := n, f := -first)) AS kernel_set, max(n) AS n FROM (
    SELECT pid, kernel_set, count(*) AS n, min(step) AS first FROM p GROUP BY ALL) GROUP BY pid),
marked AS (
  SELECT p.*, CASE WHEN s.n >= 2 THEN 'shape' WHEN k.n >= 2 THEN 'kernels' END AS alike_by,
         CASE WHEN s.n >= 2 THEN p.shape_set = s.shape_set WHEN k.n >= 2 THEN p.kernel_set = k.kernel_set
              ELSE false END AS alike,
         p.kernel_set = k.kernel_set AND k.n >= 2 AS same_kernels
  FROM p JOIN by_shape s USING (pid) JOIN by_kernels k USING (pid)),
-- shapes that change every step (alike only by kernels) leave no step to repeat: where the
-- alike steps search or load code themselves, the markers decide, as with no usual step
usual AS (
  SELECT pid, CASE WHEN any_value(alike_by) = 'kernels'
                    AND median(search_calls) FILTER (WHERE alike) >= any_value(st.min_calls) THEN NULL
                   ELSE median(period_ns) FILTER (WHERE alike) END AS usual_period_ns,
         CASE WHEN any_value(alike_by) = 'kernels'
                   AND median(search_calls) FILTER (WHERE alike) >= any_value(st.min_calls) THEN 0
              ELSE coalesce(median(search_calls) FILTER (WHERE alike), 0) END AS usual_search_calls,
         median(kernel_ns) FILTER (WHERE alike) AS usual_kernel_ns
  FROM marked CROSS JOIN settings st GROUP BY pid),
classed AS (
  SELECT m.*, u.usual_period_ns, u.usual_search_calls,
         m.search_calls >= st.min_calls AND m.search_calls >= st.factor * u.usual_search_calls AS search,
         CASE WHEN u.usual_period_ns IS NULL
              THEN (m.search_calls >= st.min_calls OR m.module_loads > 0 OR m.spawns > 0 OR m.forks > 0)
                   AND m.marks_start_ns IS NOT NULL
              -- a step that starts processes is churn even with the usual kernels (the process
              -- start, not the kernels, makes it slow)
              ELSE (NOT m.alike OR m.spawns > 0 OR m.forks > 0) AND m.period_ns >= st.slow * u.usual_period_ns
                   -- a larger step (more rows, other shapes and the kernels chosen for them) takes
                   -- longer by its own GPU work: not churn, where nothing is searched, loaded or
                   -- compiled and its extra GPU time is most of its extra period
                   AND NOT (m.search_calls < st.min_calls AND m.module_loads = 0 AND m.spawns = 0 AND m.forks = 0
                            AND m.kernel_ns - u.usual_kernel_ns >= 2.0 / 3 * (m.period_ns - u.usual_period_ns)) END AS churn
  FROM marked m JOIN usual u USING (pid) CROSS JOIN settings st),
-- a search or a compilation happens once per shape or key; slow steps that run the same kernels in
-- the same shapes again and again are a phase of the loop (evaluation, checkpointing, logging every N steps)
recurs AS (
  SELECT *, count(*) FILTER (WHERE churn) OVER (PARTITION BY pid, shape_set) AS recurring FROM classed)
SELECT pid, step, period_ns, alike_by, alike, coalesce(same_kernels, false) AS same_kernels, usual_period_ns::BIGINT AS usual_period_ns,
       usual_search_calls, search, churn,
       CASE WHEN churn THEN CASE WHEN spawns = 0 AND forks > 0 THEN 'worker start-up'
                                 WHEN spawns = 0 AND recurring >= 2 AND NOT same_kernels THEN 'periodic phase'
                                 WHEN spawns = 0 AND module_loads > 0 AND NOT search
                                      AND load_ns >= 0.5 * coalesce(period_ns - usual_period_ns, marks_end_ns - marks_start_ns)
                                 THEN 'module loading'
                                 WHEN spawns > 0 OR (module_loads > 0 AND NOT search) THEN 'recompilation'
                                 WHEN search THEN 'algorithm search'
                                 WHEN same_kernels THEN 'changing shapes' ELSE 'different work' END END AS mechanism,
       CASE WHEN churn THEN (period_ns - usual_period_ns)::BIGINT END AS churn_ns,
       CASE WHEN usual_period_ns IS NULL THEN marks_start_ns ELSE bound_ns END AS window_start_ns,
       CASE WHEN usual_period_ns IS NULL THEN marks_end_ns ELSE bound_ns + period_ns END AS window_end_ns,
       CASE WHEN NOT churn THEN 0.0 WHEN usual_period_ns IS NULL THEN 1.0
            ELSE (period_ns - usual_period_ns) / period_ns::DOUBLE END AS share
FROM recurs;

-- Intermediates, dropped once used.
DROP TABLE step_ops;
