import json

from tests.conftest import REPO, run_cli


def test_shipped_catalog_and_examples_lint_clean():
    proc = run_cli("lint", "--json", cwd=REPO)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["ok"] and report["errors"] == []
    assert report["counts"]["atoms"] == 22 and report["counts"]["roles"] == 6 and report["counts"]["tasks"] >= 4
    assert report["counts"]["examples"] >= 50


def test_a_failing_atom_example_is_a_lint_error(catalog_copy):
    path = catalog_copy / "capabilities/policy/no-git-ops/capability.toml"
    text = path.read_text()
    path.write_text(text.replace('input = { command = "git push origin HEAD" }\nexpect = "deny"', 'input = { command = "git push origin HEAD" }\nexpect = "allow"'))
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 1
    (line,) = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert line.startswith("error: capabilities/policy/no-git-ops/capability.toml:10: example 1: expected allow, got deny")


def test_a_long_text_is_a_warning_not_an_error(catalog_copy):
    (catalog_copy / "capabilities/net/no-network/text.md").write_text("word " * 250)
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 0
    assert "warning: capabilities/net/no-network/text.md:1: text.md has 250 words" in proc.stderr


def test_duplicate_agent_ids_across_tasks(catalog_copy):
    src = catalog_copy / "manifests/examples/fix-tokenizer.toml"
    (catalog_copy / "manifests/examples/copy.toml").write_text(src.read_text().replace("Fix the off-by-one", "Fix another"))
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 1
    assert "agent id `ag-fix-tokenizer` is also used by" in proc.stderr


def test_a_check_command_the_role_refuses_is_a_lint_error(catalog_copy):
    """Verify runs the task's commands outside the gate; an agent whose role refuses one could never run it."""
    task = catalog_copy / "manifests/examples/spawn-demo/task.toml"
    text = task.read_text()
    checks = 'check-commands = ["pytest --collect-only -q tests"]'
    assert checks in text
    task.write_text(text.replace(checks, 'check-commands = ["pytest --collect-only -q tests", '
                                         '"flake8 --output-file=/tmp/x src"]'))
    proc = run_cli("lint", cwd=catalog_copy)
    assert proc.returncode == 1
    (line,) = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert line.startswith("error: manifests/examples/spawn-demo/task.toml:16: check command `flake8 --output-file=/tmp/x "
                           "src` is refused to role `edit-local` (strict mode), so its agent cannot run it: ")
    assert "/tmp/x" in line.split("cannot run it: ", 1)[1]  # the gate's own reason follows
    # The test command too, and in a plan's inline subtask, at the plan's line.
    task.write_text(text.replace('test-command = "pytest -q tests"', 'test-command = "tox -e py311"'))
    plan = catalog_copy / "manifests/examples/plan/plan.toml"
    plan.write_text(plan.read_text().replace('check-commands = ["grep -q median docs/calc.md"]',
                                             'check-commands = ["test -s docs/calc.md"]'))
    proc = run_cli("lint", cwd=catalog_copy)
    errors = sorted(l for l in proc.stderr.splitlines() if l.startswith("error:"))
    assert proc.returncode == 1 and len(errors) == 2
    # No rule decides them: the agent could run them only with a person's approval each time, which is an error too.
    assert errors[0].startswith("error: manifests/examples/plan/plan.toml:62: no rule of role `edit-local` decides the "
                                "check command `test -s docs/calc.md` (strict mode)")
    assert errors[1].startswith("error: manifests/examples/spawn-demo/task.toml:14: no rule of role `edit-local` decides "
                                "the test command `tox -e py311` (strict mode)")
    assert "`runtime allow 'tox -e py311' --role edit-local`" in errors[1]
