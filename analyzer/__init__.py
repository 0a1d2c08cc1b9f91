"""nsys-diagnose: what holds a CUDA program back, read from an Nsight Systems SQLite export.

The library (nsys_diagnose.api) loads on first use, so that the command line starts without
importing polars: `nsys_diagnose.open(path)` returns a Trace (see its docstring).

The source folder is `analyzer/`, installed as this package (pyproject.toml's package-dir):
`nsys_diagnose.ingest.database` is analyzer/ingest/database.py, and the SQL modules the ingest
runs are analyzer/ingest/sql/*.sql. docs/architecture.md maps the layers and the modules.
"""

__version__ = "0.1.0"

_API = ("open", "Trace", "Analysis", "to_pandas")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from nsys_diagnose import api
        return getattr(api, name)
    raise AttributeError(f"module 'nsys_diagnose' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
