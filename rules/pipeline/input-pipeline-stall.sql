-- One row per data-loading NVTX range name of a process (ranges in its steady state), per OS
-- wait call that held the thread feeding the GPU during idle gaps, and (with neither) for the
-- host-code gaps that end with the next batch's upload; most GPU idle time first.
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
gpus AS (
  SELECT pid, string_agg('GPU ' || device_id, ', ' ORDER BY device_id) AS gpus
  FROM (SELECT DISTINCT pid, device_id FROM gpu_busy) GROUP BY pid),
step_time AS (
  SELECT s.pid, count(*) AS steps, sum(s.duration_ns) AS step_ns
  FROM steps s JOIN ss USING (pid) WHERE s.start_ns >= ss.start_ns AND s.start_ns < ss.end_ns GROUP BY s.pid),
matching AS (
  SELECT r.*, EXISTS (SELECT 1 FROM unnest($range_patterns) p(pat) WHERE r.name ILIKE p.pat)
                AND NOT EXISTS (SELECT 1 FROM step_patterns sp WHERE r.name ILIKE sp.pattern) AS loads
  FROM nvtx_range_stats r),
-- the outermost matching range only: "decode" inside "Data Loading" is not counted twice
load_ranges AS (
  SELECT m.* FROM matching m JOIN ss USING (pid) LEFT JOIN matching parent ON parent.range_id = m.parent_id
  WHERE m.loads AND NOT coalesce(parent.loads, false) AND m.start_ns >= ss.start_ns AND m.start_ns < ss.end_ns),
loading AS (
  SELECT pid, 'nvtx range' AS source, name AS what, count(*) AS instances, sum(duration_ns) AS wall_ns,
         sum(busy_during_ns) AS busy_ns,
         sum(duration_ns * greatest(devices, 1) - busy_during_ns) AS idle_ns, name AS place
  FROM load_ranges GROUP BY pid, name),
-- the steady-state idle gaps during which the thread that feeds the GPU sat in an OS wait call
wait_gaps AS (
  SELECT g.pid, g.tid, g.detail, g.start_ns, g.end_ns, g.duration_ns, g.nvtx_range FROM idle_gaps g
  WHERE g.in_steady_state AND g.cause = 'os-call' AND list_contains($wait_calls, g.detail)
    -- in a process whose threads contend for a lock (the GIL), a timed condition wait is that
    -- lock, not a batch (gil-contention)
    AND NOT (g.detail = 'pthread_cond_timedwait' AND g.pid IN (SELECT pid FROM lock_waits))
    -- a gap that ends with reaping a child process (subprocess.run: poll on its output, then
    -- waitpid) waits for a program the thread ran, not for input (idle-gap-causes)
    AND NOT reaps_child(g.pid, g.tid, g.start_ns, g.end_ns)),
-- place: the NVTX range holding at least half of a wait call's idle time, where one does
waiting AS (
  SELECT pid, 'os wait' AS source, detail AS what, sum(gaps) AS instances, sum(ns) AS wall_ns, 0 AS busy_ns,
         sum(ns) AS idle_ns,
         CASE WHEN max(ns) FILTER (WHERE nvtx_range IS NOT NULL) >= 0.5 * sum(ns)
              THEN first(nvtx_range ORDER BY ns DESC, nvtx_range) FILTER (WHERE nvtx_range IS NOT NULL) END AS place
  FROM (SELECT pid, detail, nvtx_range, count(*) AS gaps, sum(duration_ns) AS ns FROM wait_gaps GROUP BY ALL)
  GROUP BY pid, detail),
-- What ended the feeding thread's wait in each of those gaps: another thread (of its process or
-- of another traced one: a client, a load generator) coming out of a sleep that spanned most of
-- the wait and ended in its last tenth. Then the input comes at that sleep's pace (requests
-- arriving, a timer, a rate limit), not because a loader is slow: the feeder waits for a thread
-- that itself waits.
feeder_waits AS (
  SELECT DISTINCT g.pid, g.tid, g.detail, f.start_ns, f.end_ns
  FROM wait_gaps g ASOF JOIN osrt_calls f ON f.pid = g.pid AND f.tid = g.tid AND f.name = g.detail AND f.start_ns <= g.end_ns
  WHERE f.end_ns > g.start_ns),
woken AS (
  SELECT w.pid, w.detail, s.tid AS sleeper_tid, s.pid AS sleeper_pid, s.name AS sleep_call,
         coalesce((s.pid, s.tid) <> (w.pid, w.tid) AND s.end_ns >= w.end_ns - (w.end_ns - w.start_ns) / 10
                  AND least(s.end_ns, w.end_ns) - greatest(s.start_ns, w.start_ns) >= (w.end_ns - w.start_ns) / 2, false)
           AS after_sleep
  FROM feeder_waits w
  ASOF LEFT JOIN (SELECT pid, tid, name, start_ns, end_ns FROM osrt_calls WHERE os_wait_kind(name) = 'sleep') s
    ON s.end_ns <= w.end_ns),
-- A process's waits are paced as a whole: the calls of one input channel (epoll_wait for a
-- request, then recv for the rest of it) follow one pace.
pacing AS (
  SELECT pid, sum(n) AS waits, coalesce(sum(n) FILTER (WHERE after_sleep), 0) AS after_sleep,
         coalesce(sum(n) FILTER (WHERE after_sleep), 0) >= $min_paced_pct / 100.0 * sum(n) AS paced,
         first(sleeper_tid ORDER BY n DESC, sleeper_pid, sleeper_tid) FILTER (WHERE after_sleep) AS sleeper_tid,
         first(sleeper_pid ORDER BY n DESC, sleeper_pid, sleeper_tid) FILTER (WHERE after_sleep) AS sleeper_pid,
         first(sleep_call ORDER BY n DESC, sleeper_pid, sleeper_tid) FILTER (WHERE after_sleep) AS sleep_call
  FROM (SELECT pid, sleeper_tid, sleeper_pid, sleep_call, after_sleep, count(*) AS n FROM woken GROUP BY ALL)
  GROUP BY pid),
-- in a process with no NVTX ranges: the untraced host-code gaps that end with a host-to-device
-- copy, the next batch's upload (the host built the batch on the thread that feeds the GPU)
uploads AS (
  SELECT g.pid, count(*) AS gaps, sum(g.duration_ns) AS idle_ns,
         count(*) FILTER (WHERE m.start_ns IS NOT NULL) AS upload_gaps,
         sum(g.duration_ns) FILTER (WHERE m.start_ns IS NOT NULL) AS upload_idle_ns
  FROM idle_gaps g
  LEFT JOIN (SELECT DISTINCT pid, device_id, start_ns FROM memcpys WHERE kind = 'Host-to-Device') m
    ON m.pid = g.pid AND m.device_id = g.device_id AND m.start_ns = g.end_ns
  WHERE g.in_steady_state AND g.cause = 'untraced' AND g.duration_ns >= $min_upload_gap_ns
    -- where the program names its phases, the ranges say where the time goes
    AND g.pid NOT IN (SELECT pid FROM nvtx_range_stats)
    -- a PyTorch process (its kernels are ATen's), where a batch is what the host builds between
    -- steps; elsewhere host work before an upload is the algorithm's own (idle-gap-causes)
    AND g.pid IN (SELECT DISTINCT k.pid FROM kernels k JOIN kernel_names n USING (name)
                  WHERE n.name LIKE '%at::native::%')
  GROUP BY g.pid),
uploading AS (
  SELECT pid, 'batch upload' AS source, 'host code before each batch upload' AS what, upload_gaps AS instances,
         upload_idle_ns AS wall_ns, 0 AS busy_ns, upload_idle_ns AS idle_ns, NULL AS place
  FROM uploads WHERE upload_gaps > 0 AND upload_idle_ns >= 0.8 * idle_ns),
rows AS (
  SELECT r.*, coalesce(k.waits, 0) AS waits, coalesce(k.after_sleep, 0) AS paced_waits, k.sleeper_tid, k.sleep_call,
         'thread ' || k.sleeper_tid || CASE WHEN k.sleeper_pid <> r.pid THEN ' of pid ' || k.sleeper_pid ELSE '' END AS sleeper,
         coalesce(k.paced, false) AS paced
  FROM (SELECT * FROM loading UNION ALL SELECT * FROM waiting UNION ALL SELECT * FROM uploading) r
  LEFT JOIN pacing k ON r.source = 'os wait' AND k.pid = r.pid),
-- the idle time of each row spent in file reads and writes (os_wait_kind 'file I/O'): in the
-- loading ranges, the file-I/O gaps' overlap with their instances; an OS wait row is its own call
file_gaps AS (
  SELECT g.pid, m.name AS what, g.detail, sum(least(g.end_ns, m.end_ns) - greatest(g.start_ns, m.start_ns)) AS ns
  FROM idle_gaps g JOIN load_ranges m ON m.pid = g.pid AND g.end_ns > m.start_ns AND g.start_ns < m.end_ns
  WHERE g.in_steady_state AND g.cause = 'os-call' AND os_wait_kind(g.detail) = 'file I/O'
  GROUP BY ALL),
file_io AS (
  SELECT pid, what, sum(ns) AS ns, first(detail ORDER BY ns DESC, detail) AS call FROM file_gaps GROUP BY ALL),
-- what the CPU samples of the process's untraced gaps (gap_samples) say the host built the batch
-- with: the three libraries holding most of them
sampled AS (
  SELECT pid, sum(n) AS samples,
         string_agg(library || ' ' || round(100.0 * n / total)::INTEGER || ' %', ', ' ORDER BY n DESC, library)
           FILTER (WHERE k <= 3) AS libraries
  FROM (SELECT pid, library, n, sum(n) OVER (PARTITION BY pid) AS total,
               row_number() OVER (PARTITION BY pid ORDER BY n DESC, library) AS k
        FROM (SELECT pid, library, sum(samples) AS n FROM gap_samples WHERE cause = 'untraced' GROUP BY ALL))
  GROUP BY pid),
-- what the program already does, so that the fix does not advise it: pinned host-to-device
-- copies, and other processes (DataLoader workers) beside the one that uses the GPU
done AS (
  SELECT ss.pid,
         round(100.0 * coalesce(sum(m.bytes) FILTER (WHERE m.host_memory = 'pinned'), 0)
               / nullif(sum(m.bytes), 0), 1) AS pinned_h2d_pct,
         -- the host time the pageable ones block for: under a small share of the step, pinning
         -- them changes nothing
         coalesce(sum(m.launch_end_ns - m.launch_start_ns) FILTER (WHERE m.host_memory IS DISTINCT FROM 'pinned'), 0)
           AS pageable_h2d_ns,
         -- a loader worker makes no CUDA call, so it is in no table of its own: PyTorch names its
         -- threads pt_data_worker, which the export's thread names keep
         (SELECT count(*) FROM (SELECT pid FROM processes UNION SELECT pid FROM threads WHERE name = 'pt_data_worker') p
          WHERE p.pid <> ss.pid AND p.pid NOT IN (SELECT DISTINCT pid FROM gpu_activity WHERE pid IS NOT NULL))
           AS helper_processes
  FROM ss LEFT JOIN memcpys m ON m.pid = ss.pid AND m.kind = 'Host-to-Device'
       AND m.start_ns >= ss.start_ns AND m.start_ns < ss.end_ns
  GROUP BY ss.pid)
SELECT r.pid, coalesce(g.gpus, 'the GPU') AS gpus, r.source, r.what, r.place,
       'waiting in ' || r.what || coalesce(' in "' || r.place || '"', '') AS wait_text, r.instances, r.wall_ns, round(r.wall_ns / r.instances) AS avg_ns,
       r.busy_ns, r.idle_ns, ss.window_ns,
       round(100.0 * r.idle_ns / nullif(ss.window_ns, 0), 2) AS idle_window_pct,
       st.steps, round(st.step_ns / st.steps) AS avg_step_ns,
       -- where the steps leave time between them (a loader that restarts between epochs), the
       -- step's time is the whole window
       round(100.0 * r.wall_ns / nullif(greatest(st.step_ns, ss.window_ns), 0), 2) AS step_share_pct,
       row_number() OVER (PARTITION BY r.pid ORDER BY r.idle_ns DESC, r.what) AS rank,
       d.pinned_h2d_pct, coalesce(d.pageable_h2d_ns, 0)::BIGINT AS pageable_h2d_ns,
       round(100.0 * coalesce(d.pageable_h2d_ns, 0) / nullif(ss.window_ns, 0), 2) AS pageable_h2d_pct,
       100.0 * coalesce(d.pageable_h2d_ns, 0) / nullif(ss.window_ns, 0) >= $min_copy_pct AS pinning_matters,
       coalesce(d.helper_processes, 0) AS helper_processes,
       CASE WHEN sp.samples >= $min_samples THEN 'its CPU samples there: ' || sp.libraries
            ELSE 'no NVTX range or traced call says more' END AS building_text,
       r.waits, r.paced_waits, r.paced, r.sleeper_tid, r.sleeper, r.sleep_call, n.from_network,
       -- the trace cannot say whether the program sets that pace (a throttle) or its users or a
       -- remote store do (requests arriving): no bound on what lifting it wins
       CASE WHEN NOT r.paced AND NOT n.from_network THEN r.idle_ns END AS recoverable_ns,
       coalesce(fw.framework, 'other') AS framework,
       round(100.0 * coalesce(io.ns, 0) / nullif(r.idle_ns, 0), 2) AS file_io_pct, io.call AS file_io_call,
       coalesce(io.ns >= $file_io_min_pct / 100.0 * r.idle_ns, false) AS reads_files
FROM rows r JOIN ss USING (pid) LEFT JOIN process_frameworks fw ON fw.pid = r.pid LEFT JOIN step_time st USING (pid) LEFT JOIN gpus g USING (pid)
LEFT JOIN done d USING (pid) LEFT JOIN file_io fi ON r.source = 'nvtx range' AND fi.pid = r.pid AND fi.what = r.what
LEFT JOIN sampled sp ON sp.pid = r.pid AND r.source = 'batch upload'
-- a feeder blocked on sockets that no traced sleep paces and no helper process feeds: its input
-- comes from outside the trace
CROSS JOIN LATERAL (SELECT r.source = 'os wait' AND NOT r.paced AND list_contains($network_calls, r.what)
                           AND coalesce(d.helper_processes, 0) = 0 AS from_network) n
-- the row's file-I/O time: its file-I/O gaps (a range), or all of it (an OS wait that is file I/O);
-- NULL where it has none
CROSS JOIN LATERAL (SELECT CASE WHEN r.source <> 'os wait' THEN fi.ns
                                WHEN os_wait_kind(r.what) = 'file I/O' THEN r.idle_ns END AS ns,
                           CASE WHEN r.source = 'os wait' THEN r.what ELSE fi.call END AS call) io
ORDER BY r.idle_ns DESC, r.pid, r.what
