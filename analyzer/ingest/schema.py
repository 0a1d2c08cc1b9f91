"""The export columns nsys-diagnose reads, per source table.

Only these columns are copied out of the SQLite export (projection keeps ingest fast and
memory bounded). A column absent from a given nsys version becomes a typed NULL, so the
normalizing SQL (ingest/sql/normalize.sql) is the same for every version. Types are DuckDB types.
"""

BIG, TXT, DBL = "BIGINT", "VARCHAR", "DOUBLE"

_GPU_OP = {
    "start": BIG, "end": BIG, "deviceId": BIG, "contextId": BIG, "streamId": BIG,
    "correlationId": BIG, "globalPid": BIG, "graphNodeId": BIG,
}

SOURCES: dict[str, dict[str, str]] = {
    "StringIds": {"id": BIG, "value": TXT},
    "CUPTI_ACTIVITY_KIND_KERNEL": {
        **_GPU_OP,
        "demangledName": BIG, "shortName": BIG,
        "gridX": BIG, "gridY": BIG, "gridZ": BIG, "blockX": BIG, "blockY": BIG, "blockZ": BIG,
        "registersPerThread": BIG, "staticSharedMemory": BIG, "dynamicSharedMemory": BIG,
        "graphId": BIG,
    },
    "CUPTI_ACTIVITY_KIND_MEMCPY": {
        **_GPU_OP,
        "bytes": BIG, "copyKind": BIG, "srcKind": BIG, "dstKind": BIG,
        "srcDeviceId": BIG, "dstDeviceId": BIG,
    },
    "CUPTI_ACTIVITY_KIND_MEMSET": {**_GPU_OP, "bytes": BIG, "memKind": BIG, "value": BIG},
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": {
        "start": BIG, "end": BIG, "deviceId": BIG, "contextId": BIG, "streamId": BIG,
        "correlationId": BIG, "globalPid": BIG, "syncType": BIG,
    },
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": {
        "start": BIG, "end": BIG, "deviceId": BIG, "contextId": BIG, "streamId": BIG,
        "correlationId": BIG, "globalPid": BIG, "graphId": BIG, "graphExecId": BIG,
    },
    "CUPTI_ACTIVITY_KIND_RUNTIME": {
        "start": BIG, "end": BIG, "eventClass": BIG, "globalTid": BIG,
        "correlationId": BIG, "nameId": BIG, "returnValue": BIG,
    },
    "NVTX_EVENTS": {
        "start": BIG, "end": BIG, "eventType": BIG, "text": TXT, "textId": BIG,
        "globalTid": BIG, "endGlobalTid": BIG, "domainId": BIG,
    },
    "OSRT_API": {"start": BIG, "end": BIG, "globalTid": BIG, "nameId": BIG},
    "COMPOSITE_EVENTS": {"id": BIG, "start": BIG, "globalTid": BIG},
    "SAMPLING_CALLCHAINS": {"id": BIG, "symbol": BIG, "module": BIG, "unresolved": BIG, "stackDepth": BIG},
    "CUDA_GPU_MEMORY_USAGE_EVENTS": {
        "start": BIG, "globalPid": BIG, "deviceId": BIG, "address": BIG, "bytes": BIG,
        "memKind": BIG, "memoryOperationType": BIG, "correlationId": BIG,
    },
    "CUDA_UM_CPU_PAGE_FAULT_EVENTS": {"start": BIG, "globalPid": BIG},
    "CUDA_UM_GPU_PAGE_FAULT_EVENTS": {
        "start": BIG, "end": BIG, "globalPid": BIG, "deviceId": BIG, "numberOfPageFaults": BIG,
    },
    "TARGET_INFO_GPU": {
        "id": BIG, "deviceId": BIG, "cuDevice": BIG, "name": TXT, "busLocation": TXT,
        "totalMemory": BIG, "memoryBandwidth": BIG, "clockRate": BIG, "smCount": BIG,
        "computeMajor": BIG, "computeMinor": BIG, "chipName": TXT, "uuid": TXT,
    },
    "TARGET_INFO_CUDA_GPU": {
        "deviceId": BIG, "name": TXT, "globalMemorySize": BIG, "globalMemoryBandwidth": BIG,
        "coreClockRate": BIG, "numMultiprocessors": BIG,
        "computeCapabilityMajor": BIG, "computeCapabilityMinor": BIG,
    },
    "TARGET_INFO_CUDA_DEVICE": {"gpuId": BIG, "cudaId": BIG, "pid": BIG},
    "PROCESSES": {"globalPid": BIG, "pid": BIG, "name": TXT},
    "ThreadNames": {"nameId": BIG, "priority": BIG, "globalTid": BIG},
    "META_DATA_EXPORT": {"name": TXT, "value": TXT},
    "EXPORT_META_DATA": {"name": TXT, "value": TXT},
    "META_DATA_CAPTURE": {"name": TXT, "value": TXT},
    "TARGET_INFO_SYSTEM_ENV": {"name": TXT, "value": TXT},
    "ENUM_CUDA_MEMCPY_OPER": {"id": BIG, "label": TXT},
    "ENUM_CUDA_MEM_KIND": {"id": BIG, "label": TXT},
}

# Rows of these tables that may hold secrets (the full environment) are never copied.
ROW_FILTERS = {
    "META_DATA_CAPTURE": "name NOT LIKE '%ENVIRONMENT%'",
    "TARGET_INFO_SYSTEM_ENV": "name IN ('NvDriverVersion', 'CudaDriverVersion', 'CpuCores', 'OsDescription')",
}

# Columns every nsys version writes in these tables: without them no row can be placed in time
# or on a device, so a table lacking one is refused rather than read as empty.
REQUIRED = {
    "StringIds": ("id", "value"),
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "deviceId"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "deviceId"),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end", "deviceId"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end"),
}


def missing_columns(tables: dict[str, set[str]]) -> tuple[str, str] | None:
    """(table, column) of the first required column a present table lacks, else None."""
    for table, columns in REQUIRED.items():
        for column in columns:
            if table in tables and column not in tables[table]:
                return table, column
    return None


# Tables whose presence tells that something was captured at all.
NSYS_MARKERS = ("StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                "NVTX_EVENTS", "OSRT_API", "TARGET_INFO_GPU", "META_DATA_EXPORT",
                "EXPORT_META_DATA", "ANALYSIS_DETAILS")


# --- Which exporter wrote the file --------------------------------------------------------------
# Decided by the tables and columns present (nsys-schema.md 2.2), never by version numbers: the
# version strings are provenance, the columns are what the reader depends on.

FLAVOURS = {
    "meta-data-export": "META_DATA_EXPORT metadata: nsys 2023.3 or later",
    "export-meta-data": "EXPORT_META_DATA metadata: nsys 2021.4 to 2023.2",
    "pre-2021.4-c": "before 2021.4: no export metadata, full TARGET_INFO_GPU; about nsys 2021.1 to 2021.3",
    "pre-2021.4-b": "before 2021.4: no export metadata, short TARGET_INFO_GPU plus TARGET_INFO_CUDA_GPU; about nsys 2020.5",
    "pre-2021.4-a": "before 2021.4: no export metadata, TARGET_INFO_CUDA_GPU only; before about nsys 2020.5",
    "pre-2021.4": "before 2021.4: no export metadata, no GPU description tables",
}

_KERNEL, _RUNTIME = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"

# Optional parts of the schema, each a test on the tables/columns present. Reported so a user
# (and the support matrix) can see what an export can and cannot answer.
FEATURES = {
    "enum-tables": lambda t: any(name.startswith("ENUM_") for name in t),
    "kernel-mangled-names": lambda t: "mangledName" in t.get(_KERNEL, ()),
    "green-contexts": lambda t: "greenContextId" in t.get(_KERNEL, ()),
    "api-callchains": lambda t: "callchainId" in t.get(_RUNTIME, ()),
    "gpu-info": lambda t: "TARGET_INFO_GPU" in t,
    "cuda-gpu-info": lambda t: "TARGET_INFO_CUDA_GPU" in t,
    "cuda-device-map": lambda t: "TARGET_INFO_CUDA_DEVICE" in t,
    "graph-trace": lambda t: "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in t,
    "processes": lambda t: "PROCESSES" in t,
    "capture-metadata": lambda t: "META_DATA_CAPTURE" in t,
}


def detect_format(tables: dict[str, set[str]]) -> dict:
    """{export_meta_table, schema_flavour, features} of an export, from its tables -> columns."""
    if "META_DATA_EXPORT" in tables:
        meta, flavour = "META_DATA_EXPORT", "meta-data-export"
    elif "EXPORT_META_DATA" in tables:
        meta, flavour = "EXPORT_META_DATA", "export-meta-data"
    else:
        meta, flavour = None, _pre_meta_flavour(tables)
    return {"export_meta_table": meta, "schema_flavour": flavour,
            "features": sorted(name for name, test in FEATURES.items() if test(tables))}


def _pre_meta_flavour(tables: dict[str, set[str]]) -> str:
    gpu = tables.get("TARGET_INFO_GPU")
    if gpu is not None:
        return "pre-2021.4-c" if "id" in gpu else "pre-2021.4-b"
    if "TARGET_INFO_CUDA_GPU" in tables:
        return "pre-2021.4-a"
    # No GPU description at all (a CPU-side capture): the oldest API table lacks callchainId.
    if _RUNTIME in tables and "callchainId" not in tables[_RUNTIME]:
        return "pre-2021.4-a"
    return "pre-2021.4"
