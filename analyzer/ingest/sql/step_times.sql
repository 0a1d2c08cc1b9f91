-- include: normalize, phases

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
clock AS (SELECT pid, bool_or(source = 'repeated' AND name LIKE 'kernel %') AS gpu_clock FROM steps GROUP BY pid),
ops AS (
  SELECT g.pid, g.start_ns, CASE WHEN c.gpu_clock THEN g.start_ns ELSE g.launch_start_ns END AS t
  FROM gpu_activity g JOIN clock c USING (pid)),
owned AS (
  SELECT s.pid, s.step, min(o.start_ns) AS gpu_first_ns
  FROM ops o ASOF JOIN s ON o.pid = s.pid AND o.t >= s.start_ns
  GROUP BY ALL)
SELECT s.pid, s.step, s.name, s.source, s.start_ns, s.next_start_ns, o.gpu_first_ns,
       max(o.gpu_first_ns) OVER (PARTITION BY s.pid ORDER BY s.step ROWS UNBOUNDED PRECEDING) AS gpu_start_ns,
       c.gpu_clock
FROM s LEFT JOIN owned o USING (pid, step) JOIN clock c USING (pid);
