from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
H200 = SHARED / "exports" / "h200-nsys2025.3"
PUBLIC = SHARED / "exports" / "public"
FIXTURES = ROOT / "fixtures"


# Every ingest writes a DuckDB file and checkpoints it: on a disk, its fsyncs are most of a small
# export's ingest (0.65 s of it, 0.23 s on tmpfs). Unless $TMPDIR names a place, the run's
# temporary folders (pytest's tmp_path, the shared ingest cache below, the private folders of
# --no-cache runs, in this process, its pytest-xdist workers and every CLI process they start) go
# to /dev/shm where it is a writable tmpfs with room. What is written is the same either way; a
# passing run's base folder is removed at its end (pytest_sessionfinish below), since it is memory.
IN_MEMORY = "/dev/shm"
if (not os.environ.get("TMPDIR") and os.path.isdir(IN_MEMORY) and os.access(IN_MEMORY, os.W_OK | os.X_OK)
        and shutil.disk_usage(IN_MEMORY).free > 4 << 30):
    os.environ["TMPDIR"] = IN_MEMORY
    tempfile.tempdir = None  # tempfile reads $TMPDIR again on its next use


def pytest_sessionfinish(session, exitstatus):
    """A passing run's base folder in memory is removed (the controller's, which holds the
    workers' folders and the shared cache); a failing run's stays for a look, as pytest keeps
    its last three. Per-test folders are kept until then: a removed folder's name would be given
    to the next test, which could then meet a cache entry of the same path."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    base = getattr(factory, "_basetemp", None)
    if (exitstatus == 0 and base is not None and not hasattr(session.config, "workerinput")
            and session.config.option.basetemp is None and str(base).startswith(IN_MEMORY + os.sep)):
        shutil.rmtree(base, ignore_errors=True)


# pytest-xdist runs one worker per core: each worker's DuckDB (and the CLIs it starts) then
# keeps to one thread, instead of every worker running a thread per core (20% more CPU).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("NSYS_DIAGNOSE_THREADS", "1")


def _memoize_builtin_rule_files() -> None:
    """Each analysis, in-process CLI run and batch job loads the rule catalog again: 0.2 s of
    pure-Python YAML parsing, hundreds of times a run. The built-in rule files never change during
    a run, so each is parsed and checked once per process (by the real load_rule) and handed out as
    a deep copy: every caller still gets its own Rule objects, equal to a fresh load. Files outside
    the built-in folder (user, team and hostile rules that the tests write and edit) are always
    read afresh, and a failed load is never remembered."""
    from nsys_diagnose.engine import catalog

    builtin = catalog.builtin_rules_dir().resolve()
    real = catalog.load_rule
    memo: dict[tuple, object] = {}

    def stamp(p: Path) -> tuple:
        st = p.stat()
        return st.st_ino, st.st_size, st.st_mtime_ns

    @functools.wraps(real)
    def load_rule(yaml_path):
        path = Path(yaml_path)
        try:
            if builtin not in path.resolve().parents:
                return real(yaml_path)
            key = (str(yaml_path), stamp(path), stamp(path.with_suffix(".sql")))
        except OSError:
            return real(yaml_path)
        if key not in memo:
            memo[key] = real(yaml_path)
        return memo[key].model_copy(deep=True)

    catalog.load_rule = load_rule


_memoize_builtin_rule_files()


def scenario_file(name: str) -> Path:
    """A built-in rule's scenario by 'rule-id/scenario': rules/<category>/_fixtures/<rule-id>/<scenario>.yaml."""
    found = list(ROOT.glob(f"rules/*/_fixtures/{name}.yaml"))
    assert len(found) == 1, f"no scenario {name} beside the built-in rules"
    return found[0]


def h200_names() -> list[str]:
    return sorted(p.stem for p in H200.glob("*.sqlite")) if H200.is_dir() else []


@pytest.fixture(scope="session")
def empty_trace(tmp_path_factory):
    """An export with no events, ingested once per test process (its connection is read-only):
    every library table, empty."""
    from nsys_diagnose.ingest.database import open_trace

    from .synth import write_export

    path = write_export({"StringIds": [{"id": 1, "value": "k"}]}, tmp_path_factory.mktemp("e") / "e.sqlite")
    trace = open_trace(path, use_cache=False)
    yield trace
    trace.close()


# Tests that read the shared corpus (../shared/exports/, beside the clone: the H200 exports and the
# public ones) carry this mark. A fresh clone has no ../shared: they are left out at collection,
# and one line of the summary says how many, instead of a skip each (tests/conftest.py hooks below).
needs_shared = pytest.mark.shared_corpus
HAS_SHARED = H200.is_dir() and PUBLIC.is_dir()
LEFT_OUT = pytest.StashKey[int]()


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_corpus: reads ../shared/exports (left out where it is absent)")
    # the corpus exports are kept packed (tests/fixture_exports.py): unpacked before any test
    # module globs them at collection
    from .fixture_exports import unpack

    unpack()


def pytest_collection_modifyitems(session, config, items):
    left = [] if HAS_SHARED else [i for i in items if i.get_closest_marker("shared_corpus")]
    if left:
        kept = set(map(id, left))
        items[:] = [i for i in items if id(i) not in kept]
        config.hook.pytest_deselected(items=left)
    config.stash[LEFT_OUT] = len(left)
    if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the controller prints the line
        config.workeroutput["shared_left_out"] = len(left)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: each worker collected the same tests; its count reaches the controller here."""
    count = getattr(node, "workeroutput", {}).get("shared_left_out", 0)
    node.config.stash[LEFT_OUT] = max(node.config.stash.get(LEFT_OUT, 0), count)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    count = config.stash.get(LEFT_OUT, 0)
    if count:
        terminalreporter.write_line(f"{count} tests read the shared corpus ({SHARED / 'exports'}), which is not "
                                    "here: left out (every other test ran)")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Every test gets one cache folder for the whole run, never the user's. The pytest-xdist
    workers of a run share it (their base folders have one parent), so each export is ingested
    once per run, not once per worker; the cache's atomic renames make that safe. Set for the
    session, before any module's fixture opens an export (a per-test setting came after them,
    and those fixtures filled the user's ~/.cache/nsys-diagnose); a test's own monkeypatch of
    the variable is undone back to this value."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NSYS_DIAGNOSE_CACHE_DIR", str(shared / "cache"))
        yield
