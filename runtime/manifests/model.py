"""Base schema model: kebab-case keys, unknown keys rejected, one-line errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from runtime.errors import ManifestError
from runtime.manifests.tomlsrc import TomlSource


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


def describe(err: dict[str, Any], model: type[BaseModel] | None = None) -> str:
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


def parse_model(cls: type[M], data: Any, src: TomlSource, prefix: tuple[Any, ...] = ()) -> M:
    """Validate ``data`` against ``cls``; the first error becomes a ManifestError."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = prefix + tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        raise ManifestError(src.path, src.line_of(loc), describe({**err, "loc": loc})) from None
