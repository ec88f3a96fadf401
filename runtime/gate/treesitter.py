"""The Bash parser, loaded the cheap way.

The hook is a fresh process per tool call. ``import tree_sitter_bash`` pulls in
``importlib.resources`` (for a highlight query we never use) and ``import
tree_sitter`` pulls in ``typing``: together about two thirds of the hook's own
start-up. Both packages are thin wrappers around C extensions, so this module
loads the two extensions directly and falls back to the ordinary imports if
anything about the installed layout differs.
"""

from __future__ import annotations

import importlib.machinery
import os

TYPE_CHECKING = False  # typing's, without importing typing: the hook is a fresh process per call
if TYPE_CHECKING:
    from types import ModuleType

    from tree_sitter import Parser


def _extension(package: str, name: str) -> ModuleType:
    spec = importlib.machinery.PathFinder.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(package)
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, name + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader(f"{package}.{name}", path)
                module_spec = importlib.machinery.ModuleSpec(f"{package}.{name}", loader, origin=path)
                module = loader.create_module(module_spec)
                loader.exec_module(module)
                return module
    raise ImportError(f"{package}.{name}")


def bash_parser() -> Parser:
    """A tree-sitter parser for Bash."""
    try:
        binding = _extension("tree_sitter", "_binding")
        bash = _extension("tree_sitter_bash", "_binding")
        parser: Parser = binding.Parser(binding.Language(bash.language()))
        return parser
    except Exception:  # noqa: BLE001 - any surprise: the supported way
        import tree_sitter
        import tree_sitter_bash

        return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
