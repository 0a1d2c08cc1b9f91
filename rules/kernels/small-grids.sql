-- One row per (process, device, kernel, grid size) for steady-state kernels whose grid has
-- fewer blocks than the GPU has SMs, with the process's totals; most idle SM time first.
WITH steady AS (
  SELECT k.pid, k.device_id, k.name, k.short_name, k.duration_ns, k.grid_size, k.block_size, d.sm_count
  FROM kernels k JOIN steady_state s ON s.pid = k.pid JOIN devices d ON d.device_id = k.device_id
  WHERE k.start_ns >= s.start_ns AND k.start_ns < s.end_ns AND d.sm_count > 0 AND k.grid_size > 0),
-- one pass over the kernels: per (kernel, grid size); the process totals are sums of these
-- groups, as a group's grid size is one number
grouped AS (
  SELECT pid, device_id, name, grid_size, any_value(short_name) AS short_name, any_value(sm_count) AS sm_count,
         median(block_size) FILTER (WHERE grid_size < sm_count) AS median_block_size,
         count(*) AS instances, sum(duration_ns) AS total_ns
  FROM steady GROUP BY pid, device_id, name, grid_size),
per_process AS (
  SELECT pid, device_id, sum(instances) AS kernel_count, sum(total_ns) AS kernel_ns,
         -- SM time left idle: a grid of g blocks occupies at most g of the sm_count SMs
         sum(total_ns * (1 - least(grid_size, sm_count) / sm_count)) AS idle_sm_ns
  FROM grouped GROUP BY ALL),
small AS (
  SELECT pid, device_id, name, short_name, grid_size, sm_count, median_block_size, instances, total_ns,
         total_ns * (1 - grid_size / sm_count) AS kernel_idle_sm_ns
  FROM grouped WHERE grid_size < sm_count),
ranked AS (
  SELECT *, sum(total_ns) OVER (PARTITION BY pid, device_id) AS small_ns,
         sum(instances) OVER (PARTITION BY pid, device_id) AS small_launches,
         row_number() OVER (PARTITION BY pid, device_id ORDER BY kernel_idle_sm_ns DESC, name, grid_size) AS rank,
         -- PyTorch's "vectorized_elementwise_kernel" names the loop, not the op: add the functor
         list_filter(regexp_extract_all(name, 'native::(?:<unnamed>::)?([A-Za-z_][A-Za-z0-9_]*)', 1),
                     x -> x NOT IN ('vectorized_elementwise_kernel', 'unrolled_elementwise_kernel',
                                    'elementwise_kernel', 'gpu_kernel_impl_nocast', 'gpu_kernel_impl',
                                    'reduce_kernel', 'ReduceOp', 'func_wrapper_t', 'detail', 'memory',
                                    'binary_internal', 'BinaryFunctor', 'AUnaryFunctor', 'BUnaryFunctor',
                                    'templates', 'cuda'))[1] AS op
  FROM small)
SELECT r.pid, r.device_id, r.name,
       left(CASE WHEN coalesce(r.short_name, '') IN ('', 'Kernel', 'Kernel2', 'device_kernel')
                 THEN regexp_replace(r.name, '^void ', '')
                 WHEN r.op IS NULL OR r.op = r.short_name THEN r.short_name
                 ELSE r.short_name || '<' || r.op || '>' END, 120) AS display_name,
       r.grid_size, r.sm_count, r.median_block_size, r.instances, r.total_ns,
       round(r.kernel_idle_sm_ns)::BIGINT AS kernel_idle_sm_ns, r.rank, r.small_launches, r.small_ns,
       p.kernel_count, p.kernel_ns,
       round(100.0 * r.small_ns / nullif(p.kernel_ns, 0), 2) AS small_share_pct,
       round(p.idle_sm_ns)::BIGINT AS idle_sm_ns,
       round(100.0 * p.idle_sm_ns / nullif(p.kernel_ns, 0), 2) AS idle_sm_pct
FROM ranked r JOIN per_process p USING (pid, device_id)
ORDER BY p.idle_sm_ns DESC, r.pid, r.device_id, r.rank
