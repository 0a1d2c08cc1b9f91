-- include: normalize, phases

-- Threads of one process that contend for a lock: in a Python process, the interpreter's lock
-- (the GIL). A thread that wants the GIL waits on a condition variable with a timeout of the
-- switch interval (5 ms by default) and, each time it times out, asks the holder to drop it
-- and waits again; so its pthread_cond_timedwait calls pile up at one short cap. Waits for data
-- (queues, pipes, futures) look different: Python's own locks wait in sem_wait/sem_clockwait,
-- pipes in poll/read, and their waits last as long as the producer takes.

-- One row per thread whose steady-state pthread_cond_timedwait calls time out again and again at
-- one short cap: at least 10 calls within 10 % of the thread's 99th-percentile wait, that cap
-- between 1 and 50 ms, and those timed-out calls at least half the thread's time in the call.
-- sources: OSRT_API
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column calls: the thread's pthread_cond_timedwait calls in the steady state
-- @column wait_ns: their summed duration, ns
-- @column timeouts: of them, calls that lasted the cap (within 10 %): timed-out waits
-- @column cap_ns: the cap: the 99th percentile of the calls' durations, ns
-- @column python: true when the process is a Python interpreter (its name), so the lock is the GIL
CREATE TABLE lock_waits AS
WITH waits AS (
  SELECT o.pid, o.tid, o.duration_ns
  FROM osrt_calls o JOIN steady_state s USING (pid)
  WHERE o.name = 'pthread_cond_timedwait' AND o.start_ns >= s.start_ns AND o.start_ns < s.end_ns),
caps AS (SELECT pid, tid, quantile_disc(duration_ns, 0.99) AS cap_ns FROM waits GROUP BY ALL)
SELECT w.pid, w.tid, count(*) AS calls, sum(w.duration_ns)::BIGINT AS wait_ns,
       count(*) FILTER (WHERE w.duration_ns >= 0.9 * c.cap_ns) AS timeouts, any_value(c.cap_ns) AS cap_ns,
       coalesce(any_value(regexp_matches(p.name, '^(python|pt_main_thread)')), false) AS python
FROM waits w JOIN caps c USING (pid, tid) LEFT JOIN processes p ON p.pid = w.pid
WHERE c.cap_ns BETWEEN 1000000 AND 50000000
GROUP BY w.pid, w.tid
HAVING count(*) FILTER (WHERE w.duration_ns >= 0.9 * c.cap_ns) >= 10
   AND sum(w.duration_ns) FILTER (WHERE w.duration_ns >= 0.9 * c.cap_ns) >= 0.5 * sum(w.duration_ns);

-- The framework each process runs, where names in the trace say it: PyTorch's threads (pt_autograd_0,
-- pt_data_worker, pt_main_thread) or kernels (at::native, c10 templates, Inductor's triton_poi/red/per/tem);
-- JAX's Python XLA client threads (py_xla_callback); TensorFlow's threads (tf_*, which JAX's XLA
-- runtime has too: only without a py_xla thread); CuPy's generated kernels (cupy_*). Rules word
-- their advice for it; a process none of these name (raw CUDA, a custom extension, CuPy with only
-- its RawKernels) has no row, and gets advice in general terms.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, ThreadNames
-- @column pid: OS process id
-- @column framework: pytorch, jax, tensorflow or cupy (the first of them in this order that the
-- process shows)
-- @column compiled: true when the process runs torch.compile's code (Inductor's triton_poi/red/per/tem
-- kernels): advice to compile is then already taken
CREATE TABLE process_frameworks AS
WITH named AS (
  SELECT name, CASE WHEN regexp_matches(name, 'at::native::|at::cuda::|c10::|^triton_(poi|red|per|tem)_') THEN 'pytorch'
                    WHEN name LIKE 'cupy\_%' ESCAPE '\' THEN 'cupy' END AS framework,
         regexp_matches(name, '^triton_(poi|red|per|tem)_') AS inductor
  FROM kernel_names),
signs AS (
  SELECT DISTINCT k.pid, n.framework, n.inductor FROM kernels k JOIN named n ON n.name = k.name WHERE n.framework IS NOT NULL
  UNION ALL
  SELECT pid, CASE WHEN name LIKE 'pt\_%' ESCAPE '\' THEN 'pytorch' WHEN name LIKE 'py\_xla%' ESCAPE '\' THEN 'jax'
                   WHEN name LIKE 'tf\_%' ESCAPE '\' THEN 'tensorflow' END, false
  FROM threads),
per_pid AS (
  SELECT pid, list(DISTINCT framework) AS seen, bool_or(inductor) AS compiled
  FROM signs WHERE framework IS NOT NULL AND pid IS NOT NULL GROUP BY pid)
SELECT pid, CASE WHEN list_contains(seen, 'pytorch') THEN 'pytorch' WHEN list_contains(seen, 'jax') THEN 'jax'
                 WHEN list_contains(seen, 'tensorflow') THEN 'tensorflow' ELSE 'cupy' END AS framework,
       compiled
FROM per_pid;
