"""The base of every typed record the runtime reads from outside (manifest tables, verify evidence):
kebab-case keys, unknown keys rejected, and one-line errors a person can act on.

A top-level module, below every package: the manifests and the verify kinds (which the manifests name) both
build on it."""

from __future__ import annotations

from typing import Any, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class Model(BaseModel):
    """Every manifest table: strict types, no unknown keys, kebab-case names."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=_kebab,
        populate_by_name=False,
    )


M = TypeVar("M", bound=Model)


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class ErrorDetails(TypedDict):
    """What `describe` reads of one of pydantic's errors (its `ErrorDetails` has these and more)."""

    type: str
    loc: tuple[int | str, ...]
    msg: str


def describe(err: ErrorDetails, model: type[BaseModel] | None = None) -> str:
    """A person-readable sentence for one pydantic error."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    kind = err["type"]
    where = _dotted(loc)
    if kind == "extra_forbidden":
        parent = _dotted(loc[:-1])
        return f"unknown key `{loc[-1]}`" + (f" in `{parent}`" if parent else "")
    if kind == "missing":
        parent = _dotted(loc[:-1])
        return f"missing required key `{loc[-1]}`" + (f" in `{parent}`" if parent else "")
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return f"`{where}`: {msg}" if where else msg


def key_names(cls: type[BaseModel]) -> set[str]:
    """Every key a manifest model and the models inside it accept (for suggestions)."""
    names: set[str] = set()
    todo: list[Any] = [cls]
    seen: set[Any] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, field in model.model_fields.items():
            names.add(field.alias or name)
            for arg in _type_args(field.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    todo.append(arg)
    return names


def _type_args(annotation: Any) -> list[Any]:
    out, todo = [], [annotation]
    while todo:
        t = todo.pop()
        out.append(t)
        todo += list(getattr(t, "__args__", ()) or ())
    return out


def did_you_mean(word: str, choices: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.7)
    return f" (did you mean `{close[0]}`?)" if close else ""
