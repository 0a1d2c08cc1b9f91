-- One row per (device, process, cause, detail): the steady-state GPU idle gaps whose host-side
-- cause is the same, the time they cost, largest first (see analyzer/sql/22_idle_gaps.sql).
WITH totals AS (SELECT device_id, pid, sum(idle_ns) AS all_idle_ns FROM idle_gap_causes GROUP BY ALL)
SELECT c.device_id, c.pid, c.cause, c.detail, gap_cause_text(c.cause, c.detail) AS cause_text,
       -- the same cause in the budget's words (40_budget.sql), for the slice it claims
       CASE c.cause WHEN 'nvtx' THEN 'host code' WHEN 'untraced' THEN 'untraced host code' WHEN 'os-call' THEN 'OS wait'
                    WHEN 'module-loading' THEN 'module loading' WHEN 'cuda-api' THEN 'other CUDA calls'
                    ELSE c.cause END AS budget_cause,
       CASE WHEN c.cause = 'nvtx' THEN c.detail END AS nvtx_range,
       c.gaps, c.idle_ns, c.median_gap_ns, c.max_gap_ns, c.after_blocking_gaps, c.window_ns,
       round(100.0 * c.idle_ns / nullif(c.window_ns, 0), 2) AS window_pct,
       round(100.0 * c.idle_ns / nullif(t.all_idle_ns, 0), 2) AS idle_share_pct,
       row_number() OVER (PARTITION BY c.device_id, c.pid ORDER BY c.idle_ns DESC, c.cause, c.detail) AS rank
FROM idle_gap_causes c JOIN totals t USING (device_id, pid)
ORDER BY c.idle_ns DESC, c.device_id, c.pid, c.cause, c.detail
