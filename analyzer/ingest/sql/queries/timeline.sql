-- include: normalize, phases, causes
-- The HTML report's timeline (analyses/timeline.py), binned here so that its size does not grow
-- with the trace. The window [$w0, $w1) is cut into bins $bin ns wide, numbered b from 0. An
-- interval is spread over the bins it touches (range() over bin numbers) and clipped to each:
-- disjoint intervals touch at most (intervals + bins) bins in all, so this stays linear.

-- Busy time of each device in each bin.
-- query: timeline_device_bins
-- @param w0: window start, ns
-- @param w1: window end, ns
-- @param bin: bin width, ns
-- @column device_id: CUDA device ordinal
-- @column b: bin number
-- @column busy: busy time inside the bin, ns
WITH clipped AS (SELECT device_id, greatest(start_ns, $w0) AS s, least(end_ns, $w1) AS e FROM device_busy),
spread AS (SELECT *, unnest(range((s - $w0) // $bin, (e - 1 - $w0) // $bin + 1)) AS b FROM clipped WHERE e > s)
SELECT device_id, b, sum(least(e, $w0 + (b + 1) * $bin) - greatest(s, $w0 + b * $bin)) AS busy FROM spread GROUP BY ALL;

-- Each device's name.
-- query: timeline_devices
-- @column device_id: CUDA device ordinal
-- @column name: the device's name
SELECT device_id, name FROM devices;

-- Each device's busy time over the whole trace.
-- query: timeline_device_busy
-- @column device_id: CUDA device ordinal
-- @column busy_ns: busy time, ns
SELECT device_id, sum(duration_ns)::BIGINT AS busy_ns FROM device_busy GROUP BY 1 ORDER BY 1;

-- The processes that share a device with others, the busiest $max_procs of each such device:
-- they get a row of their own under the device.
-- query: timeline_shared_processes
-- @param max_procs: rows per device
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column busy: the process's busy time on the device, ns
SELECT device_id, pid, busy FROM (
  SELECT device_id, pid, sum(duration_ns)::BIGINT AS busy,
         count(*) OVER (PARTITION BY device_id) AS procs,
         row_number() OVER (PARTITION BY device_id ORDER BY sum(duration_ns) DESC, pid) AS rank
  FROM gpu_busy GROUP BY device_id, pid)
WHERE procs > 1 AND rank <= $max_procs
ORDER BY device_id, busy DESC, pid;

-- Busy time of the processes ($device_ids[i], $pids[i]) in each bin (timeline_shared_processes).
-- query: timeline_process_bins
-- @param w0: window start, ns
-- @param w1: window end, ns
-- @param bin: bin width, ns
-- @param device_ids: the devices, one per process
-- @param pids: the processes
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column b: bin number
-- @column busy: the process's busy time on the device inside the bin, ns
WITH shared AS (SELECT unnest($device_ids) AS device_id, unnest($pids) AS pid),
clipped AS (SELECT device_id, pid, greatest(start_ns, $w0) AS s, least(end_ns, $w1) AS e
            FROM gpu_busy JOIN shared USING (device_id, pid)),
spread AS (SELECT *, unnest(range((s - $w0) // $bin, (e - 1 - $w0) // $bin + 1)) AS b FROM clipped WHERE e > s)
SELECT device_id, pid, b, sum(least(e, $w0 + (b + 1) * $bin) - greatest(s, $w0 + b * $bin)) AS busy
FROM spread GROUP BY ALL;

-- The NVTX lanes: push/pop ranges by nesting depth (below $depths); start/end ranges (no
-- depth: they may cross threads and overlap freely) count as top level. The lanes are the
-- $max_threads threads with the most top-level time. A lane (thread, depth) with at most
-- $exact_ranges ranges is drawn range by range. A busier lane is binned: per bin, the name
-- covering most of it, that name's first start and last end inside the bin (so a segment's
-- edges are its ranges' own) and the share of the bin covered; runs of consecutive bins of one
-- name merge into a segment (gaps and islands). One row per segment.
-- query: timeline_nvtx_lanes
-- @param w0: window start, ns
-- @param w1: window end, ns
-- @param bin: bin width, ns
-- @param depths: nesting depths drawn (2: top-level ranges and their children)
-- @param max_threads: threads drawn
-- @param exact_ranges: a lane with at most this many ranges is drawn range by range
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column depth: nesting depth, 0 at the top
-- @column name: the range name (the one covering most of each bin, for a binned lane)
-- @column start_ns: segment start, ns
-- @column end_ns: segment end, ns
-- @column cover: share of the segment's bins its ranges cover, 0 to 1
-- @column ranges: ranges that start inside the segment
-- @column lane_rank: the thread's rank by top-level NVTX time, from 1
-- @column thread_count: threads with top-level ranges
WITH src AS (SELECT pid, tid, coalesce(depth, 0) AS depth, name, start_ns, end_ns FROM nvtx_tree
             WHERE coalesce(depth, 0) < $depths),
threads_ranked AS (
  SELECT pid, tid, row_number() OVER (ORDER BY sum(end_ns - start_ns) DESC, pid, tid) AS lane_rank,
         count(*) OVER () AS thread_count
  FROM src WHERE depth = 0 GROUP BY pid, tid),
clipped AS (
  SELECT pid, tid, depth, name, greatest(start_ns, $w0) AS s, least(end_ns, $w1) AS e,
         count(*) OVER (PARTITION BY pid, tid, depth) AS lane_ranges
  FROM src JOIN threads_ranked USING (pid, tid)
  WHERE lane_rank <= $max_threads AND end_ns > $w0 AND start_ns < $w1),
exact AS (
  SELECT pid, tid, depth, name, s AS start_ns, e AS end_ns, 1.0 AS cover, 1 AS ranges
  FROM clipped WHERE lane_ranges <= $exact_ranges),
spread AS (
  SELECT *, unnest(range((s - $w0) // $bin, (e - 1 - $w0) // $bin + 1)) AS b FROM clipped
  WHERE e > s AND lane_ranges > $exact_ranges),
per_name AS (
  SELECT pid, tid, depth, b, name, sum(least(e, $w0 + (b + 1) * $bin) - greatest(s, $w0 + b * $bin)) AS ov,
         count(*) FILTER (WHERE s >= $w0 + b * $bin) AS starts,
         min(greatest(s, $w0 + b * $bin)) AS first_s, max(least(e, $w0 + (b + 1) * $bin)) AS last_e
  FROM spread GROUP BY ALL),
per_bin AS (
  SELECT pid, tid, depth, b, arg_max(name, (ov, name)) AS name, arg_max(first_s, (ov, name)) AS first_s,
         arg_max(last_e, (ov, name)) AS last_e, arg_max(starts, (ov, name)) AS starts,
         least(1.0, sum(ov) / $bin) AS cover
  FROM per_name GROUP BY ALL),
runs AS (SELECT *, b - row_number() OVER (PARTITION BY pid, tid, depth, name ORDER BY b) AS run FROM per_bin),
binned AS (
  SELECT pid, tid, depth, name, arg_min(first_s, b) AS start_ns, arg_max(last_e, b) AS end_ns,
         avg(cover) AS cover, sum(starts) AS ranges
  FROM runs GROUP BY pid, tid, depth, name, run)
SELECT x.pid, x.tid, x.depth, x.name, x.start_ns, x.end_ns, x.cover, x.ranges, t.lane_rank, t.thread_count
FROM (SELECT * FROM exact UNION ALL SELECT * FROM binned) x JOIN threads_ranked t USING (pid, tid)
ORDER BY t.lane_rank, x.depth, x.start_ns, x.end_ns;

-- Each thread's name.
-- query: timeline_threads
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column name: the thread's name
SELECT pid, tid, name FROM threads;

-- The $max_threads threads with the most CUDA API time over the whole trace (so that a focus
-- window draws the same lanes). Queries (cuKernelGetName, cudaGetLastError, ...) start no work
-- and are left out; a call of no thread has no lane.
-- query: timeline_host_threads
-- @param max_threads: threads drawn
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column api_ns: the thread's CUDA API time, ns
-- @column thread_count: threads that made CUDA API calls
SELECT pid, tid, api_ns, thread_count FROM (
  SELECT pid, tid, sum(duration_ns)::BIGINT AS api_ns,
         row_number() OVER (ORDER BY sum(duration_ns) DESC, pid, tid) AS lane_rank, count(*) OVER () AS thread_count
  FROM api_calls WHERE category IS DISTINCT FROM 'query' AND pid IS NOT NULL AND tid IS NOT NULL
  GROUP BY pid, tid)
WHERE lane_rank <= $max_threads ORDER BY lane_rank;

-- CUDA API time of the threads ($pids[i], $tids[i]) per kind and bin: what the host threads
-- spend in the driver. A call's kind is the band (budget_causes.lane) whose api_categories hold
-- its category, else the band with none listed, which takes every other category.
-- query: timeline_host_bins
-- @param w0: window start, ns
-- @param w1: window end, ns
-- @param bin: bin width, ns
-- @param pids: the threads' processes (timeline_host_threads)
-- @param tids: the threads
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column kind: the band (budget_causes.lane): launch, sync, copy, ...
-- @column b: bin number
-- @column busy: API time of that kind inside the bin, ns
WITH lanes AS (SELECT unnest(api_categories) AS category, lane FROM budget_causes WHERE lane IS NOT NULL),
drawn AS (SELECT unnest($pids) AS pid, unnest($tids) AS tid),
clipped AS (
  SELECT a.pid, a.tid,
         coalesce(l.lane, (SELECT lane FROM budget_causes WHERE len(api_categories) = 0)) AS kind,
         greatest(a.start_ns, $w0) AS s, least(a.end_ns, $w1) AS e
  FROM api_calls a JOIN drawn USING (pid, tid) LEFT JOIN lanes l ON l.category = a.category
  WHERE a.category IS DISTINCT FROM 'query' AND a.end_ns > $w0 AND a.start_ns < $w1),
binned AS (SELECT *, (s - $w0) // $bin AS b0, (e - 1 - $w0) // $bin AS b1 FROM clipped WHERE e > s),
-- most calls are shorter than a bin: those are summed by bin directly, the others spread
spread AS (SELECT pid, tid, kind, s, e, unnest(range(b0, b1 + 1)) AS b FROM binned WHERE b1 > b0),
parts AS (
  SELECT pid, tid, kind, b0 AS b, sum(e - s) AS busy FROM binned WHERE b1 = b0 GROUP BY ALL
  UNION ALL
  SELECT pid, tid, kind, b, sum(least(e, $w0 + (b + 1) * $bin) - greatest(s, $w0 + b * $bin)) FROM spread GROUP BY ALL)
SELECT pid, tid, kind, b, sum(busy) AS busy FROM parts GROUP BY ALL;

-- The step starts of the $rows processes with the most steps, those inside the window listed.
-- query: timeline_step_starts
-- @param w0: window start, ns
-- @param w1: window end, ns
-- @param rows: processes drawn
-- @column pid: OS process id
-- @column steps: its steps over the whole trace
-- @column starts: the starts inside the window, in order, ns
SELECT pid, count(*) AS steps, list(start_ns ORDER BY start_ns) FILTER (WHERE start_ns >= $w0 AND start_ns < $w1) AS starts
FROM steps GROUP BY pid ORDER BY count(*) DESC, pid LIMIT $rows;

-- Each process's steady state, where it has one.
-- query: timeline_steady
-- @column pid: OS process id
-- @column start_ns: steady-state start, ns
-- @column end_ns: steady-state end, ns
-- @column startup_ns: start-up time before it, ns
-- @column method: how it was found
SELECT pid, start_ns, end_ns, startup_ns, method FROM steady_state
WHERE start_ns IS NOT NULL AND end_ns > start_ns ORDER BY pid;
