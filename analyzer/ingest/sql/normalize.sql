-- include:

-- Normalized tables built from the raw export columns (src_* views/tables, one per source
-- table, every column of schema.py present, NULL where the export lacks it).
-- Units: times in ns (session clock), sizes in bytes. pid/tid are OS ids decoded from nsys's
-- serialized globalPid/globalTid (bits 24-47 = pid, bits 0-23 = tid).
-- Statements end with ";" at line end. Files in analyzer/sql/ run in name order at ingest, never per rule.

-- nsys_pid(g): the OS process id in nsys's serialized globalTid or globalPid (bits 24-47).
CREATE MACRO nsys_pid(g) AS (g >> 24) & 16777215;
-- nsys_tid(g): the OS thread id in nsys's serialized globalTid (bits 0-23).
CREATE MACRO nsys_tid(g) AS g & 16777215;
-- api_base_name(n): a CUDA API name without its version suffix (cudaLaunchKernel_v7000 ->
-- cudaLaunchKernel), so that every version of a call reads as one.
CREATE MACRO api_base_name(n) AS regexp_replace(n, '_v[0-9]+$', '');

-- cut_text(t): text from the trace (names, NVTX messages) cut to 131,000 characters, with the
-- marker limits.py writes: one 10 MB kernel name or NVTX message is otherwise carried by every
-- row joined to it, through every rule's regular expressions (minutes and GBs, issue 36). Deep
-- C++ templates make real kernel names of 100 kB; a report keeps 128 kB (131,072 bytes) of a
-- value (limits.py), so the cut text and its marker, which gives the size in the export, fit.
-- The readers cut every text column so as they read it (ingest/reader.py): what they cut, with
-- its marker, is not over 131,072 and stays as it is.
CREATE MACRO cut_text(t) AS CASE WHEN length(t) <= 131072 THEN t
  ELSE left(t, 131000) || ' ... [truncated: ' || format('{:,}', strlen(t)) || ' bytes in all]' END;

-- DISTINCT: a string listed twice under its id must not double the rows joined to it (different
-- strings under one id are refused at ingest, database._check_strings).
CREATE TEMP TABLE strings AS SELECT DISTINCT id, cut_text(value) AS value FROM src_strings WHERE id IS NOT NULL;

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

-- One row per API name pattern: which API calls do what (knowledge as data). api_calls.category
-- is the category of the lowest-priority pattern an API name matches LIKE, else 'other'.
-- sources: always
-- @column priority: match order, lowest first
-- @column pattern: LIKE pattern on the API name as recorded (with its version suffix)
-- @column category: launch, sync, memcpy, memset, alloc, free, module, event, stream, graph,
-- context or query (queries never start GPU work and are never taken as a launch call)
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

-- Names as numbers: `label` is an ENUM of every name the per-row tables carry (kernel, API and
-- OS call names, categories, copy kinds, blocking-call kinds), in byte order, so that sorting or comparing labels
-- is sorting or comparing the strings. An ENUM is stored and moved as a small integer: the
-- sorts and joins over millions of kernels and calls carry no strings (carrying a kernel name
-- through two ASOF joins of 1e6 rows cost 1.4 s against 0.3 s). Strings the tables never hold
-- (NVTX texts, which can number millions) stay out of it.
-- (the kernel table read once, for its few distinct name pairs: each read of a source is a scan
-- of the SQLite file)
CREATE TEMP TABLE os_call_name_ids AS SELECT DISTINCT nameId AS id FROM src_osrt;
CREATE TEMP TABLE kernel_name_ids AS SELECT DISTINCT demangledName, shortName FROM src_kernel;
CREATE TEMP TABLE name_strings AS
SELECT id, value, id IN (SELECT id FROM os_call_name_ids) AS os_call FROM strings
WHERE id IN (SELECT demangledName FROM kernel_name_ids UNION ALL SELECT shortName FROM kernel_name_ids
             UNION ALL SELECT id FROM os_call_name_ids);
-- A kernel's name and short name, per pair of StringIds ids: the short name, or the name where
-- the export has none.
CREATE TEMP TABLE kernel_name_strings AS
SELECT p.demangledName AS demangled_id, p.shortName AS short_id, coalesce(d.value, s.value) AS name,
       coalesce(s.value, d.value) AS short_name
FROM kernel_name_ids p LEFT JOIN name_strings d ON d.id = p.demangledName LEFT JOIN name_strings s ON s.id = p.shortName;
-- The names of calls (API and OS calls, their categories, layers and kinds) have an ENUM of their
-- own, `call_label`, a few hundred names where `label` can hold thousands of kernel names: DuckDB
-- keeps a copy of an ENUM's dictionary with every row group of every column of that type
-- (duckdb/duckdb#4393): four such columns of 1e7 rows took 940 MB with a dictionary of 6,049
-- names, 168 MB with one of 64 (docs/benchmarks.md, session 22). `label` keeps every name, so
-- that any name still casts to it.
CREATE TEMP TABLE call_label_values AS
SELECT DISTINCT v FROM (
  SELECT value AS v FROM name_strings WHERE os_call
  UNION ALL SELECT raw_name FROM api_names UNION ALL SELECT api FROM api_names
  UNION ALL SELECT category FROM api_categories
  UNION ALL SELECT label FROM memcpy_kind UNION ALL SELECT 'copy ' || label FROM memcpy_kind
  UNION ALL SELECT unnest(['other', 'runtime', 'driver', 'egl', 'cudnn', 'cublas', 'graph-node',
                           'kernel', 'memcpy', 'memset', 'graph', 'Unknown', 'sync', 'poll']))
WHERE v IS NOT NULL;
CREATE TYPE call_label AS ENUM (SELECT v FROM call_label_values ORDER BY v);
CREATE TEMP TABLE label_values AS
SELECT DISTINCT v FROM (
  SELECT value AS v FROM name_strings UNION ALL SELECT v FROM call_label_values
  UNION ALL SELECT label FROM mem_kind UNION ALL SELECT unnest(['[memset]', '[CUDA graph]', '[unnamed kernel]']))
WHERE v IS NOT NULL;
-- (an export with a NUL in one of these names gets text instead: ingest/database.py)
CREATE TYPE label AS ENUM (SELECT v FROM label_values ORDER BY v);
-- Short names of kernels have an ENUM of their own too, `short_label`, for the same reason: the
-- kernels table's two name columns at 1e7 kernels kept ~0.4 GB of dictionary copies, and the
-- short names are far fewer bytes than the full names (templates, arguments).
-- ('[unnamed kernel]' too, which no short name takes: an ENUM needs a value, an export no kernel)
CREATE TEMP TABLE short_label_values AS
SELECT DISTINCT v FROM (SELECT short_name AS v FROM kernel_name_strings UNION ALL SELECT '[unnamed kernel]')
WHERE v IS NOT NULL;
CREATE TYPE short_label AS ENUM (SELECT v FROM short_label_values ORDER BY v);
-- kernel names by their pair of ids, as labels; OS call names as call labels
CREATE TEMP TABLE kernel_name_labels AS
SELECT demangled_id, short_id, name::label AS name, short_name::short_label AS short_name FROM kernel_name_strings;
CREATE TEMP TABLE os_call_labels AS SELECT id, value::call_label AS value FROM name_strings WHERE os_call;
CREATE TEMP TABLE api_labels AS
SELECT name_id, raw_name::call_label AS name, api::call_label AS api, category::call_label AS category
FROM api_names;

-- One row per CUDA runtime or driver API call (one table in the export, told apart by
-- eventClass). --cudabacktrace duplicates (eventClass 67) and rows with lost timestamps
-- (start 0, no end, end before start) are dropped.
-- sources: CUPTI_ACTIVITY_KIND_RUNTIME
-- @column pid: OS process id of the calling thread
-- @column tid: OS thread id of the calling thread
-- @column global_tid: nsys's serialized globalTid (pid in bits 24-47, tid in bits 0-23): the key
-- to other per-thread tables
-- @column global_pid: nsys's globalPid of the process (global_tid with the thread bits cleared),
-- as GPU operations carry it
-- @column correlation_id: CUPTI correlation id, unique within a process: links the call to the GPU
-- operation it launched (correlation_id of kernels, memcpys, memsets, graph_launches, syncs)
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: API name as recorded, version suffix included (cudaLaunchKernel_v7000)
-- @column api: name without its version suffix (api_base_name)
-- @column category: what the call does, from api_categories ('other' when no pattern matches)
-- @column layer: runtime, driver, egl, cudnn, cublas, graph-node or other, from event_class
-- @column event_class: nsys's eventClass of the row (0 runtime, 1 driver, ...)
-- @column return_value: the call's return code (0: success)
CREATE TABLE api_calls AS
SELECT nsys_pid(r.globalTid) AS pid, nsys_tid(r.globalTid) AS tid, r.globalTid AS global_tid,
       r.globalTid & -16777216 AS global_pid,
       r.correlationId AS correlation_id, r.start AS start_ns, r."end" AS end_ns,
       r."end" - r.start AS duration_ns, n.name, n.api, n.category,
       CASE r.eventClass WHEN 0 THEN 'runtime' WHEN 1 THEN 'driver' WHEN 13 THEN 'egl'
            WHEN 28 THEN 'cudnn' WHEN 29 THEN 'cublas' WHEN 77 THEN 'graph-node' ELSE 'other' END::call_label AS layer,
       r.eventClass AS event_class, r.returnValue AS return_value
FROM src_runtime r LEFT JOIN api_labels n ON n.name_id = r.nameId
WHERE coalesce(r.eventClass, 0) <> 67 AND r.start > 0 AND r."end" IS NOT NULL;

-- Records whose timestamps run backwards (end before start: CUPTI clock trouble, seen on long
-- runs) are counted in record_checks, then dropped: no figure is built from them.
CREATE TEMP TABLE api_checks AS
SELECT count(*) AS records, count(*) FILTER (WHERE end_ns < start_ns) AS backwards,
       count(*) FILTER (WHERE end_ns = start_ns) AS zero_length FROM api_calls;
DELETE FROM api_calls WHERE end_ns < start_ns;

-- The API call that launched each GPU operation, keyed by (global_pid, correlation_id):
-- correlation ids are unique only within a process.
-- (api is a label, a number: an aggregate state holding strings cannot spill, and this one has
-- a group per GPU operation)
CREATE TABLE launches AS
SELECT global_pid, correlation_id, arg_min(tid, event_class) AS tid, arg_min(api, event_class) AS api,
       arg_min(start_ns, event_class) AS start_ns, arg_min(end_ns, event_class) AS end_ns
FROM api_calls
WHERE correlation_id IS NOT NULL AND category IN ('launch', 'memcpy', 'memset', 'graph', 'other')
GROUP BY ALL;

-- One row per kernel execution on a GPU, with the API call that launched it (matched on
-- global_pid and correlation_id; the runtime call where a runtime and a driver call share the
-- id). Rows with lost timestamps or no device are dropped.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process (api_calls.global_pid)
-- @column device_id: CUDA device ordinal (devices.device_id)
-- @column context_id: CUDA context id
-- @column stream_id: CUDA stream id
-- @column correlation_id: CUPTI correlation id of the launch call (api_calls.correlation_id, within
-- global_pid)
-- @column start_ns: start on the GPU, session clock, ns
-- @column end_ns: end on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: demangled kernel name, else the short name, else '[unnamed kernel]'
-- @column short_name: kernel function name without parameters, else the demangled name
-- @column grid_x: grid size in blocks along x, count
-- @column grid_y: grid size in blocks along y, count
-- @column grid_z: grid size in blocks along z, count
-- @column block_x: block size in threads along x, count
-- @column block_y: block size in threads along y, count
-- @column block_z: block size in threads along z, count
-- @column grid_size: blocks in the grid (grid_x * grid_y * grid_z), count
-- @column block_size: threads per block (block_x * block_y * block_z), count
-- @column registers_per_thread: registers per thread, count
-- @column static_shared_bytes: static shared memory per block, bytes
-- @column dynamic_shared_bytes: dynamic shared memory per block, bytes
-- @column graph_node_id: CUDA graph node the kernel ran as, NULL outside graphs
-- @column graph_id: CUDA graph id, NULL outside graphs
-- @column launch_tid: OS thread id of the launch call, NULL when no launch call matched
-- @column launch_api: launch call's API name without version suffix (api_calls.api)
-- @column launch_start_ns: launch call's start on the session clock, ns
-- @column launch_end_ns: launch call's end on the session clock, ns
CREATE TABLE kernels AS
SELECT nsys_pid(k.globalPid) AS pid, k.globalPid AS global_pid, k.deviceId AS device_id,
       k.contextId AS context_id, k.streamId AS stream_id, k.correlationId AS correlation_id,
       k.start AS start_ns, k."end" AS end_ns, k."end" - k.start AS duration_ns,
       -- (no mangled name: no rule reads it, and a third string per kernel costs seconds at 1e7)
       coalesce(n.name, '[unnamed kernel]'::label) AS name, n.short_name,
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
LEFT JOIN kernel_name_labels n ON n.demangled_id IS NOT DISTINCT FROM k.demangledName
                                AND n.short_id IS NOT DISTINCT FROM k.shortName
-- a GPU operation without a device (NULL deviceId: no nsys writes it) cannot be placed: dropped
WHERE k.start > 0 AND k."end" IS NOT NULL AND k.deviceId IS NOT NULL;

-- One row per memory copy on a GPU, with the API call that issued it (as for kernels). Rows
-- with lost timestamps or no device are dropped.
-- sources: CUPTI_ACTIVITY_KIND_MEMCPY
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process (api_calls.global_pid)
-- @column device_id: CUDA device ordinal that ran the copy (devices.device_id)
-- @column context_id: CUDA context id
-- @column stream_id: CUDA stream id
-- @column correlation_id: CUPTI correlation id of the issuing call (api_calls.correlation_id)
-- @column start_ns: start on the GPU, session clock, ns
-- @column end_ns: end on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column bytes: bytes copied
-- @column copy_kind_id: nsys's copyKind enum value
-- @column kind: copyKind's label (Host-to-Device, Device-to-Host, Device-to-Device, Peer-to-Peer, ...)
-- @column src_kind: memory kind of the source (Pageable, Pinned, Device, Managed, ...)
-- @column dst_kind: memory kind of the destination, labels as src_kind
-- @column host_memory: the host side's memory when one side is host memory: pageable, pinned or
-- managed; NULL when neither side is
-- @column src_device_id: CUDA device ordinal of the source, where the export has it
-- @column dst_device_id: CUDA device ordinal of the destination, where the export has it
-- @column graph_node_id: CUDA graph node the copy ran as, NULL outside graphs
-- @column launch_tid: OS thread id of the issuing call, NULL when none matched
-- @column launch_api: issuing call's API name without version suffix
-- @column launch_start_ns: issuing call's start on the session clock, ns
-- @column launch_end_ns: issuing call's end on the session clock, ns (at or after end_ns: the call
-- waited for the copy)
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
WHERE m.start > 0 AND m."end" IS NOT NULL AND m.deviceId IS NOT NULL;

-- One row per memset on a GPU, with the API call that issued it (as for kernels). Rows with
-- lost timestamps or no device are dropped.
-- sources: CUPTI_ACTIVITY_KIND_MEMSET
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process (api_calls.global_pid)
-- @column device_id: CUDA device ordinal (devices.device_id)
-- @column context_id: CUDA context id
-- @column stream_id: CUDA stream id
-- @column correlation_id: CUPTI correlation id of the issuing call (api_calls.correlation_id)
-- @column start_ns: start on the GPU, session clock, ns
-- @column end_ns: end on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column bytes: bytes set
-- @column mem_kind: memory kind set (Device, Pinned, Managed, ...)
-- @column graph_node_id: CUDA graph node the memset ran as, NULL outside graphs
-- @column launch_tid: OS thread id of the issuing call, NULL when none matched
-- @column launch_api: issuing call's API name without version suffix
-- @column launch_start_ns: issuing call's start on the session clock, ns
-- @column launch_end_ns: issuing call's end on the session clock, ns
CREATE TABLE memsets AS
SELECT nsys_pid(m.globalPid) AS pid, m.globalPid AS global_pid, m.deviceId AS device_id,
       m.contextId AS context_id, m.streamId AS stream_id, m.correlationId AS correlation_id,
       m.start AS start_ns, m."end" AS end_ns, m."end" - m.start AS duration_ns, m.bytes,
       coalesce(mk.label, 'Unknown') AS mem_kind, m.graphNodeId AS graph_node_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_memset m
LEFT JOIN launches l ON l.global_pid = m.globalPid AND l.correlation_id = m.correlationId
LEFT JOIN mem_kind mk ON mk.id = m.memKind
WHERE m.start > 0 AND m."end" IS NOT NULL AND m.deviceId IS NOT NULL;

-- One row per whole CUDA graph replay on a GPU, present when graphs were traced at graph
-- level (--cuda-graph-trace=graph), with the API call that launched it.
-- sources: CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process (api_calls.global_pid)
-- @column device_id: CUDA device ordinal (devices.device_id)
-- @column context_id: CUDA context id
-- @column stream_id: CUDA stream id
-- @column correlation_id: CUPTI correlation id of the launch call (api_calls.correlation_id)
-- @column start_ns: start of the replay on the GPU, session clock, ns
-- @column end_ns: end of the replay on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column graph_id: CUDA graph id
-- @column graph_exec_id: id of the executable graph instance replayed
-- @column launch_tid: OS thread id of the launch call, NULL when none matched
-- @column launch_api: launch call's API name without version suffix
-- @column launch_start_ns: launch call's start on the session clock, ns
-- @column launch_end_ns: launch call's end on the session clock, ns
CREATE TABLE graph_launches AS
SELECT nsys_pid(g.globalPid) AS pid, g.globalPid AS global_pid, g.deviceId AS device_id,
       g.contextId AS context_id, g.streamId AS stream_id, g.correlationId AS correlation_id,
       g.start AS start_ns, g."end" AS end_ns, g."end" - g.start AS duration_ns,
       g.graphId AS graph_id, g.graphExecId AS graph_exec_id,
       l.tid AS launch_tid, l.api AS launch_api, l.start_ns AS launch_start_ns, l.end_ns AS launch_end_ns
FROM src_graph g
LEFT JOIN launches l ON l.global_pid = g.globalPid AND l.correlation_id = g.correlationId
WHERE g.start > 0 AND g."end" IS NOT NULL AND g.deviceId IS NOT NULL;

-- One row per table of timed records that the figures are built from: its records, and those
-- whose timestamps run backwards (end before start: dropped from every table) or that last
-- zero ns (kept). Either is clock trouble (CUPTI on long runs): a real kernel, copy or call
-- takes time. The report's coverage names them (analyses/coverage.py).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, CUPTI_ACTIVITY_KIND_RUNTIME
-- @column source: kernel, memcpy, memset, graph (GPU operations) or api (CUDA API calls)
-- @column records: records with both timestamps, count
-- @column backwards: records that end before they start (dropped), count
-- @column zero_length: records that end where they start, count
CREATE TABLE record_checks AS
SELECT 'kernel' AS source, count(*) AS records, count(*) FILTER (WHERE end_ns < start_ns) AS backwards,
       count(*) FILTER (WHERE end_ns = start_ns) AS zero_length FROM kernels
UNION ALL SELECT 'memcpy', count(*), count(*) FILTER (WHERE end_ns < start_ns), count(*) FILTER (WHERE end_ns = start_ns) FROM memcpys
UNION ALL SELECT 'memset', count(*), count(*) FILTER (WHERE end_ns < start_ns), count(*) FILTER (WHERE end_ns = start_ns) FROM memsets
UNION ALL SELECT 'graph', count(*), count(*) FILTER (WHERE end_ns < start_ns), count(*) FILTER (WHERE end_ns = start_ns) FROM graph_launches
UNION ALL SELECT 'api', records, backwards, zero_length FROM api_checks;
DROP TABLE api_checks;
DELETE FROM kernels WHERE end_ns < start_ns;
DELETE FROM memcpys WHERE end_ns < start_ns;
DELETE FROM memsets WHERE end_ns < start_ns;
DELETE FROM graph_launches WHERE end_ns < start_ns;

-- launches is big (a row per GPU operation) and no longer needed: free its memory now.
DROP TABLE launches;

-- One row per CUDA synchronization: the interval a host thread blocked in the driver waiting
-- for the GPU (not GPU work), with the sync API call of the same correlation id.
-- sources: CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process (api_calls.global_pid)
-- @column device_id: CUDA device ordinal waited on, where recorded
-- @column stream_id: CUDA stream id waited on, where recorded
-- @column correlation_id: CUPTI correlation id of the sync call (api_calls.correlation_id)
-- @column start_ns: start of the wait on the session clock, ns
-- @column end_ns: end of the wait on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column sync_type: event, stream-wait-event, stream, context or unknown
-- @column tid: OS thread id of the sync API call, NULL when none matched
-- @column api: sync API call's name without version suffix, NULL when none matched
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

-- One row per GPU operation (kernel, memcpy, memset, graph replay): the basis of busy time.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column pid: OS process id
-- @column global_pid: nsys's globalPid of the process
-- @column device_id: CUDA device ordinal
-- @column stream_id: CUDA stream id
-- @column kind: kernel, memcpy, memset or graph
-- @column start_ns: start on the GPU, session clock, ns
-- @column end_ns: end on the GPU, session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column correlation_id: CUPTI correlation id of the launch call
-- @column name: kernel name, the copy kind for a memcpy, '[memset]' or '[CUDA graph]'
-- @column launch_api: launch call's API name without version suffix, NULL when none matched
-- @column launch_tid: OS thread id of the launch call, NULL when none matched
-- @column launch_start_ns: launch call's start on the session clock, ns
CREATE VIEW gpu_activity AS
SELECT pid, global_pid, device_id, stream_id, 'kernel'::label AS kind, start_ns, end_ns, duration_ns, correlation_id,
       name, launch_api, launch_tid, launch_start_ns FROM kernels
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'memcpy'::label, start_ns, end_ns, duration_ns, correlation_id,
       kind::label, launch_api, launch_tid, launch_start_ns FROM memcpys
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'memset'::label, start_ns, end_ns, duration_ns, correlation_id,
       '[memset]'::label, launch_api, launch_tid, launch_start_ns FROM memsets
UNION ALL SELECT pid, global_pid, device_id, stream_id, 'graph'::label, start_ns, end_ns, duration_ns, correlation_id,
       '[CUDA graph]'::label, launch_api, launch_tid, launch_start_ns FROM graph_launches;

-- Busy intervals: the union of GPU operations, per device and process and per device.
-- One sort (ingest.md 5): a row opens a new interval when it starts after every earlier row
-- has ended (prev_end, the latest end before it); that interval ends where the next one opens
-- (the next opener's prev_end) or at the last end. Only openers are kept: they are also the
-- idle gaps' right edges (22_idle_gaps.sql), with the lowest launching thread among the
-- operations starting there (launch_tid sorts before end_ns, NULLs last), and that operation's
-- kind (what the host issued last before a gap ends). Dropped in 22.
-- The running max runs as one sorted stream, not as a window partitioned by (device, process):
-- DuckDB's partitioned window builds a segment tree over the whole partition, which on
-- overlapping streams of 1e7 operations cost 42-63 CPU s (and grew 25-34x from 1e6); an empty
-- OVER () over rows sorted by (device, process, order) streams after a linear sort (8-12 CPU s,
-- 8-12x). For one max over every partition, each partition's ends are offset above all earlier
-- partitions' (base, from the partition's span): a max that still lies below a row's base belongs
-- to an earlier partition and is no prev_end. rn is the row's number within its partition. The
-- offsets are HUGEINT: spans of a broken export's durations near 2^62 would overflow BIGINT.
CREATE TABLE gpu_openers AS
WITH parts AS (
  SELECT device_id, pid, lo,
         coalesce(sum(hi - lo + 1) OVER p, 0) AS base, coalesce(sum(n) OVER p, 0)::BIGINT AS before
  FROM (SELECT device_id, pid, least(min(start_ns), min(end_ns))::HUGEINT AS lo, max(end_ns)::HUGEINT AS hi, count(*) AS n
        FROM gpu_activity GROUP BY ALL)
  WINDOW p AS (ORDER BY device_id NULLS FIRST, pid NULLS FIRST ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
swept AS (
  SELECT *, lag(m) OVER () AS prev_m, row_number() OVER () AS i
  FROM (SELECT *, max(e) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS m
        FROM (SELECT a.device_id, a.pid, a.global_pid, a.start_ns, a.launch_tid, a.kind, a.end_ns - p.lo + p.base AS e
              FROM gpu_activity a
              JOIN parts p ON p.device_id IS NOT DISTINCT FROM a.device_id AND p.pid IS NOT DISTINCT FROM a.pid
              ORDER BY a.device_id NULLS FIRST, a.pid NULLS FIRST, a.start_ns, a.launch_tid NULLS LAST, a.end_ns)))
-- (the partition's constants joined again after the sweep, not carried through its sort: at 1e7
-- operations 40 bytes less a row to sort, where the sort ran out of the ingest's memory)
SELECT s.device_id, s.pid, s.global_pid, s.start_ns, s.launch_tid, s.kind,
       CASE WHEN s.prev_m >= p.base THEN (s.prev_m - p.base + p.lo)::BIGINT END AS prev_end, s.i - p.before AS rn
FROM swept s JOIN parts p ON p.device_id IS NOT DISTINCT FROM s.device_id AND p.pid IS NOT DISTINCT FROM s.pid
WHERE s.prev_m IS NULL OR s.prev_m < p.base OR s.start_ns > s.prev_m - p.base + p.lo;

-- One row per busy interval of a (device, process): the union of its GPU operations, so
-- overlapping operations (several streams) count once. Built in one sort over gpu_activity:
-- a row opens an interval when it starts after every earlier one has ended.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column start_ns: start of the interval on the session clock, ns
-- @column end_ns: end of the interval on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column ops: GPU operations in the interval, count
-- The next opener's prev_end and rn, read with lead() over one stream sorted by (device, process,
-- start) and kept where that row is of the same partition: a partitioned window sorts each
-- partition apart (one of 1e7 rows: 1.1 s wall, 2.0 CPU s, against 0.9 s and 1.1-1.7 CPU s so).
CREATE TABLE gpu_busy AS
WITH last AS (
  SELECT device_id, pid, max(end_ns) AS last_end, count(*) AS n FROM gpu_activity GROUP BY ALL),
nexts AS (
  SELECT device_id, pid, start_ns, rn,
         CASE WHEN lead(device_id) OVER () IS NOT DISTINCT FROM device_id AND lead(pid) OVER () IS NOT DISTINCT FROM pid
              THEN struct_pack(e := lead(prev_end) OVER (), r := lead(rn) OVER ()) END AS nxt
  FROM (SELECT device_id, pid, start_ns, prev_end, rn FROM gpu_openers
        ORDER BY device_id NULLS FIRST, pid NULLS FIRST, start_ns)),
spans AS (
  -- (past a partition's last opener nxt is NULL, or holds NULLs at the very last row)
  SELECT o.device_id, o.pid, o.start_ns, coalesce(o.nxt.e, l.last_end) AS end_ns, coalesce(o.nxt.r, l.n + 1) - o.rn AS ops
  FROM nexts o JOIN last l ON l.device_id IS NOT DISTINCT FROM o.device_id AND l.pid IS NOT DISTINCT FROM o.pid)
SELECT device_id, pid, start_ns, end_ns, end_ns - start_ns AS duration_ns, ops FROM spans;

-- One row per busy interval of a device over all its processes: the union of gpu_busy's
-- intervals per device.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column start_ns: start of the interval on the session clock, ns
-- @column end_ns: end of the interval on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
CREATE TABLE device_busy AS
-- A device used by one process has that process's intervals, already apart: only devices shared
-- by several processes need the sort.
WITH devices AS (
  SELECT device_id, count(DISTINCT pid) + max((pid IS NULL)::INTEGER) = 1 AS one_process, max(end_ns) AS last_end
  FROM gpu_busy GROUP BY ALL),
shared AS (
  SELECT b.device_id, b.start_ns, b.end_ns
  FROM gpu_busy b JOIN devices d ON d.device_id IS NOT DISTINCT FROM b.device_id WHERE NOT d.one_process),
openers AS (
  SELECT * FROM (
    SELECT device_id, start_ns, max(end_ns) OVER (PARTITION BY device_id ORDER BY start_ns, end_ns
                                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM shared)
  WHERE prev_end IS NULL OR start_ns > prev_end),
spans AS (
  SELECT o.device_id, o.start_ns,
         coalesce(lead(o.prev_end) OVER (PARTITION BY o.device_id ORDER BY o.start_ns), l.last_end) AS end_ns
  FROM openers o JOIN devices l ON l.device_id IS NOT DISTINCT FROM o.device_id)
SELECT device_id, start_ns, end_ns, end_ns - start_ns AS duration_ns FROM spans
UNION ALL
SELECT b.device_id, b.start_ns, b.end_ns, b.duration_ns
FROM gpu_busy b JOIN devices d ON d.device_id IS NOT DISTINCT FROM b.device_id WHERE d.one_process;

-- One row per NVTX range (push/pop and start/end, also their NVTXT twins). Unended ranges end
-- at the last NVTX timestamp, as nsys does. Domains are matched on (domainId, process).
-- sources: NVTX_EVENTS
-- @column pid: OS process id
-- @column tid: OS thread id that opened the range
-- @column global_tid: nsys's serialized globalTid of that thread
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns (the last NVTX timestamp when never ended)
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: the range's message, '' when it has none
-- @column domain: name of its NVTX domain, NULL for the default domain
-- @column style: push_pop (a thread's stack) or start_end (may cross threads and overlap)
-- @column end_tid: OS thread id that ended it, NULL where not recorded
-- @column same_thread: true when ended on the thread that opened it (or no end thread recorded)
CREATE TABLE nvtx_ranges AS
WITH last_ts AS (SELECT greatest(max(start), max("end")) AS ts FROM src_nvtx),
domains AS (
  SELECT domainId, globalTid & 281474959933440 AS proc, any_value(coalesce(s.value, cut_text(d.text))) AS domain
  FROM src_nvtx d LEFT JOIN strings s ON s.id = d.textId
  WHERE d.eventType = 75 GROUP BY ALL)
SELECT nsys_pid(n.globalTid) AS pid, nsys_tid(n.globalTid) AS tid, n.globalTid AS global_tid,
       n.start AS start_ns, coalesce(n."end", last_ts.ts) AS end_ns,
       coalesce(n."end", last_ts.ts) - n.start AS duration_ns,
       coalesce(s.value, cut_text(n.text), '') AS name, d.domain,
       CASE WHEN n.eventType IN (59, 70) THEN 'push_pop' ELSE 'start_end' END AS style,
       nsys_tid(n.endGlobalTid) AS end_tid,
       (n.endGlobalTid IS NULL OR n.endGlobalTid = n.globalTid) AS same_thread
FROM src_nvtx n CROSS JOIN last_ts
LEFT JOIN strings s ON s.id = n.textId
LEFT JOIN domains d ON d.domainId = n.domainId AND d.proc = (n.globalTid & 281474959933440) AND n.domainId <> 0
WHERE n.eventType IN (59, 60, 70, 71) AND coalesce(n."end", last_ts.ts) >= n.start;

-- One row per traced OS runtime call (pthread, poll, read, sleep ...; --trace=osrt). Rows with
-- lost timestamps are dropped.
-- sources: OSRT_API
-- @column pid: OS process id
-- @column tid: OS thread id of the calling thread
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock, ns
-- @column duration_ns: end_ns - start_ns, ns
-- @column name: the function called (pthread_cond_wait, poll, ...)
CREATE TABLE osrt_calls AS
SELECT nsys_pid(o.globalTid) AS pid, nsys_tid(o.globalTid) AS tid, o.start AS start_ns, o."end" AS end_ns,
       o."end" - o.start AS duration_ns, s.value AS name
FROM src_osrt o LEFT JOIN os_call_labels s ON s.id = o.nameId
WHERE o.start > 0 AND o."end" >= o.start;

-- One row per device memory allocation or free (--cuda-memory-usage=true).
-- sources: CUDA_GPU_MEMORY_USAGE_EVENTS
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal
-- @column ts_ns: time of the event on the session clock, ns
-- @column address: device address of the block
-- @column bytes: size of the block, bytes
-- @column mem_kind: memory kind (Device, Pinned, Managed, ...)
-- @column operation: alloc, free or other
-- @column correlation_id: CUPTI correlation id of the API call that made it
CREATE TABLE memory_events AS
SELECT nsys_pid(e.globalPid) AS pid, e.deviceId AS device_id, e.start AS ts_ns, e.address,
       e.bytes, coalesce(mk.label, 'Unknown') AS mem_kind,
       CASE e.memoryOperationType WHEN 0 THEN 'alloc' WHEN 1 THEN 'free' ELSE 'other' END AS operation,
       e.correlationId AS correlation_id
FROM src_memusage e LEFT JOIN mem_kind mk ON mk.id = e.memKind;

-- One row per unified-memory page fault record (--cuda-um-cpu-page-faults, --cuda-um-gpu-page-faults):
-- the host or a GPU touching managed memory whose pages live on the other side, which migrates
-- them. A CPU record is one fault at an instant, and names no thread; a GPU record groups the
-- faults of one page over a span.
-- sources: CUDA_UM_CPU_PAGE_FAULT_EVENTS, CUDA_UM_GPU_PAGE_FAULT_EVENTS
-- @column side: cpu or gpu, where the fault happened
-- @column pid: OS process id
-- @column device_id: CUDA device ordinal of a GPU fault; NULL for a CPU fault
-- @column start_ns: start on the session clock, ns
-- @column end_ns: end on the session clock (a CPU fault's start), ns
-- @column faults: page faults the record counts
CREATE TABLE um_page_faults AS
SELECT 'cpu' AS side, nsys_pid(globalPid) AS pid, NULL::BIGINT AS device_id, start AS start_ns, start AS end_ns,
       1::BIGINT AS faults
FROM src_um_cpu_faults WHERE start > 0
UNION ALL
SELECT 'gpu', nsys_pid(globalPid), deviceId, start, "end", coalesce(numberOfPageFaults, 1)
FROM src_um_gpu_faults WHERE start > 0 AND "end" >= start;

-- One row per GPU, keyed by the CUDA ordinal that GPU rows carry as deviceId. TARGET_INFO_GPU.id
-- is not always that ordinal (nsys-schema.md 1.2): mapped through TARGET_INFO_CUDA_DEVICE, then
-- cuDevice. GPUs seen only in GPU activity get a row with NULL properties.
-- sources: TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET
-- @column device_id: CUDA device ordinal (device_id of the GPU tables)
-- @column name: product name (NVIDIA H200, ...)
-- @column chip: chip name (GH100, ...)
-- @column bus_location: PCI bus location
-- @column sm_count: streaming multiprocessors, count
-- @column memory_bytes: device memory, bytes
-- @column memory_bandwidth_bytes_per_s: device memory bandwidth, bytes per second
-- @column clock_hz: GPU clock rate, Hz
-- @column compute_major: compute capability, major
-- @column compute_minor: compute capability, minor
-- @column uuid: GPU UUID
-- @column has_activity: true when some GPU operation of the trace ran on it
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

-- One row per process with API calls, GPU work or NVTX ranges, named from the export's
-- process list.
-- sources: always
-- @column pid: OS process id
-- @column name: process name, NULL when the export does not list it
CREATE TABLE processes AS
WITH active AS (
  SELECT DISTINCT pid FROM api_calls UNION SELECT DISTINCT pid FROM gpu_activity
  UNION SELECT DISTINCT pid FROM nvtx_ranges)
SELECT a.pid, (SELECT any_value(p.name) FROM src_processes p WHERE p.pid = a.pid) AS name
FROM active a;

-- One row per named thread (the highest-priority name nsys recorded for it).
-- sources: ThreadNames
-- @column pid: OS process id
-- @column tid: OS thread id
-- @column name: thread name
CREATE TABLE threads AS
SELECT nsys_pid(t.globalTid) AS pid, nsys_tid(t.globalTid) AS tid, arg_max(s.value, t.priority) AS name
FROM src_threads t LEFT JOIN strings s ON s.id = t.nameId GROUP BY ALL;

-- One row: the trace window, earliest start to latest end over GPU work, API calls and NVTX
-- ranges (NULLs when the trace has none).
-- sources: always
-- @column start_ns: earliest start on the session clock, ns
-- @column end_ns: latest end on the session clock, ns
-- @column span_ns: end_ns - start_ns, ns
CREATE TABLE trace_window AS
WITH spans AS (
  SELECT min(start_ns) AS s, max(end_ns) AS e FROM gpu_activity
  UNION ALL SELECT min(start_ns), max(end_ns) FROM api_calls
  UNION ALL SELECT min(start_ns), max(end_ns) FROM nvtx_ranges)
SELECT min(s) AS start_ns, max(e) AS end_ns, max(e) - min(s) AS span_ns FROM spans;

-- One row per export metadata entry (nsys version, export time, ...). META_DATA_EXPORT
-- (2023.3+) replaced EXPORT_META_DATA; should a file hold both, the newer wins.
-- sources: META_DATA_EXPORT, EXPORT_META_DATA
-- @column name: entry name
-- @column value: entry value, as text
CREATE TABLE export_meta AS
SELECT name, value FROM src_meta_export
UNION ALL SELECT name, value FROM src_export_meta WHERE NOT EXISTS (SELECT 1 FROM src_meta_export);
-- One row per capture metadata entry (META_DATA_CAPTURE).
-- sources: META_DATA_CAPTURE
-- @column name: entry name
-- @column value: entry value, as text
CREATE TABLE capture_meta AS SELECT name, value FROM src_capture;
-- One row per entry of the target system's environment (TARGET_INFO_SYSTEM_ENV).
-- sources: TARGET_INFO_SYSTEM_ENV
-- @column name: entry name
-- @column value: entry value, as text
CREATE TABLE system_env AS SELECT name, value FROM src_sysenv;
