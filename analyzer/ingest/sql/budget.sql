-- include: normalize, phases, idle_gaps, step_times, causes, settings

-- The step-time budget (`budget`, `steady_summary`) and what it is built from: kernel classes,
-- an event sweep over the steady state's GPU operations, idle time by host cause.

-- One row per kernel class pattern (regular expressions, case-insensitive), matched in
-- priority order; knowledge as data, matched once per distinct kernel name (kernel_classes).
-- sources: always
-- @column priority: match order, lowest first
-- @column class: the class a match gives (a budget_classes class)
-- @column pattern: regular expression on the kernel name
-- @column exclude: regular expression that vetoes the match, NULL for none
CREATE TABLE kernel_class_patterns(priority INTEGER, class VARCHAR, pattern VARCHAR, exclude VARCHAR);
INSERT INTO kernel_class_patterns VALUES
  (1, 'communication', 'nccl|allreduce|allgather|reducescatter|all_reduce|all_gather|reduce_scatter|sendrecv', NULL),
  (2, 'tensor-core math', 'flash|fmha|sdpa', NULL),
  -- PyTorch's and Triton's pointwise and reduction loops, normalizations and cuDNN's layout
  -- conversions, named before the dtype words below: vectorized_elementwise_kernel<..., BFloat16>
  -- or cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, ...> is a memory pass, not tensor-core math
  (3, 'elementwise/reduction', '\b(vectorized_|unrolled_)?elementwise_kernel|\breduce_kernel|triton_(poi|red|per)_|multi_tensor_apply|layer_norm|batch_norm|group_norm|instance_norm|rms_?norm|\bbn_(fw|bw)_|batchnorm|gammabeta|nchwtonhwc|nhwctonchw|softmax|dropout|catarraybatchedcopy', NULL),
  -- XLA's (JAX, TensorFlow) loop and reduction ("input") fusions, transposes and single wrapped
  -- operations; its GEMMs are gemm_fusion_*, cuBLAS or cuDNN kernels
  (3, 'elementwise/reduction', '^(loop|input|transpose)_\w*fusion|^wrapped_[a-z]', NULL),
  -- tensor-core instructions and MMA shapes; a format word alone (bf16, half, fp8) is not math:
  -- PyTorch templates its indexing, pooling and embedding kernels on c10::BFloat16 too, and
  -- matrix math whose name gives a half format but not its unit is classed in kernel_classes
  (4, 'tensor-core math', 'tf32|hmma|wmma|tensorop|tensor[0-9]|gmma|nvjet|[hsi](16816|1688|884|8816)|imma|dmma',
      '_ffma_|f32f32_f32f32|sgemm|simt'),
  -- conv but not convert (cuDNN's convertTensor_kernel copies)
  (5, 'fp32 math', 'sgemm|_ffma_|f32f32_f32f32|simt|gemm|conv([^e]|$)|fprop|dgrad|wgrad|matmul|cublas|cutlass', NULL),
  (6, 'elementwise/reduction', 'elementwise|reduce|norm|adam|sgd|foreach|multi_tensor', NULL);

-- One row per distinct kernel name that does matrix math (GEMM, GEMV, convolution, attention),
-- with the numeric format and the unit it computes in, read from the name. Libraries spell
-- the format in their names: cuBLAS `sgemm`/`dgemm`/`hgemm`/`zgemm` and `h884gemm` (letter =
-- type, digits = a tensor-core MMA shape), xmma `f32f32_tf32f32_f32`/`bf16bf16_bf16f32_f32`
-- (the lowest-precision operand type is the math's), CUTLASS `tensorop_bf16_s16816gemm_bf16`
-- / `simt_dgemm`, cuDNN `scudnn` and engines templated on `<float>`, nvjet's type letters
-- after the architecture (`nvjet_sm90_tst_...`: A/B bf16 (t), fp32 compute (s), bf16 output;
-- h fp16, s fp32, d fp64, q fp8; `qqtst`: A, B fp8). Triton's `triton_mm`/`triton_tem_*` carry
-- no format: unknown. Helper kernels of these libraries (split-K reductions, epilogues,
-- workspace init) are not math and get no row. One pass over distinct names (kernel_names).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column name: kernel name (kernel_names.name)
-- @column family: the library or generator that made it: cuBLAS, cuBLASLt, cuDNN, CUTLASS, Triton, attention, PyTorch or other
-- @column op: gemm, gemv, conv or attention
-- @column format: fp64, fp32, tf32, fp16, bf16, fp8, int8 or unknown (the operands' format the math runs in)
-- @column path: tensor core, CUDA core or unknown (the unit the name says the math runs on)
CREATE TABLE kernel_formats AS
WITH n AS (SELECT name, lower(name) AS s FROM kernel_names),
-- what the kernel does; library helpers (split-K reductions, epilogues, workspace init, BLAS
-- level-1 scaling) and PyTorch's pointwise/norm loops are not matrix math
ops AS (
  SELECT name, s,
         CASE WHEN regexp_matches(s, 'splitkreduce|reducesplitk|split_k_reduce|cublaslt::epilogue|init_device_workspace|scal_kernel|elementwise_kernel|reduce_kernel|layer_norm|batch_norm|softmax|triton_(poi|red|per)_|nccl')
              THEN NULL
              WHEN regexp_matches(s, 'flash|fmha|sdpa|attention') THEN 'attention'
              WHEN regexp_matches(s, 'gemv') THEN 'gemv'
              WHEN regexp_matches(s, 'conv([^e]|$)|fprop|dgrad|wgrad|winograd|[shd0-9]cudnn') THEN 'conv'
              WHEN regexp_matches(s, 'gemm|matmul|nvjet|xmma|tensorop|wgmma|triton_(tem_.*)?b?mm|\bb?mm_kernel') THEN 'gemm'
         END AS op
  FROM n),
parsed AS (
  SELECT name, s, op,
         CASE WHEN regexp_matches(s, 'nvjet') THEN 'cuBLAS'
              WHEN regexp_matches(s, 'cublaslt') THEN 'cuBLASLt'
              WHEN regexp_matches(s, 'cudnn|_engine<|engine_float|convolve_sgemm') THEN 'cuDNN'
              WHEN regexp_matches(s, 'cublas|^(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm[0-9]+)_|gemv|gemmsn|gemmk1|sgemm_largek') THEN 'cuBLAS'
              WHEN regexp_matches(s, 'cutlass') AND op <> 'attention' THEN 'CUTLASS'
              WHEN regexp_matches(s, 'triton_') THEN 'Triton'
              WHEN op = 'attention' THEN 'attention'
              WHEN regexp_matches(s, 'at::native') THEN 'PyTorch'
              ELSE 'other' END AS family,
         -- nvjet: the first type letter after the architecture is the A operand's type
         regexp_extract(s, 'nvjet_(?:sm[0-9]+_)?([a-z]+)_', 1) AS nvjet_types,
         -- the format tokens in the name, lowest precision first (fp16 inputs with fp32
         -- accumulation are fp16 math); bf16 before fp16 (bf16 contains f16), tf32 before fp32
         CASE WHEN regexp_matches(s, 'e4m3|e5m2|fp8|f8f8') THEN 'fp8'
              WHEN regexp_matches(s, 'int8|i8i8|i8i32|s8s8|u8u8|i8816|i16832|i8832|imma|_[isu]8_') THEN 'int8'
              WHEN regexp_matches(s, 'bf16|bfloat16|fe8m7') THEN 'bf16'
              WHEN regexp_matches(s, 'f16|fp16|half|[^a-z]h[0-9]{3,6}(gemm|cudnn)|hgemm|hcudnn') THEN 'fp16'
              WHEN regexp_matches(s, 'tf32|fe8m10') THEN 'tf32'
              WHEN regexp_matches(s, 'f64|fp64|dgemm|zgemm|dmma|dfma|double|dcudnn|[^a-z]d[0-9]{3,6}gemm') THEN 'fp64'
              WHEN regexp_matches(s, 'f32|fp32|sgemm|cgemm|scudnn|float|ffma|[^a-z]s[0-9]{3,6}(gemm|cudnn|fprop|dgrad|wgrad)') THEN 'fp32'
              ELSE 'unknown' END AS token_format,
         -- tensor-core MMA shapes and instructions; CUDA-core (SIMT/FMA) kernels and engines
         CASE WHEN regexp_matches(s, 'tensorop|tensor[0-9]+x|wgmma|gmma|hmma|imma|dmma|wmma|warpgroup|nvjet|[^a-z][hsdi][0-9]{3,6}(tf32|and|xor)?(gemm|cudnn|fprop|dgrad|wgrad)|s161616')
              THEN 'tensor core'
              WHEN regexp_matches(s, 'simt|ffma|hfma|dfma|sgemm|dgemm|hgemm|cgemm|zgemm|igemm|[sdh]cudnn|engine_float|_engine<|gemv|gemmsn|gemmk1')
              THEN 'CUDA core'
              ELSE 'unknown' END AS token_path
  FROM ops WHERE op IS NOT NULL),
formats AS (
  SELECT name, family, op, token_path,
         -- Triton names do not carry the dtype
         CASE WHEN family = 'Triton' THEN 'unknown'
              WHEN nvjet_types <> '' THEN CASE left(nvjet_types, 1) WHEN 'd' THEN 'fp64' WHEN 's' THEN 'fp32'
                   WHEN 't' THEN 'bf16' WHEN 'h' THEN 'fp16' WHEN 'q' THEN 'fp8' WHEN 'e' THEN 'fp8'
                   WHEN 'i' THEN 'int8' ELSE 'unknown' END
              ELSE token_format END AS raw_format
  FROM parsed)
SELECT name, family, op,
       -- fp32 operands on tensor cores are TF32 math (or its fp32 emulation): CUTLASS
       -- `tensorop_s1688gemm` on float data, nvjet `sss`
       CASE WHEN raw_format = 'fp32' AND token_path = 'tensor core' THEN 'tf32' ELSE raw_format END AS format,
       -- TF32 and fp8 exist only on tensor cores
       CASE WHEN raw_format IN ('fp8', 'tf32') THEN 'tensor core' ELSE token_path END AS path
FROM formats;

-- (the names each pattern matches, one statement per pattern, the pattern a parameter: DuckDB
-- compiles a pattern read from a joined row again for every name, 1e5 names took minutes, issue 36)
CREATE TEMP TABLE kernel_pattern_hits AS SELECT NULL::VARCHAR AS pattern, name FROM kernel_names LIMIT 0;
-- @each pattern: SELECT DISTINCT pattern FROM (SELECT pattern FROM kernel_class_patterns UNION ALL SELECT exclude FROM kernel_class_patterns) WHERE pattern IS NOT NULL ORDER BY pattern
INSERT INTO kernel_pattern_hits SELECT $pattern, name FROM kernel_names WHERE regexp_matches(name, $pattern, 'i');

-- One row per distinct kernel name with its class: the first kernel_class_patterns row that
-- matches it, else 'other kernels'.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL
-- @column name: kernel name (kernel_names.name)
-- @column class: tensor-core math, fp32 math, fp64 math, matrix math, elementwise/reduction, communication or other kernels
CREATE TABLE kernel_classes AS
WITH by_pattern AS (
  SELECT n.name, coalesce(min_by(p.class, p.priority), 'other kernels') AS class
  FROM kernel_names n LEFT JOIN (
    SELECT h.name, p.class, p.priority FROM kernel_class_patterns p JOIN kernel_pattern_hits h ON h.pattern = p.pattern
    WHERE NOT EXISTS (SELECT 1 FROM kernel_pattern_hits x WHERE x.pattern = p.exclude AND x.name = h.name)) p
    USING (name)
  GROUP BY n.name),
-- matrix math whose format and unit the name says (kernel_formats) is classed by them: fp64
-- math on any unit, tensor-core math, or math on CUDA cores (fp32 FMA, also for fp16/bf16 data:
-- cuDNN's `engine_float<__nv_bfloat16>` computes in fp32); matrix math in a half, fp8 or int8
-- format on no named unit runs on tensor cores (every library does so since Volta); GEMVs are
-- memory-bound whatever their format. Matrix math whose name says neither (Triton's, XLA's
-- gemm_fusion) is 'matrix math' where only the generic name patterns would call it fp32 math:
-- its format is in its inputs, not its name; other unknown formats keep the patterns' class
by_format AS (
  SELECT name, CASE WHEN format = 'fp64' THEN 'fp64 math'
                    WHEN path = 'tensor core' THEN 'tensor-core math'
                    WHEN path = 'CUDA core' THEN 'fp32 math'
                    WHEN format IN ('bf16', 'fp16', 'fp8', 'int8') THEN 'tensor-core math'
                    WHEN format = 'unknown' AND path = 'unknown' THEN 'matrix math' END AS class
  FROM kernel_formats WHERE op <> 'gemv')
SELECT p.name, CASE WHEN f.class = 'matrix math' AND p.class <> 'fp32 math' THEN p.class
                    ELSE coalesce(f.class, p.class) END AS class
FROM by_pattern p LEFT JOIN by_format f USING (name);

-- One row per class of GPU time, in the order that wins where operations overlap (rank 1 first).
-- sources: always
-- @column rank: precedence, 1 first
-- @column class: class name (budget.cause of gpu rows)
-- (budget_causes' gpu rows: add a class there)
CREATE TABLE budget_classes AS SELECT rank, cause AS class FROM budget_causes WHERE kind = 'gpu';

-- The budget's settings, by name: their rows of settings.sql, which declares each with its type,
-- unit, range and reason (`nsys-diagnose explain settings`). bound: gpu-bound at or above
-- gpu_bound_pct busy, host-bound at or below host_bound_pct, else mixed; moot_busy_pct
-- (fix_facts); launch_gap_ns and launch_ops_per_step (the idle causes).
-- sources: always
-- @column name: setting name (settings.name)
-- @column value: setting value (% or ns, as its name says)
CREATE TABLE budget_settings AS SELECT name, value FROM settings WHERE read_by = 'budget_settings';

-- Each (device, process) with GPU work in its process's steady state, with the GPU operations
-- of its busy intervals there per step (NULL without steps).
CREATE TEMP TABLE budget_windows AS
SELECT b.device_id, b.pid, s.start_ns AS w0, s.end_ns AS w1, sum(b.ops) / any_value(s.steps) AS ops_per_step
FROM gpu_busy b JOIN steady_state s ON s.pid = b.pid
WHERE b.device_id IS NOT NULL AND b.end_ns > s.start_ns AND b.start_ns < s.end_ns AND s.end_ns > s.start_ns
GROUP BY b.device_id, b.pid, s.start_ns, s.end_ns;

-- The window's GPU busy time in segments, each held by one class (r, budget_classes' rank).
-- Almost every busy interval (gpu_busy) is a single operation: its class holds it, with no sweep.
-- Only the operations of multi-operation intervals go through a sweep, where the highest active
-- class holds the time between two consecutive event times. Two sorts, each with one running sum
-- (eight running counts, one per class, cost several times more): a running count per class over
-- its own starts (+1) and ends (-1) gives the moments the class turns on or off, as a flip of its
-- bit; a running sum of the flips over all event times of the (device, process) is the bitmask of
-- the active classes after each time, its lowest bit the highest class. The counts and flips are
-- exact in DOUBLE (small integers), and order-free within one time: only the state after all of
-- a time's events is kept. Busy intervals lie apart (an operation starting at or before the
-- interval's running end joins it), so these masks are those of a sweep over every operation.
CREATE TABLE budget_segments AS
WITH alone AS (SELECT device_id, pid, start_ns FROM gpu_busy WHERE ops = 1),
ops AS (
  SELECT a.device_id, a.pid, greatest(a.start_ns, w.w0) AS s, least(a.end_ns, w.w1) AS e,
         (CASE a.kind WHEN 'kernel' THEN coalesce(c.rank, (SELECT rank FROM budget_classes WHERE class = 'other kernels'))
                      WHEN 'graph' THEN (SELECT rank FROM budget_classes WHERE class = 'CUDA graph replays')
                      WHEN 'memcpy' THEN (SELECT rank FROM budget_classes WHERE class = 'copies')
                      ELSE (SELECT rank FROM budget_classes WHERE class = 'memsets') END)::UTINYINT AS r,
         -- an interval's operations start at or after its start: one starting there is its only one
         o.start_ns IS NOT NULL AS alone
  FROM gpu_activity a JOIN budget_windows w ON w.device_id = a.device_id AND w.pid = a.pid
  -- (the kind test inside the key: as a separate ON condition it made a nested-loop join)
  LEFT JOIN kernel_classes kc ON kc.name = CASE WHEN a.kind = 'kernel' THEN a.name END
  LEFT JOIN budget_classes c ON c.class = kc.class
  LEFT JOIN alone o ON o.device_id = a.device_id AND o.pid = a.pid AND o.start_ns = a.start_ns
  WHERE a.end_ns > w.w0 AND a.start_ns < w.w1),
ev AS (
  SELECT device_id, pid, s AS ts, r, 1 AS d FROM ops WHERE NOT alone
  UNION ALL SELECT device_id, pid, e, r, -1 FROM ops WHERE NOT alone),
counted AS (
  SELECT device_id, pid, ts, r, d,
         sum(d::DOUBLE) OVER (PARTITION BY device_id, pid, r ORDER BY ts, d ROWS UNBOUNDED PRECEDING) AS c
  FROM ev),
-- c - d: the count before this event
flips AS (
  SELECT device_id, pid, ts, ((1 << (r::INTEGER - 1)) * ((c > 0)::INTEGER - ((c - d) > 0)::INTEGER))::DOUBLE AS flip
  FROM counted),
masked AS (
  SELECT device_id, pid, ts, lead(ts) OVER w AS next_ts, sum(flip) OVER w AS mask
  FROM flips WINDOW w AS (PARTITION BY device_id, pid ORDER BY ts ROWS UNBOUNDED PRECEDING))
SELECT device_id, pid, s AS start_ns, e AS end_ns, e - s AS ns, r FROM ops WHERE alone AND e > s
UNION ALL
SELECT device_id, pid, ts, next_ts, next_ts - ts,
       -- the lowest set bit's position: bits below it, counted
       (1 + bit_count((mask::BIGINT & -(mask::BIGINT)) - 1))::UTINYINT
-- (mask 0: between the intervals swept)
FROM masked WHERE next_ts > ts AND mask <> 0;

-- In a churn step (step_churn: a step that does not repeat the usual one) the share of its
-- idle time beyond the usual step is 'step churn', whatever the thread did (compiling, searching
-- algorithms): the steps and their windows, found for each idle run by the step of its gap
-- (idle_gaps.step, a hash join on a few rows, not a lookup per run).
CREATE TEMP TABLE churn_windows AS
SELECT pid, step, window_start_ns AS start_ns, window_end_ns AS end_ns, share FROM step_churn
WHERE churn AND share > 0 AND window_end_ns > window_start_ns;

-- Idle time by cause. A run under min_gap_ns is the GPU's own dispatch latency; a run with no
-- gap (before the first or after the last operation of the window) is host time with no GPU
-- work queued. In a gap that follows a blocking call, the time up to the length of the work
-- the host waited for is the synchronization's cost (without it the host could have done this
-- work meanwhile); the rest of the gap, and gaps after no blocking call, go to the thread's
-- states in proportion. Short gaps spent in host code or other CUDA calls are the
-- per-operation cost of issuing work: launch where a kernel or graph ends the gap, copy where a
-- copy or memset does (a flood of tiny copies is not launch overhead). Time blocked in a sync
-- is the sync's, however short the gap.
-- (idle runs and gaps are CTEs: one consumer, and a row per gap)
CREATE TEMP TABLE budget_idle_causes AS
-- Idle runs: the window's stretches outside every busy interval of positive length (gpu_busy;
-- a zero-length one holds no time and splits none), each with the end of the run before it.
-- (read twice, and inlined: materialized, its scans cost more than the scan of gpu_busy)
WITH held AS NOT MATERIALIZED (
  SELECT b.device_id, b.pid, b.start_ns, b.end_ns, w.w0, w.w1
  FROM gpu_busy b JOIN budget_windows w ON w.device_id = b.device_id AND w.pid = b.pid WHERE b.end_ns > b.start_ns),
-- the interval before each, from one stream sorted by (device, process, start) (lag() kept where
-- the row before is of the same device and process): a window partitioned by them sorts each
-- partition apart
lagged AS (
  SELECT *, CASE WHEN lag(device_id) OVER () = device_id AND lag(pid) OVER () = pid
                 THEN struct_pack(s := lag(start_ns) OVER (), e := lag(end_ns) OVER ()) END AS prev
  FROM (SELECT * FROM held ORDER BY device_id, pid, start_ns)),
idle_runs AS (
  -- before each interval (a run that the window's edges cut away is empty), then after the last
  SELECT device_id, pid, greatest(coalesce(prev.e, w0), w0) AS start_ns, least(start_ns, w1) AS end_ns,
         CASE WHEN prev.s > w0 THEN prev.s END AS prev_run_end
  FROM lagged
  UNION ALL
  SELECT w.device_id, w.pid, greatest(coalesce(l.last_end, w.w0), w.w0), w.w1,
         CASE WHEN l.last_start > w.w0 THEN l.last_start END
  FROM budget_windows w
  LEFT JOIN (SELECT device_id, pid, max(end_ns) AS last_end, max(start_ns) AS last_start FROM held GROUP BY ALL) l
    ON l.device_id = w.device_id AND l.pid = w.pid),
-- The gap before each gap that follows a blocking call, on its device and process (the only
-- gaps whose waited time reads it): an ASOF lookup over the gaps' ends, which sorts three
-- columns of every gap, not every gap's columns.
prev_gaps AS (
  SELECT b.device_id, b.pid, b.end_ns, p.end_ns AS prev_gap_end
  FROM (SELECT device_id, pid, end_ns FROM idle_gaps WHERE after_blocking_api IS NOT NULL) b
  ASOF JOIN (SELECT device_id, pid, end_ns FROM idle_gaps) p
    ON p.device_id = b.device_id AND p.pid = b.pid AND p.end_ns < b.end_ns),
-- Each idle run with the gap it lies in (idle_gaps: the same right edge, the next operation's
-- start) and the GPU work between the gap of the run before it and its own (NULL when that run
-- is in no gap, as a dispatch run): the work the host waited for when the gap follows a
-- blocking call.
gaps AS (
  SELECT i.device_id, i.pid, i.start_ns, i.end_ns, i.end_ns - i.start_ns AS ns, g.duration_ns AS gap_ns,
         g.nvtx_range, g.sync_ns, g.copy_ns, g.launch_ns, g.allocation_ns, g.module_ns, g.api_ns, g.osrt_ns,
         g.host_ns, g.after_blocking_api, g.blocking_wait_ns, g.next_kind,
         CASE WHEN pg.prev_gap_end = i.prev_run_end THEN g.start_ns - pg.prev_gap_end END AS prev_busy_ns,
         -- the churn part of the run: the churn window's share of the run's time inside it
         coalesce(c.share * greatest(least(i.end_ns, c.end_ns) - greatest(i.start_ns, c.start_ns), 0)
                  / (i.end_ns - i.start_ns)::DOUBLE, 0.0) AS churn
  FROM idle_runs i
  LEFT JOIN idle_gaps g ON g.device_id = i.device_id AND g.pid = i.pid AND g.end_ns = i.end_ns
  LEFT JOIN prev_gaps pg ON pg.device_id = g.device_id AND pg.pid = g.pid AND pg.end_ns = g.end_ns
  LEFT JOIN churn_windows c ON c.pid = g.pid AND c.step = g.step
  WHERE i.end_ns > i.start_ns),
-- (the settings as scalar subqueries: a join with their row was planned as a nested loop)
with_settings AS (
  SELECT g.*, (SELECT value FROM phase_settings WHERE name = 'dispatch_gap_ns') AS min_gap_ns,
         (SELECT value FROM budget_settings WHERE name = 'launch_gap_ns') AS launch_gap_ns,
         coalesce(w.ops_per_step >= (SELECT value FROM budget_settings WHERE name = 'launch_ops_per_step'), true)
           AS many_ops
  FROM gaps g JOIN budget_windows w USING (device_id, pid)),
waits AS (
  SELECT *, ns < min_gap_ns AS dispatch, gap_ns < launch_gap_ns AND many_ops AS short_gap,
         CASE WHEN next_kind IN ('memcpy', 'memset') THEN 'copy' ELSE 'launch' END AS issue_cause,
         CASE WHEN gap_ns IS NULL OR ns < min_gap_ns THEN 0
              WHEN after_blocking_api IS NOT NULL
                THEN least(ns, greatest(coalesce(prev_busy_ns, 0), coalesce(blocking_wait_ns, 0))) ELSE 0 END AS waited_ns
  FROM with_settings),
-- waited_ns and scale are what is not churn (1 - churn of the run)
parts AS (
  SELECT * REPLACE (waited_ns * (1 - churn) AS waited_ns),
         (ns - waited_ns) * (1 - churn) / nullif(gap_ns, 0)::DOUBLE AS scale FROM waits),
-- Each state's part of the gap, scaled to the run's time beyond the sync's share, summed over
-- the runs of a (device, process, place) that give it the same cause (positive parts only), then
-- one list of (cause, ns) per such group unnested: the few groups, not the runs, are unnested
-- (ten list items a run cost more than the joins).
sums AS (
  SELECT device_id, pid, nvtx_range AS place, dispatch, gap_ns IS NULL AS no_gap,
         CASE WHEN short_gap THEN issue_cause ELSE 'other CUDA calls' END AS api_cause,
         CASE WHEN short_gap THEN issue_cause WHEN nvtx_range IS NULL THEN 'untraced host code' ELSE 'host code' END AS host_cause,
         sum(ns::DOUBLE) FILTER (WHERE ns > 0) AS run_ns,
         sum(ns * churn) FILTER (WHERE ns * churn > 0) AS churn_ns,
         sum(waited_ns::DOUBLE) FILTER (WHERE waited_ns > 0) AS waited_ns,
         sum(sync_ns * scale) FILTER (WHERE sync_ns * scale > 0) AS sync_ns,
         sum(copy_ns * scale) FILTER (WHERE copy_ns * scale > 0) AS copy_ns,
         sum(launch_ns * scale) FILTER (WHERE launch_ns * scale > 0) AS launch_ns,
         sum(allocation_ns * scale) FILTER (WHERE allocation_ns * scale > 0) AS allocation_ns,
         sum(module_ns * scale) FILTER (WHERE module_ns * scale > 0) AS module_ns,
         sum(api_ns * scale) FILTER (WHERE api_ns * scale > 0) AS api_ns,
         sum(osrt_ns * scale) FILTER (WHERE osrt_ns * scale > 0) AS osrt_ns,
         sum(host_ns * scale) FILTER (WHERE host_ns * scale > 0) AS host_ns
  FROM parts GROUP BY ALL),
rows AS (
  SELECT device_id, pid, item.cause, CASE WHEN item.placed THEN place END AS place, item.ns FROM (
    SELECT device_id, pid, place, unnest(CASE
      WHEN dispatch THEN [{'cause': 'dispatch', 'placed': false, 'ns': run_ns}]
      WHEN no_gap THEN [{'cause': 'no GPU work queued', 'placed': false, 'ns': run_ns}]
      ELSE [
        {'cause': 'step churn', 'placed': true, 'ns': churn_ns},
        {'cause': 'sync', 'placed': true, 'ns': waited_ns},
        {'cause': 'sync', 'placed': true, 'ns': sync_ns},
        {'cause': 'copy', 'placed': true, 'ns': copy_ns},
        {'cause': 'launch', 'placed': true, 'ns': launch_ns},
        {'cause': 'allocation', 'placed': true, 'ns': allocation_ns},
        {'cause': 'module loading', 'placed': true, 'ns': module_ns},
        {'cause': api_cause, 'placed': true, 'ns': api_ns},
        {'cause': 'OS wait', 'placed': true, 'ns': osrt_ns},
        {'cause': host_cause, 'placed': true, 'ns': host_ns}] END) AS item
    FROM sums)
  WHERE item.ns > 0
)
SELECT device_id, pid, cause, place, sum(ns) AS ns FROM rows GROUP BY ALL;

-- Time a process's GPU looks idle to it while another process's work runs on the device: the
-- device's busy time in the window beyond the process's own (its own busy time lies within the
-- device's). Taken out of the idle causes in proportion.
CREATE TEMP TABLE budget_other_process AS
SELECT w.device_id, w.pid,
       greatest(coalesce((SELECT sum(least(d.end_ns, w.w1) - greatest(d.start_ns, w.w0)) FROM device_busy d
                          WHERE d.device_id = w.device_id AND d.end_ns > w.w0 AND d.start_ns < w.w1), 0)
                - coalesce((SELECT sum(s.ns) FROM budget_segments s
                            WHERE s.device_id = w.device_id AND s.pid = w.pid), 0), 0)::DOUBLE AS ns
FROM budget_windows w;

-- The budget rows before rounding: GPU classes, other processes' time, idle causes.
CREATE TEMP TABLE budget_raw AS
WITH idle_total AS (SELECT device_id, pid, sum(ns) AS ns FROM budget_idle_causes GROUP BY ALL),
gpu AS (
  SELECT s.device_id, s.pid, 'gpu' AS kind, c.class AS cause, NULL AS place, sum(s.ns)::DOUBLE AS ns
  FROM budget_segments s JOIN budget_classes c ON c.rank = s.r GROUP BY ALL),
other AS (
  SELECT o.device_id, o.pid, 'idle' AS kind, 'other processes' AS cause, NULL AS place, least(o.ns, t.ns) AS ns
  FROM budget_other_process o JOIN idle_total t USING (device_id, pid) WHERE o.ns > 0),
idle AS (
  SELECT c.device_id, c.pid, 'idle' AS kind, c.cause, c.place,
         c.ns * (1 - coalesce(least(o.ns, t.ns), 0) / nullif(t.ns, 0)) AS ns
  FROM budget_idle_causes c JOIN idle_total t USING (device_id, pid)
  LEFT JOIN budget_other_process o USING (device_id, pid))
SELECT * FROM gpu UNION ALL SELECT * FROM other UNION ALL SELECT * FROM idle;

-- The step-time budget: per (device, process), the steady-state window split into GPU time by
-- class and GPU idle time by the host cause that kept the GPU waiting, one row per (kind,
-- cause, place). Each nanosecond of the window is counted once: where GPU operations overlap,
-- the highest class in budget_classes' order holds it (a copy under a compute kernel is hidden
-- and costs nothing); idle time goes to what the launching thread was doing (idle_gaps). The
-- rows of a (device, pid) add up to its window exactly (largest-remainder rounding). Findings
-- draw their recoverable time from these rows (engine/claims.py).
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column kind: gpu (busy) or idle
-- @column cause: for gpu rows the class (budget_classes); for idle rows dispatch, no GPU work
-- queued, sync, copy, launch, allocation, module loading, other CUDA calls, OS wait, host code,
-- untraced host code, other processes or step churn (the idle time of steps that do not repeat
-- the usual one beyond it: step_churn)
-- @column place: NVTX range the idle time was spent in (idle_gaps.nvtx_range), NULL for gpu rows
-- and where none
-- @column ns: time, ns (integer; a (device, pid)'s rows sum to window_ns)
-- @column pct: ns as a share of window_ns, % (2 decimals)
-- @column window_ns: length of the steady-state window, ns
CREATE TABLE budget AS
WITH floored AS (
  SELECT r.*, floor(r.ns)::BIGINT AS base, r.ns - floor(r.ns) AS frac, w.w1 - w.w0 AS window_ns
  FROM budget_raw r JOIN budget_windows w USING (device_id, pid) WHERE r.ns > 0),
short AS (SELECT device_id, pid, any_value(window_ns) - sum(base) AS missing FROM floored GROUP BY ALL),
ranked AS (
  SELECT f.*, s.missing,
         row_number() OVER (PARTITION BY f.device_id, f.pid ORDER BY f.frac DESC, f.ns DESC, f.kind, f.cause, f.place) AS k
  FROM floored f JOIN short s USING (device_id, pid))
SELECT device_id, pid, kind, cause, place, (base + CASE WHEN k <= missing THEN 1 ELSE 0 END)::BIGINT AS ns,
       round(100.0 * (base + CASE WHEN k <= missing THEN 1 ELSE 0 END) / window_ns, 2) AS pct, window_ns
FROM ranked WHERE base + CASE WHEN k <= missing THEN 1 ELSE 0 END > 0;

-- One row per (device, process) with a budget: the steady state in figures and its verdict.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column start_ns: steady-state window start on the session clock, ns
-- @column end_ns: steady-state window end on the session clock, ns
-- @column window_ns: end_ns - start_ns, ns
-- @column steps: steps in the window (steady_state.steps), count; NULL without steps
-- @column step_median_ns: median period between the first GPU operations of consecutive steps
-- (step_times; the first and last step untimed), or the median host-side step duration where
-- fewer than two periods are known, ns; NULL without steps
-- @column step_mean_ns: window_ns / steps, ns; NULL without steps
-- @column busy_ns: GPU busy time in the window (budget's gpu rows), ns
-- @column busy_pct: busy_ns / window_ns, % (2 decimals)
-- @column idle_ns: GPU idle time in the window (budget's idle rows), ns
-- @column bound: gpu-bound, host-bound or mixed, by busy_pct against budget_settings
-- @column method: how the window was found (steady_state.method)
-- @column verdict_class: what fills the step (docs/verdict.md): kernel-bound or copy-bound (a
-- gpu-bound step whose GPU time is mostly kernels, or mostly copies and memsets), host-bound, or mixed
-- @column verdict_cause: kernel-bound: the GPU class with the most time (budget_classes); copy-bound:
-- the copy direction with the most time in the window (memcpys.kind), or memsets; host-bound: the
-- idle cause with the most time (budget.cause); mixed: the slice (GPU class or idle cause) with the most time
-- @column verdict_detail: copy-bound: the host memory of those copies (pageable, pinned, managed;
-- NULL for device-side copies); host-bound and mixed idle causes: the NVTX range holding most of
-- the cause's time (NULL where none holds half of it); else NULL
-- @column verdict_pct: the share of the window verdict_cause holds (all copies and memsets for
-- copy-bound), % (2 decimals)
CREATE TABLE steady_summary AS
WITH totals AS (
  SELECT device_id, pid, any_value(window_ns) AS window_ns,
         coalesce(sum(ns) FILTER (WHERE kind = 'gpu'), 0) AS busy_ns,
         coalesce(sum(ns) FILTER (WHERE kind = 'idle'), 0) AS idle_ns
  FROM budget GROUP BY ALL),
-- Each step's period on the GPU's timeline: between the first GPU operations of consecutive
-- steps (23_step_times.sql, as compare times them). Where the host runs ahead of the GPU,
-- host-side step ranges only say how fast it enqueues. The first step (warm-up) and the last
-- (nothing bounds it) are not timed.
step_periods AS (
  SELECT pid, step, start_ns, row_number() OVER (PARTITION BY pid ORDER BY step) AS k,
         lead(gpu_start_ns) OVER (PARTITION BY pid ORDER BY step) - gpu_start_ns AS period_ns
  FROM step_times),
gpu_steps AS (
  SELECT p.pid, median(p.period_ns)::BIGINT AS gpu_period_ns, count(p.period_ns) AS periods
  FROM step_periods p JOIN steady_state s USING (pid)
  WHERE p.k > 1 AND p.start_ns >= s.start_ns AND p.start_ns < s.end_ns AND p.period_ns IS NOT NULL GROUP BY p.pid),
host_steps AS (
  SELECT st.pid, median(st.duration_ns)::BIGINT AS host_median_ns
  FROM steps st JOIN steady_state s USING (pid)
  WHERE st.start_ns >= s.start_ns AND st.start_ns < s.end_ns GROUP BY st.pid),
step_stats AS (
  SELECT h.pid, CASE WHEN g.periods >= 2 THEN g.gpu_period_ns ELSE h.host_median_ns END AS step_median_ns
  FROM host_steps h LEFT JOIN gpu_steps g USING (pid)),
g AS (SELECT (SELECT value FROM budget_settings WHERE name = 'gpu_bound_pct') AS gpu_pct,
             (SELECT value FROM budget_settings WHERE name = 'host_bound_pct') AS host_pct),
bounds AS (
  SELECT t.*, CASE WHEN 100.0 * t.busy_ns / t.window_ns >= g.gpu_pct THEN 'gpu-bound'
                   WHEN 100.0 * t.busy_ns / t.window_ns <= g.host_pct THEN 'host-bound' ELSE 'mixed' END AS bound
  FROM totals t CROSS JOIN g),
-- The verdict's candidates: each (device, pid)'s slices summed over places, on three sides: kernels
-- (every GPU class but copies and memsets), copies, host (idle causes; dispatch is the GPU's own
-- latency, not the host's, and names a cause only where nothing else does)
sides AS (
  SELECT device_id, pid, CASE WHEN kind = 'idle' THEN 'host' WHEN cause IN ('copies', 'memsets') THEN 'copy'
                              ELSE 'kernel' END AS side, cause, sum(ns) AS ns
  FROM budget GROUP BY ALL),
tops AS (
  SELECT device_id, pid,
         coalesce(sum(ns) FILTER (WHERE side = 'kernel'), 0) AS kernel_ns,
         coalesce(sum(ns) FILTER (WHERE side = 'copy'), 0) AS copy_ns,
         arg_max(cause, (ns, cause)) FILTER (WHERE side = 'kernel') AS kernel_cause,
         max(ns) FILTER (WHERE side = 'kernel') AS kernel_cause_ns,
         arg_max(cause, (cause <> 'dispatch', ns, cause)) FILTER (WHERE side = 'host') AS host_cause,
         arg_max(ns, (cause <> 'dispatch', ns, cause)) FILTER (WHERE side = 'host') AS host_cause_ns
  FROM sides GROUP BY ALL),
-- the copies' direction and host memory with the most GPU time in the window
copy_kinds AS (
  SELECT m.device_id, m.pid, m.kind, m.host_memory, sum(least(m.end_ns, w.end_ns) - greatest(m.start_ns, w.start_ns)) AS ns
  FROM memcpys m JOIN steady_state w ON w.pid = m.pid
  WHERE m.end_ns > w.start_ns AND m.start_ns < w.end_ns GROUP BY ALL
  UNION ALL
  SELECT m.device_id, m.pid, 'memsets', NULL, sum(least(m.end_ns, w.end_ns) - greatest(m.start_ns, w.start_ns))
  FROM memsets m JOIN steady_state w ON w.pid = m.pid
  WHERE m.end_ns > w.start_ns AND m.start_ns < w.end_ns GROUP BY ALL),
top_copy AS (
  SELECT device_id, pid, arg_max(kind, (ns, kind)) AS kind, arg_max(host_memory, (ns, kind)) AS host_memory
  FROM copy_kinds GROUP BY ALL),
-- the NVTX range holding at least half of an idle cause's time
cause_places AS (
  SELECT device_id, pid, cause, arg_max(place, (ns, place)) AS place,
         max(ns) >= 0.5 * sum(ns) AND arg_max(place, (ns, place)) IS NOT NULL AS holds
  FROM budget WHERE kind = 'idle' GROUP BY ALL),
verdicts AS (
  SELECT b.device_id, b.pid,
         CASE WHEN b.bound = 'gpu-bound' AND tp.copy_ns > tp.kernel_ns THEN 'copy-bound'
              WHEN b.bound = 'gpu-bound' THEN 'kernel-bound' ELSE b.bound END AS verdict_class,
         b.busy_ns, b.idle_ns, b.window_ns, tp.*
  FROM bounds b JOIN tops tp USING (device_id, pid)),
named AS (
  SELECT v.device_id, v.pid, v.verdict_class,
         CASE v.verdict_class WHEN 'copy-bound' THEN c.kind WHEN 'kernel-bound' THEN v.kernel_cause
              WHEN 'host-bound' THEN v.host_cause
              ELSE CASE WHEN coalesce(v.kernel_cause_ns, 0) >= coalesce(v.host_cause_ns, 0) THEN v.kernel_cause
                        ELSE v.host_cause END END AS verdict_cause,
         CASE v.verdict_class WHEN 'copy-bound' THEN v.copy_ns WHEN 'kernel-bound' THEN v.kernel_cause_ns
              WHEN 'host-bound' THEN v.host_cause_ns ELSE greatest(v.kernel_cause_ns, v.host_cause_ns) END AS verdict_ns,
         CASE WHEN v.verdict_class = 'copy-bound' THEN c.host_memory END AS copy_memory
  FROM verdicts v LEFT JOIN top_copy c USING (device_id, pid))
SELECT b.device_id, b.pid, s.start_ns, s.end_ns, b.window_ns, s.steps, st.step_median_ns,
       CASE WHEN s.steps > 0 THEN (b.window_ns / s.steps)::BIGINT END AS step_mean_ns,
       b.busy_ns, round(100.0 * b.busy_ns / b.window_ns, 2) AS busy_pct, b.idle_ns, b.bound, s.method,
       n.verdict_class, n.verdict_cause,
       coalesce(n.copy_memory, CASE WHEN cp.holds THEN cp.place END) AS verdict_detail,
       round(100.0 * coalesce(n.verdict_ns, 0) / b.window_ns, 2) AS verdict_pct
FROM bounds b JOIN steady_state s USING (pid) LEFT JOIN step_stats st USING (pid)
LEFT JOIN named n USING (device_id, pid)
LEFT JOIN cause_places cp ON cp.device_id = b.device_id AND cp.pid = b.pid AND cp.cause = n.verdict_cause
  AND n.verdict_class IN ('host-bound', 'mixed');

-- One row per (fix, pattern) the trace can show done already: a regular expression on kernel
-- names that only that fix produces (knowledge as data, matched once per distinct name).
-- sources: always
-- @column fix: the fix (fix_facts.fix)
-- @column pattern: regular expression on the kernel name, case-insensitive
CREATE TABLE fix_kernel_patterns(fix VARCHAR, pattern VARCHAR);
INSERT INTO fix_kernel_patterns VALUES
  -- torch.optim's fused=True kernels (FusedOptimizerTensorListMetadata, fused_adam), apex's
  ('fused-optimizer', 'FusedOptimizerTensorListMetadata|fused_adamw?_|fusedadam|fused_sgd|multi_tensor_adam|multi_tensor_lamb'),
  -- Inductor's (torch.compile) and hand-written Triton fused kernels
  ('kernel-fusion', 'triton_(poi|red|per)_fused|^fused_|_fused_');
-- (matched as kernel_pattern_hits: one statement per pattern)
-- @each pattern: SELECT DISTINCT pattern FROM fix_kernel_patterns ORDER BY pattern
INSERT INTO kernel_pattern_hits SELECT $pattern, name FROM kernel_names WHERE regexp_matches(name, $pattern, 'i');

-- One row per fix that the trace shows is done already (done), or that the steady state's busy
-- GPU makes moot (moot), per (device, process) with a budget: what no finding may advise there
-- (engine/fixes.py drops the advice parts that name it; docs/recoverable.md, "Fixes checked
-- against the trace"). Done: cuda-graphs where the steady state replays CUDA graphs or runs
-- graph-node kernels; pinned-memory where every steady-state copy touching host memory is pinned;
-- async-copies where, moreover, each returns before its copy ends; mixed-precision where the
-- GPU math is tensor-core math only (no fp32 or fp64 math); fused-optimizer and kernel-fusion where the steady state runs
-- their kernels (fix_kernel_patterns) for at least half of the elementwise time or any
-- optimizer kernel. Moot: launch, graph and sync fixes (cuda-graphs, fewer-launches, fewer-syncs)
-- where the GPU is busy at least moot_busy_pct of the steady state: the host already waits for
-- the GPU, so issuing work faster cannot shorten the step.
-- sources: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_GRAPH_TRACE
-- @column device_id: CUDA device ordinal
-- @column pid: OS process id
-- @column fix: cuda-graphs, fewer-launches, fewer-syncs, pinned-memory, async-copies, mixed-precision,
-- fused-optimizer or kernel-fusion
-- @column state: done (the trace shows it done) or moot (a busy GPU makes it moot)
-- @column reason: what the trace shows, in words
CREATE TABLE fix_facts AS
WITH w AS (SELECT device_id, pid, start_ns, end_ns, busy_pct FROM steady_summary),
graphs AS (
  SELECT w.device_id, w.pid, count(*) AS replays FROM graph_launches g
  JOIN w ON w.pid = g.pid AND w.device_id = g.device_id WHERE g.start_ns >= w.start_ns AND g.start_ns < w.end_ns GROUP BY ALL),
-- distinct names first: a regular expression on every kernel row costs seconds on large traces
name_fixes AS (
  SELECT DISTINCT h.name, p.fix FROM fix_kernel_patterns p JOIN kernel_pattern_hits h ON h.pattern = p.pattern),
kern AS (
  SELECT w.device_id, w.pid, count(*) FILTER (WHERE k.graph_node_id IS NOT NULL) AS node_kernels,
         coalesce(sum(k.duration_ns) FILTER (WHERE kc.class = 'elementwise/reduction'), 0) AS ew_ns,
         coalesce(sum(k.duration_ns) FILTER (WHERE nf.fix = 'kernel-fusion'), 0) AS fused_ns,
         count(*) FILTER (WHERE nf.fix = 'fused-optimizer') AS fused_optimizer_kernels
  FROM kernels k JOIN w ON w.pid = k.pid AND w.device_id = k.device_id
  LEFT JOIN kernel_classes kc ON kc.name = k.name LEFT JOIN name_fixes nf ON nf.name = k.name
  WHERE k.start_ns >= w.start_ns AND k.start_ns < w.end_ns GROUP BY ALL),
host_copies AS (
  SELECT w.device_id, w.pid, count(*) AS copies, count(*) FILTER (WHERE m.host_memory = 'pinned') AS pinned,
         count(*) FILTER (WHERE m.host_memory = 'pinned' AND m.launch_api ILIKE '%async%'
                          AND m.launch_end_ns < m.end_ns) AS pinned_async
  FROM memcpys m JOIN w ON w.pid = m.pid AND w.device_id = m.device_id
  WHERE m.host_memory IS NOT NULL AND m.start_ns >= w.start_ns AND m.start_ns < w.end_ns GROUP BY ALL),
math AS (
  SELECT device_id, pid, coalesce(sum(ns) FILTER (WHERE cause = 'tensor-core math'), 0) AS tc_ns,
         coalesce(sum(ns) FILTER (WHERE cause IN ('fp32 math', 'fp64 math')), 0) AS fp32_ns
  FROM budget WHERE kind = 'gpu' GROUP BY ALL),
moot AS (SELECT value FROM budget_settings WHERE name = 'moot_busy_pct')
SELECT device_id, pid, f.fix, f.state, f.reason FROM (
  SELECT w.device_id, w.pid, unnest([
    CASE WHEN coalesce(g.replays, 0) > 0 OR coalesce(k.node_kernels, 0) > 0 THEN
      {'fix': 'cuda-graphs', 'state': 'done', 'reason': 'the steady state already replays CUDA graphs'} END,
    CASE WHEN hc.copies > 0 AND hc.pinned = hc.copies THEN
      {'fix': 'pinned-memory', 'state': 'done', 'reason': 'every steady-state copy to or from the host is pinned'} END,
    CASE WHEN hc.copies > 0 AND hc.pinned_async = hc.copies THEN
      {'fix': 'async-copies', 'state': 'done', 'reason': 'every steady-state host copy is pinned and asynchronous'} END,
    CASE WHEN m.tc_ns > 0 AND m.fp32_ns = 0 THEN
      {'fix': 'mixed-precision', 'state': 'done', 'reason': 'the GPU math already runs on tensor cores'} END,
    CASE WHEN k.fused_optimizer_kernels > 0 THEN
      {'fix': 'fused-optimizer', 'state': 'done', 'reason': 'the optimizer already runs fused kernels'} END,
    CASE WHEN k.ew_ns > 0 AND k.fused_ns >= 0.5 * k.ew_ns THEN
      {'fix': 'kernel-fusion', 'state': 'done', 'reason': 'most elementwise time already runs in fused (Triton) kernels'} END,
    CASE WHEN w.busy_pct >= (SELECT value FROM moot) THEN
      {'fix': 'cuda-graphs', 'state': 'moot', 'reason': printf('the GPU is busy %.1f %% of the steady state', w.busy_pct)} END,
    CASE WHEN w.busy_pct >= (SELECT value FROM moot) THEN
      {'fix': 'fewer-launches', 'state': 'moot', 'reason': printf('the GPU is busy %.1f %% of the steady state', w.busy_pct)} END,
    CASE WHEN w.busy_pct >= (SELECT value FROM moot) THEN
      {'fix': 'fewer-syncs', 'state': 'moot', 'reason': printf('the GPU is busy %.1f %% of the steady state', w.busy_pct)} END
  ]) AS f
  FROM w LEFT JOIN graphs g USING (device_id, pid) LEFT JOIN kern k USING (device_id, pid)
  LEFT JOIN host_copies hc USING (device_id, pid) LEFT JOIN math m USING (device_id, pid))
WHERE f IS NOT NULL ORDER BY device_id, pid, f.fix, f.state;

DROP TABLE budget_raw;
DROP TABLE budget_other_process;
DROP TABLE budget_idle_causes;
DROP TABLE budget_segments;
DROP TABLE budget_windows;
DROP TABLE churn_windows;
