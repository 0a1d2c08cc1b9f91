-- One row per process: the steady-state steps that load new GPU code (cuModuleLoad*,
-- cuLibraryLoad*: kernels compiled or first used now) and take far longer than the steps that
-- do not, with what they did meanwhile; or, where (almost) every step loads code, those steps.
-- A step's time is its period on the critical path (step_profile), not its host span: a host
-- that runs ahead returns from most steps at once and waits for the GPU in a few (an .item()
-- behind queued work), which is no compilation's cost.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
-- spawns: programs started (compilers); a fork is a worker process (step_churn's worker start-up)
per_step AS (
  SELECT pid, step, period_ns AS duration_ns, module_loads, spawns, triton_names, cudnn_generated_names,
         compile_ranges, module_loads > 0 OR compile_ranges > 0 AS compiles
  FROM step_profile WHERE timed),
typical AS (
  SELECT pid, median(duration_ns) FILTER (WHERE NOT compiles) AS clean_median_ns, count(*) AS steps
  FROM per_step GROUP BY pid),
slow AS (
  SELECT p.*, t.clean_median_ns, t.steps
  FROM per_step p JOIN typical t USING (pid)
  WHERE p.compiles AND t.clean_median_ns IS NOT NULL AND p.duration_ns > $slow_factor * t.clean_median_ns
    -- a compilation happens once per shape or key: a step whose work recurs in other slow steps
    -- is a periodic phase of the loop (step_churn), which loads its code on its first run
    AND NOT EXISTS (SELECT 1 FROM step_churn c WHERE c.pid = p.pid AND c.step = p.step
                                                 AND c.mechanism = 'periodic phase')),
-- the NVTX range that holds most of the process's idle host time (the budget's place)
places AS (
  SELECT pid, first(place ORDER BY ns DESC, place) AS top_place FROM (
    SELECT pid, place, sum(ns) AS ns FROM budget WHERE kind = 'idle' AND place IS NOT NULL GROUP BY ALL)
  GROUP BY pid),
per_pid AS (
SELECT s.pid, false AS every_step, any_value(s.steps) AS steps, count(*) AS compile_steps,
       string_agg(s.step::VARCHAR, ', ' ORDER BY s.step) AS compile_step_numbers,
       sum(s.module_loads) AS module_loads, sum(s.spawns) AS compiler_spawns, sum(s.compile_ranges) AS compile_ranges,
       sum(s.triton_names) AS triton_names, sum(s.cudnn_generated_names) AS cudnn_generated_names,
       min(s.duration_ns) AS min_compile_step_ns, max(s.duration_ns) AS max_compile_step_ns,
       any_value(s.clean_median_ns)::BIGINT AS clean_median_ns,
       sum(s.duration_ns - s.clean_median_ns)::BIGINT AS excess_ns,
       any_value(ss.window_ns) AS window_ns,
       round(100.0 * sum(s.duration_ns - s.clean_median_ns) / nullif(any_value(ss.window_ns), 0), 2) AS excess_window_pct
FROM slow s JOIN ss USING (pid)
GROUP BY s.pid),
-- Code loaded in (almost) every step: no step runs without compiling, so there is no usual step
-- to compare with; what it costs is the GPU's idle time while the host runs code or loads
-- modules (the budget's slices).
-- Where the steps start programs (compilers: XLA's ptxas, nvcc) or compile in a library's
-- compile range (XLA's passes run on worker threads), the host's OS waits are compiling too.
host_idle AS (
  SELECT pid, sum(ns) FILTER (WHERE cause IN ('host code', 'untraced host code', 'module loading', 'step churn')) AS ns,
         coalesce(sum(ns) FILTER (WHERE cause = 'OS wait'), 0) AS os_wait_ns
  FROM budget WHERE kind = 'idle' GROUP BY pid),
every AS (
  SELECT p.pid, true AS every_step, any_value(t.steps) AS steps, count(*) AS compile_steps,
         min(p.step) || '-' || max(p.step) AS compile_step_numbers,
         sum(p.module_loads) AS module_loads, sum(p.spawns) AS compiler_spawns, sum(p.compile_ranges) AS compile_ranges,
         sum(p.triton_names) AS triton_names, sum(p.cudnn_generated_names) AS cudnn_generated_names,
         min(p.duration_ns) AS min_compile_step_ns, max(p.duration_ns) AS max_compile_step_ns,
         NULL::BIGINT AS clean_median_ns,
         (coalesce(any_value(h.ns), 0) + CASE WHEN sum(p.spawns) + sum(p.compile_ranges) > 0 THEN any_value(h.os_wait_ns) ELSE 0 END)::BIGINT AS excess_ns,
         any_value(ss.window_ns) AS window_ns,
         round(100.0 * (coalesce(any_value(h.ns), 0) + CASE WHEN sum(p.spawns) + sum(p.compile_ranges) > 0 THEN any_value(h.os_wait_ns) ELSE 0 END)
               / nullif(any_value(ss.window_ns), 0), 2) AS excess_window_pct
  FROM per_step p JOIN typical t USING (pid) JOIN ss USING (pid) JOIN host_idle h USING (pid)
  WHERE p.compiles AND t.steps >= 3 AND p.pid NOT IN (SELECT pid FROM per_pid)
    -- code loaded by an algorithm search (cuDNN benchmark mode's trial kernels) is the search's,
    -- which unsteady-steps names
    AND NOT EXISTS (SELECT 1 FROM step_churn c WHERE c.pid = p.pid AND c.step = p.step AND c.search)
  GROUP BY p.pid
  HAVING count(*) >= $every_step_pct / 100.0 * any_value(t.steps))
SELECT p.*, pl.top_place, coalesce('; the host spends it mostly in NVTX range "' || pl.top_place || '"', '') AS where_text,
       coalesce(f.framework, 'other') AS framework,
       -- what compiles: XLA; Inductor or Triton (their kernels run in the compiling steps); cuDNN's
       -- runtime-compiled kernels; PyTorch otherwise; else code built at run time (NVRTC, a JIT)
       CASE WHEN f.framework IN ('jax', 'tensorflow') THEN 'xla' WHEN p.triton_names > 0 THEN 'triton'
            -- (CUDA graph replays hide the kernels a torch.compile'd step records: then it is PyTorch's)
            WHEN p.cudnn_generated_names > 0 AND NOT EXISTS (SELECT 1 FROM graph_launches g WHERE g.pid = p.pid)
                 AND NOT EXISTS (SELECT 1 FROM kernels k WHERE k.pid = p.pid AND k.graph_id IS NOT NULL) THEN 'cudnn'
            WHEN f.framework = 'pytorch' THEN 'pytorch'
            ELSE 'jit' END AS compiler,
       CASE WHEN p.compiler_spawns + p.compile_ranges > 0 THEN 'OS wait' END AS compiler_wait_cause,
       CASE WHEN p.compiler_spawns > 0 THEN ', waits for the compilers it started'
            WHEN p.compile_ranges > 0 THEN ', waits for the compiler''s threads' ELSE '' END AS wait_text,
       CASE WHEN p.compile_ranges > 0 THEN ', ' || p.compile_ranges || ' XLA compilations' ELSE '' END AS compile_text
FROM (SELECT * FROM per_pid UNION ALL SELECT * FROM every) p LEFT JOIN places pl USING (pid)
LEFT JOIN process_frameworks f USING (pid)
ORDER BY p.excess_ns DESC, p.pid
