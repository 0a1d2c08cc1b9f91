-- include:

-- The step-time budget's causes: what each nanosecond of a steady-state window is spent on.
-- One home for the vocabulary: the budget (budget.sql) names these causes, the report words
-- them with their labels (analyses/budget.py), the HTML timeline draws the CUDA-call kinds in
-- their lanes (analyses/timeline.py), and a rule's `claims.causes` must name one of them (a
-- misspelt cause stops the rule from loading). To add a cause, add its row here, then make the
-- budget produce it (budget.sql: a GPU class through kernel_class_patterns, an idle cause in
-- budget_idle_causes).

-- One row per budget cause, GPU classes in their precedence order, then the idle causes.
-- sources: always
-- @column kind: gpu (busy time, by class) or idle (GPU idle time, by what the host was doing)
-- @column cause: the cause as budget.cause names it
-- @column rank: for gpu causes, the precedence where operations overlap, 1 first (budget_classes);
-- NULL for idle ones
-- @column label: the cause in the report's words
-- @column lane: the HTML timeline's host band for CUDA calls of this kind, NULL where the cause
-- is not time in CUDA calls
-- @column api_categories: the api_calls categories whose calls draw in that band; empty for
-- the band that takes every other category
CREATE TABLE budget_causes(kind VARCHAR, cause VARCHAR, rank INTEGER, label VARCHAR, lane VARCHAR,
                           api_categories VARCHAR[]);
INSERT INTO budget_causes VALUES
  ('gpu', 'tensor-core math', 1, 'tensor-core math', NULL, NULL),
  ('gpu', 'fp32 math', 2, 'fp32 math', NULL, NULL),
  -- GEMM/convolution math in fp64 (kernel_formats), on tensor cores or not
  ('gpu', 'fp64 math', 3, 'fp64 math', NULL, NULL),
  -- GEMM/convolution math whose name says neither format nor unit (Triton's, XLA's gemm_fusion)
  ('gpu', 'matrix math', 4, 'matrix math (format not in the name)', NULL, NULL),
  ('gpu', 'elementwise/reduction', 5, 'elementwise/reduction', NULL, NULL),
  ('gpu', 'other kernels', 6, 'other kernels', NULL, NULL),
  ('gpu', 'CUDA graph replays', 7, 'CUDA graph replays', NULL, NULL),
  ('gpu', 'communication', 8, 'communication', NULL, NULL),
  ('gpu', 'copies', 9, 'copies', NULL, NULL),
  ('gpu', 'memsets', 10, 'memsets', NULL, NULL),
  ('idle', 'launch', NULL, 'launch overhead (issuing many short operations)', 'launch', ['launch']),
  ('idle', 'sync', NULL, 'waiting after synchronizations', 'sync', ['sync']),
  ('idle', 'copy', NULL, 'copies and memsets (issuing them, waiting for them)', 'copy', ['memcpy', 'memset']),
  ('idle', 'allocation', NULL, 'memory allocation', 'allocation', ['alloc', 'free']),
  ('idle', 'module loading', NULL, 'module loading', 'module loading', ['module', 'context']),
  ('idle', 'other CUDA calls', NULL, 'other CUDA calls', 'other', []),
  ('idle', 'OS wait', NULL, 'OS waits', NULL, NULL),
  ('idle', 'host code', NULL, 'host code', NULL, NULL),
  ('idle', 'untraced host code', NULL, 'untraced host code (outside NVTX ranges and traced calls)', NULL, NULL),
  ('idle', 'no GPU work queued', NULL, 'no GPU work queued', NULL, NULL),
  ('idle', 'other processes', NULL, 'other processes'' GPU work', NULL, NULL),
  ('idle', 'dispatch', NULL, 'dispatch gaps between queued operations', NULL, NULL),
  ('idle', 'step churn', NULL, 'steps that do not repeat (algorithm search, recompilation, warm-up)', NULL, NULL);
