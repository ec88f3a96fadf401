"""Go's build cache (GOCACHE): content-addressed, every entry named by the hash of all that went into it.

The fill compiles the base's packages and their tests (``-run '^$'`` with ``-exec /bin/true``: the test
binaries are built and vetted, never run) and vets them, so no code of the project runs while the cache is
written; the go command alone writes it. An entry is only ever found by the hash of its inputs, so a run that changes a file
misses and builds; what it writes goes to its own layer.
"""

from __future__ import annotations

from pathlib import Path

from runtime.sandbox.caches.kind import FillSite


class GoCache:
    name = "go"
    probe = "go"
    variable = "GOCACHE"
    # vet's full analysis (a project's `go vet ./...` check) keeps results of its own: warmed too.
    fill = "go test -count=1 -run '^$' -exec /bin/true ./...; go vet ./..."

    def prepare(self, tree: Path) -> None:
        pass

    def prune(self, folder: Path, site: FillSite) -> None:
        pass

    def linked(self, rel: str, size: int) -> bool:
        # The entries are written once under new names and never rewritten; the files at the top (trim.txt,
        # README) are rewritten in place.
        return "/" in rel


GO = GoCache()
