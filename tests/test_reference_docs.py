"""The generated reference (docs/CLI.md's commands, docs/REFERENCE.md's registries) says what the code says:
`python scripts/reference.py` writes it, and the suite fails, with the diff, when someone changed a command,
a kind or a backend without running it."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import REPO


def _script():
    spec = importlib.util.spec_from_file_location("reference_script", REPO / "scripts" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_is_what_the_code_writes(capsys):
    assert _script().main(["--check"]) == 0, capsys.readouterr().out


def test_a_stale_reference_is_refused_with_its_diff(tmp_path, capsys):
    script = _script()
    (tmp_path / "docs").mkdir()
    for rel, text in script.generated(REPO).items():
        (tmp_path / rel).write_text(text)
    cli = tmp_path / script.CLI_PAGE
    cli.write_text(cli.read_text().replace("### `runtime spawn`", "### `runtime spawn-old`"))
    assert script.main(["--check"], root=tmp_path) == 1
    out, err = capsys.readouterr()
    assert "-### `runtime spawn-old`" in out and "+### `runtime spawn`" in out and "docs/CLI.md" in err
    assert script.main([], root=tmp_path) == 0 and script.main(["--check"], root=tmp_path) == 0


def test_every_command_and_every_kind_is_in_the_reference():
    from runtime.cli.main import VERBS
    from runtime.manifests.kinds import AGENT_BACKENDS, GATE_KINDS
    from runtime.verify.kinds.registry import KINDS as VERIFY

    cli = (REPO / "docs" / "CLI.md").read_text()
    reference = (REPO / "docs" / "REFERENCE.md").read_text()
    assert all(f"### `runtime {verb}`" in cli for verb in VERBS)
    assert all(f"| `{kind}` |" in reference for kind in [*GATE_KINDS, *VERIFY, *AGENT_BACKENDS])


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    text = heading.strip().lower()
    return "".join(ch for ch in text if ch.isalnum() or ch in " -_").replace(" ", "-")


def _anchors(page) -> set[str]:
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def test_every_link_between_the_pages_lands_on_a_file_and_a_heading():
    import re

    pages = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_door():
    assert len((REPO / "README.md").read_text().splitlines()) <= 300
