"""Regular expressions compiled on first use.

The hook is a fresh process per tool call; a pattern it may not need for this
call (sed scripts, numeric options, agent types) should not cost it a compile,
nor `re` itself (with `enum`, ~7 ms to import): the resident hook's client path
(`runtime check --resident`) never imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing
if TYPE_CHECKING:
    import re


class LazyPattern:
    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def match(self, text: str) -> re.Match[str] | None:
        return self._get().match(text)

    def search(self, text: str) -> re.Match[str] | None:
        return self._get().search(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        """The whole of ``text``: what a validation wants (`^...$` with match also takes a final newline)."""
        return self._get().fullmatch(text)
