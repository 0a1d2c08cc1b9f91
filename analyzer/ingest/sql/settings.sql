-- include:

-- The analysis's settings, declared once: every tunable that is not a rule's parameter, with the
-- fields a rule's parameter has (type, unit, range, why). The ingest reads those of the phases and
-- the budget through phase_settings (phases.sql) and budget_settings (budget.sql), filled from
-- here; Python reads the others (ingest/settings.py); `nsys-diagnose explain settings` lists them
-- all. A name is unique among the settings, the rules' parameters and compare's options
-- (tests/test_settings.py), so a name says which knob it is. A run changes one with
-- `--set NAME=VALUE` or [tool.nsys-diagnose.settings]: the ingest writes the checked value over its
-- row right after this module (ingest/database.py), and the cache keys hold it. To change the
-- default, edit its row: the cache key hashes this file, so every export is ingested again.

-- One row per setting.
-- sources: always
-- @column name: the setting's name, unique among the settings and the rules' parameters
-- @column value: its value
-- @column type: int or float
-- @column unit: ns, %, count or ratio
-- @column min: the smallest value it may take
-- @column max: the largest value it may take; NULL for no bound
-- @column read_by: where it is read: phase_settings or budget_settings (at ingest), or the Python
-- module that reads it
-- @column why: what it decides, and why this value
CREATE TABLE settings(name VARCHAR, value DOUBLE, type VARCHAR, unit VARCHAR, min DOUBLE, max DOUBLE,
                      read_by VARCHAR, why VARCHAR);
INSERT INTO settings VALUES
  ('min_loop_steps', 3, 'int', 'count', 2, NULL, 'phase_settings',
   'Fewest repetitions that make a loop: fewer is set-up code, not a loop.'),
  ('min_period_ns', 1000000, 'int', 'ns', 0, NULL, 'phase_settings',
   'Shortest step a marker kernel or sync may define: faster repeats are kernels inside one step, not steps.'),
  ('max_period_cv', 0.5, 'float', 'ratio', 0, NULL, 'phase_settings',
   'How regular a marker''s period must be (standard deviation over mean of the intervals between its '
   'occurrences) to make it a step.'),
  ('min_loop_coverage', 0.5, 'float', 'ratio', 0, 1, 'phase_settings',
   'Share of a process''s kernel launches that a marker found by its launch count (the same number of '
   'launches between its occurrences) must span: one in a corner of the run repeats set-up, not the loop.'),
  ('marker_jitter_ratio', 2, 'float', 'ratio', 1, NULL, 'phase_settings',
   'Of the markers that repeat the same work, those whose period''s standard deviation (ns) is at most this '
   'times the steadiest one''s may mark the step; the one with the most occurrences does.'),
  ('dispatch_gap_ns', 5000, 'int', 'ns', 0, NULL, 'phase_settings',
   'GPU idle gaps shorter than this are the GPU''s own dispatch latency between queued operations even in '
   'a healthy loop (about 1-3 us), so they get no cause (idle_gaps.sql, budget.sql).'),
  ('sync_launch_min_kernel_ns', 10000, 'int', 'ns', 0, NULL, 'phase_settings',
   'A kernel this long outlasts what any launch call costs the host: a launch call that returns only '
   'after such a kernel has finished waited for it (launch_waits, idle_gaps.sql).'),
  ('sync_launch_min_pct', 90, 'float', '%', 0, 100, 'phase_settings',
   'Launches are synchronous when at least this share of those long kernels'' launch calls waited for '
   'their kernel: an asynchronous launch never does, a few stragglers (a preempted thread) stay under it.'),
  ('churn_slow_factor', 1.5, 'float', 'ratio', 1, NULL, 'phase_settings',
   'A step unlike the usual one is churn at this many times its period: noise and small variations '
   'stay under it (step_times.sql).'),
  ('search_min_calls', 16, 'int', 'count', 1, NULL, 'phase_settings',
   'A step holds an algorithm search when it makes at least this many event/synchronize calls '
   '(cuDNN''s search and Triton''s do_bench make several per candidate) (step_times.sql).'),
  ('search_factor', 4, 'float', 'ratio', 1, NULL, 'phase_settings',
   'A step holds an algorithm search when its event/synchronize calls are also this many times the '
   'usual step''s: a loop that times itself with a few events per step stays under it (step_times.sql).'),
  ('gpu_bound_pct', 80, 'float', '%', 0, 100, 'budget_settings',
   'A steady state is gpu-bound at or above this GPU busy share (the README''s verdict threshold).'),
  ('host_bound_pct', 50, 'float', '%', 0, 100, 'budget_settings',
   'A steady state is host-bound at or below this GPU busy share, mixed in between.'),
  ('launch_gap_ns', 100000, 'int', 'ns', 0, NULL, 'budget_settings',
   'An idle gap this short, between operations the host issues one by one, is the per-operation cost '
   'of issuing work (framework dispatch plus the launch call), whatever the thread was doing in it.'),
  ('launch_ops_per_step', 4, 'float', 'count', 0, NULL, 'budget_settings',
   'Short gaps are the per-operation cost of issuing work only where the steady state issues at least '
   'this many GPU operations a step; with fewer (one CUDA graph replay a step), a short gap is host '
   'work of the step''s own, named by what the thread did in it.'),
  ('moot_busy_pct', 95, 'float', '%', 0, 100, 'budget_settings',
   'Launch and sync fixes are moot at or above this GPU busy share (fix_facts): the GPU has no idle '
   'time for them to win.'),
  ('critical_path_min_pct', 2, 'float', '%', 0, 100, 'engine/claims.py',
   'A budget slice under this share of the steady state does not limit the step: its finding becomes '
   'info, with a note.'),
  ('opaque_graph_min_pct', 50, 'float', '%', 0, 100, 'analyses/coverage.py',
   'CUDA graph replays traced whole (no kernel inside them recorded) holding this share of a steady '
   'state or more make the report partial: most of its GPU time is work no kernel rule could look at.'),
  ('host_ahead', 0.25, 'float', 'ratio', 0, 1, 'compare/comparison.py',
   'compare: host step starts this much shorter than the GPU''s period mean the host runs ahead of the '
   'GPU, which the comparison notes beside its timing.'),
  ('driver_min_share', 0.05, 'float', 'ratio', 0, 1, 'compare/comparison.py',
   'compare: an item that moved at least this share of the mean step''s change is named as a driver '
   'of it.');
