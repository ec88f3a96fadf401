"""Python source read as the interpreter reads it, and what it reaches: the findings of `no-test-detection`
in production code.

A scanner of lines reads words; the interpreter reads something else. It decodes a file with the codec its
PEP 263 cookie names (`unicode_escape` turns a comment's `\\x0a` into a line of code), normalises identifiers
with NFKC (`_ｐytest` is `_pytest`), has no size cap, follows symlinks and imports compiled modules. So a
module is read here with the import system's own decoder (``importlib.util.decode_source``), parsed with
``ast`` (NFKC included), whole, and judged by what its code does, not how it spells it:

- names are resolved through every import alias (`from os import _exit as done` makes `done(0)` a call of
  `os._exit`), `getattr` and `importlib.import_module` with a literal name count as the name itself, and
  strings built from literals (`"_py" + "test"`, `"".join([...])`) are folded first;
- what cannot be resolved is a finding where it reaches code: an import or a module's attribute by a
  computed name, code compiled or loaded at run time;
- the routes to a test run's verdict are findings by what they reach: the runner's modules, another
  module's code patched (`json.dumps = ...`), the loaded modules or the heap scanned, frames and stacks
  walked, the process ended or code run at its exit (any alias, `weakref.finalize`, `__del__`), the
  interpreter hooked (import hooks, trace and exception hooks), `/proc` and `/dev/fd`, the runner's
  variables, builtins replaced, and a comparison operator that does not compare its operands.

Findings of the work are kept only where the base's version of the file did not already have them (by rule
and code, as a multiset), so untouched code is never judged.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
import tokenize
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from runtime.verify.kinds.findings import cut

# The test runners' own modules (and their plugins'): code that imports one reaches the verdict's machinery.
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "unittest", "doctest", "nose", "nose2", "xdist",
                            "pytest_cov", "_hypothesis_pytestplugin", "py", "coverage"})
# Attributes of frames, tracebacks and generators: reading one walks the stack (which test calls, what it expects).
FRAME_ATTRIBUTES = frozenset({"f_back", "f_locals", "f_globals", "f_code", "f_builtins", "f_trace", "tb_frame",
                              "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code"})
# Calls by what they do to a test run (qualified names, after aliases are resolved).
STACK_CALLS = frozenset({"sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack",
                         "inspect.trace", "inspect.getouterframes", "inspect.getinnerframes", "inspect.getframeinfo",
                         "traceback.extract_stack", "traceback.walk_stack", "traceback.format_stack",
                         "traceback.print_stack", "traceback.walk_tb", "traceback.extract_tb"})
# (`sys.exit` raises SystemExit, which a runner reports as a failure: it ends nothing behind the runner's back.)
EXIT_CALLS = frozenset({"os._exit", "os.abort", "os.execv", "os.execve", "os.execl", "os.execle", "os.execlp",
                        "os.execlpe", "os.execvp", "os.execvpe", "os.fexecve", "posix._exit", "signal.raise_signal",
                        "signal.pthread_kill"})
AT_EXIT_CALLS = frozenset({"atexit.register", "weakref.finalize", "signal.signal", "sys.addaudithook",
                           "threading.settrace", "threading.setprofile", "sys.settrace", "sys.setprofile",
                           "threading.settrace_all_threads", "sys.monitoring.register_callback",
                           "sys.monitoring.use_tool_id"})
HEAP_CALLS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.get_stats", "sys.getobjects",
                        "ctypes.cast", "ctypes.pythonapi", "ctypes.py_object"})
LOADER_CALLS = frozenset({"importlib.util.spec_from_file_location", "importlib.util.spec_from_loader",
                          "importlib.util.module_from_spec", "importlib.machinery.SourceFileLoader",
                          "importlib.machinery.SourcelessFileLoader", "importlib.machinery.ExtensionFileLoader",
                          "runpy.run_path", "runpy.run_module", "imp.load_source", "imp.load_compiled",
                          "imp.load_dynamic", "imp.load_module", "zipimport.zipimporter", "marshal.loads",
                          "types.FunctionType", "types.CodeType"})
COMPUTED_CODE = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"})
IMPORTERS = frozenset({"__import__", "builtins.__import__", "importlib.import_module", "importlib.__import__"})
# Interpreter state whose change redirects imports or reports (set or mutated).
HOOKS = frozenset({"sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.excepthook",
                   "sys.unraisablehook", "sys.displayhook", "sys.breakpointhook", "threading.excepthook",
                   "sys.modules"})
# Attributes of other modules that code may set without patching anything a test run relies on.
SETTABLE = frozenset({"sys.stdout", "sys.stderr", "sys.stdin", "sys.path", "sys.dont_write_bytecode",
                      "sys.tracebacklimit", "logging.raiseExceptions", "logging.logThreads",
                      "logging.logProcesses", "logging.logMultiprocessing", "os.environ"})
COMPARISONS = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
MODULES_SCANS = frozenset({"values", "items", "keys", "copy", "__iter__"})
_RUNNER_WORDS = re.compile(r"PYTEST_|AGENT_RUNTIME|agent_runtime_|UNITTEST_|_PYTEST_RAISE")
_PROC = re.compile(r"(?:^|/)proc(?:/|$)|/dev/fd\b")
_TEST_FILES = re.compile(r"""^(?:\.{0,2}/)?(?:tests?|testing|__tests__)/|(?:^|/)(?:test_\w*\.py|\w*_test\.py|conftest\.py)$""")


@dataclass(frozen=True)
class Hit:
    """What one piece of code does: the line, the words for it, and the code itself (the key under which the
    base's same code is matched)."""

    line: int
    what: str
    code: str


class Unreadable(ValueError):
    """Source the interpreter would not run (it does not decode or parse): nothing to judge, and nothing runs."""


def read(data: bytes) -> tuple[str, list[str]]:
    """``data`` decoded as the import system decodes a module (its coding cookie, universal newlines), and what
    reads otherwise than it looks: a cookie under which the bytes mean something else than as UTF-8, identifiers
    Python normalises (NFKC) into another name."""
    try:
        text = importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise Unreadable(f"it does not decode as Python decodes it: {exc}") from None
    notes: list[str] = []
    try:
        plain = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        plain = None
    if plain is not None and plain != text:
        notes.append("its coding cookie makes Python read other code than its text shows (a comment, read as UTF-8, "
                     "is code to the interpreter)")
    for token in _names(text):
        if not token.isascii() and unicodedata.normalize("NFKC", token) != token:
            notes.append(f"the identifier `{token}` is `{unicodedata.normalize('NFKC', token)}` to Python (NFKC)")
            break
    return text, notes


def _names(text: str) -> Iterator[str]:
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NAME:
                yield token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return


def parse(data: bytes) -> tuple[ast.Module, list[str]]:
    text, notes = read(data)
    try:
        return ast.parse(text), notes
    except (SyntaxError, ValueError) as exc:
        raise Unreadable(f"it does not parse: {exc}") from None


def hits(tree: ast.Module, own: frozenset[str] = frozenset(), notes: list[str] | None = None) -> list[Hit]:
    """What the module's code does that a test run's verdict cannot survive (see the module's docstring). ``own``:
    the repository's own top-level packages, which its code may patch."""
    out = [Hit(0, note, "#" + note) for note in notes or []]  # the whole file
    out += _Reader(tree, own).run()
    return out


def new_hits(work: list[Hit], base: list[Hit]) -> list[Hit]:
    """The hits of the work that its base did not have (the same what and code, counted)."""
    left = Counter((h.what, h.code) for h in base)
    out = []
    for hit in work:
        if left[(hit.what, hit.code)] > 0:
            left[(hit.what, hit.code)] -= 1
            continue
        out.append(hit)
    return out


class _Reader(ast.NodeVisitor):
    """One module's walk: import aliases first (at any depth: a function's imports bind names too), then every
    node judged with names resolved through them."""

    def __init__(self, tree: ast.Module, own: frozenset[str]) -> None:
        self.tree, self.own = tree, own
        self.aliases: dict[str, str] = {}
        self.found: list[Hit] = []

    def run(self) -> list[Hit]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom):
                module = ("." * node.level) + (node.module or "")
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
        self.visit(self.tree)
        return self.found

    # -- resolving names --------------------------------------------------------------------------------
    def qualified(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for (`os.path.join`), resolved through the imports; None when it
        is no name (a call's result, a subscript, a computed attribute)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            func = self.qualified(node.func)
            name = _folded(node.args[0]) if node.args else None
            if func in IMPORTERS and isinstance(name, str):
                return name  # `importlib.import_module("json")` is `json`
            if func in ("getattr", "builtins.getattr") and len(node.args) >= 2:
                base, attr = self.qualified(node.args[0]), _folded(node.args[1])
                return f"{base}.{attr}" if base and isinstance(attr, str) else None
        if isinstance(node, ast.Subscript):
            base = self.qualified(node.value)
            key = _folded(node.slice)
            if base == "sys.modules" and isinstance(key, str):
                return key
        return None

    def is_module_name(self, name: str | None) -> bool:
        """Whether ``name`` roots in an imported module (not a local object)."""
        if not name:
            return False
        top = name.split(".")[0]
        return top in set(self.aliases.values()) or any(v.split(".")[0] == top for v in self.aliases.values()) \
            or top in ("sys", "builtins", "__builtins__")

    def foreign(self, name: str) -> bool:
        """A module the repository does not own (relative imports and its own packages are its own)."""
        return not name.startswith(".") and name.split(".")[0] not in self.own

    def hit(self, node: ast.AST, what: str) -> None:
        code = ast.unparse(node) if isinstance(node, ast.AST) else str(node)
        self.found.append(Hit(getattr(node, "lineno", 1), what, cut(" ".join(code.split()), 200)))

    # -- the rules ------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self._imported(node, node.module)

    def _imported(self, node: ast.AST, module: str) -> None:
        if module.split(".")[0] in RUNNER_MODULES:
            self.hit(node, f"imports or looks up the test runner's `{module}`")
        elif module.split(".")[0] in ("ctypes", "_ctypes"):
            self.hit(node, "imports ctypes (it reaches the interpreter's memory: any object, the test run's included)")

    def visit_Call(self, node: ast.Call) -> None:
        func = self.qualified(node.func)
        if func in IMPORTERS:
            name = _folded(node.args[0]) if node.args else None
            if isinstance(name, str):
                self._imported(node, name)
            else:
                self.hit(node, "imports a module by a computed name")
        elif func in COMPUTED_CODE:
            code = _folded(node.args[0]) if node.args else None
            if isinstance(code, str) and func != "compile":
                with contextlib.suppress(SyntaxError, ValueError):  # a literal's code is read as the file's
                    for inner in _Reader(ast.parse(code), self.own).run():
                        self.found.append(Hit(node.lineno, inner.what, inner.code))
            else:
                self.hit(node, f"runs code made at run time (`{func}`), which no reader of the file sees")
        elif func in LOADER_CALLS:
            self.hit(node, f"loads code outside the import of its source (`{func}`)")
        elif func in ("getattr", "setattr", "delattr", "hasattr", "builtins.getattr", "builtins.setattr",
                      "builtins.delattr") and len(node.args) >= 2:
            self._attribute_call(node, func)
        elif func in ("vars", "builtins.vars") and node.args and self.is_module_name(self.qualified(node.args[0])):
            self.hit(node, "reads a module's namespace whole (`vars(module)`)")
        elif func in ("globals", "locals") and _subscripted_write(node, self.tree):
            self.hit(node, f"writes names through `{func}()`")
        reached = self.qualified(node)  # `getattr(sys, "_getframe")`, `importlib.import_module("gc")`
        if reached:
            self._reached(node, reached)
        if func:
            owner, _, method = func.rpartition(".")
            if owner == "sys.modules" and method in MODULES_SCANS:
                self.hit(node, "scans the loaded modules (`sys.modules`) for objects by their shape")
            elif owner == "sys.modules" and method == "get" and node.args and not _is_name_of_module(node.args[0]):
                name = _folded(node.args[0])
                if isinstance(name, str):
                    self._imported(node, name)
                else:
                    self.hit(node, "looks a loaded module up by a computed name")
            elif owner in HOOKS and owner != "sys.modules" and method in ("insert", "append", "extend", "clear", "pop",
                                                                          "remove", "update", "__setitem__",
                                                                          "setdefault"):
                self.hit(node, f"changes `{owner}` (it redirects what the interpreter imports or reports)")
        if func in ("os.kill", "os.killpg") and node.args and _own_process(node.args[0], self):
            self.hit(node, "ends its own process before the test runner can report")
        self.generic_visit(node)

    def _attribute_call(self, node: ast.Call, func: str) -> None:
        target = self.qualified(node.args[0])
        name = _folded(node.args[1])
        setter = func.endswith(("setattr", "delattr"))
        if isinstance(name, str):
            if name in FRAME_ATTRIBUTES:
                self.hit(node, f"walks the stack (`.{name}`): which test calls it, what that test expects")
            elif setter and target and self.is_module_name(target) and self.foreign(target) \
                    and f"{target}.{name}" not in SETTABLE:
                self.hit(node, f"patches another module's code (`{target}.{name}`)")
            elif setter and name in COMPARISONS:
                self.hit(node, f"sets a comparison (`{name}`) at run time, which no reader of the class sees")
            return
        if self.is_module_name(target) or target in ("builtins", "__builtins__"):
            self.hit(node, f"reaches an attribute of `{target}` by a computed name")

    def _reached(self, node: ast.AST, name: str) -> None:
        """A name the code reaches, by what it is."""
        if name in STACK_CALLS:
            self.hit(node, f"walks the stack (`{name}`): which test calls it, what that test expects")
        elif name in EXIT_CALLS:
            self.hit(node, f"ends the process (`{name}`) before the test runner can report")
        elif name in AT_EXIT_CALLS:
            self.hit(node, f"runs code later, out of the test's reach (`{name}`): at exit, when an object goes, on "
                           "a signal or on every line")
        elif name in HEAP_CALLS:
            self.hit(node, f"walks the interpreter's objects (`{name}`): the test run's own among them")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FRAME_ATTRIBUTES:
            self.hit(node, f"walks the stack (`.{node.attr}`): which test calls it, what that test expects")
        elif node.attr == "__dict__" and self.is_module_name(self.qualified(node.value)):
            self.hit(node, "reaches a module's namespace directly (`__dict__`)")
        name = self.qualified(node)
        if name and name in STACK_CALLS | HEAP_CALLS | EXIT_CALLS | AT_EXIT_CALLS:
            self._reached(node, name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = self.aliases.get(node.id)  # `from os import _exit as done`: each use of `done`
        if name and name in STACK_CALLS | HEAP_CALLS | EXIT_CALLS | AT_EXIT_CALLS:
            self._reached(node, name)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        base = self.qualified(node.value)
        if base == "sys.modules" and not _is_name_of_module(node.slice):
            key = _folded(node.slice)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                self.hit(node, "replaces a loaded module (`sys.modules`)")
            elif isinstance(key, str):
                self._imported(node, key)
            else:
                self.hit(node, "looks a loaded module up by a computed name")
        elif base in ("__builtins__", "builtins.__dict__") and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.hit(node, "replaces a builtin")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        # `"pytest" in sys.modules`: a loaded module looked up by its name
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
            if isinstance(op, (ast.In, ast.NotIn)) and self.qualified(right) in ("sys.modules", "sys.modules.keys"):
                name = _folded(left)
                if isinstance(name, str):
                    self._imported(node, name)
                else:
                    self.hit(node, "looks a loaded module up by a computed name")
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if self.qualified(node.iter) == "sys.modules":
            self.hit(node.iter, "scans the loaded modules (`sys.modules`) for objects by their shape")
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if self.qualified(node.iter) == "sys.modules":
            self.hit(node.iter, "scans the loaded modules (`sys.modules`) for objects by their shape")
        self.generic_visit(node)

    def _targets(self, targets: list[ast.expr], node: ast.AST) -> None:
        for target in _flattened(targets):
            if isinstance(target, ast.Attribute):
                owner = self.qualified(target.value)
                name = f"{owner}.{target.attr}" if owner else None
                if name in HOOKS:
                    self.hit(node, f"replaces `{name}` (it redirects what the interpreter imports or reports)")
                elif owner and self.is_module_name(owner) and self.foreign(owner) and name not in SETTABLE:
                    self.hit(node, f"patches another module's code (`{name}`)")
                elif target.attr in COMPARISONS:
                    self.hit(node, f"sets a comparison (`{target.attr}`) on an object at run time")
            elif isinstance(target, ast.Name) and target.id == "__builtins__":
                self.hit(node, "replaces the builtins")

    def visit_Assign(self, node: ast.Assign) -> None:
        self._targets(node.targets, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._targets([node.target], node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._targets([node.target], node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._targets(node.targets, node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self._string(node, node.value)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        folded = _folded(node)
        if isinstance(folded, str):
            self._string(node, folded)
            return  # its parts are judged as the whole
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        folded = _folded(node)
        if isinstance(folded, str):
            self._string(node, folded)
        self.generic_visit(node)

    def _string(self, node: ast.AST, value: str) -> None:
        if _RUNNER_WORDS.search(value):
            self.hit(node, "names the test run's own variables or reporter")
        elif _PROC.search(value):
            self.hit(node, "reaches the process's own files (`/proc`, `/dev/fd`): the test run's report among them")
        elif _TEST_FILES.search(value):
            self.hit(node, "names the tests' files (code that reads them knows what they expect)")

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            name = _folded(key) if key is not None else None
            if name in COMPARISONS:
                why = _not_comparing(value.args, [ast.Return(value.body)]) if isinstance(value, ast.Lambda) else \
                    "is given at run time (a class made by `type()`), which no reader of a class sees"
                if why:
                    self.hit(node, f"`{name}` {why} (asserts on its results prove nothing)")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._counted(node)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._counted(node)
        self.generic_visit(node)

    def _counted(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function whose answer turns on how many times it has run: it keeps a count in module state it
        changes itself, and compares that count with a number (right for the first calls, the tests' calls)."""
        module = self.module_names()
        declared = {n for g in ast.walk(node) if isinstance(g, ast.Global) for n in g.names}
        mutated: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.AugAssign):
                root = _root_name(sub.target)
                if root and (root in declared or isinstance(sub.target, ast.Subscript)):
                    mutated.add(root)
            elif isinstance(sub, ast.Assign):
                for target in sub.targets:
                    root = _root_name(target)
                    if root and (root in declared or isinstance(target, ast.Subscript)):
                        mutated.add(root)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                    sub.func.attr in ("append", "extend", "add", "update", "insert", "pop", "appendleft"):
                root = _root_name(sub.func.value)
                if root:
                    mutated.add(root)
        counters = mutated & module
        if not counters:
            return
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Compare) or any(isinstance(op, (ast.In, ast.NotIn, ast.Is, ast.IsNot))
                                                       for op in sub.ops):
                continue
            sides = [sub.left, *sub.comparators]
            counted = any(_counts(side, counters) for side in sides)
            number = any(isinstance(side, ast.Constant) and isinstance(side.value, (int, float))
                         and not isinstance(side.value, bool) for side in sides)
            if counted and number:
                self.hit(sub, f"`{node.name}` answers by how many times it has run (a count it keeps between calls "
                              "decides): right for the first calls, the tests' own, and not for later callers")
                return

    def module_names(self) -> set[str]:
        names: set[str] = set()
        for stmt in self.tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
                stmt, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        return names

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in COMPARISONS:
                why = _not_comparing(item.args, item.body)
                if why:
                    self.hit(item, f"`{node.name}.{item.name}` {why} (asserts on its results prove nothing)")
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__del__":
                self.hit(item, f"`{node.name}.__del__` runs code when an object goes (at exit too, after the tests)")
            elif isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id in COMPARISONS for t in item.targets):
                name = next(t.id for t in item.targets if isinstance(t, ast.Name) and t.id in COMPARISONS)
                value = item.value
                if isinstance(value, ast.Lambda):
                    why = _not_comparing(value.args, [ast.Return(value.body)])
                    if why:
                        self.hit(item, f"`{node.name}.{name}` {why} (asserts on its results prove nothing)")
                elif not (isinstance(value, ast.Attribute) and value.attr == name) and \
                        not (isinstance(value, ast.Constant) and value.value is None):
                    self.hit(item, f"`{node.name}.{name}` is another operation than the comparison it names")
        self.generic_visit(node)


def _not_comparing(args: ast.arguments, body: list[ast.stmt]) -> str:
    """Why a comparison method does not compare its two operands: a result that may be true without reading
    both (a constant True not under a test of both, an `or` one side of which reads only one), '' when it
    compares."""
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if len(names) < 2:
        return ""
    this, other = names[0], names[1]
    derived = _derived(body, this, other)
    for node, guards in _returns(body, []):
        value = node.value
        if value is None:
            continue
        if _both(value, this, other, derived):
            if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
                loose = [v for v in value.values if not _both(v, this, other, derived) and not _false(v)]
                if loose:
                    return f"may hold without comparing its operands (`{ast.unparse(loose[0])}` alone makes it true)"
            continue
        if _false(value) or (isinstance(value, ast.Constant) and value.value is NotImplemented) or \
                (isinstance(value, ast.Name) and value.id == "NotImplemented"):
            continue
        if isinstance(value, ast.Constant) and any(_both(g, this, other, derived) for g in guards):
            continue  # `if self is other: return True`
        return f"returns `{ast.unparse(value)}` without comparing its operands"
    return ""


def _returns(body: list[ast.stmt], guards: list[ast.expr]) -> Iterator[tuple[ast.Return, list[ast.expr]]]:
    for stmt in body:
        if isinstance(stmt, ast.Return):
            yield stmt, guards
        elif isinstance(stmt, ast.If):
            yield from _returns(stmt.body, [*guards, stmt.test])
            yield from _returns(stmt.orelse, [*guards, stmt.test])
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
            yield from _returns(stmt.body, guards)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _returns(part, guards)
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                yield from _returns(case.body, guards)


def _uses(node: ast.AST, this: str, derived: dict[str, set[str]]) -> set[str]:
    """The operands an expression reads: names, what local names were computed from, `super()` as the first."""
    used: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            used |= {n.id} | derived.get(n.id, set())
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super":
            used.add(this)
    return used


def _derived(body: list[ast.stmt], this: str, other: str) -> dict[str, set[str]]:
    """Local names of a method and which operands their values were computed from (`result = self.v == other`)."""
    derived: dict[str, set[str]] = {}
    assigns = [n for stmt in body for n in ast.walk(stmt) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
    for _ in range(3):
        for node in assigns:
            value = node.value
            if value is None:
                continue
            operands = _uses(value, this, derived) & {this, other}
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        derived[name.id] = derived.get(name.id, set()) | operands
    return derived


def _both(node: ast.AST, this: str, other: str, derived: dict[str, set[str]] | None = None) -> bool:
    used = _uses(node, this, derived or {})
    return this in used and other in used


def _false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _folded(node: ast.AST) -> object:
    """The value of an expression made of literals alone (strings joined, added, formatted); None otherwise."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left, right = _folded(node.left), _folded(node.right)
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(node.op, ast.Mod) and isinstance(left, str) and isinstance(right, (str, int, tuple)):
            try:
                return left % right
            except (TypeError, ValueError):
                return None
        return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            part = _folded(value.value) if isinstance(value, ast.FormattedValue) else _folded(value)
            if not isinstance(part, (str, int)):
                return None
            parts.append(str(part))
        return "".join(parts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
            and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
        sep = _folded(node.func.value)
        items = [_folded(e) for e in node.args[0].elts]
        if isinstance(sep, str) and all(isinstance(i, str) for i in items):
            return sep.join(items)  # type: ignore[arg-type]
    if isinstance(node, ast.Tuple):
        items = [_folded(e) for e in node.elts]
        return tuple(items) if all(i is not None for i in items) else None
    return None


def _root_name(node: ast.AST) -> str | None:
    """The name an attribute or item chain starts from (`_calls[0]` -> `_calls`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _counts(node: ast.AST, counters: set[str]) -> bool:
    """Whether ``node`` reads one of the counters: the name, an item of it, or its length."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return _root_name(node.args[0]) in counters
    return _root_name(node) in counters


def _flattened(targets: list[ast.expr]) -> Iterator[ast.expr]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _flattened(list(target.elts))
        elif isinstance(target, ast.Starred):
            yield from _flattened([target.value])
        else:
            yield target


def _is_name_of_module(node: ast.AST) -> bool:
    """`__name__`: the module's own entry in `sys.modules` (a lazy module's idiom)."""
    return isinstance(node, ast.Name) and node.id == "__name__"


def _own_process(node: ast.expr, reader: _Reader) -> bool:
    if isinstance(node, ast.Constant) and node.value == 0:
        return True
    return isinstance(node, ast.Call) and reader.qualified(node.func) in ("os.getpid", "os.getppid", "os.getpgid",
                                                                          "os.getpgrp")


def _subscripted_write(call: ast.Call, tree: ast.Module) -> bool:
    """`globals()[name] = ...`: names bound where no reader of the file sees them."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and node.value is call and isinstance(node.ctx, ast.Store):
            return True
    return False
