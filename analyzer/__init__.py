"""nsys-diagnose: what holds a CUDA program back, read from an Nsight Systems SQLite export.

The library (nsys_diagnose.api) loads on first use, so that the command line starts without
importing polars: `nsys_diagnose.open(path)` returns a Trace (see its docstring).
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
