-- One row per process whose steady state replays CUDA graphs: how much GPU time the replays take
-- and whether the kernels inside them are in the trace (--cuda-graph-trace=node) or not (graph).
WITH ss AS (SELECT pid, start_ns, end_ns, end_ns - start_ns AS window_ns FROM steady_state),
replays AS (
  SELECT g.pid, g.device_id, count(*) AS replays, count(DISTINCT g.graph_exec_id) AS graphs,
         sum(g.duration_ns) AS replay_ns
  FROM graph_launches g JOIN ss USING (pid) WHERE g.start_ns >= ss.start_ns AND g.start_ns < ss.end_ns
  GROUP BY ALL),
node_kernels AS (
  SELECT pid, count(*) AS node_kernels FROM kernels WHERE graph_node_id IS NOT NULL GROUP BY pid)
SELECT r.pid, r.device_id, r.replays, r.graphs, r.replay_ns, ss.window_ns,
       round(100.0 * r.replay_ns / nullif(ss.window_ns, 0), 2) AS replay_window_pct,
       coalesce(n.node_kernels, 0) AS node_kernels
FROM replays r JOIN ss USING (pid) LEFT JOIN node_kernels n USING (pid)
ORDER BY r.replay_ns DESC, r.pid, r.device_id
