#!/usr/bin/env python3
"""Time and peak RSS of a cold run on hostile exports and rules (issue 36): huge strings, many
distinct names, user rules that build huge strings or many rows. Run on demand; prints one row
per case. The suite keeps small versions of these cases (tests/test_hardening.py); this shows the
figures at full size. One case at a time; run it under a cap (ulimit -v) on a shared machine.

    python bench/hostile_memory.py [--mb 10] [--kernels 1000000] [--names 100000] [--reader auto]
                                   [--only huge_nvtx_texts ...]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.synth import write_export  # noqa: E402
from tests.test_bad_inputs import base_tables, kernel  # noqa: E402


def huge_kernel_name(folder: Path, mb: int) -> Path:
    tables = base_tables()
    tables["StringIds"][1]["value"] = "k" * (mb << 20)
    return write_export(tables, folder / "huge_kernel_name.sqlite")


def huge_nvtx_texts(folder: Path, mb: int, count: int = 20) -> Path:
    tables = base_tables()
    gtid = tables["CUPTI_ACTIVITY_KIND_RUNTIME"][0]["globalTid"]
    tables["NVTX_EVENTS"] = [{"start": 1_000_000 + i * 1_000_000, "end": 1_500_000 + i * 1_000_000, "eventType": 59,
                              "globalTid": gtid, "text": f"{i}" + "r" * (mb << 20), "textId": None, "domainId": 0,
                              "endGlobalTid": None} for i in range(count)]
    return write_export(tables, folder / "huge_nvtx_texts.sqlite")


def many_names(folder: Path, kernels: int, names: int) -> Path:
    tables = base_tables()
    tables["StringIds"] = [tables["StringIds"][0]] + [{"id": 2 + i, "value": f"kernel_{i}"} for i in range(names)]
    tables["CUPTI_ACTIVITY_KIND_KERNEL"] = [kernel(10_000 + i * 2_000, 11_000 + i * 2_000, i + 1, name_id=2 + i % names)
                                            for i in range(kernels)]
    tables["CUPTI_ACTIVITY_KIND_RUNTIME"] = tables["CUPTI_ACTIVITY_KIND_RUNTIME"][:1]
    return write_export(tables, folder / f"k{kernels}_names{names}.sqlite")


def overflow_chain(folder: Path, cells: int = 30, mb: int = 58) -> Path:
    """StringIds cells whose payloads all continue on one overflow page that names itself as the
    next: SQLite then reads `mb` MB of text from each (a value may not pass the file's size), so
    a 60 MB file reads as cells x mb MB (issue 36: 35 MB read as 2.1 GB)."""
    import sqlite3
    import struct

    page, first_len = 65536, 2_100_000  # 4-byte varints for the payload size and the serial type
    min_local = (page - 12) * 32 // 255 - 23
    tables = base_tables()
    tables["StringIds"] += [{"id": 100 + i, "value": chr(65 + i % 26) * first_len} for i in range(cells)]
    out = folder / "overflow_chain.sqlite"
    tmp = write_export(tables, folder / "overflow_chain.tmp.sqlite")
    con = sqlite3.connect(tmp)
    con.execute(f"PRAGMA page_size = {page}")
    con.execute("VACUUM")
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'StringIds'").fetchone()[0]
    con.close()
    data = bytearray(tmp.read_bytes())

    def varint(i: int) -> tuple[int, int]:
        v = 0
        for k in range(8):
            v = (v << 7) | (data[i + k] & 0x7F)
            if data[i + k] < 0x80:
                return v, i + k + 1
        return (v << 8) | data[i + 8], i + 9

    def put4(v: int) -> bytes:
        return bytes([0x80 | (v >> 21) & 0x7F, 0x80 | (v >> 14) & 0x7F, 0x80 | (v >> 7) & 0x7F, v & 0x7F])

    def leaves(pg: int) -> list[int]:
        off = (pg - 1) * page
        head = off + (100 if pg == 1 else 0)
        n = struct.unpack(">H", data[head + 3:head + 5])[0]
        if data[head] == 0x0D:
            return [off + struct.unpack(">H", data[head + 8 + 2 * i:head + 10 + 2 * i])[0] for i in range(n)]
        ptrs = [struct.unpack(">H", data[head + 12 + 2 * i:head + 14 + 2 * i])[0] for i in range(n)]
        kids = [struct.unpack(">I", data[off + q:off + q + 4])[0] for q in ptrs]
        return [c for k in [*kids, struct.unpack(">I", data[head + 8:head + 12])[0]] for c in leaves(k)]

    chain = None
    grow = ((mb << 20) // (page - 4)) * (page - 4)  # a whole number of overflow pages: the local part stays
    for cell in leaves(root):
        size, i = varint(cell)
        if size < first_len:
            continue
        _, j = varint(i)
        local = min_local + (size - min_local) % (page - 4)
        local = local if local <= page - 35 else min_local
        at = j + local
        if chain is None:
            chain = struct.unpack(">I", data[at:at + 4])[0]
            data[(chain - 1) * page:(chain - 1) * page + 4] = struct.pack(">I", chain)  # names itself
        _, k = varint(j)
        _, k2 = varint(k)
        serial, k3 = varint(k2)
        data[cell:cell + 4] = put4(size + grow)
        data[k2:k3] = put4(serial + 2 * grow)
        data[at:at + 4] = struct.pack(">I", chain)
    out.write_bytes(data)
    tmp.unlink()
    return out


# User rules whose memory DuckDB's memory_limit does not bound (issue 36: 3.9, 4.2 and 1.7 GB),
# and one whose rows the runner held in Python; each runs alone on the dataloader_bound export
RULES = {
    "rule_repeat_2e9": "SELECT length(repeat('x', 2000000000)) AS x",
    "rule_doubling_cte": "WITH RECURSIVE t(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM t "
                         "WHERE n < 32) SELECT max(length(s)) AS x FROM t",
    "rule_999999_rows_of_1kb": "SELECT count(*) AS x FROM (SELECT range AS i, repeat('y', 1000) AS v "
                               "FROM range(999999) ORDER BY v || i)",
    # a result of a million rows, as hot-kernels gives for a million distinct kernel names
    "rule_999999_rows_returned": "SELECT range AS x, repeat('y', 1000) AS y FROM range(999999)",
}


def rule_case(folder: Path, name: str) -> tuple[Path, list[str]]:
    from tests.test_output_bounds import EXPORT, user_rule

    user_rule(folder / name, "hostile", RULES[name])
    return EXPORT, ["--rules", str(folder / name), "--select", "hostile"]


def measure(path: Path, extra: list[str] = (), out: Path | None = None) -> tuple[float, float, int]:
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", "import resource, sys; from nsys_diagnose.main import main; "
                        "sys.argv = ['nsys-diagnose', *sys.argv[1:], '--no-cache', '--fail-on', 'never']\n"
                        "try: main()\nexcept SystemExit as e: code = e.code\n"
                        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code, file=sys.stderr)",
                        str(path), "-o", str(out or str(path) + ".md"), *extra],
                       capture_output=True, text=True)
    seconds = time.perf_counter() - started
    rss_kb, code = r.stderr.strip().splitlines()[-1].split()
    return seconds, int(rss_kb) / 1024, int(code) if code != "None" else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--names", type=int, default=100_000)
    ap.add_argument("--reader", default="auto", choices=["auto", "scanner", "sqlite3"])
    ap.add_argument("--only", nargs="*", help="case names (export stems or rule_* cases)")
    a = ap.parse_args()
    exports = {"huge_kernel_name": lambda f: huge_kernel_name(f, a.mb), "huge_nvtx_texts": lambda f: huge_nvtx_texts(f, a.mb),
               "many_names": lambda f: many_names(f, a.kernels, a.names), "overflow_chain": overflow_chain}
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        print(f"{'case':40} {'MB':>7} {'seconds':>8} {'peak RSS MiB':>13} {'exit':>5}")
        for name in a.only or [*exports, *RULES]:
            if name in RULES:
                path, extra = rule_case(folder, name)
                label = name
            else:
                path, extra = exports[name](folder), ["--reader", a.reader]
                label = path.name
            seconds, rss, code = measure(path, extra, folder / f"{name}.md")
            print(f"{label:40} {path.stat().st_size / 1e6:7.1f} {seconds:8.1f} {rss:13.0f} {code:5}")
    print(f"(peak RSS of the whole process; {resource.getpagesize()} B pages)")


if __name__ == "__main__":
    main()
