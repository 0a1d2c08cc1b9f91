"""Find rules on disk: every `<id>.yaml` with its `<id>.sql` beside it. No registry in code."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from nsys_diagnose.engine.model import Rule
from nsys_diagnose.engine.params import check_default
from nsys_diagnose.engine.rule_checks import check_rule, parse_whens
from nsys_diagnose.errors import RuleSpecError
from nsys_diagnose.files import NotRegularFile, TooLarge, read_regular
from pydantic import ValidationError

MAX_RULE_FILE_BYTES = 1 << 20  # a rule is a page of YAML and a SELECT; a bigger file is a mistake


def builtin_rules_dir() -> Path:
    return Path(str(resources.files("nsys_diagnose.rules")))


def line_of(node: yaml.Node, loc: tuple[str | int, ...]) -> int | None:
    """Line (1-based) of the YAML node at a pydantic error location, as deep as it resolves."""
    line: int = node.start_mark.line + 1
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == key]
            if not match:
                return line
            k, node = match[0]
            line = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _read(path: Path) -> str:
    """A rule file's text: a regular file (a pipe would block, a device never end), at most
    MAX_RULE_FILE_BYTES, UTF-8, and not a symbolic link out of its folder: a rule folder from
    elsewhere must not make an error message quote another file (its first token, its first line)."""
    if path.is_symlink() and not path.resolve().is_relative_to(path.parent.resolve()):
        raise RuleSpecError(path, "is a symbolic link to a file outside its folder; refusing to read it")
    try:
        return read_regular(path, MAX_RULE_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError as e:
        raise RuleSpecError(path, f"is not UTF-8 text (byte {e.start})") from None
    except (NotRegularFile, TooLarge) as e:
        raise RuleSpecError(path, e.strerror or str(e)) from None
    except OSError as e:
        raise RuleSpecError(path, f"cannot be read ({e.strerror or e})") from None


MAX_YAML_VALUES = 100_000  # far above any rule; far below what aliases can expand to


def _expanded_size(node: yaml.Node, memo: dict[int, int], open_: set[int]) -> int:
    """How many values the YAML holds once aliases (`*name`) are expanded, counted without
    expanding them: a few lines of nested aliases can stand for billions ("billion laughs")."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in open_:
        raise yaml.MarkedYAMLError(problem="an alias refers to a value that contains it",
                                   problem_mark=node.start_mark)
    open_.add(key)
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    else:
        children = []
    memo[key] = 1 + sum(_expanded_size(c, memo, open_) for c in children)
    open_.discard(key)
    return memo[key]


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(yaml_path: Path) -> tuple[Any, yaml.Node | None]:
    """A YAML file's value and its node tree (for line numbers), read as safely as a rule: a
    regular UTF-8 file, the safe loader, aliases expanding to at most MAX_YAML_VALUES values."""
    text = _read(yaml_path)
    # parsed once, into nodes, by libyaml where installed (a fifth of a cached run's time in
    # pure Python), then built from the nodes once their expanded size is known
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        # (an alias needs an anchor, `&name`: without one the values are the file's own)
        if node is not None and "&" in text and _expanded_size(node, {}, set()) > MAX_YAML_VALUES:
            raise RuleSpecError(yaml_path, f"expands to more than {MAX_YAML_VALUES:,} values through aliases", 1)
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = str(getattr(e, "problem", None) or e)
        if "nesting depth" in problem:  # newer libyaml's own limit: the same refusal as below
            problem = "nested too deeply"
        raise RuleSpecError(yaml_path, f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    except RecursionError:
        raise RuleSpecError(yaml_path, "invalid YAML: nested too deeply") from None
    finally:
        loader.dispose()
    return data, node


def load_rule(yaml_path: Path) -> Rule:
    rule, node = _parsed(yaml_path)
    check_rule(rule, yaml_path, lambda loc: line_of(node, loc))
    return rule


def _parsed(yaml_path: Path) -> tuple[Rule, yaml.Node]:
    """The rule of a YAML file and its node tree, checked against the model, not yet against
    the tables and the SQL forms (check_rule)."""
    data, node = read_yaml(yaml_path)
    if not isinstance(data, dict) or node is None:
        raise RuleSpecError(yaml_path, "a rule file must be a YAML mapping", 1)
    sql_path = yaml_path.with_suffix(".sql")
    if not sql_path.exists():
        raise RuleSpecError(yaml_path, f"missing its SQL file {sql_path.name}")
    try:
        rule = Rule(**data, sql=_read(sql_path), source=str(yaml_path))
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise RuleSpecError(yaml_path, f"{'.'.join(map(str, loc))}: {what}", line_of(node, loc)) from None
    for name, spec in rule.params.items():
        if problem := check_default(spec):
            raise RuleSpecError(yaml_path, f"params.{name}: {problem}", line_of(node, ("params", name)))
    if rule.id != yaml_path.stem:
        raise RuleSpecError(yaml_path, f"rule id '{rule.id}' must match the file name '{yaml_path.stem}'",
                            line_of(node, ("id",)))
    return rule, node


def load_rules(extra_dirs: list[Path] | tuple[Path, ...] = (), *, check: bool = True) -> dict[str, Rule]:
    """Built-in rules, then each extra folder in order; a later rule with the same id replaces
    the earlier one, so a team can tune a built-in rule without forking the package.
    check=False leaves check_rule to check_rules(), for a caller that may not run the rules:
    analyze() on a report cache hit (its key holds the rules, the code and the SQL library, so
    the rules of a hit passed the checks when its report was made)."""
    rules: dict[str, Rule] = {}
    for folder in [builtin_rules_dir(), *map(Path, extra_dirs)]:
        if not folder.is_dir():
            raise RuleSpecError(folder, "is not a folder of rules" if folder.exists() else "rules folder does not exist")
        seen: set[str] = set()
        paths = [path for path in sorted(folder.rglob("*.yaml"))  # (a folder named like a rule is not
                 if not any(part.startswith(("_", ".")) for part in path.relative_to(folder).parts)
                 and not path.is_dir()]  # one; a pipe or device is an error: _read)
        parsed = [(path, *_parsed(path)) for path in paths]
        if check:
            parse_whens([rule for _, rule, _ in parsed])  # the folder's `when`s parsed in one DuckDB call
        for path, rule, node in parsed:
            if check:
                check_rule(rule, path, functools.partial(line_of, node))
            if rule.id in seen:
                raise RuleSpecError(path, f"duplicate rule id '{rule.id}' in {folder}")
            seen.add(rule.id)
            rules[rule.id] = rule
    return rules


def check_rules(rules: Iterable[Rule]) -> None:
    """check_rule on rules loaded with check=False; a failure's line is read from its YAML again."""
    rules = list(rules)
    parse_whens(rules)
    for rule in rules:
        check_rule(rule, rule.source, functools.partial(_line_in, Path(rule.source)))


def _line_in(path: Path, loc: tuple[str | int, ...]) -> int | None:
    node = read_yaml(path)[1]
    return line_of(node, loc) if node is not None else None
