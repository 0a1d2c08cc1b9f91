#!/usr/bin/env python3
"""Make a big, real-shaped nsys SQLite export by tiling a real one in time (issue #8).

    python bench/scale_export.py SRC.sqlite OUT.sqlite --kernels 1e6 [--nvtx-heavy --nvtx-rows 1e7] [--check]

Every event table (one with start/end/timestamp-like columns or a correlationId) is copied once per
tile, with timestamps shifted by tile * (source span + gap) and correlationId by tile * (max
correlationId + 1), so GPU rows still join their API rows on (correlationId, globalPid). Every other
table (StringIds, ENUM_*, TARGET_INFO_*, META_DATA_*, PROCESSES, ThreadNames, *_CALLCHAINS ...) is
copied once. All copying is INSERT ... SELECT inside SQLite, so memory stays bounded.
Standard library only.
"""
import argparse
import math
import os
import sqlite3
import sys
import time

DEFAULT_SRC = "/work/shared/exports/h200-nsys2025.3/launch_bound.sqlite"
# Columns that hold ns timestamps on the session clock (from the DDL comments of nsys 2021-2026).
TIME_COLS = {"start", "end", "timestamp", "qmdBulkReleaseDone", "qmdPreexitDone", "qmdLastCtaDone",
             "startedAt", "endedAt", "openedAt", "closedAt"}
# NVTX registrations (category, thread name, domain create/destroy, device/context/stream names) are
# kept in tile 0 only: repeating them would multiply every domain/category join.
NVTX_ONCE = (33, 39, 75, 76, 97, 98, 99)
# Tables without timestamps whose ids point into a tiled table: they follow that table's id shift.
FOLLOWS = {"SAMPLING_CALLCHAINS": "COMPOSITE_EVENTS"}
PID_MASK = -16777216  # 0xFFFFFFFFFF000000 as a signed int64: globalTid -> globalPid
KERNEL, RUNTIME = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"
GPU_TABLES = (KERNEL, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")

# PyTorch-style op stacks, outermost first; the innermost range tightly encloses the launch.
STACKS = [
    ["nn.Module: Block", "nn.Module: Linear", "aten::linear", "aten::addmm"],
    ["nn.Module: Block", "nn.Module: GELU", "aten::gelu"],
    ["nn.Module: Block", "nn.Module: LayerNorm", "aten::layer_norm", "aten::native_layer_norm"],
    ["nn.Module: MLP", "nn.Module: Block", "nn.Module: Linear", "aten::linear", "aten::addmm"],
    ["autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0", "aten::mm"],
    ["autograd::engine::evaluate_function: NativeLayerNormBackward0", "NativeLayerNormBackward0",
     "aten::native_layer_norm_backward"],
    ["Optimizer.step#Adam.step", "aten::add_", "aten::addcmul_", "aten::mul_", "aten::_local_scalar_dense"],
]
# CPU-only ops with no launch, placed inside the outermost range before the next level starts.
LEAVES = ["aten::empty", "aten::view", "aten::t", "aten::transpose", "aten::as_strided",
          "aten::expand", "aten::resolve_conj", "aten::detach"]
HASH = 2654435761  # Knuth's multiplicative hash: spreads stack choice and the final cut


def q(name):
    return '"' + name.replace('"', '""') + '"'


def columns(con, schema, table):
    return [(r[1], r[5]) for r in con.execute(f"PRAGMA {schema}.table_info({q(table)})")]


def is_tiled(table, cols):
    names = {c for c, _ in cols}
    return not table.startswith("TARGET_INFO_") and bool(names & (TIME_COLS | {"correlationId"}))


def scan_source(con, tables):
    """Time range over all event tables, and the global max correlationId."""
    lo, hi, cmax = None, None, 0
    for t, cols in tables.items():
        if not is_tiled(t, cols):
            continue
        names = [c for c, _ in cols]
        for c in names:
            if c in TIME_COLS:  # 0 means "not collected" (CUDA_EVENT.timestamp, DIAGNOSTIC_EVENT)
                a, b = con.execute(f"SELECT min({q(c)}), max({q(c)}) FROM src.{q(t)} WHERE {q(c)} > 0").fetchone()
                if a is not None:
                    lo, hi = (a if lo is None else min(lo, a)), (b if hi is None else max(hi, b))
        if "correlationId" in names:
            cmax = max(cmax, con.execute(f"SELECT coalesce(max(correlationId), 0) FROM src.{q(t)}").fetchone()[0])
    return lo, hi, cmax


def copy_tables(con, tables):
    """Tile event tables (one INSERT ... SELECT per table, tiles as the outer loop: tile-major rows)."""
    for t, cols in tables.items():
        tiled = is_tiled(t, cols) or t in FOLLOWS
        if not tiled:
            con.execute(f"INSERT INTO main.{q(t)} SELECT * FROM src.{q(t)}")
            continue
        exprs = []
        for c, pk in cols:
            if c in TIME_COLS:
                exprs.append(f"CASE WHEN s.{q(c)} > 0 THEN s.{q(c)} + _t.dt ELSE s.{q(c)} END")
            elif c == "correlationId":
                exprs.append(f"s.{q(c)} + _t.dc")
            elif c == "id" and (pk or t in FOLLOWS):  # rowid-like ids must stay unique per tile
                base = FOLLOWS.get(t, t)
                span = con.execute(f"SELECT coalesce(max(id), 0) + 1 FROM src.{q(base)}").fetchone()[0] \
                    if base in tables else 0
                exprs.append(f"s.{q(c)} + _t.i * {span}")
            else:
                exprs.append(f"s.{q(c)}")
        where = f"WHERE _t.i = 0 OR s.eventType NOT IN {NVTX_ONCE}" if t == "NVTX_EVENTS" else ""
        con.execute(f"INSERT INTO main.{q(t)} SELECT {', '.join(exprs)} "
                    f"FROM temp._tiles AS _t CROSS JOIN src.{q(t)} AS s {where}")


def build_anchors(con, tables, cap):
    """Launch-type API calls of the source (tile 0) that can carry a nest of NVTX ranges.

    gb/ga are the free time before/after the call on its thread, up to the previous/next launch or
    existing NVTX boundary (capped), so nests never cross each other or the source's own ranges."""
    gpu = " UNION ".join(f"SELECT correlationId, globalPid FROM src.{q(t)}" for t in GPU_TABLES if t in tables)
    con.execute("CREATE TEMP TABLE _gpu(cid INT, pid INT, PRIMARY KEY (cid, pid)) WITHOUT ROWID")
    con.execute(f"INSERT OR IGNORE INTO _gpu {gpu}")
    bounds = ""
    if "NVTX_EVENTS" in tables:
        rng = "FROM src.NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) AND end IS NOT NULL"
        bounds = (f"UNION ALL SELECT start, start, globalTid, 0 {rng} "
                  f"UNION ALL SELECT end, end, globalTid, 0 {rng}")
    con.execute("CREATE TEMP TABLE _anchors(k INTEGER PRIMARY KEY, tid INT, s INT, e INT, gb INT, ga INT)")
    con.execute(f"""
        WITH items AS (
            SELECT r.start AS s, r.end AS e, r.globalTid AS tid, 1 AS anchor FROM src.{RUNTIME} r
             WHERE r.eventClass != 67  -- --cudabacktrace duplicates (wider, same call): not a call of their own
               AND EXISTS (SELECT 1 FROM _gpu WHERE cid = r.correlationId AND pid = (r.globalTid & {PID_MASK}))
            {bounds}),
        w AS (SELECT *, max(e) OVER (PARTITION BY tid ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe,
                        lead(s) OVER (PARTITION BY tid ORDER BY s, e) AS nx FROM items)
        INSERT INTO _anchors(tid, s, e, gb, ga)
        SELECT tid, s, e, min(coalesce(s - pe, {cap}), {cap}), min(coalesce(nx - e, {cap}), {cap}) FROM w
         WHERE anchor AND (pe IS NULL OR pe <= s) AND (nx IS NULL OR nx >= e)  -- skip overlapping calls
         ORDER BY s, tid""")
    return con.execute("SELECT count(*) FROM _anchors").fetchone()[0]


def build_template(con, p, x):
    """NVTX rows for one tile: a fraction p of anchors get a stack; each gets x CPU-only leaves on average.

    Level i of a depth-d stack spans [s - gb*(d-i)/(2(d+1)), e + ga*(d-i)/(2(d+1))]: strictly nested,
    inside the midpoints to the neighbours. Rows are numbered n in start order (outer first), as the
    real exports store NVTX_EVENTS, and r is a hashed rank used to trim the excess evenly."""
    con.execute("DROP TABLE IF EXISTS _tmpl")
    con.execute("CREATE TEMP TABLE _tmpl(n INTEGER PRIMARY KEY, r INT, start INT, end INT, text TEXT, tid INT)")
    con.execute(f"""
        WITH sel AS (
            SELECT a.*, sd.stack, sd.d,
                   CAST((a.k + 1) * :x AS INT) - CAST(a.k * :x AS INT) AS m
              FROM _anchors a JOIN _sd sd ON sd.stack = ((a.k * {HASH}) / 128) % {len(STACKS)}
             WHERE CAST((a.k + 1) * :p AS INT) > CAST(a.k * :p AS INT)),
        rows_ AS (
            SELECT sel.tid, sel.s - (sel.gb * (sel.d - v.lvl)) / (2 * (sel.d + 1)) AS st,
                   sel.e + (sel.ga * (sel.d - v.lvl)) / (2 * (sel.d + 1)) AS en, v.text
              FROM sel JOIN _vocab v ON v.stack = sel.stack
            UNION ALL
            SELECT sel.tid, a0 + (w * (2 * j.j + 1)) / (2 * sel.m + 1), a0 + (w * (2 * j.j + 2)) / (2 * sel.m + 1), l.text
              FROM (SELECT *, s - (gb * d) / (2 * (d + 1)) AS a0, (gb * d) / (2 * (d + 1)) - (gb * (d - 1)) / (2 * (d + 1)) AS w
                      FROM sel WHERE m > 0) sel
              JOIN _nums j ON j.j < sel.m
              JOIN _leaves l ON l.lid = (sel.k * 3 + j.j) % {len(LEAVES)})
        , numbered AS (SELECT row_number() OVER (ORDER BY st, en DESC) - 1 AS n, * FROM rows_)
        INSERT INTO _tmpl
        SELECT n, row_number() OVER (ORDER BY (n * {HASH}) % 4294967311) - 1, st, en, text, tid
          FROM numbered ORDER BY n""", {"p": p, "x": x})
    return con.execute("SELECT count(*) FROM _tmpl").fetchone()[0]


def add_nvtx(con, tables, ntiles, nvtx_rows, cap):
    have = con.execute("SELECT count(*) FROM main.NVTX_EVENTS").fetchone()[0]
    need = nvtx_rows - have
    if need <= 0:
        return 0
    C = build_anchors(con, tables, cap)
    if C == 0:
        sys.exit("--nvtx-heavy: the source has no runtime calls that launched GPU work")
    con.execute("CREATE TEMP TABLE _vocab(stack INT, lvl INT, text TEXT)")
    con.execute("CREATE TEMP TABLE _sd(stack INT PRIMARY KEY, d INT)")
    con.execute("CREATE TEMP TABLE _leaves(lid INT PRIMARY KEY, text TEXT)")
    con.executemany("INSERT INTO _vocab VALUES (?, ?, ?)",
                    [(i, level, txt) for i, st in enumerate(STACKS) for level, txt in enumerate(st)])
    con.executemany("INSERT INTO _sd VALUES (?, ?)", [(i, len(st)) for i, st in enumerate(STACKS)])
    con.executemany("INSERT INTO _leaves VALUES (?, ?)", list(enumerate(LEAVES)))
    per_tile = -(-need // ntiles)
    avg = sum(map(len, STACKS)) / len(STACKS)
    full = C * avg  # rows per tile if every anchor gets one stack and no leaves; aim 1% high, trim later
    p, x = (min(1.0, 1.01 * per_tile / full), 0.0) if per_tile <= full else (1.0, (1.01 * per_tile - full) / C)
    con.execute("CREATE TEMP TABLE _nums(j INTEGER PRIMARY KEY)")
    while True:
        con.executemany("INSERT OR IGNORE INTO _nums VALUES (?)", [(j,) for j in range(int(x) + 2)])
        if build_template(con, p, x) >= per_tile:
            break
        # The hashed stack choice makes the average depth approximate: top up and rebuild (small table).
        p, x = (min(1.0, p * 1.03), x) if p < 1.0 else (p, x * 1.03 + 0.05)
    cols = {c for c, _ in tables["NVTX_EVENTS"]}
    extra = ", domainId" if "domainId" in cols else ""
    # Per-tile quota so the total is exactly nvtx_rows; the hashed rank drops the excess evenly.
    con.execute(f"""INSERT INTO main.NVTX_EVENTS(start, end, eventType, text, globalTid{extra})
        SELECT m.start + _t.dt, m.end + _t.dt, 59, m.text, m.tid{', 0' if extra else ''}
          FROM temp._tiles AS _t CROSS JOIN temp._tmpl AS m
         WHERE m.r < ({need} * (_t.i + 1)) / {ntiles} - ({need} * _t.i) / {ntiles}""")
    return need


def check(out, src, nkernels, ntiles, cstep, nvtx):
    """Integrity, kernel count, and per tile: as many kernels, joining their runtime rows, as the source."""
    con = sqlite3.connect(out)
    con.execute("ATTACH ? AS src", (f"file:{src}?mode=ro",))
    ok = con.execute("PRAGMA main.integrity_check").fetchone()[0]
    n = con.execute(f"SELECT count(*) FROM main.{KERNEL}").fetchone()[0]
    join = (f"{KERNEL} k LEFT JOIN {{s}}.{RUNTIME} r ON r.correlationId = k.correlationId "
            f"AND k.globalPid = (r.globalTid & {PID_MASK})")
    want = con.execute(f"SELECT count(*), count(r.start) FROM src.{join.format(s='src')}").fetchone()
    per = con.execute(f"SELECT k.correlationId / {cstep}, count(*), count(r.start) FROM main.{join.format(s='main')} "
                      f"GROUP BY 1 ORDER BY 1").fetchall()
    bad = [t for t in per if t[1:] != want]
    print(f"check: integrity_check={ok}; kernels={n:,} (>= {nkernels:,}: {n >= nkernels}); per tile "
          f"(kernels, joined to runtime): source {want}, {len(per)} of {ntiles} tiles, {len(bad)} differ {bad[:3]}")
    good = ok == "ok" and n >= nkernels and len(per) == ntiles and not bad
    if nvtx:
        good &= check_nesting(con)
    return good


def check_nesting(con):
    """Streaming sweep per thread: push/pop ranges must not cross; count ranges enclosing each launch."""
    # An indexed key set: a correlated subquery on the unindexed KERNEL table would be quadratic.
    con.execute("CREATE TEMP TABLE _launch(cid INT, pid INT, PRIMARY KEY (cid, pid)) WITHOUT ROWID")
    con.execute(f"INSERT OR IGNORE INTO _launch SELECT correlationId, globalPid FROM main.{KERNEL}")
    rows = con.execute(f"""
        SELECT globalTid, start, end, 0 FROM main.NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL
        UNION ALL
        SELECT r.globalTid, r.start, r.end, 1 FROM main.{RUNTIME} r
         WHERE EXISTS (SELECT 1 FROM _launch WHERE cid = r.correlationId AND pid = (r.globalTid & {PID_MASK}))
        ORDER BY 1, 2, 3 DESC, 4""")
    tid, stack, crossings, hist = None, [], 0, {}
    for g, st, en, is_call in rows:
        if g != tid:
            tid, stack = g, []
        while stack and stack[-1] <= st:
            stack.pop()
        if is_call:
            depth = sum(1 for x in stack if x >= en)
            hist[min(depth, 8)] = hist.get(min(depth, 8), 0) + 1
        else:
            if stack and en > stack[-1]:
                crossings += 1
            stack.append(en)
    total = sum(hist.values())
    deep = sum(v for d, v in hist.items() if d >= 3)
    print(f"check: NVTX push/pop crossings={crossings}; launches enclosed by >=3 ranges: "
          f"{deep:,}/{total:,}; depth histogram {dict(sorted(hist.items()))}")
    return crossings == 0


def build(src, tmp, a):
    """Write the scaled export to tmp; return (tiles, correlationId step, rows per table, a summary)."""
    con = sqlite3.connect(tmp, isolation_level=None)
    con.execute("ATTACH ? AS src", (f"file:{src}?mode=ro&immutable=1",))
    page = con.execute("PRAGMA src.page_size").fetchone()[0]
    for pragma in (f"page_size={page}", "journal_mode=OFF", "synchronous=OFF", "cache_size=-262144"):
        con.execute(f"PRAGMA main.{pragma}")  # bulk build: no journal, no fsync; a crash leaves only OUT.tmp
    con.execute("PRAGMA temp_store=FILE")
    master = con.execute("SELECT type, name, sql FROM src.sqlite_master WHERE sql IS NOT NULL "
                         "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
    con.execute("BEGIN")
    for typ, _name, sql in master:
        if typ == "table":
            con.execute(sql)  # the DDL verbatim, comments included
    tables = {n: columns(con, "src", n) for typ, n, _ in master if typ == "table"}
    if KERNEL not in tables:
        sys.exit(f"{src} has no {KERNEL} table")
    src_k = con.execute(f"SELECT count(*) FROM src.{KERNEL}").fetchone()[0]
    if src_k == 0:
        sys.exit(f"{src} has no kernels")
    ntiles = max(1, math.ceil(int(a.kernels) / src_k))
    lo, hi, cmax = scan_source(con, tables)
    period = hi - lo + a.gap_ns
    con.execute("CREATE TEMP TABLE _tiles(i INTEGER PRIMARY KEY, dt INT, dc INT)")
    con.executemany("INSERT INTO _tiles VALUES (?, ?, ?)", [(i, i * period, i * (cmax + 1)) for i in range(ntiles)])
    copy_tables(con, tables)
    if "ANALYSIS_DETAILS" in tables:  # keep the capture length covering all tiles
        con.execute("UPDATE main.ANALYSIS_DETAILS SET duration = duration + ?, stopTime = stopTime + ?",
                    ((ntiles - 1) * period,) * 2)
    added = 0
    if a.nvtx_heavy:
        if "NVTX_EVENTS" not in tables or RUNTIME not in tables:
            sys.exit("--nvtx-heavy needs NVTX_EVENTS and CUPTI_ACTIVITY_KIND_RUNTIME in the source")
        added = add_nvtx(con, tables, ntiles, int(a.nvtx_rows), min(20_000, a.gap_ns // 2))
    for typ, _name, sql in master:
        if typ != "table":
            con.execute(sql)  # explicit indexes/views/triggers after the data (nsys makes none)
    con.execute("COMMIT")
    counts = {t: con.execute(f"SELECT count(*) FROM main.{q(t)}").fetchone()[0] for t in tables}
    con.close()
    info = (f"span {hi - lo:,} ns + gap {a.gap_ns:,} ns; correlationId step {cmax + 1:,}"
            + (f"; {added:,} generated NVTX rows" if added else ""))
    return ntiles, cmax + 1, counts, info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", nargs="?", default=DEFAULT_SRC, help=f"source export (default {DEFAULT_SRC})")
    ap.add_argument("out", help="output .sqlite (written to OUT.tmp, then renamed)")
    ap.add_argument("--kernels", type=float, default=1e6, help="minimum KERNEL rows (default 1e6)")
    ap.add_argument("--gap-ns", type=int, default=1_000_000, help="idle gap between tiles (default 1 ms)")
    ap.add_argument("--nvtx-heavy", action="store_true", help="add PyTorch-style nested NVTX ranges")
    ap.add_argument("--nvtx-rows", type=float, default=1e7, help="minimum NVTX_EVENTS rows with --nvtx-heavy")
    ap.add_argument("--check", action="store_true", help="verify the output (integrity, joins per tile, nesting)")
    a = ap.parse_args()
    src, out = os.path.abspath(a.src), os.path.abspath(a.out)
    if src == out:
        ap.error("OUT must differ from SRC")
    t0 = time.monotonic()
    tmp = out + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    try:
        ntiles, cstep, counts, info = build(src, tmp, a)
    except BaseException:
        if os.path.exists(tmp):  # never leave a half-built file behind
            os.remove(tmp)
        raise
    os.replace(tmp, out)
    secs = time.monotonic() - t0
    print(f"{out}: {ntiles} tiles of {src} ({info})")
    for t, n in counts.items():
        if n:
            print(f"  {t:40s} {n:>14,}")
    print(f"  {sum(1 for n in counts.values() if not n)} empty tables kept; "
          f"size {os.path.getsize(out) / 1e6:,.1f} MB; {secs:.1f} s")
    if a.check:
        t1 = time.monotonic()
        good = check(out, src, int(a.kernels), ntiles, cstep, a.nvtx_heavy)
        print(f"check: {'PASSED' if good else 'FAILED'} in {time.monotonic() - t1:.1f} s")
        sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
