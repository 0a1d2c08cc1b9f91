-- include: normalize, budget
-- The report's whole-trace figures (analyses/metrics.py), its step-time budget and steady-state
-- verdicts (analyses/budget.py) and what it says about the export (also read by compare and batch).

-- The trace window: the one row of trace_window.
-- query: report_window
-- @column start_ns: first event's start on the session clock, ns
-- @column end_ns: last event's end, ns
-- @column span_ns: end_ns - start_ns (0 when nothing was traced), ns
SELECT start_ns, end_ns, coalesce(span_ns, 0) AS span_ns FROM trace_window;

-- One row per device that ran GPU work: its busy time (the union of its operations).
-- query: report_device_busy
-- @column device_id: CUDA device ordinal
-- @column name: the device's name, as the export gives it
-- @column busy_ns: time with at least one operation running on it, ns (a HUGEINT sum)
SELECT b.device_id, any_value(d.name) AS name, sum(b.duration_ns) AS busy_ns
FROM device_busy b LEFT JOIN devices d USING (device_id) GROUP BY b.device_id ORDER BY b.device_id;

-- One row per process and device: the process's GPU busy time there. GPU work of no known
-- process (a NULL globalPid, which no nsys writes) counts towards its device, and is left out here.
-- query: report_process_busy
-- @column pid: OS process id
-- @column name: the process's name
-- @column device_id: CUDA device ordinal
-- @column busy_ns: time with at least one of its operations running on the device, ns
SELECT b.pid, any_value(p.name) AS name, b.device_id, sum(b.duration_ns) AS busy_ns
FROM gpu_busy b LEFT JOIN processes p USING (pid) WHERE b.pid IS NOT NULL
GROUP BY b.pid, b.device_id ORDER BY b.device_id, b.pid;

-- The total time and count of kernels, copies, memsets and CUDA API calls, in one row. The sums
-- stay HUGEINT (a Python int): a corrupt export's durations may add up past 2^63.
-- query: report_totals
-- @column kernel_ns: summed kernel time, ns
-- @column kernel_count: kernels
-- @column memcpy_ns: summed copy time, ns
-- @column memcpy_count: copies
-- @column memset_ns: summed memset time, ns
-- @column memset_count: memsets
-- @column api_ns: summed CUDA API call time, ns
-- @column api_count: CUDA API calls
SELECT (SELECT coalesce(sum(duration_ns), 0) FROM kernels) AS kernel_ns, (SELECT count(*) FROM kernels) AS kernel_count,
       (SELECT coalesce(sum(duration_ns), 0) FROM memcpys) AS memcpy_ns, (SELECT count(*) FROM memcpys) AS memcpy_count,
       (SELECT coalesce(sum(duration_ns), 0) FROM memsets) AS memset_ns, (SELECT count(*) FROM memsets) AS memset_count,
       (SELECT coalesce(sum(duration_ns), 0) FROM api_calls) AS api_ns, (SELECT count(*) FROM api_calls) AS api_count;

-- GPU operations, and those whose launch call is not in the trace (a time-window slice of an
-- export separates them).
-- query: report_gpu_ops
-- @column gpu_ops: GPU operations (kernels, copies, memsets)
-- @column gpu_ops_without_api: those without their launching CUDA API call
SELECT count(*) AS gpu_ops, count(*) FILTER (WHERE launch_api IS NULL) AS gpu_ops_without_api FROM gpu_activity;

-- How many CUDA graphs were launched.
-- query: report_graph_launches
-- @column launches: cudaGraphLaunch calls
SELECT count(*) AS launches FROM graph_launches;

-- Per process and device, its steady state's CUDA graph replays where no kernel of the process was
-- traced inside a graph (nsys's default --cuda-graph-trace=graph): GPU time no kernel rule sees
-- into (analyses/coverage.py).
-- query: report_opaque_graphs
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column replays: graph replays that start in the steady state
-- @column graphs: distinct executable graphs among them
-- @column replay_ns: their GPU time, ns
-- @column window_ns: the steady-state window, ns
SELECT pid, device_id, replays, graphs, replay_ns, window_ns FROM steady_graph_replays
WHERE node_kernels = 0 ORDER BY pid, device_id;

-- The step-time budget's slices, per device and process, largest first.
-- query: report_budget
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column kind: gpu (a class of GPU work) or idle (a cause of GPU idle time)
-- @column cause: the class or cause (a budget_causes row)
-- @column place: the NVTX range the time sits in, where one does
-- @column ns: the slice's time in the steady state, ns
-- @column pct: its share of the steady-state window, %
SELECT device_id, pid, kind, cause, place, ns, pct FROM budget
ORDER BY device_id, pid, ns DESC, kind, cause, place;

-- The steady state of each device and process, with its verdict (docs/verdict.md).
-- query: report_steady_summary
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column start_ns: steady-state start, ns
-- @column end_ns: steady-state end, ns
-- @column window_ns: end_ns - start_ns, ns
-- @column steps: steps inside it
-- @column step_median_ns: median step time, ns
-- @column step_mean_ns: mean step time, ns
-- @column busy_ns: GPU busy time inside it, ns
-- @column busy_pct: busy_ns over window_ns, %
-- @column idle_ns: GPU idle time inside it, ns
-- @column bound: gpu-bound, host-bound or mixed, by busy_pct
-- @column method: how the steady state was found
-- @column verdict_class: kernel-bound, copy-bound, host-bound or mixed
-- @column verdict_cause: the class or cause that fills the step
-- @column verdict_detail: where that cause sits, when it sits somewhere
-- @column verdict_pct: that cause's share of the steady state, %
SELECT device_id, pid, start_ns, end_ns, window_ns, steps, step_median_ns, step_mean_ns, busy_ns, busy_pct, idle_ns,
       bound, method, verdict_class, verdict_cause, verdict_detail, verdict_pct
FROM steady_summary ORDER BY device_id, pid;

-- The export's own metadata, name and value (META_DATA_EXPORT / EXPORT_META_DATA).
-- query: report_export_meta
-- @column name: the metadata key, EXPORT_PRODUCT_VERSION, EXPORT_SCHEMA_VERSION, DERIVED_*, ...
-- @column value: its value
SELECT name, value FROM export_meta;

-- Which metadata table and schema flavour the export has (decided from its columns at ingest).
-- query: report_export_format
-- @column export_meta_table: META_DATA_EXPORT or EXPORT_META_DATA, null before either
-- @column schema_flavour: the flavour of the export's schema
-- @column features: optional features the export's columns show
SELECT export_meta_table, schema_flavour, features FROM export_format;

-- The capture's metadata (META_DATA_CAPTURE): the command lines, the traced APIs, options.
-- query: report_capture_meta
-- @column name: the key, e.g. PROCESS_1:COMMAND, CAPTURE_EVENT_TYPE
-- @column value: its value
SELECT name, value FROM capture_meta;

-- The system's environment (TARGET_INFO_SYSTEM_ENV): driver versions and the like.
-- query: report_system_env
-- @column name: the key, e.g. NvDriverVersion
-- @column value: its value
SELECT name, value FROM system_env;
