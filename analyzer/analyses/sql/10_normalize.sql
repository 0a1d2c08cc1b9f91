-- Normalized tables built from the raw export columns (src_* views/tables, one per source
-- table, every column of schema.py present, NULL where the export lacks it).
-- Units: times in ns (session clock), sizes in bytes. pid/tid are OS ids decoded from nsys's
-- serialized globalPid/globalTid (bits 24-47 = pid, bits 0-23 = tid).
-- Statements end with ";" at line end. Files in analyzer/sql/ run in name order at ingest, never per rule.

CREATE MACRO nsys_pid(g) AS (g >> 24) & 16777215;
CREATE MACRO nsys_tid(g) AS g & 16777215;
CREATE MACRO api_base_name(n) AS regexp_replace(n, '_v[0-9]+$', '');

-- DISTINCT: a string listed twice under its id must not double the rows joined to it (different
-- strings under one id are refused at ingest, database._check_strings).
CREATE TEMP TABLE strings AS SELECT DISTINCT id, value FROM src_strings WHERE id IS NOT NULL;

-- Built-in enum labels: old exports have no ENUM tables, 2022.4 --lazy=false ones have empty
-- ones. Values are stable across versions (nsys-schema.md 1.5), so the built-ins are a fallback.
CREATE TEMP TABLE builtin_memcpy_kind(id BIGINT, label VARCHAR);
INSERT INTO builtin_memcpy_kind VALUES (0, 'Unknown'), (1, 'Host-to-Device'), (2, 'Device-to-Host'),
  (3, 'Host-to-Array'), (4, 'Array-to-Host'), (5, 'Array-to-Array'), (6, 'Array-to-Device'),
  (7, 'Device-to-Array'), (8, 'Device-to-Device'), (9, 'Host-to-Host'), (10, 'Peer-to-Peer'),
  (11, 'Unified Host-to-Device'), (12, 'Unified Device-to-Host'), (13, 'Unified Device-to-Device');
CREATE TEMP TABLE builtin_mem_kind(id BIGINT, label VARCHAR);
INSERT INTO builtin_mem_kind VALUES (0, 'Pageable'), (1, 'Pinned'), (2, 'Device'), (3, 'Array'),
  (4, 'Managed'), (5, 'Device Static'), (6, 'Managed Static'), (7, 'Unknown');
-- The export's own labels win; ids it adds beyond the built-ins are kept (a newer nsys), and
-- blank labels fall back to the built-in one.
CREATE TEMP TABLE memcpy_kind AS
  SELECT coalesce(b.id, e.id) AS id, coalesce(e.label, b.label, 'Unknown') AS label
  FROM builtin_memcpy_kind b FULL OUTER JOIN (
    SELECT id, any_value(nullif(trim(label), '')) AS label FROM src_enum_memcpy WHERE id IS NOT NULL GROUP BY id) e
  USING (id);
CREATE TEMP TABLE mem_kind AS
  SELECT coalesce(b.id, e.id) AS id, coalesce(e.label, b.label, 'Unknown') AS label
  FROM builtin_mem_kind b FULL OUTER JOIN (
    SELECT id, any_value(nullif(trim(label), '')) AS label FROM src_enum_memkind WHERE id IS NOT NULL GROUP BY id) e
  USING (id);

-- Which API calls do what: knowledge as data, matched in order of priority.
CREATE TABLE api_categories(priority INTEGER, pattern VARCHAR, category VARCHAR);
INSERT INTO api_categories VALUES
  (1, 'cudaGraphLaunch%', 'launch'), (1, 'cuGraphLaunch%', 'launch'),
  (2, 'cudaLaunch%', 'launch'), (2, 'cuLaunch%', 'launch'),
  (3, '%Synchronize%', 'sync'), (3, 'cudaStreamWaitEvent%', 'sync'), (3, 'cuStreamWaitEvent%', 'sync'),
  (4, 'cudaMemcpy%', 'memcpy'), (4, 'cuMemcpy%', 'memcpy'),
  (5, 'cudaMemset%', 'memset'), (5, 'cuMemset%', 'memset'),
  (6, 'cudaMalloc%', 'alloc'), (6, 'cuMemAlloc%', 'alloc'), (6, 'cudaHostAlloc%', 'alloc'),
  (6, 'cuMemHostAlloc%', 'alloc'), (6, 'cuMemCreate%', 'alloc'), (6, 'cudaHostRegister%', 'alloc'),
  (6, 'cuMemHostRegister%', 'alloc'),
  (7, 'cudaFree%', 'free'), (7, 'cuMemFree%', 'free'), (7, 'cuMemRelease%', 'free'),
  (7, 'cudaHostUnregister%', 'free'), (7, 'cuMemHostUnregister%', 'free'),
  (8, 'cuLibraryLoad%', 'module'), (8, 'cuModuleLoad%', 'module'), (8, 'cudaLibraryLoad%', 'module'),
  (8, 'cuModuleGetFunction%', 'module'), (8, 'cuLibraryGetKernel%', 'module'), (8, 'cuModuleUnload%', 'module'),
  (9, 'cudaEvent%', 'event'), (9, 'cuEvent%', 'event'),
  (10, 'cudaStream%', 'stream'), (10, 'cuStream%', 'stream'),
  (11, 'cudaGraph%', 'graph'), (11, 'cuGraph%', 'graph'),
  (12, 'cuCtx%', 'context'), (12, 'cuDevicePrimaryCtx%', 'context'), (12, 'cuInit%', 'context'),
  (12, 'cudaSetDevice%', 'context'), (12, 'cudaDeviceReset%', 'context'),
  -- queries, which never start GPU work: the launch lookup below leaves them out (in the H200
  -- launch_bound export, cuKernelGetName comes once per kernel launch: half of all API calls)
  (13, 'cuKernelGet%', 'query'), (13, 'cuFuncGetAttribute%', 'query'), (13, 'cudaFuncGetAttributes%', 'query'),
  (13, 'cuGetProcAddress%', 'query'), (13, 'cudaGetLastError%', 'query'), (13, 'cudaPeekAtLastError%', 'query'),
  (13, 'cudaGetDevice%', 'query'), (13, 'cudaDeviceGet%', 'query'), (13, 'cuDeviceGet%', 'query'),
  (13, 'cudaOccupancy%', 'query'), (13, 'cuOccupancy%', 'query'),
  (13, 'cudaPointerGetAttribute%', 'query'), (13, 'cuPointerGetAttribute%', 'query'),
  (13, 'cudaGetErrorString%', 'query'), (13, 'cuGetError%', 'query'),
  (13, 'cudaDriverGetVersion%', 'query'), (13, 'cudaRuntimeGetVersion%', 'query'), (13, 'cuDriverGetVersion%', 'query');

CREATE TEMP TABLE api_names AS
  SELECT n.id AS name_id, n.value AS raw_name, api_base_name(n.value) AS api,
         coalesce((SELECT c.category FROM api_categories c WHERE n.value LIKE c.pattern
                   ORDER BY c.priority LIMIT 1), 'other') AS category
  FROM strings n WHERE n.id IN (SELECT DISTINCT nameId FROM src_runtime);

-- CUDA runtime and driver API calls (one table in the export, told apart by eventClass).
-- eventClass 67 rows are --cudabacktrace duplicates of calls already present: dropped.
-- Rows with start = 0, no end or end < start are not real calls (lost timestamps): dropped.
CREATE TABLE api_calls AS
SELECT nsys_pid(r.globalTid) AS pid, nsys_tid(r.globalTid) AS tid, r.globalTid AS global_tid,
       r.globalTid & -16777216 AS global_pid,
       r.correlationId AS correlation_id, r.start AS start_ns, r."end" AS end_ns,
       r."end" - r.start AS duration_ns, n.raw_name AS name, n.api, n.category,
       CASE r.eventClass WHEN 0 THEN 'runtime' WHEN 1 THEN 'driver' WHEN 13 THEN 'egl'
            WHEN 28 THEN 'cudnn' WHEN 29 THEN 'cublas' WHEN 77 THEN 'graph-node' ELSE 'other' END AS layer,
       r.eventClass AS event_class, r.returnValue AS return_value
FROM src_runtime r LEFT JOIN api_names n ON n.name_id = r.nameId
WHERE coalesce(r.eventClass, 0) <> 67 AND r.start > 0 AND r."end" >= r.start;

-- The API call that launched each GPU operation, keyed by (global_pid, correlation_id):
-- correlation ids are unique only within a process.
-- The aggregate carries a number per API name, not the name: an aggregate state holding strings
-- cannot spill, and this one has a group per GPU operation.
CREATE TEMP TABLE api_ids AS
SELECT api, row_number() OVER () AS api_id FROM (SELECT DISTINCT api FROM api_names WHERE api IS NOT NULL);
CREATE TEMP TABLE launches AS
WITH picked AS (
  SELECT a.global_pid, a.correlation_id, arg_min(a.tid, a.event_class) AS tid,
         arg_min(i.api_id, a.event_class) AS api_id, arg_min(a.start_ns, a.event_class) AS start_ns,
         arg_min(a.end_ns, a.event_class) AS end_ns
  FROM api_calls a LEFT JOIN api_ids i ON i.api = a.api
  WHERE a.correlation_id IS NOT NULL AND a.category IN ('launch', 'memcpy', 'memset', 'graph', 'other')
  GROUP BY ALL)
SELECT p.global_pid, p.correlation_id, p.tid, i.api, p.start_ns, p.end_ns
FROM picked p LEFT JOIN api_ids i USING (api_id);

CREATE TABLE kernels AS
SELECT nsys_pid(k.globalPid) AS pid, k.globalPid AS global_pid, k.deviceId AS device_id,
       k.contextId AS context_id, k.streamId AS stream_id, k.correlationId AS correlation_id,
       k.start AS start_ns, k."end" AS end_ns, k."end" - k.start AS duration_ns,
       -- (no mangled name: no rule reads it, and a third string per kernel costs seconds at 1e7)
       coalesce(dn.value, sn.value, '[unnamed kernel]') AS name, coalesce(sn.value, dn.value) AS short_name,
       k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
       k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
       k.gridX * k.gridY * k.gridZ AS grid_size, k.blockX * k.blockY * k.blockZ AS block_size,
       k.registersPerThread AS registers_per_thread,
       k.staticSharedMemory AS static_shared_bytes, k.dynamicSharedMemory AS dynamic_shared_bytes,
       k.graphNodeId AS graph_node_id, k.graphId AS graph_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_kernel k
-- the launch join before the name lookups: its hash table then holds rows without names, which
-- at 1e7 kernels is the difference between spilling and failing under the memory limit
LEFT JOIN launches l ON l.global_pid = k.globalPid AND l.correlation_id = k.correlationId
LEFT JOIN strings dn ON dn.id = k.demangledName
LEFT JOIN strings sn ON sn.id = k.shortName
-- a GPU operation without a device (NULL deviceId: no nsys writes it) cannot be placed: dropped
WHERE k.start > 0 AND k."end" >= k.start AND k.deviceId IS NOT NULL;

CREATE TABLE memcpys AS
SELECT nsys_pid(m.globalPid) AS pid, m.globalPid AS global_pid, m.deviceId AS device_id,
       m.contextId AS context_id, m.streamId AS stream_id, m.correlationId AS correlation_id,
       m.start AS start_ns, m."end" AS end_ns, m."end" - m.start AS duration_ns, m.bytes,
       m.copyKind AS copy_kind_id, coalesce(ck.label, 'Unknown') AS kind,
       coalesce(sk.label, 'Unknown') AS src_kind, coalesce(dk.label, 'Unknown') AS dst_kind,
       -- the host side of a host<->device copy, where one side is host memory
       CASE WHEN m.srcKind = 0 OR m.dstKind = 0 THEN 'pageable'
            WHEN m.srcKind = 1 OR m.dstKind = 1 THEN 'pinned'
            WHEN m.srcKind = 4 OR m.dstKind = 4 THEN 'managed' END AS host_memory,
       m.srcDeviceId AS src_device_id, m.dstDeviceId AS dst_device_id, m.graphNodeId AS graph_node_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_memcpy m
LEFT JOIN launches l ON l.global_pid = m.globalPid AND l.correlation_id = m.correlationId
LEFT JOIN memcpy_kind ck ON ck.id = m.copyKind
LEFT JOIN mem_kind sk ON sk.id = m.srcKind
LEFT JOIN mem_kind dk ON dk.id = m.dstKind
WHERE m.start > 0 AND m."end" >= m.start AND m.deviceId IS NOT NULL;

CREATE TABLE memsets AS
SELECT nsys_pid(m.globalPid) AS pid, m.globalPid AS global_pid, m.deviceId AS device_id,
       m.contextId AS context_id, m.streamId AS stream_id, m.correlationId AS correlation_id,
       m.start AS start_ns, m."end" AS end_ns, m."end" - m.start AS duration_ns, m.bytes,
       coalesce(mk.label, 'Unknown') AS mem_kind, m.graphNodeId AS graph_node_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_memset m
LEFT JOIN launches l ON l.global_pid = m.globalPid AND l.correlation_id = m.correlationId
LEFT JOIN mem_kind mk ON mk.id = m.memKind
WHERE m.start > 0 AND m."end" >= m.start AND m.deviceId IS NOT NULL;

-- Whole CUDA graph replays, present when graphs were traced at graph level.
CREATE TABLE graph_launches AS
SELECT nsys_pid(g.globalPid) AS pid, g.globalPid AS global_pid, g.deviceId AS device_id,
       g.contextId AS context_id, g.streamId AS stream_id, g.correlationId AS correlation_id,
       g.start AS start_ns, g."end" AS end_ns, g."end" - g.start AS duration_ns,
       g.graphId AS graph_id, g.graphExecId AS graph_exec_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_graph g
LEFT JOIN launches l ON l.global_pid = g.globalPid AND l.correlation_id = g.correlationId
WHERE g.start > 0 AND g."end" >= g.start AND g.deviceId IS NOT NULL;

-- launches is big (a row per GPU operation) and no longer needed: free its memory now.
DROP TABLE launches;
DROP TABLE api_ids;

-- CPU-side blocking intervals of the CUDA driver (not GPU work).
CREATE TABLE syncs AS
SELECT nsys_pid(s.globalPid) AS pid, s.globalPid AS global_pid, s.deviceId AS device_id,
       s.streamId AS stream_id, s.correlationId AS correlation_id,
       s.start AS start_ns, s."end" AS end_ns, s."end" - s.start AS duration_ns,
       CASE s.syncType WHEN 1 THEN 'event' WHEN 2 THEN 'stream-wait-event' WHEN 3 THEN 'stream'
            WHEN 4 THEN 'context' ELSE 'unknown' END AS sync_type,
       a.tid, a.api
FROM src_sync s
LEFT JOIN (SELECT global_pid, correlation_id, arg_min(tid, event_class) AS tid, arg_min(api, event_class) AS api
           FROM api_calls WHERE category = 'sync' GROUP BY ALL) a
  ON a.global_pid = s.globalPid AND a.correlation_id = s.correlationId
WHERE s.start > 0 AND s."end" >= s.start;

-- Every GPU operation, one row each: the basis of busy time.
CREATE VIEW gpu_activity AS
SELECT pid, global_pid, device_id, stream_id, 'kernel' AS kind, start_ns, end_ns, duration_ns, correlation_id,
       name, launch_api, launch_tid, launch_start_ns FROM kernels
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'memcpy', start_ns, end_ns, duration_ns, correlation_id,
       kind, launch_api, launch_tid, launch_start_ns FROM memcpys
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'memset', start_ns, end_ns, duration_ns, correlation_id,
       '[memset]', launch_api, launch_tid, launch_start_ns FROM memsets
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'graph', start_ns, end_ns, duration_ns, correlation_id,
       '[CUDA graph]', launch_api, launch_tid, launch_start_ns FROM graph_launches;

-- Busy intervals: the union of GPU operations, per device and process and per device.
-- One sort (ingest.md 5): a row opens a new interval when it starts after every earlier row
-- has ended (prev_end, the latest end before it); that interval ends where the next one opens
-- (the next opener's prev_end) or at the last end. Only openers are kept: they are also the
-- idle gaps' right edges (22_idle_gaps.sql), with the lowest launching thread among the
-- operations starting there (launch_tid sorts before end_ns, NULLs last). Dropped in 22.
CREATE TABLE gpu_openers AS
SELECT * FROM (
  SELECT device_id, pid, global_pid, start_ns, launch_tid,
         max(end_ns) OVER w AS prev_end, row_number() OVER w AS rn
  FROM gpu_activity
  WINDOW w AS (PARTITION BY device_id, pid ORDER BY start_ns, launch_tid NULLS LAST, end_ns
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
WHERE prev_end IS NULL OR start_ns > prev_end;

CREATE TABLE gpu_busy AS
WITH last AS (
  SELECT device_id, pid, max(end_ns) AS last_end, count(*) AS n FROM gpu_activity GROUP BY ALL),
spans AS (
  SELECT o.device_id, o.pid, o.start_ns,
         coalesce(lead(o.prev_end) OVER w, l.last_end) AS end_ns,
         coalesce(lead(o.rn) OVER w, l.n + 1) - o.rn AS ops
  FROM gpu_openers o JOIN last l ON l.device_id IS NOT DISTINCT FROM o.device_id AND l.pid IS NOT DISTINCT FROM o.pid
  WINDOW w AS (PARTITION BY o.device_id, o.pid ORDER BY o.start_ns))
SELECT device_id, pid, start_ns, end_ns, end_ns - start_ns AS duration_ns, ops FROM spans;

CREATE TABLE device_busy AS
WITH openers AS (
  SELECT * FROM (
    SELECT device_id, start_ns, max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM gpu_busy)
  WHERE prev_end IS NULL OR start_ns > prev_end),
last AS (SELECT device_id, max(end_ns) AS last_end FROM gpu_busy GROUP BY ALL),
spans AS (
  SELECT o.device_id, o.start_ns,
         coalesce(lead(o.prev_end) OVER (PARTITION BY o.device_id ORDER BY o.start_ns), l.last_end) AS end_ns
  FROM openers o JOIN last l ON l.device_id IS NOT DISTINCT FROM o.device_id)
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS duration_ns FROM spans;

-- NVTX ranges (push/pop and start/end, also their NVTXT twins). Unended ranges end at the
-- last NVTX timestamp, as nsys does. Domains are matched on (domainId, process).
CREATE TABLE nvtx_ranges AS
WITH last_ts AS (SELECT greatest(max(start), max("end")) AS ts FROM src_nvtx),
domains AS (
  SELECT domainId, globalTid & 281474959933440 AS proc, any_value(coalesce(s.value, d.text)) AS domain
  FROM src_nvtx d LEFT JOIN strings s ON s.id = d.textId
  WHERE d.eventType = 75 GROUP BY ALL)
SELECT nsys_pid(n.globalTid) AS pid, nsys_tid(n.globalTid) AS tid, n.globalTid AS global_tid,
       n.start AS start_ns, coalesce(n."end", last_ts.ts) AS end_ns,
       coalesce(n."end", last_ts.ts) - n.start AS duration_ns,
       coalesce(s.value, n.text, '') AS name, d.domain,
       CASE WHEN n.eventType IN (59, 70) THEN 'push_pop' ELSE 'start_end' END AS style,
       nsys_tid(n.endGlobalTid) AS end_tid,
       (n.endGlobalTid IS NULL OR n.endGlobalTid = n.globalTid) AS same_thread
FROM src_nvtx n CROSS JOIN last_ts
LEFT JOIN strings s ON s.id = n.textId
LEFT JOIN domains d ON d.domainId = n.domainId AND d.proc = (n.globalTid & 281474959933440) AND n.domainId <> 0
WHERE n.eventType IN (59, 60, 70, 71) AND coalesce(n."end", last_ts.ts) >= n.start;

CREATE TABLE osrt_calls AS
SELECT nsys_pid(o.globalTid) AS pid, nsys_tid(o.globalTid) AS tid, o.start AS start_ns, o."end" AS end_ns,
       o."end" - o.start AS duration_ns, s.value AS name
FROM src_osrt o LEFT JOIN strings s ON s.id = o.nameId
WHERE o.start > 0 AND o."end" >= o.start;

-- Device memory allocations and frees (--cuda-memory-usage=true).
CREATE TABLE memory_events AS
SELECT nsys_pid(e.globalPid) AS pid, e.deviceId AS device_id, e.start AS ts_ns, e.address,
       e.bytes, coalesce(mk.label, 'Unknown') AS mem_kind,
       CASE e.memoryOperationType WHEN 0 THEN 'alloc' WHEN 1 THEN 'free' ELSE 'other' END AS operation,
       e.correlationId AS correlation_id
FROM src_memusage e LEFT JOIN mem_kind mk ON mk.id = e.memKind;

-- GPUs, keyed by the CUDA ordinal that GPU rows carry as deviceId. TARGET_INFO_GPU.id is not
-- always that ordinal (nsys-schema.md 1.2): map through TARGET_INFO_CUDA_DEVICE, then cuDevice.
CREATE TABLE devices AS
WITH info AS (
  SELECT coalesce((SELECT min(cudaId) FROM src_cuda_device c WHERE c.gpuId = g.id), g.cuDevice, g.id, g.deviceId) AS device_id,
         g.name, g.chipName AS chip, g.busLocation AS bus_location, g.smCount AS sm_count,
         g.totalMemory AS memory_bytes, g.memoryBandwidth AS memory_bandwidth_bytes_per_s,
         g.clockRate AS clock_hz, g.computeMajor AS compute_major, g.computeMinor AS compute_minor, g.uuid
  FROM src_gpu g
  UNION ALL
  SELECT deviceId, name, NULL, NULL, numMultiprocessors, globalMemorySize, globalMemoryBandwidth,
         coreClockRate, computeCapabilityMajor, computeCapabilityMinor, NULL
  FROM src_cuda_gpu),
best AS (
  SELECT device_id, arg_max(COLUMNS(* EXCLUDE (device_id)), sm_count IS NOT NULL) FROM info
  WHERE device_id IS NOT NULL GROUP BY device_id),
seen AS (SELECT DISTINCT device_id FROM gpu_activity)
SELECT coalesce(b.device_id, s.device_id) AS device_id, b.* EXCLUDE (device_id),
       s.device_id IS NOT NULL AS has_activity
FROM best b FULL OUTER JOIN seen s ON s.device_id = b.device_id;

CREATE TABLE processes AS
WITH active AS (
  SELECT DISTINCT pid FROM api_calls UNION SELECT DISTINCT pid FROM gpu_activity
  UNION SELECT DISTINCT pid FROM nvtx_ranges)
SELECT a.pid, (SELECT any_value(p.name) FROM src_processes p WHERE p.pid = a.pid) AS name
FROM active a;

CREATE TABLE threads AS
SELECT nsys_pid(t.globalTid) AS pid, nsys_tid(t.globalTid) AS tid, arg_max(s.value, t.priority) AS name
FROM src_threads t LEFT JOIN strings s ON s.id = t.nameId GROUP BY ALL;

-- The trace window: earliest start to latest end over GPU work, API calls and NVTX ranges.
CREATE TABLE trace_window AS
WITH spans AS (
  SELECT min(start_ns) AS s, max(end_ns) AS e FROM gpu_activity
  UNION ALL SELECT min(start_ns), max(end_ns) FROM api_calls
  UNION ALL SELECT min(start_ns), max(end_ns) FROM nvtx_ranges)
SELECT min(s) AS start_ns, max(e) AS end_ns, max(e) - min(s) AS span_ns FROM spans;

-- META_DATA_EXPORT (2023.3+) replaced EXPORT_META_DATA; should a file hold both, the newer wins.
CREATE TABLE export_meta AS
SELECT name, value FROM src_meta_export
UNION ALL SELECT name, value FROM src_export_meta WHERE NOT EXISTS (SELECT 1 FROM src_meta_export);
CREATE TABLE capture_meta AS SELECT name, value FROM src_capture;
CREATE TABLE system_env AS SELECT name, value FROM src_sysenv;
