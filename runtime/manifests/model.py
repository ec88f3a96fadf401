"""Manifest tables validated from TOML: the first error becomes a `file:line: what is wrong` ManifestError."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from runtime.errors import ManifestError
from runtime.manifests.tomlsrc import TomlSource
from runtime.model import M, describe, did_you_mean, key_names


def parse_model(cls: type[M], data: Any, src: TomlSource, prefix: tuple[Any, ...] = ()) -> M:
    """Validate ``data`` against ``cls``; the first error becomes a ManifestError."""
    try:
        return cls.model_validate(data, by_name=False)  # data spells keys as the manifests do (kebab-case)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        err = errors[0]
        if err["type"] == "missing":
            # A key missing beside an unknown one in the same table is most likely that key misspelt: say so.
            err = next((e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == err["loc"][:-1]), err)
        loc = prefix + tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        message = describe({"type": err["type"], "loc": loc, "msg": err["msg"]})
        if err["type"] == "extra_forbidden" and isinstance(loc[-1], str):
            message += did_you_mean(loc[-1], key_names(cls))
        raise ManifestError(src.path, src.line_of(loc), message) from None
