"""`nsys-diagnose compare BEFORE AFTER`: did the change help? A noise-aware verdict.

preflight.py   can the runs be compared (GPUs, driver, nsys, traced APIs, same program)?
steps.py       per-step periods on the GPU's timeline, from the shared steps / steady_state tables
stats.py       block-bootstrap interval and rank test (pure Python, deterministic)
distribution.py  a run's step quantiles and heavy-tail note
verdict.py     mean step periods -> improved / regressed / no-change / inconclusive
deltas.py      metric, kernel, API, transfer, NVTX and findings deltas
comparison.py  the pipeline; render.py: Markdown, JSON, JUnit
"""

from nsys_diagnose.compare.comparison import VERDICTS, Comparison, compare
from nsys_diagnose.compare.verdict import Settings

__all__ = ["VERDICTS", "Comparison", "Settings", "compare"]
