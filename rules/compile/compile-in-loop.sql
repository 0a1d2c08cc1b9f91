-- One row per process: the steady-state steps that load new GPU code (cuModuleLoad*,
-- cuLibraryLoad*: kernels compiled or first used now) and take far longer than the steps that
-- do not, with what they did meanwhile; or, where (almost) every step loads code, those steps.
-- A step's time is its period on the critical path (step_profile), not its host span: a host
-- that runs ahead returns from most steps at once and waits for the GPU in a few (an .item()
-- behind queued work), which is no compilation's cost.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
-- spawns: programs started (compilers); a fork is a worker process (step_churn's worker start-up)
per_step AS (
  SELECT pid, step, period_ns AS duration_ns, module_loads, spawns FROM step_profile WHERE timed),
typical AS (
  SELECT pid, median(duration_ns) FILTER (WHERE module_loads = 0) AS clean_median_ns, count(*) AS steps
  FROM per_step GROUP BY pid),
slow AS (
  SELECT p.*, t.clean_median_ns, t.steps
  FROM per_step p JOIN typical t USING (pid)
  WHERE p.module_loads > 0 AND t.clean_median_ns IS NOT NULL AND p.duration_ns > $slow_factor * t.clean_median_ns
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
       sum(s.module_loads) AS module_loads, sum(s.spawns) AS compiler_spawns,
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
host_idle AS (
  SELECT pid, sum(ns) AS ns FROM budget
  WHERE kind = 'idle' AND cause IN ('host code', 'untraced host code', 'module loading', 'step churn') GROUP BY pid),
every AS (
  SELECT p.pid, true AS every_step, any_value(t.steps) AS steps, count(*) AS compile_steps,
         min(p.step) || '-' || max(p.step) AS compile_step_numbers,
         sum(p.module_loads) AS module_loads, sum(p.spawns) AS compiler_spawns,
         min(p.duration_ns) AS min_compile_step_ns, max(p.duration_ns) AS max_compile_step_ns,
         NULL::BIGINT AS clean_median_ns, any_value(h.ns)::BIGINT AS excess_ns, any_value(ss.window_ns) AS window_ns,
         round(100.0 * any_value(h.ns) / nullif(any_value(ss.window_ns), 0), 2) AS excess_window_pct
  FROM per_step p JOIN typical t USING (pid) JOIN ss USING (pid) JOIN host_idle h USING (pid)
  WHERE p.module_loads > 0 AND t.steps >= 3 AND p.pid NOT IN (SELECT pid FROM per_pid)
    -- code loaded by an algorithm search (cuDNN benchmark mode's trial kernels) is the search's,
    -- which unsteady-steps names
    AND NOT EXISTS (SELECT 1 FROM step_churn c WHERE c.pid = p.pid AND c.step = p.step AND c.search)
  GROUP BY p.pid
  HAVING count(*) >= $every_step_pct / 100.0 * any_value(t.steps))
SELECT p.*, pl.top_place, coalesce('; the host spends it mostly in NVTX range "' || pl.top_place || '"', '') AS where_text
FROM (SELECT * FROM per_pid UNION ALL SELECT * FROM every) p LEFT JOIN places pl USING (pid)
ORDER BY p.excess_ns DESC, p.pid
