-- One row per (process, device, kernel) for elementwise and reduction kernels in the steady
-- state, with the process's totals; the process with the most such time first.
-- names matched once each (kernel_names), not once per kernel
WITH names AS (SELECT name, regexp_matches(name, $elementwise_pattern, 'i')
                            AND NOT regexp_matches(name, $fused_pattern) AS is_elementwise,
                      regexp_matches(name, $copy_pattern) AND NOT regexp_matches(name, $cast_pattern) AS is_copy,
                      regexp_matches(name, $foreach_pattern) AS is_foreach,
                      -- fused attention (flash, cuDNN SDPA, FMHA): the fix need not advise it
                      name IN (SELECT name FROM kernel_formats WHERE op = 'attention') AS is_attention
               FROM kernel_names),
steady AS (
  SELECT k.pid, k.device_id, k.name, k.short_name, k.duration_ns, n.is_elementwise, n.is_elementwise AND n.is_copy AS is_copy,
         n.is_elementwise AND n.is_foreach AS is_foreach, n.is_attention
  FROM kernels k JOIN names n USING (name) JOIN steady_state s ON s.pid = k.pid
  WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns),
-- one pass over the kernels: per name, and per process and kind (the name's grouping bit set)
grouped AS (
  SELECT pid, device_id, is_elementwise, name, GROUPING(name) AS whole_kind,
         any_value(short_name) AS short_name, count(*) AS instances, sum(duration_ns) AS total_ns,
         median(duration_ns) FILTER (WHERE is_elementwise) AS median_ns,
         sum(duration_ns) FILTER (WHERE is_copy) AS copy_ns,
         sum(duration_ns) FILTER (WHERE is_foreach) AS foreach_ns,
         sum(duration_ns) FILTER (WHERE is_attention) AS attention_ns
  FROM steady GROUP BY GROUPING SETS ((pid, device_id, is_elementwise, name), (pid, device_id, is_elementwise))),
per_process AS (
  SELECT g.pid, g.device_id, any_value(s.steps) AS steps, any_value(s.end_ns - s.start_ns) AS window_ns,
         sum(g.instances) AS kernel_count, sum(g.total_ns) AS kernel_ns,
         coalesce(sum(g.instances) FILTER (WHERE g.is_elementwise), 0) AS ew_launches,
         coalesce(sum(g.total_ns) FILTER (WHERE g.is_elementwise), 0) AS ew_ns,
         any_value(g.median_ns) FILTER (WHERE g.is_elementwise) AS ew_median_ns,
         coalesce(sum(g.copy_ns), 0) AS copy_ns,
         coalesce(sum(g.foreach_ns), 0) AS foreach_ns,
         coalesce(sum(g.attention_ns), 0) AS attention_ns
  FROM grouped g JOIN steady_state s USING (pid) WHERE g.whole_kind = 1 GROUP BY g.pid, g.device_id),
-- the layout copies' and the foreach loops' shares of the elementwise time, %
shares AS (SELECT *, 100.0 * copy_ns / nullif(ew_ns, 0) AS copy_share,
                  100.0 * foreach_ns / nullif(ew_ns, 0) AS foreach_share FROM per_process),
per_kernel AS (
  SELECT pid, device_id, name, short_name, instances, total_ns, median_ns,
         count(*) OVER (PARTITION BY pid, device_id) AS ew_kernels
  FROM grouped WHERE whole_kind = 0 AND is_elementwise),
labelled AS (
  -- "vectorized_elementwise_kernel" names the loop, not the op: add the functor it runs
  SELECT *, list_filter(regexp_extract_all(name, 'native::(?:<unnamed>::)?([A-Za-z_][A-Za-z0-9_]*)', 1),
                        x -> x NOT IN ('vectorized_elementwise_kernel', 'unrolled_elementwise_kernel',
                                       'elementwise_kernel', 'gpu_kernel_impl_nocast', 'gpu_kernel_impl',
                                       'reduce_kernel', 'ReduceOp', 'func_wrapper_t', 'detail', 'memory',
                                       'binary_internal', 'BinaryFunctor', 'AUnaryFunctor', 'BUnaryFunctor',
                                       'templates', 'cuda'))[1] AS op,
         row_number() OVER (PARTITION BY pid, device_id ORDER BY total_ns DESC, name) AS rank
  FROM per_kernel),
-- the innermost NVTX range that launches most of the elementwise time
ranges AS (
  SELECT o.pid, o.device_id, o.range_name, sum(o.gpu_ns) AS ns
  FROM nvtx_op_time o JOIN names n USING (name) WHERE o.kind = 'kernel' AND n.is_elementwise GROUP BY ALL),
top_range AS (
  SELECT pid, device_id, first(range_name ORDER BY ns DESC, range_name) FILTER (WHERE range_name IS NOT NULL) AS top_range, max(ns) AS top_range_ns FROM ranges GROUP BY ALL)
SELECT l.pid, l.device_id, l.name,
       left(CASE WHEN l.op IS NULL OR l.op = l.short_name THEN coalesce(l.short_name, l.name)
                 ELSE l.short_name || '<' || l.op || '>' END, 120) AS display_name,
       l.instances, l.total_ns, l.median_ns, l.rank,
       l.ew_kernels, p.ew_launches, p.ew_ns, p.ew_median_ns, p.kernel_count, p.kernel_ns,
       b.busy_ns, round(100.0 * p.ew_ns / nullif(b.kernel_share_ns, 0), 2) AS ew_share_pct,
       p.steps, round(p.ew_launches / nullif(p.steps, 0), 1) AS ew_launches_per_step,
       round(100.0 * b.busy_ns / nullif(p.window_ns, 0), 2) AS utilization_pct,
       r.top_range, round(100.0 * r.top_range_ns / nullif(p.ew_ns, 0), 2) AS top_range_pct,
       CASE WHEN r.top_range IS NOT NULL
            THEN '; ' || printf('%.0f %%', 100.0 * r.top_range_ns / nullif(p.ew_ns, 0))
                 || ' of it is launched from NVTX range "' || r.top_range || '"' ELSE '' END AS where_text,
       p.copy_ns, round(p.copy_share, 2) AS copy_pct,
       CASE WHEN p.copy_share >= $min_copy_pct
            THEN '; layout copies (.contiguous(), .clone(), torch.cat) take ' || printf('%.0f %%', p.copy_share)
                 || ' of it, moving data with no math' ELSE '' END AS copy_text,
       CASE WHEN p.copy_share >= $min_copy_pct THEN 'layout copies and elementwise kernels'
            ELSE 'unfused elementwise kernels' END AS cause_text,
       p.foreach_ns, round(p.foreach_share, 2) AS foreach_pct,
       CASE WHEN p.foreach_share >= $min_foreach_pct
            THEN '; foreach optimizer or GradScaler loops (multi_tensor_apply) take ' || printf('%.0f %%', p.foreach_share)
                 || ' of it' ELSE '' END AS foreach_text,
       p.attention_ns > 0 AS fused_attention
FROM labelled l JOIN shares p USING (pid, device_id) LEFT JOIN steady_busy b USING (pid, device_id)
LEFT JOIN top_range r USING (pid, device_id)
ORDER BY p.ew_ns DESC, l.pid, l.device_id, l.rank
