-- One row per process whose steady state replays CUDA graphs: how much GPU time the replays take
-- and whether the kernels inside them are in the trace (--cuda-graph-trace=node) or not (graph).
SELECT pid, device_id, replays, graphs, replay_ns, window_ns,
       round(100.0 * replay_ns / nullif(window_ns, 0), 2) AS replay_window_pct, node_kernels
FROM steady_graph_replays
ORDER BY replay_ns DESC, pid, device_id
