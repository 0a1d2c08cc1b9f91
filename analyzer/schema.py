"""The export columns nsys-diagnose reads, per source table.

Only these columns are copied out of the SQLite export (projection keeps ingest fast and
memory bounded). A column absent from a given nsys version becomes a typed NULL, so the
normalizing SQL (sql/normalize.sql) is the same for every version. Types are DuckDB types.
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
        "demangledName": BIG, "shortName": BIG, "mangledName": BIG,
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
    "CUDA_GPU_MEMORY_USAGE_EVENTS": {
        "start": BIG, "globalPid": BIG, "deviceId": BIG, "address": BIG, "bytes": BIG,
        "memKind": BIG, "memoryOperationType": BIG, "correlationId": BIG,
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

# Tables whose presence tells that something was captured at all.
NSYS_MARKERS = ("StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                "NVTX_EVENTS", "OSRT_API", "TARGET_INFO_GPU", "META_DATA_EXPORT",
                "EXPORT_META_DATA", "ANALYSIS_DETAILS")
