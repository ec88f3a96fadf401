"""Doctests are tests: the examples in a module's docstrings, which a runner collects as tests of the base
(`pytest --doctest-modules`), live in the code the work changes. Where the repository runs them, every example
of the base's docstrings (what it runs and what it expects) must still be there as it was, unless the task
names the module (`[scope] test-edits`): editing an expectation is editing a test."""

from __future__ import annotations

import ast
import re
from collections import Counter

from runtime.verify.kinds.findings import Finding, cut
from runtime.verify.kinds.kind import Gathering

_DOCTEST_CONFIG = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", ".pytest.ini")


def runs_doctests(command: str, gathering: Gathering) -> bool:
    """Whether the repository's tests include the doctests of its modules: the test command asks for them, or
    the base's pytest configuration does."""
    if "doctest" in command:
        return True
    return any("doctest" in (text or "") for text in gathering.base_texts(_DOCTEST_CONFIG).values())


def doctest_findings(command: str, gathering: Gathering, tests: re.Pattern[str] | None,
                     edits: re.Pattern[str] | None) -> list[Finding]:
    """The doctests of the base's modules (outside the test side, beyond the task's test edits) that the work
    changed or removed, where the repository runs its doctests."""
    candidates = [c for c in gathering.changes if c.kind != "added" and (c.old_path or c.path).endswith(".py")
                  and not (tests is not None and tests.match(c.old_path or c.path))
                  and not (edits is not None and edits.match(c.old_path or c.path))]
    if not candidates or not runs_doctests(command, gathering):
        return []
    out: list[Finding] = []
    for change in candidates:
        old = change.old_path or change.path
        out += doctest_edits(change.path, gathering.base_text(old),
                             None if change.kind == "deleted" else gathering.text(change.path))
    return out


def doctest_edits(path: str, before: str | None, after: str | None) -> list[Finding]:
    """The doctests of the base's module ``path`` (each docstring's examples: what they run and what they
    expect) that the work changed or removed: a doctest the base had is a test the base had."""
    if before is None:
        return []
    was = _examples(before)
    if was is None:
        return []
    now = _examples(after) if after is not None else None
    if now is None:
        return [Finding(path=path, what="the module holding doctests of the base no longer parses or was deleted")] \
            if was else []
    gone = was - now
    return [Finding(path=path, what=f"a doctest of the base in `{where}` was changed or removed",
                    text=cut(f">>> {source.strip()} -> {want.strip() or '(nothing)'}"))
            for where, source, want in sorted(gone.elements())]


def _examples(text: str) -> Counter[tuple[str, str, str]] | None:
    import doctest

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    out: Counter[tuple[str, str, str]] = Counter()
    parser = doctest.DocTestParser()
    for node, name in _documented(tree, ""):
        doc = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
        if not doc or ">>>" not in doc:
            continue
        try:
            examples = parser.get_examples(doc)
        except ValueError:
            continue
        out.update((name or "the module", e.source, e.want) for e in examples)
    return out


def _documented(node: ast.AST, prefix: str) -> list[tuple[ast.AST, str]]:
    out: list[tuple[ast.AST, str]] = [(node, prefix)] if isinstance(node, ast.Module) else []
    for child in getattr(node, "body", []):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            out.append((child, name))
            out += _documented(child, name + ".")
    return out


