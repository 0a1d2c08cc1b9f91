"""The bad-input corpus, second round (issue 18): odd data, special files, odd outputs, bad
parameters and environment values, mistyped commands. Every case runs the CLI's own entry point
and asserts the same four things:

- the exit code (0 with a report, or 2 with one line on stderr naming the file or option and
  the problem, never a traceback or an "internal error");
- stderr: that one line, or nothing at all;
- the input folder byte-identical afterwards (nothing changed, nothing created beside the input);
- no leftover files: no temporary, journal or WAL file in the cache folder, no private temporary
  folder left, no output folder made in the current directory by a refused command.

Each input is built here from tests/synth.py plus small edits: no binaries in the repository.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from .cli_harness import assert_one_line_error, call_cli, leftovers, snapshot
from .synth import write_export
from .test_bad_inputs import base_tables, kernel

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Case:
    build: Callable[[Path], Path]            # makes the input in the folder, returns its path
    args: tuple = ()                          # before the input: options, or a whole command line
    error: tuple[str, ...] | None = None      # needles of the one-line error; None: a report
    check: Callable[[dict], None] | None = None  # on the JSON report
    env: dict[str, str] = field(default_factory=dict)
    names_input: bool = True                  # the error line names the input path
    argv: Callable[[Path, Path], list] | None = None  # the whole command line, from (input, folder)
    needs_root: bool = False
    raw: bool = False                         # argv as it is, without the usual options


def good(folder: Path, name: str = "good.sqlite", tables=None) -> Path:
    return write_export(tables or base_tables(), folder / name)


def edited(sql: str, *params, name: str = "edited.sqlite", tables=None) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = good(folder, name, tables)
        con = sqlite3.connect(path)
        con.execute(sql, params)
        con.commit()
        con.close()
        return path
    return build


def counts(kernels: int, kernel_ns: int | None = None) -> Callable[[dict], None]:
    def check(doc: dict) -> None:
        m = doc["metrics"]
        assert m["kernel_count"] == kernels, m
        if kernel_ns is not None:
            assert m["kernel_ns"] == kernel_ns, m
    return check


def renamed_tables(upper_columns: bool = False) -> Callable[[Path], Path]:
    """Every table stored in lower case (and, optionally, its columns in upper case): SQLite's
    names are case-blind, so this is the same export."""
    def build(folder: Path) -> Path:
        tables = {}
        for name, rows in base_tables().items():
            rows = [{(k.upper() if upper_columns else k): v for k, v in r.items()} for r in rows]
            tables[name.lower()] = rows
        return write_export(tables, folder / "lower.sqlite")
    return build


def header_edit(offset: int, data: bytes) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = good(folder)
        raw = bytearray(path.read_bytes())
        raw[offset:offset + len(data)] = data
        path.write_bytes(bytes(raw))
        return path
    return build


def stale_page_count(folder: Path) -> Path:
    """A page count far beyond the file, left stale by an older writer: the version-valid-for
    number (offset 92) differs from the change counter (24), so SQLite ignores the count."""
    path = good(folder)
    raw = bytearray(path.read_bytes())
    raw[28:32] = (10_000).to_bytes(4, "big")
    raw[92:96] = (int.from_bytes(raw[24:28], "big") + 7).to_bytes(4, "big")
    path.write_bytes(bytes(raw))
    return path


def with_journal(content: bytes | None, fifo: bool = False) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = good(folder)
        journal = path.with_name(path.name + "-journal")
        if fifo:
            os.mkfifo(journal)
        else:
            journal.write_bytes(content)
        return path
    return build


def hot_journal(folder: Path) -> Path:
    """A copy taken in the middle of a transaction: the database holds part of an uncommitted
    deletion (its pages spilled from SQLite's cache), the journal the pages to restore."""
    work = folder.parent / f"{folder.name}-work"
    work.mkdir()
    src = write_export(base_tables() | {"CUPTI_ACTIVITY_KIND_KERNEL": [
        kernel(1_000_000 + i * 1000, 1_000_500 + i * 1000, i + 1) for i in range(3000)]}, work / "w.sqlite")
    con = sqlite3.connect(src, isolation_level=None)
    con.execute("PRAGMA cache_size = 1")  # spill to the file before commit
    con.execute("BEGIN")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1")
    path = folder / "hot.sqlite"
    path.write_bytes(src.read_bytes())
    path.with_name("hot.sqlite-journal").write_bytes(Path(f"{src}-journal").read_bytes())
    con.execute("ROLLBACK")
    con.close()
    assert path.with_name("hot.sqlite-journal").read_bytes()[:8] == bytes.fromhex("d9d505f920a163d7")
    return path


def fifo(folder: Path, name: str = "pipe.sqlite") -> Path:
    os.mkfifo(folder / name)
    return folder / name


def link_to(target: Callable[[Path], Path], name: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        real = target(folder)
        (folder / name).symlink_to(real)
        return folder / name
    return build


def unix_socket(folder: Path) -> Path:
    path = folder / "sock.sqlite"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


def device(folder: Path) -> Path:
    path = folder / "null.dev"
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in our folder
    return path


def rules_folder(yaml: str | None = None, sql: str | None = "SELECT 1 AS x", *, yaml_special=None,
                 sql_special=None) -> Callable[[Path], Path]:
    """A --rules folder with one rule 'r', its files written or replaced by special files; the
    export is beside it. Returns the folder (the CLI gets the export from argv)."""
    def build(folder: Path) -> Path:
        rules = folder / "rules"
        rules.mkdir()
        if yaml_special:
            yaml_special(rules / "r.yaml")
        else:
            (rules / "r.yaml").write_text(yaml or RULE)
        if sql_special:
            sql_special(rules / "r.sql")
        elif sql is not None:
            (rules / "r.sql").write_text(sql)
        good(folder)
        return rules
    return build


RULE = ("id: r\ntitle: r\ncategory: user\nseverity: warning\nsummary: A user rule.\n"
        "docs: {what: a test, why: to test, fix: none}\n")


def with_rules(rules: Path, folder: Path) -> list:
    return [folder / "good.sqlite", "--rules", rules]


def settle_set(*pairs: str) -> Callable[[Path, Path], list]:
    return lambda path, folder: [path, *[a for p in pairs for a in ("--set", p)]]


CASES: dict[str, Case] = {
    # --- odd data: a correct report, or one line ----------------------------------------------
    "null-device-id": Case(edited('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = NULL WHERE rowid = 1'),
                           check=counts(2, 10_000_000)),
    "null-device-id-sqlite3": Case(edited('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = NULL WHERE rowid = 1'),
                                   args=("--reader", "sqlite3"), check=counts(2, 10_000_000)),
    "null-global-pid": Case(edited('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = NULL WHERE rowid = 1'),
                            check=counts(3, 15_000_000)),
    # (SQLite's CAST makes the blob 0, as test_bad_inputs' type-mismatch case shows for times)
    "blob-device-id-sqlite3": Case(edited("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = X'00FF' WHERE rowid = 1"),
                                   args=("--reader", "sqlite3"), check=counts(3, 15_000_000)),
    "null-string-id": Case(edited("INSERT INTO StringIds VALUES (NULL, 'orphan')"), check=counts(3, 15_000_000)),
    "duplicate-string-id-same-text": Case(edited("INSERT INTO StringIds VALUES (2, 'my_kernel')"),
                                          check=counts(3, 15_000_000)),
    "duplicate-string-id-same-text-sqlite3": Case(edited("INSERT INTO StringIds VALUES (2, 'my_kernel')"),
                                                  args=("--reader", "sqlite3"), check=counts(3, 15_000_000)),
    "duplicate-string-id-other-text": Case(edited("INSERT INTO StringIds VALUES (2, 'other_kernel')"),
                                           error=("StringIds holds 2 different strings for id 2",)),
    "lower-case-tables": Case(renamed_tables(), check=counts(3, 15_000_000)),
    "lower-case-tables-sqlite3": Case(renamed_tables(), args=("--reader", "sqlite3"), check=counts(3, 15_000_000)),
    "upper-case-columns": Case(renamed_tables(upper_columns=True), check=counts(3, 15_000_000)),
    "kernel-table-without-device-id": Case(edited("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN deviceId"),
                                           error=("CUPTI_ACTIVITY_KIND_KERNEL lacks its column deviceId",)),
    "strings-without-value": Case(edited("ALTER TABLE StringIds DROP COLUMN value"),
                                  error=("StringIds lacks its column value",)),
    "stale-header-page-count": Case(stale_page_count, check=counts(3, 15_000_000)),
    "hot-journal": Case(hot_journal, error=("unfinished transaction", "hot.sqlite-journal")),
    "committed-persist-journal": Case(with_journal(bytes(512)), check=counts(3, 15_000_000)),
    "empty-journal": Case(with_journal(b""), check=counts(3, 15_000_000)),
    "journal-is-a-fifo": Case(with_journal(None, fifo=True), error=("named good.sqlite-journal", "named pipe")),
    "journal-is-a-fifo-sqlite3": Case(with_journal(None, fifo=True), args=("--reader", "sqlite3"),
                                      error=("named good.sqlite-journal", "named pipe")),
    "header-change-counter-garbage": Case(header_edit(24, b"\xff\xff\xff\xff"), check=counts(3, 15_000_000)),
    # --- special files as input --------------------------------------------------------------
    "symlink-to-fifo": Case(link_to(fifo, "link.sqlite"), error=("named pipe", "cannot hold an export")),
    "socket": Case(unix_socket, error=("a socket",)),
    "character-device": Case(device, error=("character device",), needs_root=True),
    "directory-named-like-an-export": Case(lambda f: (f / "dir.sqlite").mkdir() or f / "dir.sqlite",
                                           error=("is a directory",)),
    "escape-in-missing-name": Case(lambda f: f / "\x1b]0;pwned\x07.sqlite", error=("no such file", "\\x1b]0;pwned\\x07"),
                                   names_input=False),
    "newline-in-missing-name": Case(lambda f: f / "two\nlines.sqlite", error=("two\\x0alines.sqlite", "no such file"),
                                    names_input=False),
    "escape-in-good-name": Case(lambda f: good(f, "\x1b[31mred\x1b[0m.sqlite"), check=counts(3, 15_000_000)),
    # --- outputs -----------------------------------------------------------------------------
    "output-fifo": Case(good, argv=lambda p, f: [p, "-o", fifo(f, "out.md")], error=("out.md", "named pipe", "-o -"),
                        names_input=False),
    "output-link-to-fifo": Case(good, argv=lambda p, f: [p, "-o", link_to(lambda g: fifo(g, "p"), "out.md")(f)],
                                error=("named pipe",), names_input=False),
    "output-device": Case(good, argv=lambda p, f: [p, "-o", device(f)], error=("character device",),
                          names_input=False, needs_root=True),
    "output-directory": Case(good, argv=lambda p, f: [p, "-o", f], error=("is a directory",), names_input=False),
    "output-dash-is-stdout": Case(good, argv=lambda p, f: [p, "-o", "-", "--format", "json"], check=counts(3)),
    # --- parameters --------------------------------------------------------------------------
    "set-overflowing-float": Case(good, argv=settle_set("gpu-idle-gaps.min_gap_ns=1e400"),
                                  error=("--set", "not a valid int"), names_input=False),
    "set-nan": Case(good, argv=settle_set("hot-kernels.min_share_pct=nan"), error=("not a valid float",),
                    names_input=False),
    "set-minus-infinity": Case(good, argv=settle_set("hot-kernels.min_share_pct=-inf"),
                               error=("not a finite number",), names_input=False),
    "set-negative-duration": Case(good, argv=settle_set("gpu-idle-gaps.min_gap_ns=-5"),
                                  error=("below the smallest allowed value 0 ns",), names_input=False),
    "set-share-above-100": Case(good, argv=settle_set("hot-kernels.min_share_pct=150"),
                                error=("above the largest allowed value 100 %",), names_input=False),
    "set-fraction-for-int": Case(good, argv=settle_set("gpu-idle-gaps.min_gap_ns=1.5"),
                                 error=("not a whole number",), names_input=False),
    "set-int-beyond-64-bits": Case(good, argv=settle_set(f"gpu-idle-gaps.min_gap_ns={10**30}"),
                                   error=("64-bit",), names_input=False),
    "set-good-values-still-work": Case(good, argv=settle_set("gpu-idle-gaps.min_gap_ns=2e6",
                                                             "hot-kernels.min_share_pct=99.5"), check=counts(3)),
    # --- environment -------------------------------------------------------------------------
    "memory-limit-injection": Case(good, env={"NSYS_DIAGNOSE_MEMORY_LIMIT": "500MB'; COPY (SELECT 1) TO 'pwned.csv'; --"},
                                   error=("NSYS_DIAGNOSE_MEMORY_LIMIT",), names_input=False),
    "memory-limit-word": Case(good, env={"NSYS_DIAGNOSE_MEMORY_LIMIT": "lots"}, error=("expected a size",),
                              names_input=False),
    "memory-limit-with-space": Case(good, env={"NSYS_DIAGNOSE_MEMORY_LIMIT": " 2 GB "}, check=counts(3)),
    "threads-superscript-digit": Case(good, env={"NSYS_DIAGNOSE_THREADS": "\u00b2"}, error=("NSYS_DIAGNOSE_THREADS",),
                                      names_input=False),
    "rule-timeout-infinite": Case(good, env={"NSYS_DIAGNOSE_RULE_TIMEOUT_S": "inf"},
                                  error=("NSYS_DIAGNOSE_RULE_TIMEOUT_S",), names_input=False),
    # --- rule folders ------------------------------------------------------------------------
    "rule-yaml-is-a-fifo": Case(rules_folder(yaml_special=os.mkfifo), argv=with_rules,
                                error=("r.yaml", "named pipe"), names_input=False),
    "rule-sql-is-a-fifo": Case(rules_folder(sql=None, sql_special=os.mkfifo), argv=with_rules,
                               error=("r.sql", "named pipe"), names_input=False),
    "rule-yaml-links-to-dev-zero": Case(rules_folder(yaml_special=lambda p: p.symlink_to("/dev/zero")),
                                        argv=with_rules, error=("r.yaml", "symbolic link to a file outside its folder"),
                                        names_input=False),
    "rule-yaml-of-two-megabytes": Case(rules_folder(RULE + "#" * (2 << 20) + "\n"), argv=with_rules,
                                       error=("r.yaml", "more than the 1,048,576 allowed"), names_input=False),
    "rule-default-not-a-number": Case(rules_folder(RULE + "params:\n  p: {type: float, default: .nan, unit: '%', "
                                                   "why: a default that is no number}\n"),
                                      argv=with_rules, error=("r.yaml:8", "params.p", "not a float"),
                                      names_input=False),
    "rule-default-out-of-range": Case(rules_folder(RULE + "params:\n  p: {type: int, default: -1, unit: ns, "
                                                   "why: a negative duration}\n"),
                                      argv=with_rules, error=("params.p", "below the smallest"), names_input=False),
    # --- command lines -----------------------------------------------------------------------
    "mistyped-command": Case(good, argv=lambda p, f: ["explian", "gpu-idle-gaps"],
                             error=("no command or file 'explian'", "nsys-diagnose explain"), names_input=False, raw=True),
    "mistyped-schema-command": Case(good, argv=lambda p, f: ["shema", "report"],
                                    error=("no command or file 'shema'", "nsys-diagnose schema"), names_input=False,
                                    raw=True),
    "unknown-word-and-missing-path": Case(good, argv=lambda p, f: ["frobnicate", "report"],
                                          error=("frobnicate, report: no such file or directory", "nothing was analyzed"),
                                          names_input=False, raw=True),
    "batch-with-one-missing-path": Case(good, argv=lambda p, f: [p, f / "typo.sqlite"],
                                        error=("typo.sqlite: no such file or directory",), names_input=False),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache for the cases (of one pytest-xdist worker): cases with the same bytes share an
    ingest, and every case checks that the cache holds no leftover afterwards."""
    return tmp_path_factory.mktemp("hostile-cache")


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input(name, tmp_path, monkeypatch, cache):
    case = CASES[name]
    if case.needs_root and not IS_ROOT:
        pytest.skip("making a device node needs root")
    folder, temp, cwd = (tmp_path / d for d in ("in", "tmp", "cwd"))
    for d in (folder, temp, cwd):
        d.mkdir()
    monkeypatch.chdir(cwd)  # a batch would write ./nsys-diagnose-out here
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # private temporary folders land here
    path = case.build(folder)
    argv = case.argv(path, folder) if case.argv else [path]
    before = snapshot(folder)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    # (one rule is enough here: the whole rule pack meets damaged data in test_fuzz.py)
    usual = [] if case.raw else ["--format", "json", "--fail-on", "never", "--cache-dir", cache, "--select", "hot-kernels"]
    r = call_cli(*argv, *case.args, *usual, timeout=30)
    if case.error is not None:
        assert_one_line_error(r, path if case.names_input else "", *case.error)
        assert "\x1b" not in r.stderr
    else:
        assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr[-2000:])
        doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
        assert not [x for x in doc["rules"] if x["status"] == "error"], [x["reason"] for x in doc["rules"]]
        if case.check:
            case.check(doc)
    assert snapshot(folder) == before, "the input folder changed"
    assert leftovers(cache) == [] and list(temp.iterdir()) == [] and list(cwd.iterdir()) == []


def test_a_fifo_in_a_batch_folder_is_an_error_row_not_a_hang(tmp_path):
    """The batch's content digest used to open every input before any check: a pipe named
    x.sqlite blocked the whole batch. Now it is a failed row, and the others are analyzed."""
    runs = tmp_path / "runs"
    runs.mkdir()
    good(runs, "a.sqlite")
    fifo(runs, "x.sqlite")
    out = tmp_path / "out"
    r = call_cli(runs, "-o", out, "-j", "1", "--cache-dir", tmp_path / "cache", "--fail-on", "never", timeout=30)
    assert r.returncode == 2 and "x.sqlite: is not a regular file (a named pipe (FIFO) cannot hold an export)" in r.stderr
    assert (out / "a.json").exists() and not (out / "x.json").exists()
    assert "1 analyzed, 1 failed" in r.stdout
