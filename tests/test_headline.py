"""The headline: at most 30 words, in the order a user acts on (verdict, cause and place, cost per
step, fix, gain), on every export we have; its parts come from the rules' YAML, checked at load."""

from __future__ import annotations

import re

import pytest
from nsys_diagnose.analyze import analyze
from nsys_diagnose.engine.catalog import load_rules
from nsys_diagnose.engine.headlines import parts as finding_parts
from nsys_diagnose.errors import RuleSpecError
from nsys_diagnose.headline import MAX_WORDS, compose, steady_of, verdict, words

from .conftest import FIXTURES, H200, PUBLIC
from .test_security import write_rule

EXPORTS = [*sorted((FIXTURES / "exports").glob("*.sqlite")), *sorted(H200.glob("*.sqlite")),
           *sorted(PUBLIC.glob("*.sqlite"))]


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_headline_is_short_and_in_the_order_a_user_acts_on(path):
    r = analyze(path)
    text = r.headline
    assert words(text) <= MAX_WORDS, text
    if text.startswith("No CUDA activity"):
        return
    lead = max(r.steady, key=lambda s: (s.busy_ns, s.window_ns), default=None)
    top = r.findings[0] if r.findings else None
    first = verdict(steady_of(top, r.steady, lead) if top else lead, r.metrics)
    if top is None or top.severity == "info":
        said = "No bottleneck found: " if r.coverage.status == "complete" else "Looked in part: "
        assert text.startswith(said), text
        assert first in text, text
        return
    assert text.startswith(f"{first}: "), text  # the verdict first
    rest = text[len(first) + 2:]
    cost = re.search(r", [\d.,]+ (ns|us|ms|s) (a step )?\(", rest)
    found = [(m.start(), name) for name, m in (("cost", cost), ("fix", re.search(r"\. Fix: ", rest)),
                                               ("gain", re.search(r"up to ([\d.]+x faster|[\d.]+ % shorter)", rest))) if m]
    assert [name for _, name in sorted(found)] == [name for _, name in found], text  # cost, fix, gain
    assert min((at for at, _ in found), default=len(rest)) > 0 and rest[:1].isalnum(), text  # the cause first
    assert len(re.split(r",|\. ", rest)[0]) < 100, text  # no 110-character kernel name
    assert not re.search(r"up to 1(\.0)?x faster", text), text  # a small gain is a share, not a factor of 1


def test_the_top_finding_of_a_known_cause_fills_every_part():
    r = analyze(FIXTURES / "exports" / "optimizer_launch_bound.sqlite")
    assert r.headline == (f'{verdict(r.steady[0], r.metrics)}: launch overhead in "optimizer", '
                          + r.headline.split('"optimizer", ')[1])
    assert re.search(r'a step \([\d.]+ %\)\. Fix: use a fused or foreach optimizer, steps up to [\d.]+x faster\.$',
                     r.headline), r.headline


def test_past_30_words_the_least_needed_parts_go_first():
    long = [("verdict", "Host-bound (GPU busy 5.0 %)"), ("cause", "a cause of five words"),
            ("where", 'in "a range with a long name"'), ("who", "(pid 12, GPU 3)"),
            ("cost", "1 ms a step (20.0 %)"), ("fix", "do this one thing of eight words"),
            ("gain", "steps up to 1.3x faster")]
    text = compose(long)
    assert words(text) <= MAX_WORDS and "(pid 12" not in text and "Fix: do this" in text
    assert compose(long[:2] + long[4:]) == ("Host-bound (GPU busy 5.0 %): a cause of five words, 1 ms a step "
                                            "(20.0 %). Fix: do this one thing of eight words, steps up to 1.3x faster.")


def test_a_rule_without_headline_words_gets_its_title_and_place():
    rule = load_rules()["launch-bound-loop"]
    spec = rule.findings[0].model_copy(update={"headline": None})
    bare = rule.model_copy(update={"advice": [p.model_copy(update={"headline": None}) for p in rule.advice]})
    got = finding_parts(bare, spec, {}, {"launch_idle_ns": 5})
    assert (got.cause, got.where, got.fix, got.cost_ns) == ("launch-bound loop", None, None, 5)
    placed = load_rules()["input-pipeline-stall"]
    spec = placed.findings[0].model_copy(update={"headline": None})
    assert finding_parts(placed, spec, {}, {"what": "Data Loading", "idle_ns": 7}).where == 'in "Data Loading"'


@pytest.mark.parametrize("headline, problem", [
    ('{cause: "one two three four five six seven"}', "7 words; a headline's cause holds at most 6"),
    ('{cause: "x {nope}"}', "'nope' is not among the rule's `columns:`"),
    ('{cause: "x", cost: nope}', "'nope' is not among the rule's `columns:`"),
])
def test_headline_parts_are_checked_at_load(tmp_path, headline, problem):
    path = write_rule(tmp_path / "r", "wordy", "SELECT 1 AS x", when="x > 0")
    path.write_text(path.read_text().replace("    message:", f"    headline: {headline}\n    message:"))
    with pytest.raises(RuleSpecError, match=re.escape(problem)):
        load_rules([tmp_path / "r"])
