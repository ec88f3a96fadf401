"""Rich output that no string can take over: the consoles, texts and lines of every human output.

Agent text reaches tables, live views and summaries (see ``runtime.printable``). Two things keep
it inert here: every console is made with markup, emoji codes and highlighting off, so a ``[/bold]``
or ``[link=...]`` in a string is shown as written and can neither style the output nor raise a
markup error; and every value is turned into a ``Text`` through ``printable``, so no control
character reaches the terminal. Styling is ours alone, attached to ``Text`` spans.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtime.printable import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

Part = Any  # a value, or a (value, style) pair


# The width of output that is not a terminal (a pipe, a log file, CI): rich's default there is 80
# columns, which folds ids, paths and reasons a person or a script copies. Nothing is padded to it.
PLAIN_WIDTH = 10_000


def console(*, stderr: bool = False) -> Console:
    """A console that never reads markup or emoji codes from what it prints; on a stream that is not a
    terminal, plain (rich adds no styles there) and wide: no line is wrapped, no table squeezed."""
    from rich.console import Console

    out = Console(stderr=stderr, markup=False, emoji=False, highlight=False)
    if not out.is_terminal:
        out = Console(stderr=stderr, markup=False, emoji=False, highlight=False, width=PLAIN_WIDTH, soft_wrap=True)
    return out


def text(value: object, style: str = "", *, multiline: bool = False) -> Text:
    """One value as a ``Text``: control characters escaped, markup never parsed."""
    from rich.text import Text

    return Text(printable(value, multiline=multiline), style=style)


def line(*parts: Part) -> Text:
    """A line of parts, each a value or a ``(value, style)`` pair; every value escaped."""
    from rich.text import Text

    out = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        out.append(printable(value), style=style)
    return out


def block(value: object, style: str = "", indent: str = "  ") -> Text:
    """Lines of agent text (test output, a message quoting it) as a ``Text``, escaped, every line
    indented: a line the agent wrote never starts at the left margin, where the runtime's own lines
    (`ok  agent ...`, `merged: ...`) do."""
    from rich.text import Text

    return Text(indent + printable(value, multiline=True).replace("\n", "\n" + indent), style=style)


def guarded(listener: Callable[..., None], stop: Callable[[], None], where: Any) -> Callable[..., None]:
    """A live view's listener that cannot break the run it watches.

    Presentation is total over any string, so this should never fire; if a bug in it does, the view
    is stopped and the error is said once, on ``where`` (a console), and the run goes on (with
    RUNTIME_DEBUG set, the error is raised, as everywhere).
    """
    broken: list[BaseException] = []

    def call(*args: Any) -> None:
        if broken:
            return
        try:
            listener(*args)
        except Exception as exc:  # noqa: BLE001 - said on the terminal, never hidden, never fatal
            if os.environ.get("RUNTIME_DEBUG"):
                raise
            broken.append(exc)
            try:
                stop()
            finally:
                where.print(line(("error: ", "bold red"),
                                 f"the live view failed ({type(exc).__name__}: {exc}); the run goes on without it"))
    return call
