"""Nothing we do may damage the input, and a rule pack from elsewhere cannot reach outside its data.

- The export is opened read-only: byte-identical afterwards, nothing created beside it, for both
  readers, with and without the cache.
- Outputs are written atomically and never over an input (same path, symlink, hard link).
- Rule SQL runs read-only with DuckDB's external access disabled: no file read or written, no
  ATTACH, no extension, no DDL, one SELECT only (a `when` cannot smuggle a second statement), and
  a runaway rule is interrupted. Rule YAML is loaded safely; errors name the file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import duckdb
import pytest
from nsys_diagnose.engine import runner as engine
from nsys_diagnose.engine.catalog import load_rule, load_rules
from nsys_diagnose.engine.runner import run_rule
from nsys_diagnose.errors import RuleSpecError, UsageError
from nsys_diagnose.ingest import environment
from nsys_diagnose.ingest.database import open_trace
from nsys_diagnose.ingest.reader import scanner_extension_path
from nsys_diagnose.output import refuse_overwriting_inputs, write_atomic

from .cli_harness import assert_one_line_error, call_cli, only_wrote, run_cli
from .conftest import FIXTURES

EXPORT = FIXTURES / "exports" / "dataloader_bound.sqlite"
CORE = ["gpu-idle-gaps", "cuda-api-overhead", "transfer-share", "hot-kernels"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file of a folder: content hash, mode and modification time."""
    return {p.name: (sha256(p), p.stat().st_mode, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def one_line_error(r, *needles: str) -> str:
    return assert_one_line_error(r, "", *needles)


# --- the input is never modified ---------------------------------------------------------------

@pytest.mark.parametrize("reader", ["scanner", "sqlite3"])
def test_input_is_byte_identical_and_alone(tmp_path, reader):
    """Hash, mode and mtime of the export unchanged, and no journal, WAL or lock file beside it,
    after a run without the cache, one that fills it and one that reads from it."""
    folder = tmp_path / "in"
    folder.mkdir()
    src = folder / "run.sqlite"
    shutil.copy2(EXPORT, src)
    src.chmod(0o444)  # for a non-root run, any attempt to open it for writing fails loudly
    before = snapshot(folder)
    cache = ["--cache-dir", tmp_path / "cache"]
    for args in (["--no-cache", "--format", "json", "-o", tmp_path / "r.json"], cache, cache):
        r = call_cli(src, "--reader", reader, *args, "--fail-on", "never")
        assert r.returncode == 0, r.stderr
    assert snapshot(folder) == before
    assert sha256(src) == sha256(EXPORT)
    assert json.loads((tmp_path / "r.json").read_text())["input"]["reader"] == reader
    assert len(list((tmp_path / "cache").glob("*.duckdb"))) == 1


def wal_copy(folder: Path, pending: bool) -> Path:
    """The export in WAL mode; with `pending`, plus a -wal file holding a change not yet
    checkpointed into it (copied while the writer still has it open)."""
    folder.mkdir()
    work = folder / "work.sqlite"
    shutil.copy(EXPORT, work)
    con = sqlite3.connect(work)
    con.execute("PRAGMA journal_mode = WAL")
    if pending:
        con.execute("PRAGMA wal_autocheckpoint = 0")
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
        con.commit()
        shutil.copy(work, folder / "wal.sqlite")
        shutil.copy(folder / "work.sqlite-wal", folder / "wal.sqlite-wal")
    con.close()
    if not pending:
        work.rename(folder / "wal.sqlite")
    else:
        for p in folder.glob("work.*"):
            p.unlink()
    return folder / "wal.sqlite"


@pytest.mark.parametrize("reader", ["auto", "scanner"])
def test_wal_mode_export_gets_no_sidecar_files(tmp_path, reader):
    """A database left in WAL mode: SQLite wants -wal and -shm files beside it for a plain
    read-only open. Those must never appear: auto reads it with the immutable sqlite3 reader and
    an explicit --reader scanner is refused in one line."""
    src = wal_copy(tmp_path / "in", pending=False)
    before = snapshot(src.parent)
    out = tmp_path / "r.json"
    r = call_cli(src, "--reader", reader, "--no-cache", "--format", "json", "-o", out, "--fail-on", "never")
    if reader == "scanner":
        one_line_error(r, str(src), "WAL mode", "--reader sqlite3")
    else:
        assert r.returncode == 0, r.stderr
        assert json.loads(out.read_text())["input"]["reader"] == "sqlite3"
    assert snapshot(src.parent) == before


def test_wal_with_pending_changes_is_refused(tmp_path):
    """Changes still in the -wal file cannot be applied by a read-only open: rather than a
    report that silently misses them, one line says how to fold them in."""
    src = wal_copy(tmp_path / "in", pending=True)
    assert (src.parent / "wal.sqlite-wal").stat().st_size > 0
    before = snapshot(src.parent)
    one_line_error(call_cli(src, "--no-cache"), str(src), "wal.sqlite-wal", "checkpoint")
    assert snapshot(src.parent) == before


# --- outputs: atomic, never over an input ------------------------------------------------------

@pytest.fixture
def export_copy(tmp_path) -> Path:
    path = tmp_path / "export.sqlite"
    shutil.copy(EXPORT, path)
    return path


def test_output_equal_to_input_is_refused(export_copy, tmp_path):
    """The same file by any name: the path itself, a symlink, a hard link, a path through '..',
    and the input named through a symlink; the input is untouched."""
    (tmp_path / "link.sqlite").symlink_to(export_copy)
    os.link(export_copy, tmp_path / "hard.sqlite")
    (tmp_path / "sub").mkdir()
    digest = sha256(export_copy)
    pairs = [(export_copy, export_copy), (tmp_path / "link.sqlite", export_copy),
             (tmp_path / "hard.sqlite", export_copy), (tmp_path / "sub" / ".." / "export.sqlite", export_copy),
             (export_copy, tmp_path / "link.sqlite"), (tmp_path / "hard.sqlite", tmp_path / "link.sqlite")]
    for out, given in pairs:
        with pytest.raises(UsageError, match="refusing to overwrite"):
            refuse_overwriting_inputs(out, [given])
    refuse_overwriting_inputs(tmp_path / "report.json", [export_copy])  # a new file is fine
    for out in (tmp_path / "hard.sqlite", tmp_path / "link.sqlite"):  # and through the CLI
        one_line_error(call_cli(export_copy, "--format", "json", "-o", out), "refusing to overwrite", str(out))
    assert sha256(export_copy) == digest and (tmp_path / "link.sqlite").is_symlink()


def test_output_is_replaced_by_rename(export_copy, tmp_path):
    """The report goes to a temporary file that is renamed over the old one: a reader holding
    the old file keeps reading it whole, and no temporary file is left behind."""
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    out.write_text("old report\n")
    held = out.open()
    old_inode = out.stat().st_ino
    r = call_cli(export_copy, "--format", "json", "-o", out, "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    assert out.stat().st_ino != old_inode and held.read() == "old report\n"
    held.close()
    assert json.loads(out.read_text())["schema_version"] == 5
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]


def test_failed_write_keeps_the_old_output(tmp_path, monkeypatch):
    out = tmp_path / "report.md"
    out.write_text("old\n")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(OSError) as err:
        write_atomic(out, "new\n")
    assert str(out) in str(err.value) and "No space left" in str(err.value)
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_unwritable_output_is_one_line(export_copy, tmp_path):
    one_line_error(call_cli(export_copy, "-o", tmp_path), str(tmp_path), "output path is a directory")
    out = export_copy.with_name("x") / "r.md"
    export_copy.with_name("x").write_text("a file where a folder is expected")
    one_line_error(call_cli(export_copy, "-o", out), str(out), "cannot be written")


# --- rule SQL is sandboxed ---------------------------------------------------------------------

def rule_yaml(rule_id: str, when: str | None = None, extra: str = "") -> str:
    findings = f"findings:\n  - when: {json.dumps(when)}\n    message: 'hit {{x}}'\n" if when else ""
    return (f"id: {rule_id}\ntitle: {rule_id}\ncategory: hostile\nseverity: error\nsummary: A hostile rule.\n"
            f"docs: {{what: tries to escape, why: to test the sandbox, fix: none}}\n"
            f"columns: {{x: a value, y: another value, b: bytes}}\n{findings}{extra}")


def write_rule(folder: Path, rule_id: str, sql: str, when: str | None = None, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{rule_id}.yaml").write_text(rule_yaml(rule_id, when, extra))
    (folder / f"{rule_id}.sql").write_text(sql)
    return folder / f"{rule_id}.yaml"


def hostile_sql(canary: Path) -> dict[str, str]:
    """Rule id -> a SELECT that would read outside the database: it loads, and the sandbox stops it."""
    return {
        "read-csv": "SELECT * FROM read_csv('/etc/passwd')",
        "read-text": "SELECT content AS x FROM read_text('/etc/passwd')",
        "read-blob": "SELECT content AS x FROM read_blob('/etc/passwd')",
        "replacement-scan": "SELECT * FROM '/etc/passwd'",
        "glob": "SELECT file AS x FROM glob('/*')",
        "read-export": f"SELECT * FROM sqlite_scan('{EXPORT}', 'StringIds')",
        "query-function": f"SELECT * FROM query('COPY (SELECT 1) TO ''{canary}/query.csv''')",
    }


def hostile_statements(canary: Path) -> dict[str, str]:
    """Rule id -> SQL that is not one SELECT: it would write, attach, load or change settings."""
    c = canary
    return {
        "copy-to": f"COPY (SELECT 1 AS x) TO '{c}/copy.csv'",
        "export-database": f"EXPORT DATABASE '{c}/dump'",
        "attach-file": f"ATTACH '{c}/evil.duckdb' AS evil",
        "attach-export": f"ATTACH '{EXPORT}' AS nsys (TYPE sqlite)",
        "attach-memory": "ATTACH ':memory:' AS scratch",
        "install": "INSTALL httpfs",
        "load": "LOAD httpfs",
        "load-wheel-binary": f"LOAD '{scanner_extension_path() or '/nonexistent.duckdb_extension'}'",
        "create-table": "CREATE TABLE stolen AS SELECT * FROM kernels",
        "create-temp": "CREATE TEMP TABLE scratch AS SELECT 1 AS x",
        "drop-table": "DROP TABLE kernels",
        "pragma": "PRAGMA database_list",
        "set": "SET threads = 1",
        "checkpoint": "CHECKPOINT",
        "multi-statement": f"SELECT 1 AS x; COPY (SELECT 1 AS x) TO '{c}/multi.csv'",
    }


def test_rules_that_are_not_one_select_do_not_load(tmp_path):
    """Refused when the rule loads, naming its .sql file: nothing of the folder runs."""
    canary = tmp_path / "canary"
    canary.mkdir()
    for name, sql in hostile_statements(canary).items():
        folder = tmp_path / name
        write_rule(folder, f"hostile-{name}", sql)
        with pytest.raises(RuleSpecError) as err:
            load_rules([folder])
        want = "must hold exactly one statement, found 2" if name == "multi-statement" else "must be a SELECT"
        assert str(err.value).startswith(f"{folder / f'hostile-{name}.sql'}: {want}"), str(err.value)
    r = call_cli(EXPORT, "--rules", tmp_path / "copy-to", "--fail-on", "never")
    one_line_error(r, f"{tmp_path / 'copy-to' / 'hostile-copy-to.sql'}: must be a SELECT, found COPY")
    assert list(canary.iterdir()) == []


def test_sandbox_refuses_what_the_loader_refuses(trace, tmp_path):
    """Defence in depth: the rule connection itself cannot run those statements either."""
    canary = tmp_path / "canary"
    canary.mkdir()
    for name, sql in hostile_statements(canary).items():
        if name in ("pragma", "set", "checkpoint", "create-temp"):
            continue  # they touch no file (a temp table is in memory); only the loader refuses them
        with pytest.raises(duckdb.Error):
            trace.con.execute(sql)
    assert list(canary.iterdir()) == []


SMUGGLE = "true) AS f FROM (SELECT 1) q; CREATE TEMP TABLE smuggled AS SELECT 1 AS x; SELECT (true"


def test_hostile_rule_folder(tmp_path):
    """A whole hostile folder through the CLI: each rule is `error` with its file in the reason,
    no file appears, the built-in rules run as usual, runaway rules are interrupted."""
    canary = tmp_path / "canary"
    canary.mkdir()
    folder = tmp_path / "hostile"
    ids = []
    for name, sql in hostile_sql(canary).items():
        write_rule(folder, f"hostile-{name}", sql)
        ids.append(f"hostile-{name}")
    write_rule(folder, "hostile-cross-join", "SELECT count(*) AS x FROM range(1000000) a, range(1000000) b")
    write_rule(folder, "hostile-recursion",
               "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT max(i) AS x FROM r")
    ids += ["hostile-cross-join", "hostile-recursion"]
    out = tmp_path / "r.json"
    started = time.monotonic()
    r = run_cli(EXPORT, "--rules", folder, "--format", "json", "-o", out, "--fail-on", "never",
                env={"NSYS_DIAGNOSE_RULE_TIMEOUT_S": "1"})
    assert r.returncode == 0 and only_wrote(r.stderr), r.stderr[-2000:]
    assert time.monotonic() - started < 45
    by_id = {x["id"]: x for x in json.loads(out.read_text())["rules"]}
    for rule_id in ids:
        result = by_id[rule_id]
        assert result["status"] == "error", (rule_id, result)
        assert result["reason"].startswith(str(folder / rule_id)), result["reason"]
        assert "\n" not in result["reason"]
    for rule_id in ("hostile-cross-join", "hostile-recursion"):
        assert "interrupted after 1 s" in by_id[rule_id]["reason"] and by_id[rule_id]["seconds"] < 10
    assert list(canary.iterdir()) == []
    for rule_id in CORE:
        assert by_id[rule_id]["status"] in ("fired", "passed"), by_id[rule_id]
    assert by_id["gpu-idle-gaps"]["status"] == "fired"


@pytest.fixture(scope="module")
def trace():
    t = open_trace(EXPORT, use_cache=False)
    yield t
    t.close()


def test_smuggled_statement_never_loads(trace, tmp_path):
    """A `when` that closes its parenthesis and starts a second statement is refused at load, with
    the YAML line; spliced in unchecked, DuckDB would have run all three statements."""
    path = write_rule(tmp_path, "smuggler", "SELECT 1 AS x", when=SMUGGLE)
    with pytest.raises(RuleSpecError) as err:
        load_rule(path)
    assert str(err.value) == f"{path}:9: findings.0.when: must be one SQL expression over the result columns"
    rule = load_rule(write_rule(tmp_path, "smuggler", "SELECT 1 AS x", when="x > 0"))
    spec = rule.findings[0].model_copy(update={"when": SMUGGLE})
    unchecked = rule.model_copy(update={"findings": [spec]})
    assert len(trace.con.extract_statements(engine._composed_sql(unchecked))) == 3  # the danger was real


@pytest.mark.parametrize("when, problem", [
    ("(SELECT max(x) FROM kernels) > 0", "subquery is not allowed"),
    ("sum(x) > 0", "function sum is not allowed"),
    ("x > 0 AND no_such > 1", "column 'no_such' is not among the rule's `columns:`"),
    ("x > $nope", "parameter $nope is not among the rule's `params:`"),
    ("kernels.x > 0", "column 'kernels.x' is not among"),
    ("x > 0) AS f, (1", "must be one SQL expression"),
    ("x > 0 -- comment", "not a SQL expression"),
    ("row_number() OVER () = 1", "is not allowed"),
    ("list_filter([x], v -> v > 0) = [1]", "is not allowed"),
])
def test_when_is_an_expression_over_the_columns(tmp_path, when, problem):
    path = write_rule(tmp_path, "w", "SELECT 1 AS x", when=when)
    with pytest.raises(RuleSpecError) as err:
        load_rule(path)
    assert str(err.value).startswith(f"{path}:9: findings.0.when: ") and problem in str(err.value), str(err.value)


def test_rule_connection_is_read_only_and_closed_to_files(trace):
    settings = dict(trace.con.execute(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
        "'autoload_known_extensions', 'autoinstall_known_extensions', 'access_mode')").fetchall())
    assert settings == {"enable_external_access": "false", "autoload_known_extensions": "false",
                        "autoinstall_known_extensions": "false", "access_mode": "read_only"}


def test_timeout_is_configurable_and_validated(monkeypatch):
    monkeypatch.delenv("NSYS_DIAGNOSE_RULE_TIMEOUT_S", raising=False)
    assert environment.rule_timeout_s() == environment.RULE_TIMEOUT_S
    monkeypatch.setenv("NSYS_DIAGNOSE_RULE_TIMEOUT_S", "2.5")
    assert environment.rule_timeout_s() == 2.5
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("NSYS_DIAGNOSE_RULE_TIMEOUT_S", bad)
        with pytest.raises(UsageError, match="NSYS_DIAGNOSE_RULE_TIMEOUT_S"):
            environment.rule_timeout_s()


def test_runaway_result_is_cut(trace, tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "MAX_RULE_ROWS", 1000)
    rule = load_rule(write_rule(tmp_path, "flood", "SELECT range AS x FROM range(5000)"))
    result = run_rule(trace.con, rule, {}, trace.captured)
    assert result.status == "error" and "more than 1,000 result rows" in result.reason


def test_failing_rules_are_errors_and_the_others_run(tmp_path):
    """SQL that fails to bind, a template that fails on a value: each is `error`, naming its file
    (and the SQL line where DuckDB gives one); every other rule still runs."""
    folder = tmp_path / "broken"
    write_rule(folder, "bad-column", "\n-- leading comment\nSELECT count(*) AS x\nFROM kernels\nWHERE no_such > 1\n")
    write_rule(folder, "bad-format", "SELECT 'text' AS x")
    (folder / "bad-format.yaml").write_text(rule_yaml("bad-format").replace(
        "docs:", "findings: [{when: 'true', message: '{x:dur}'}]\ndocs:"))
    write_rule(folder, "infinite-impact", "SELECT 'inf'::DOUBLE AS x, 'nan'::DOUBLE AS y, '\\xFF'::BLOB AS b")
    (folder / "infinite-impact.yaml").write_text(rule_yaml("infinite-impact").replace(
        "docs:", "findings: [{when: 'true', message: 'impact {x:dur}, {y}', impact_ns: x}]\ndocs:"))
    out = tmp_path / "r.json"
    r = call_cli(EXPORT, "--rules", folder, "--format", "json", "-o", out, "--fail-on", "never")
    assert r.returncode == 0 and only_wrote(r.stderr), r.stderr
    text = out.read_text()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    by_id = {x["id"]: x for x in doc["rules"]}
    assert by_id["bad-column"]["status"] == "error"
    assert by_id["bad-column"]["reason"].startswith(f"{folder / 'bad-column.sql'}:5: Binder Error")
    assert by_id["bad-format"]["status"] == "error"
    # values JSON cannot carry (inf, NaN, raw bytes) become null / text, not a broken report
    assert by_id["infinite-impact"]["status"] == "fired"
    assert by_id["infinite-impact"]["rows"] == [{"x": None, "y": None, "b": "\\xff"}]
    for rule_id in CORE:
        assert by_id[rule_id]["status"] in ("fired", "passed")
    md = call_cli(EXPORT, "--rules", folder, "--fail-on", "never")
    assert md.returncode == 0 and "`bad-column` error: " in md.stdout  # a broken rule shows without --verbose


# --- rule YAML is loaded safely; errors name the file and line --------------------------------

def yaml_error(tmp_path: Path, text: str, sql: str = "SELECT 1 AS x") -> RuleSpecError:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / "r.yaml").write_text(text) if isinstance(text, str) else (folder / "r.yaml").write_bytes(text)
    (folder / "r.sql").write_bytes(sql if isinstance(sql, bytes) else sql.encode())
    with pytest.raises(RuleSpecError) as err:
        load_rules([folder])
    return err.value


def test_python_tags_are_rejected(tmp_path):
    canary = tmp_path / "pwned"
    for tag in (f"!!python/object/apply:os.system ['touch {canary}']", "!!python/name:os.system",
                f"!!python/object/new:subprocess.Popen [['touch', '{canary}']]"):
        err = yaml_error(tmp_path, rule_yaml("r").replace("title: r", f"title: {tag}"))
        assert err.line == 2 and "could not determine a constructor" in str(err), str(err)
    assert not canary.exists()


def test_yaml_syntax_error_names_the_line(tmp_path):
    err = yaml_error(tmp_path, rule_yaml("r").replace("summary: A hostile rule.", "summary: [unclosed"))
    assert err.path.endswith("r.yaml") and err.line in (5, 6) and "invalid YAML" in str(err)


def test_unknown_keys_name_the_line(tmp_path):
    err = yaml_error(tmp_path, rule_yaml("r") + "sevrity: info\n")
    assert (err.line, "unknown key" in str(err)) == (8, True)
    err = yaml_error(tmp_path, rule_yaml("r") + "params:\n  p: {type: int, default: 1, unit: ns, why: long enough reason,"
                     " dflt: 2}\n")
    assert err.line == 9 and "params.p.dflt: unknown key" in str(err)
    err = yaml_error(tmp_path, rule_yaml("r").replace("severity: error", "severity: fatal"))
    assert err.line == 4 and "severity" in str(err)


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = [rule_yaml("r").rstrip("\n"), "params:", "  p0: {type: list, unit: '-', why: a bomb of a default, "
             "default: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]}"]
    lines += [f"  p{i}: {{type: list, unit: '-', why: a bomb of a default, default: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9)
              + "]}" for i in range(1, 10)]
    started = time.monotonic()
    err = yaml_error(tmp_path, "\n".join(lines) + "\n")
    assert "expands to more than" in str(err) and time.monotonic() - started < 5
    err = yaml_error(tmp_path, rule_yaml("r").replace("title: r", "title: &t [a, *t]"))
    assert "contains it" in str(err)
    err = yaml_error(tmp_path, rule_yaml("r").replace("title: r", "title: " + "[" * 3000 + "]" * 3000))
    assert "nested too deeply" in str(err)


def test_small_aliases_are_fine(tmp_path):
    folder = tmp_path / "ok"
    write_rule(folder, "ok", "SELECT 1 AS x")
    (folder / "ok.yaml").write_text(rule_yaml("ok").replace(
        "docs:", "findings:\n  - &f {when: 'x > 1', message: 'big {x}'}\n  - {<<: *f, when: 'x < 0'}\ndocs:"))
    assert [f.when for f in load_rules([folder])["ok"].findings] == ["x > 1", "x < 0"]


def test_other_bad_rule_files(tmp_path):
    assert "not UTF-8" in str(yaml_error(tmp_path, b"id: r\ntitle: caf\xe9\n"))
    assert "r.sql: is not UTF-8" in str(yaml_error(tmp_path, rule_yaml("r"), sql=b"SELECT 1 AS \xff"))
    assert "must be a YAML mapping" in str(yaml_error(tmp_path, "- a list\n"))
    assert "must match the file name" in str(yaml_error(tmp_path, rule_yaml("other")))
    (tmp_path / "rules" / "r.sql").unlink()
    (tmp_path / "rules" / "r.yaml").write_text(rule_yaml("r"))
    with pytest.raises(RuleSpecError, match="missing its SQL file r.sql"):
        load_rules([tmp_path / "rules"])
    (tmp_path / "rules" / "dir.yaml").mkdir()  # a folder named like a rule is not one
    (tmp_path / "rules" / "r.sql").write_text("SELECT 1 AS x")
    assert "r" in load_rules([tmp_path / "rules"])
    with pytest.raises(RuleSpecError, match="is not a folder of rules"):
        load_rules([tmp_path / "rules" / "r.yaml"])


def test_rule_errors_reach_the_cli_as_one_line(tmp_path):
    folder = tmp_path / "rules"
    write_rule(folder, "r", "SELECT 1 AS x")
    (folder / "r.yaml").write_text(rule_yaml("r") + "oops: [\n")
    for args in (["rules"], [EXPORT], ["explain", "r"]):
        one_line_error(call_cli(*args, "--rules", folder), f"{folder / 'r.yaml'}:")
