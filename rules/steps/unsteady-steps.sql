-- One row per process with at least min_loop_steps timed steps in its steady state: how alike its
-- steps are (kernel sets, shapes, launches, periods) and, where some do not repeat the usual
-- step and take longer (step_churn), which steps, why (the mechanism of most of their time) and
-- how much: their time beyond the usual step, and the budget's 'step churn' slice.
WITH prof AS (SELECT * FROM step_profile WHERE timed),
sc AS (SELECT c.*, p.kernels, p.new_kernel_names, p.search_calls, p.module_loads, p.spawns, p.forks
       FROM step_churn c JOIN prof p USING (pid, step)),
likeness AS (
  SELECT pid, count(*) AS steps, count(DISTINCT kernel_set) AS kernel_sets, count(DISTINCT shape_set) AS shape_sets,
         min(kernels) AS launches_min, median(kernels)::BIGINT AS launches_median, max(kernels) AS launches_max,
         min(period_ns) AS period_min_ns, median(period_ns)::BIGINT AS period_median_ns, max(period_ns) AS period_max_ns,
         round(stddev_pop(period_ns) / nullif(avg(period_ns), 0), 3) AS period_cv
  FROM prof GROUP BY pid),
churn AS (
  SELECT pid, any_value(alike_by) AS alike_by, count(*) FILTER (WHERE alike AND NOT churn) AS alike_steps,
         any_value(usual_period_ns) AS usual_period_ns, any_value(usual_search_calls) AS usual_search_calls,
         count(*) FILTER (WHERE churn) AS churn_steps,
         string_agg(step::VARCHAR, ', ' ORDER BY step) FILTER (WHERE churn) AS churn_step_numbers,
         min(period_ns) FILTER (WHERE churn) AS churn_min_ns, max(period_ns) FILTER (WHERE churn) AS churn_max_ns,
         sum(churn_ns) FILTER (WHERE churn)::BIGINT AS churn_ns,
         median(search_calls) FILTER (WHERE churn)::BIGINT AS churn_search_calls,
         coalesce(sum(module_loads) FILTER (WHERE churn), 0)::BIGINT AS module_loads,
         coalesce(sum(spawns) FILTER (WHERE churn), 0)::BIGINT AS spawns,
         coalesce(sum(forks) FILTER (WHERE churn), 0)::BIGINT AS forks,
         coalesce(sum(new_kernel_names) FILTER (WHERE churn), 0)::BIGINT AS new_kernel_names,
         -- warm-up: every churn step comes before every alike step, and steps repeat after them
         max(step) FILTER (WHERE churn) < min(step) FILTER (WHERE alike) AND count(*) FILTER (WHERE alike) >= 2
           AS warm_up,
         min(step) FILTER (WHERE alike) AS first_alike_step
  FROM sc GROUP BY pid),
-- the mechanism of most of the churn time (the budget's share where no usual step bounds it)
mech AS (
  SELECT pid, arg_max(mechanism, struct_pack(t := t, m := mechanism)) AS mechanism FROM (
    SELECT pid, mechanism, sum(coalesce(churn_ns, period_ns)) AS t FROM sc WHERE churn GROUP BY ALL) GROUP BY pid),
slice AS (
  SELECT pid, sum(ns) AS churn_budget_ns, arg_max(place, struct_pack(n := ns, p := place)) AS top_place FROM (
    SELECT pid, place, sum(ns) AS ns FROM budget WHERE kind = 'idle' AND cause = 'step churn' GROUP BY ALL) GROUP BY pid),
ss AS (SELECT pid, end_ns - start_ns AS window_ns FROM steady_state),
-- where no usual step bounds the churn, its windows are the spans of the searches themselves
-- (first to last event call, module load or spawn): how long they run, and how much of that the
-- GPU spends busy on their trial kernels (an autotuner keeps the GPU busy while it searches)
spans AS (
  SELECT pid, step, window_start_ns AS start_ns, window_end_ns AS end_ns FROM sc
  WHERE churn AND churn_ns IS NULL AND window_end_ns > window_start_ns),
searched AS (
  SELECT s.pid, sum(s.end_ns - s.start_ns)::BIGINT AS search_span_ns,
         coalesce(sum(b.busy_ns), 0)::BIGINT AS search_gpu_ns
  FROM spans s LEFT JOIN (
    SELECT s.pid, s.step, sum(least(b.end_ns, s.end_ns) - greatest(b.start_ns, s.start_ns)) AS busy_ns
    FROM spans s JOIN gpu_busy b ON b.pid = s.pid AND b.end_ns > s.start_ns AND b.start_ns < s.end_ns
    GROUP BY ALL) b USING (pid, step)
  GROUP BY s.pid),
rows AS (
  SELECT l.*, c.* EXCLUDE (pid), m.mechanism, coalesce(s.churn_budget_ns, 0)::BIGINT AS churn_budget_ns, s.top_place,
         w.window_ns, q.search_span_ns, q.search_gpu_ns,
         greatest(coalesce(s.churn_budget_ns, 0), coalesce(q.search_span_ns, 0))::BIGINT AS search_cost_ns,
         round(100.0 * coalesce(c.churn_ns, greatest(s.churn_budget_ns, q.search_span_ns), s.churn_budget_ns, 0)
               / nullif(w.window_ns, 0), 2) AS churn_pct
  FROM likeness l JOIN churn c USING (pid) JOIN ss w USING (pid)
  LEFT JOIN mech m USING (pid) LEFT JOIN slice s USING (pid) LEFT JOIN searched q USING (pid)
  WHERE l.steps >= (SELECT value FROM phase_settings WHERE name = 'min_loop_steps'))
SELECT *,
       CASE WHEN alike_by IS NULL OR (alike_by = 'kernels' AND churn_ns IS NULL)
            THEN 'no two of them run the same kernels with the same shapes'
            ELSE printf('%d of them repeat the usual step%s', alike_steps,
                        CASE WHEN alike_by = 'kernels' THEN ' (its kernels, in shapes that change)' ELSE '' END) END
         AS alike_text,
       CASE mechanism
         WHEN 'recompilation' THEN printf('they load new GPU code (%d module load%s, %d compiler process%s started): recompilation',
                                          module_loads, CASE WHEN module_loads = 1 THEN '' ELSE 's' END,
                                          spawns, CASE WHEN spawns = 1 THEN '' ELSE 'es' END)
         WHEN 'module loading' THEN printf('they load GPU code on its first use (%d module load%s, taking most of '
                                           || 'their extra time; %d kernel name%s not run before): lazy module loading',
                                           module_loads, CASE WHEN module_loads = 1 THEN '' ELSE 's' END,
                                           new_kernel_names, CASE WHEN new_kernel_names = 1 THEN '' ELSE 's' END)
         WHEN 'algorithm search' THEN printf('each makes a median %d event and synchronize calls%s, around '
                                             || 'trial kernels (%d kernel name%s not run before): an algorithm search '
                                             || '(cuDNN benchmark mode meeting new shapes, Triton or Inductor autotuning)',
                                             churn_search_calls,
                                             CASE WHEN usual_search_calls > 0 OR churn_ns IS NOT NULL
                                                  THEN printf(' against %d in a usual step', usual_search_calls::BIGINT)
                                                  ELSE '' END, new_kernel_names,
                                             CASE WHEN new_kernel_names = 1 THEN '' ELSE 's' END)
         WHEN 'changing shapes' THEN 'they run the usual kernels in other shapes: the input shapes change'
         WHEN 'worker start-up' THEN printf('they start copies of the process (%d fork%s, no program run): worker '
                                            || 'processes started anew (a DataLoader without persistent_workers, a '
                                            || 'process pool created in the loop)', forks, CASE WHEN forks = 1 THEN '' ELSE 's' END)
         WHEN 'periodic phase' THEN 'they run the same extra work each time: a phase the loop runs every few steps'
         ELSE 'they run other kernels than the usual step' END
       || CASE WHEN warm_up THEN printf('; all of them come before step %d, after which the steps repeat: warm-up is not over '
                                        || 'when the steady state starts', first_alike_step) ELSE '' END AS why_text,
       coalesce(' (mostly in NVTX range "' || top_place || '")', '') AS where_text,
       coalesce('in "' || top_place || '"', '') AS place_text
FROM rows
ORDER BY churn_pct DESC NULLS LAST, pid
