-- One row per kernel name (demangled), most GPU time first; pid and device_id: the process
-- and device where it takes the most time, for the budget slice of its class a finding claims.
WITH per_place AS (
  SELECT name, pid, device_id, sum(duration_ns) AS ns FROM kernels GROUP BY ALL),
home AS (
  SELECT name, first(pid ORDER BY ns DESC, pid, device_id) AS pid,
         first(device_id ORDER BY ns DESC, pid, device_id) AS device_id
  FROM per_place GROUP BY name),
per_kernel AS (
  SELECT name, any_value(short_name) AS short_name, count(*) AS instances,
         sum(duration_ns) AS total_ns, avg(duration_ns) AS avg_ns, median(duration_ns) AS median_ns,
         min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
         coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
  FROM kernels GROUP BY name),
total AS (SELECT nullif(sum(total_ns), 0) AS all_ns FROM per_kernel),
-- GPU page faults on managed memory (um_page_faults) during a kernel's launches: each fault to the
-- kernel started last before it on its device, when that kernel still runs then
faulting AS (
  SELECT k.name, k.device_id, k.start_ns, any_value(k.duration_ns) AS ns, sum(f.faults) AS faults
  FROM um_page_faults f ASOF JOIN kernels k ON k.device_id = f.device_id AND k.start_ns <= f.start_ns
  WHERE f.side = 'gpu' AND f.start_ns < k.end_ns GROUP BY ALL),
faulted AS (
  SELECT name, sum(faults) AS gpu_page_faults, count(*) AS faulted_launches, sum(ns) AS faulted_ns
  FROM faulting GROUP BY name),
-- each kernel with its class, and the kernels of its short name (a template's instantiations: a
-- sort's block sizes) together
per_short AS (
  SELECT k.*, coalesce(kc.class, 'other kernels') AS class,
         sum(total_ns) OVER s AS name_total_ns, sum(instances) OVER s AS name_instances,
         count(*) OVER s AS name_variants, max(total_ns) OVER s AS name_top_ns,
         bool_and(coalesce(kc.class, 'other kernels') = 'other kernels') OVER s AS name_other,
         row_number() OVER (PARTITION BY short_name ORDER BY total_ns DESC, name) AS name_rank
  FROM per_kernel k LEFT JOIN kernel_classes kc USING (name) WINDOW s AS (PARTITION BY short_name))
SELECT name,
       -- names can run to kilobytes of template arguments; messages use the short form
       CASE WHEN length(short_name) > 120 THEN left(short_name, 117) || '...' ELSE short_name END AS display_name,
       instances, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns,
       round(100.0 * total_ns / total.all_ns, 2) AS share_pct,
       row_number() OVER (ORDER BY total_ns DESC, name) AS rank,
       class, pid, device_id,
       coalesce(u.gpu_page_faults, 0) AS gpu_page_faults, coalesce(u.faulted_launches, 0) AS faulted_launches,
       round(100.0 * coalesce(u.faulted_ns, 0) / nullif(total_ns, 0), 1) AS faulted_pct,
       f.family, f.op, f.format, f.path,
       -- already at tensor-core rate in a format a program sensibly keeps (TF32 is the fp32
       -- model's tensor-core format): no change of format or unit is called for, and what
       -- tuning it could win is not bounded by the trace
       coalesce(f.path = 'tensor core' AND f.format IN ('tf32', 'bf16', 'fp16', 'fp8', 'int8'), false) AS fast,
       -- the time a faster format could win: fp64, and fp32/fp16/bf16 on CUDA cores, at
       -- expected_speedup
       CASE WHEN f.op = 'gemv' THEN total_ns
            WHEN f.format = 'fp64' OR f.path = 'CUDA core'
            THEN round(total_ns * (1 - 1 / $expected_speedup))::BIGINT
            ELSE total_ns END AS at_stake_ns,
       -- a median launch this short is bound by the kernel's fixed cost, not its math's format
       median_ns >= $latency_floor_ns AS format_bound,
       name_total_ns, name_instances, name_variants, round(100.0 * name_total_ns / total.all_ns, 2) AS name_share_pct,
       name_rank,
       CASE WHEN name_variants > 1 THEN format('{:,} launches of its {} instantiations', name_instances, name_variants)
            ELSE format('{:,} launches', name_instances) END AS name_launches_text,
       -- one kernel (all the instantiations of its name) holds most of the kernel time, and it is
       -- neither matrix math, elementwise work nor a collective, which other rules weigh
       -- (one of them holding most of the name's time: a sort's block sizes are one kernel, the
       -- dozens of loop bodies of a generic launcher such as par_ranged2d_kernel are not)
       name_other AND round(100.0 * name_total_ns / total.all_ns, 2) >= $dominant_pct AND 2 * name_top_ns >= name_total_ns
         AS dominant,
       -- the trace's framework, where its processes agree on one
       coalesce((SELECT CASE WHEN count(DISTINCT framework) = 1 THEN any_value(framework) END FROM process_frameworks),
                'other') AS framework,
       -- a fused optimizer's kernel (fix_kernel_patterns, as fix_facts reads it): the fix is taken
       EXISTS (SELECT 1 FROM fix_kernel_patterns p WHERE p.fix = 'fused-optimizer' AND regexp_matches(name, p.pattern, 'i'))
         AS fused_optimizer
FROM per_short CROSS JOIN total LEFT JOIN home USING (name)
LEFT JOIN kernel_formats f USING (name) LEFT JOIN faulted u USING (name)
ORDER BY total_ns DESC, name
