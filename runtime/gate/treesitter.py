"""The Bash parser, loaded the cheap way.

The hook is a fresh process per tool call. ``import tree_sitter_bash`` pulls in
``importlib.resources`` (for a highlight query we never use) and ``import
tree_sitter`` pulls in ``typing``: together about two thirds of the hook's own
start-up. Both packages are thin wrappers around C extensions, so this module
loads the two extensions directly and falls back to the ordinary imports if
anything about the installed layout differs.

The binding's own start imports ``re`` (for the ``#match?`` predicate of
queries) and ``enum`` (an ``IntEnum`` for its parse logger's message kinds):
with ``functools`` and ``collections`` about 9 ms, a quarter of a cold hook.
The gate runs no query and sets no logger, so a process that has neither module
yet loads the binding with stand-ins for the two names it takes (``re.compile``,
which imports the real ``re`` when called, and ``enum.IntEnum``), and removes
them from ``sys.modules`` once it has: the next ``import re`` is the real one.
"""

from __future__ import annotations

# The interpreter's own import machinery, loaded before any module: what `importlib.machinery` re-exports,
# without importing `importlib` (and `warnings` with it).
import _frozen_importlib as bootstrap
import _frozen_importlib_external as bootstrap_external
import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from types import ModuleType

    from tree_sitter import Parser


def _extension(package: str, name: str) -> ModuleType:
    spec = bootstrap_external.PathFinder.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(package)
    for folder in spec.submodule_search_locations:
        for suffix in bootstrap_external.EXTENSION_SUFFIXES:
            path = os.path.join(folder, name + suffix)
            if os.path.exists(path):
                loader = bootstrap_external.ExtensionFileLoader(f"{package}.{name}", path)
                module_spec = bootstrap.ModuleSpec(f"{package}.{name}", loader, origin=path)
                module = loader.create_module(module_spec)
                loader.exec_module(module)
                return module
    raise ImportError(f"{package}.{name}")


def _compile_later(pattern: object, flags: int = 0) -> object:
    import re

    return re.compile(pattern, flags)  # type: ignore[call-overload]


def _int_enum(name: str, members: dict[str, int]) -> type:
    """What the binding makes of ``IntEnum(name, members)``: a class whose values are ints, named as given."""
    return type(name, (int,), dict(members))


def _loaded_without_re(package: str, name: str) -> ModuleType:
    stand_ins = {}
    for module, attribute, value in (("re", "compile", _compile_later), ("enum", "IntEnum", _int_enum)):
        if module not in sys.modules:
            stand_in = type(sys)(module)
            setattr(stand_in, attribute, value)
            stand_ins[module] = stand_in
    sys.modules.update(stand_ins)
    try:
        return _extension(package, name)
    finally:
        for module, stand_in in stand_ins.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]


def bash_parser() -> Parser:
    """A tree-sitter parser for Bash."""
    try:
        binding = _loaded_without_re("tree_sitter", "_binding")
        bash = _extension("tree_sitter_bash", "_binding")
        parser: Parser = binding.Parser(binding.Language(bash.language()))
        return parser
    except Exception:  # noqa: BLE001 - any surprise: the supported way
        import tree_sitter
        import tree_sitter_bash

        return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
