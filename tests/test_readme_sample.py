"""The README's sample output is a real run of its command on an export in fixtures/exports/, so it
never goes stale: this test fails when a fresh run differs, and

    python -m tests.test_readme_sample

rewrites the sample from a fresh run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- sample: nsys-diagnose (?P<args>[^(]+?) \(.*?-->\n```text\n)(?P<sample>.*?)(```\n<!-- end of sample -->)",
                   re.S)


def fresh_sample(args: str) -> str:
    """The command's Markdown report, as a pipe gets it, from its start to its first finding's end."""
    from .cli_harness import call_cli

    r = call_cli(*args.split(), "--fail-on", "never", timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    second = next((i for i, line in enumerate(lines) if line.startswith("2. ")), len(lines))
    return "\n".join(lines[:second]) + "\n"


def test_the_readme_sample_is_a_fresh_run():
    match = BLOCK.search(README.read_text(encoding="utf-8"))
    assert match, "README.md lost its sample block"
    assert (ROOT / match["args"].split()[0]).is_file(), "the sample's export must be in the repository"
    assert match["sample"] == fresh_sample(match["args"]), (
        "README.md's sample differs from a fresh run: refresh it with `python -m tests.test_readme_sample`")


def refresh() -> None:
    text = README.read_text(encoding="utf-8")
    match = BLOCK.search(text)
    new = text[: match.start("sample")] + fresh_sample(match["args"]) + text[match.end("sample"):]
    README.write_text(new, encoding="utf-8")
    print(f"{README}: sample {'unchanged' if new == text else 'refreshed'}", file=sys.stderr)


if __name__ == "__main__":
    refresh()
