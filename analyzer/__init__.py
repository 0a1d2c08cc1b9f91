"""nsys-diagnose: what holds a CUDA program back, read from an Nsight Systems SQLite export."""

__version__ = "0.1.0"
