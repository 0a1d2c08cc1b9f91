-- include: normalize, idle_gaps

-- CPU samples (nsys profile --sample, on by default): what a thread's host code was doing when
-- no traced call says. A GPU idle gap spent in host code (idle_gaps' causes nvtx and untraced)
-- names at most an NVTX range; the samples the launching thread took inside such gaps name the
-- functions that ran there.

-- A C++ function's name without its parameters, template arguments and anonymous namespaces
-- (at::native::(anonymous namespace)::add_kernel<float>(...) is at::native::add_kernel): short
-- enough for a sentence, and overloads and instantiations count as one function.
CREATE TEMP MACRO bare_function(name) AS
  regexp_replace(regexp_replace(regexp_replace(regexp_replace(
    replace(name, '(anonymous namespace)::', ''),
    '<[^<>]*>', '', 'g'), '<[^<>]*>', '', 'g'), '<[^<>]*>', '', 'g'),
    '^(.+?)\(.*\)( const)?$', '\1');
CREATE TEMP MACRO plain_function(name) AS
  regexp_replace(CASE WHEN bare_function(name) LIKE '%operator%' THEN bare_function(name)
                      -- a template function's return type ('void at::vec::map')
                      ELSE regexp_replace(bare_function(name),
                             '^(?:[A-Za-z_][A-Za-z0-9_:]*[*& ]+)+((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_~][A-Za-z0-9_]*)$', '\1') END,
                 '^(.{60}).+$', '\1...');
-- PyTorch's CPU operators run their loops in a generic callback (c10::function_ref::callback_fn)
-- whose template arguments name the operator's kernel (mul_kernel, addcmul_cpu_kernel): that name,
-- where the plain one is empty or a trampoline.
CREATE TEMP MACRO short_function(name) AS
  CASE WHEN regexp_matches(name, 'at::native::.*?([A-Za-z0-9_]+_kernel)\(')
            AND regexp_matches(plain_function(name), '(^|::)(callback_fn|_M_invoke|operator\(\))$|^$')
         THEN regexp_extract(name, 'at::native::.*?([A-Za-z0-9_]+_kernel)\(', 1)
       WHEN plain_function(name) = '' THEN left(name, 60)
       ELSE plain_function(name) END;

-- What a library is, in words, where its name alone says little (knowledge as data: a row per
-- family, matched on the file name; the first match in priority order wins).
-- sources: always
-- @column priority: match order, lowest first
-- @column pattern: regular expression on the library's file name (gap_samples.module)
-- @column words: the library in words
CREATE TABLE library_words(priority INTEGER, pattern VARCHAR, words VARCHAR);
INSERT INTO library_words VALUES
  (1, '^(lib)?python[0-9.]*(\.so)?$', 'Python code'),
  (2, '^libtorch_cpu\.so', 'PyTorch CPU operators'),
  (3, '^libtorch_python\.so', 'PyTorch''s Python bindings'),
  (4, '^lib(g|i)omp[0-9]*\.so', 'OpenMP threads (parallel CPU work)'),
  (5, '(open)?blas|^libmkl', 'BLAS on the CPU'),
  (6, '^_multiarray_umath|^libnumpy', 'NumPy'),
  (7, '^libc\.so|^libc-[0-9.]+\.so|^libm\.so|^libm-', 'the C library'),
  (8, '^libcuda\.so', 'the CUDA driver'),
  (9, '^libnvrtc', 'NVRTC (compiling GPU code at run time)'),
  (10, '^libcupti|^libToolsInjection', 'the profiler itself (nsys)'),
  (11, '^\[kernel\.kallsyms\]$', 'the OS kernel (system calls, page faults)'),
  (12, '^\[?anon', 'code outside any library (JIT-compiled or generated)');

-- Steady-state gaps spent in host code, the only ones whose samples are looked at.
CREATE TEMP TABLE host_code_gaps AS
SELECT device_id, pid, tid, start_ns, end_ns, cause, detail FROM idle_gaps
WHERE in_steady_state AND cause IN ('nvtx', 'untraced');

-- One row per (device, process, gap cause, gap detail, function, module): the CPU samples the
-- thread that ended a steady-state GPU idle gap spent in host code (idle_gaps' causes nvtx and
-- untraced) took inside that gap, by the function on top of the sampled stack (the innermost
-- frame: where the time went, not who called it). A thread working for more than one device at
-- once has its sample counted in the gap that started last.
-- sources: COMPOSITE_EVENTS, SAMPLING_CALLCHAINS
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column cause: idle_gaps.cause (nvtx or untraced)
-- @column detail: idle_gaps.detail (the NVTX range, NULL for untraced)
-- @column function: the innermost frame's function, without a C++ name's parameters and template
-- arguments; '[unresolved]' where nsys could not resolve it (no symbols)
-- @column module: the file name of the library or executable holding it, without a library's
-- version suffix (libcuda.so; [kernel.kallsyms] for the OS kernel)
-- @column library: the library in words (library_words: 'Python code', 'PyTorch CPU operators',
-- 'the CUDA driver', ...), else module
-- @column samples: samples with this function on top, count
-- @column cause_samples: all samples in the gaps of this (device, pid, cause, detail), count
CREATE TABLE gap_samples AS
WITH samples AS (
  SELECT id, nsys_pid(globalTid) AS pid, nsys_tid(globalTid) AS tid, start AS ts_ns
  FROM src_samples WHERE globalTid IS NOT NULL AND start IS NOT NULL),
placed AS (
  SELECT s.id, g.device_id, g.pid, g.cause, g.detail
  FROM samples s ASOF JOIN host_code_gaps g ON g.pid = s.pid AND g.tid = s.tid AND g.start_ns <= s.ts_ns
  WHERE s.ts_ns < g.end_ns),
-- counted by the top frame's string ids first, so that the names are made once per distinct
-- frame, not once per sample
tops AS (
  SELECT p.device_id, p.pid, p.cause, p.detail, f.symbol, f.module, coalesce(f.unresolved, 0) <> 0 AS unresolved,
         count(*) AS samples
  FROM placed p JOIN src_frames f ON f.id = p.id AND f.stackDepth = 0 GROUP BY ALL),
named AS (
  SELECT t.device_id, t.pid, t.cause, t.detail,
         CASE WHEN t.unresolved OR coalesce(fn.value, '') = '' THEN '[unresolved]' ELSE short_function(fn.value) END AS function,
         coalesce(regexp_replace(regexp_extract(m.value, '[^/]*$'), '\.so(\.[0-9]+)+$', '.so'), '[unknown]') AS module,
         t.samples
  FROM tops t LEFT JOIN strings fn ON fn.id = t.symbol LEFT JOIN strings m ON m.id = t.module),
counted AS (SELECT device_id, pid, cause, detail, function, module, sum(samples)::BIGINT AS samples FROM named GROUP BY ALL),
-- (the few distinct libraries matched, not the samples)
libraries AS (
  SELECT l.module, coalesce(min_by(w.words, w.priority), l.module) AS library
  FROM (SELECT DISTINCT module FROM counted) l LEFT JOIN library_words w ON regexp_matches(l.module, w.pattern)
  GROUP BY l.module)
SELECT c.device_id, c.pid, c.cause, c.detail, c.function, c.module, l.library, c.samples,
       sum(c.samples) OVER (PARTITION BY c.device_id, c.pid, c.cause, c.detail)::BIGINT AS cause_samples
FROM counted c JOIN libraries l USING (module);

DROP TABLE host_code_gaps;
DROP MACRO short_function;
DROP MACRO plain_function;
DROP MACRO bare_function;
