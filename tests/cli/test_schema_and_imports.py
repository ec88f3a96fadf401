import json
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_cli


def test_committed_schemas_are_current_and_referenced():
    assert run_cli("schema", "--check", cwd=REPO).returncode == 0
    for name in ("capability", "role", "task"):
        json.loads((REPO / f"schemas/{name}.schema.json").read_text())
    tasks = [p for p in REPO.glob("manifests/**/*.toml") if "[task]" in p.read_text()]
    for path in list(REPO.glob("capabilities/*/*/capability.toml")) + list(REPO.glob("roles/*.toml")) + tasks:
        first = path.read_text().splitlines()[0]
        assert first.startswith("#:schema ") and (path.parent / first.split(" ", 1)[1]).resolve().is_file(), path


def test_schema_check_reports_stale_files(tmp_path):
    proc = run_cli("schema", "--check", "--out", str(tmp_path), cwd=REPO)
    assert proc.returncode == 1 and "stale" in proc.stdout


VERBS = [
    ["lint"], ["roles"], ["roles", "--json"], ["compose", "manifests/examples/fix-tokenizer.toml", "--json"],
    ["doc-roles", "--check"], ["migrate", "--check"], ["schema", "--check"], ["--help"],
]


@pytest.mark.parametrize("argv", VERBS, ids=lambda a: " ".join(a))
def test_commands_without_a_model_call_never_import_litellm(argv):
    probe = (
        "import sys\nfrom runtime.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('LITELLM' if 'litellm' in sys.modules else 'CLEAN', file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.stderr.rstrip().endswith("CLEAN"), proc.stderr[-500:]
