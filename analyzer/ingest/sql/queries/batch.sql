-- include: normalize, phases
-- The facts a batch keeps of each trace (batch/work.py), which tell runs of one program apart.

-- The distinct kernel names, in order.
-- query: batch_kernel_names
-- @column name: a kernel name
SELECT DISTINCT name FROM kernels ORDER BY name;

-- The kernel with the most GPU time.
-- query: batch_top_kernel
-- @column name: its name
-- @column short_name: its short name
-- @column ns: its summed duration, ns
SELECT name, any_value(short_name) AS short_name, sum(duration_ns)::BIGINT AS ns FROM kernels
GROUP BY name ORDER BY 3 DESC, name LIMIT 1;

-- The UUIDs of the GPUs that ran work.
-- query: batch_gpu_uuids
-- @column uuid: a GPU's UUID
SELECT DISTINCT uuid FROM devices WHERE has_activity AND uuid IS NOT NULL ORDER BY uuid;

-- The processes that ran GPU work.
-- query: batch_gpu_pids
-- @column pid: OS process id
SELECT DISTINCT pid FROM gpu_busy ORDER BY pid;

-- Every process of the trace.
-- query: batch_pids
-- @column pid: OS process id
SELECT DISTINCT pid FROM processes ORDER BY pid;

-- The steps over all processes.
-- query: batch_steps
-- @column steps: steps
-- @column median_ns: median step duration, ns
-- @column total_ns: summed step duration, ns
-- @column sources: how the steps were found, comma-separated (nvtx, repeated)
SELECT count(*) AS steps, median(duration_ns)::BIGINT AS median_ns, sum(duration_ns)::BIGINT AS total_ns,
       string_agg(DISTINCT source, ',' ORDER BY source) AS sources FROM steps;
