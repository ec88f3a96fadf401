"""tests-protected: the base's tests are the task's yardstick; the work adds tests, it does not change them.

A test file the base had (by the repository's conventions, the ``globs`` parameter) may be changed,
renamed or deleted only where the task says so (``may-change``: the task's `[scope] test-edits`). Adding
tests stays free: a new test file, and new tests in an existing one, as long as every test the base had
stays exactly as it was:

- Python, read as code: every function and class of the base file (its decorators included) must be
  there unchanged and defined once; every other statement of the base at the top of the file or a class
  must still be there; new statements may define new names (a fixture, a constant for the new tests) but
  not rebind a name of the base, and no new top-level call (a monkeypatch) may be added.
- Other languages, read as text: the change may only insert lines, each inserted run balanced in its
  brackets, either outside every block of the base file or as a new test declaration (`it(`, `test(`,
  `describe(`, `#[test]`, `func Test`) right inside a top-level block (a `describe`): never inside an
  existing test's body.

(A doctest is a test too, in a module of the code: `runtime.verify.kinds.doctests`, judged with the tests.)

Changes the task allows pass and are listed apart (``edits``), so a reviewer reads them first.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.verify.kinds.base import MalformedInput, compile_globs, take_str_list
from runtime.verify.kinds.findings import Finding, Findings, cut, where
from runtime.verify.kinds.kind import Gathering, Kind
from runtime.verify.kinds.result import VerifyResult, passed, rejected

if TYPE_CHECKING:
    from runtime.lang.jsontypes import JSONObject

_COMMENT = re.compile(r"^\s*(?://|#(?!\[)|/\*|\*)")
# What may open a new run of lines outside every block of the base's file: an import, a helper, a type, a
# constant (`jest.mock(...)` or a hook at the top of a file changes the base's tests, and is none of these).
_TOP_LEVEL = re.compile(r"^\s*(?:import\b|from\b|const\b|let\b|var\b|function\b|async\s+function\b|class\b|"
                        r"export\b|use\b|fn\b|pub\b|mod\b|struct\b|enum\b|impl\b|type\b|func\b|#\[)")
_DECLARATION = re.compile(r"^\s*(?:(?:it|test|describe|context|suite|specify)(?:\.(?:each|only|skip|todo|concurrent)\S*)?\s*\(|"
                          r"#\[(?:tokio::)?test\b|func Test\w*\(|func Benchmark\w*\(|func Example\w*\(|func Fuzz\w*\()")


@dataclass(frozen=True, slots=True)
class TestsProtectedParams:
    """tests-protected: the base's test files (``globs``: only the gatherer needs them, so a judge of stated
    findings reads none), and those the task lets change."""

    __test__ = False
    globs: tuple[str, ...] | None
    may_change: tuple[str, ...]

    @classmethod
    def read(cls, data: JSONObject) -> TestsProtectedParams:
        return cls(tuple(take_str_list(data, "globs", "parameter")) if "globs" in data else None,
                   tuple(take_str_list(data, "may-change", "parameter")))


async def gather(params: TestsProtectedParams, gathering: Gathering) -> Findings:
    if params.globs is None:
        raise MalformedInput("parameter `globs` is missing")
    tests = compile_globs(params.globs)
    findings: list[Finding] = []
    if tests is None:
        return Findings(findings=[])
    for change in gathering.changes:
        old = change.old_path or change.path
        if change.kind == "added" or not tests.match(old):
            continue
        if change.kind == "deleted":
            findings.append(Finding(path=old, what="a test file of the base was deleted"))
        elif change.kind == "renamed":
            findings.append(Finding(path=old, what=f"a test file of the base was renamed to `{change.path}`"))
        elif change.kind != "modified":
            findings.append(Finding(path=change.path, what=f"a test file of the base was replaced ({change.kind})"))
        else:
            before, after = gathering.base_text(old), gathering.text(change.path)
            if before is None or after is None:
                findings.append(Finding(path=change.path, what="a test file of the base was changed"))
            elif change.path.endswith(".py"):
                findings += python_edits(change.path, before, after)
            else:
                findings += text_edits(change.path, before, after)
    return Findings(findings=findings)


def tests_protected(params: TestsProtectedParams, evidence: Findings) -> VerifyResult:
    may = compile_globs(params.may_change)
    allowed = [f for f in evidence.findings if may is not None and may.match(f.path)]
    left = [f for f in evidence.findings if f not in allowed]
    edits = sorted({f.path for f in allowed})
    if not left:
        note = f"; the task lets these test files change, and they did: {', '.join(edits)}" if edits else ""
        return passed("the base's tests are unchanged" + note, {"edits": edits}, edits=edits)
    paths = sorted({f.path for f in left})
    lines = [f"- `{where(f)}`: {f.what}" + (f" (`{f.text}`)" if f.text else "") for f in left[:20]]
    more = [f"- ... and {len(left) - 20} more"] if len(left) > 20 else []
    return rejected(
        f"You changed the base's tests ({', '.join(f'`{p}`' for p in paths[:5])}{' ...' if len(paths) > 5 else ''}), "
        "which this task does not allow: the tests the base has are what the work is judged by.\n"
        + "\n".join(lines + more)
        + "\nRestore them as they were and make the code pass them. New tests are welcome: add them in a new file or "
        "as new tests beside the old ones. If an existing test is wrong, say so in your report; a person can let the "
        "task change it (`[scope] test-edits`).", {"files": len(paths)}, edits=edits)


def python_edits(path: str, before: str, after: str) -> list[Finding]:
    """What the work changed of the base's Python test file, beyond adding tests (see the module's docstring)."""
    try:
        old = ast.parse(before)
    except SyntaxError:
        return [Finding(path=path, what="a test file of the base was changed (it did not parse at the base)")]
    try:
        new = ast.parse(after)
    except SyntaxError as exc:
        return [Finding(path=path, line=exc.lineno or 0, what="the test file no longer parses")]
    return _body_edits(path, old.body, new.body, "")


def _body_edits(path: str, old: list[ast.stmt], new: list[ast.stmt], scope: str) -> list[Finding]:
    findings: list[Finding] = []
    old_defs = {s.name: s for s in old if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    new_defs: dict[str, list[ast.stmt]] = {}
    for s in new:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            new_defs.setdefault(s.name, []).append(s)
    for name, was in old_defs.items():
        qual = f"{scope}{name}"
        now = new_defs.get(name, [])
        if not now:
            findings.append(Finding(path=path, what=f"`{qual}` of the base was removed or renamed"))
            continue
        if len(now) > 1:
            findings.append(Finding(path=path, line=now[-1].lineno, what=f"`{qual}` is defined again, replacing the base's"))
        current = now[0]
        if isinstance(was, ast.ClassDef) and isinstance(current, ast.ClassDef):
            if _header(was) != _header(current):
                findings.append(Finding(path=path, line=current.lineno, what=f"the class `{qual}` of the base was changed"))
            findings += _body_edits(path, was.body, current.body, f"{qual}.")
        elif ast.dump(was) != ast.dump(current):
            findings.append(Finding(path=path, line=current.lineno, what=f"`{qual}` of the base was changed"))
    others_old = Counter(ast.dump(s) for s in old if s.__class__ not in _DEFS)
    others_new = Counter(ast.dump(s) for s in new if s.__class__ not in _DEFS)
    if others_old - others_new:
        findings.append(Finding(path=path, what=f"a statement of the base{' in `' + scope[:-1] + '`' if scope else ''} "
                                              "was changed or removed"))
    bound = _bound_names(old)
    for name, defs in new_defs.items():
        if name not in old_defs and name in bound:
            findings.append(Finding(path=path, line=defs[0].lineno, what=f"`{scope}{name}` is defined anew, replacing "
                                                                        "what the base's tests use under that name"))
    for s in new:
        if s.__class__ in _DEFS:
            if _autouse(s):
                findings.append(Finding(path=path, line=s.lineno, what=f"the new fixture `{scope}{s.name}` is autouse: it "
                                                                      "runs around the base's tests too"))
            continue
        if others_old[ast.dump(s)] > 0:
            others_old[ast.dump(s)] -= 1
            continue
        if isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
            continue  # a docstring
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)) and not (_targets(s) & bound) \
                and not _assigns_into(s):
            continue  # an import or a name for the new tests, binding nothing the base's tests use
        findings.append(Finding(path=path, line=s.lineno, what="new code runs in the base's test file beside its tests "
                                                              "(it could change what they do)",
                                text=cut(ast.unparse(s).splitlines()[0] if ast.unparse(s) else "")))
    return findings


def _autouse(s: ast.stmt) -> bool:
    """A fixture that runs around every test of its scope without being asked for (`autouse=True`)."""
    decorators = getattr(s, "decorator_list", [])
    return any(isinstance(k, ast.keyword) and k.arg == "autouse" and not (isinstance(k.value, ast.Constant)
               and k.value.value is False) for d in decorators if isinstance(d, ast.Call) for k in d.keywords)


def _assigns_into(s: ast.stmt) -> bool:
    """An assignment into an attribute or an item (`calc.mean = ...`): it changes something else, a module's
    function the base's tests call."""
    targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
    return any(isinstance(n, (ast.Attribute, ast.Subscript)) for t in targets for n in ast.walk(t))


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _header(cls: ast.ClassDef) -> str:
    return ast.dump(ast.Module(body=[], type_ignores=[])) + cls.name + "".join(
        ast.dump(n) for n in (*cls.bases, *cls.keywords, *cls.decorator_list))


def _targets(s: ast.stmt) -> set[str]:
    """The names a statement binds: an assignment's, an import's."""
    if isinstance(s, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in s.names}
    targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _bound_names(body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    for s in body:
        if isinstance(s, _DEFS):
            names.add(s.name)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            names |= _targets(s)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in s.names}
    return names


def text_edits(path: str, before: str, after: str) -> list[Finding]:
    """What the work changed of the base's test file (not Python), beyond inserting new tests."""
    import difflib

    old, new = before.splitlines(), after.splitlines()
    depth = _depths(old)
    findings: list[Finding] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "insert":
            findings.append(Finding(path=path, line=j1 + 1 if j2 > j1 else 0,
                                    what=f"lines {i1 + 1}-{i2} of the base's test file were changed or removed",
                                    text=cut(old[i1]) if i1 < len(old) else ""))
            continue
        inserted = new[j1:j2]
        at = depth[i1] if i1 < len(depth) else 0
        first = next((line for line in inserted if line.strip() and not _COMMENT.match(line)), "")
        balanced = _balance("\n".join(inserted)) == 0
        if all(not line.strip() or _COMMENT.match(line) for line in inserted):
            continue  # comments and blank lines
        if balanced and (_DECLARATION.match(first) and at <= 1 or at == 0 and _TOP_LEVEL.match(first)):
            continue
        findings.append(Finding(path=path, line=j1 + 1, what="lines were inserted inside an existing block of the base's "
                                                            "test file (a test's body)", text=cut(first)))
    return findings


def _depths(lines: list[str]) -> list[int]:
    """The block depth (braces: a `describe`'s body, a test's body, a `mod tests`) before each line, and after
    the last."""
    out, depth = [], 0
    for line in lines:
        out.append(depth)
        bare = _STRING.sub("", line)
        depth = max(0, depth + bare.count("{") - bare.count("}"))
    out.append(depth)
    return out


_STRING = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`(?:\\.|[^`\\])*`|//.*$", re.M)


def _balance(text: str) -> int:
    bare = _STRING.sub("", text)
    return sum(bare.count(c) for c in "({[") - sum(bare.count(c) for c in ")}]")


KIND = Kind("tests-protected", {"globs": "glob-list", "may-change": "glob-list"}, TestsProtectedParams.read, Findings, gather,
            tests_protected)
