# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLAUDE_VERSION := 2.1.332
CLAUDE_DIR := .cache/claude-code
CLAUDE_BIN := $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code-linux-x64/claude

.PHONY: demo test test-fast lint bench fuzz-gate clean system-deps

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.demo: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[demo]'
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The real Claude Code CLI, for the end-to-end hook tests (npm skips the
# postinstall here, so the platform package's native binary is used). The stamp
# names the version, so moving CLAUDE_VERSION reinstalls over an older copy.
CLAUDE_STAMP := $(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION)

$(CLAUDE_STAMP):
	mkdir -p $(CLAUDE_DIR)
	rm -f $(CLAUDE_DIR)/.installed-*
	cd $(CLAUDE_DIR) && npm install --no-audit --no-fund --save-exact --loglevel=error @anthropic-ai/claude-code@$(CLAUDE_VERSION)
	$(CLAUDE_BIN) --version | grep -q '^$(CLAUDE_VERSION) '
	touch $@

$(CLAUDE_BIN): $(CLAUDE_STAMP)

demo: $(VENV)/.demo
	@BIN=$(BIN) sh scripts/demo.sh

# The suite in two worker processes (pytest-xdist): many tests wait on real processes, so two
# workers finish in about two thirds of the time on two cores. TEST_WORKERS=0 runs it in one process.
# The longest tests are collected first (tests/conftest.py), and xdist hands each worker the next test
# in that order as it frees up (one at a time: in its default chunks the first worker would get every
# long test), so the end of a run is short tests on both workers, not one long one.
TEST_WORKERS ?= 2
TEST_DIST := $(if $(filter 0,$(TEST_WORKERS)),,--maxschedchunk 1)

# The system packages the suite needs (bubblewrap, strace, setpriv, libseccomp, socat, cargo, go, ...):
# installed with apt-get when missing and root, else named in one line.
system-deps:
	@bash scripts/system-deps.sh

# rustup's cargo, where it is installed, for the toolchain tests.
test: system-deps $(VENV)/.dev $(CLAUDE_STAMP)
	@PATH="$$HOME/.cargo/bin:$$PATH" RUNTIME_CLAUDE_BIN=$(abspath $(CLAUDE_BIN)) $(BIN)/python -m pytest -n $(TEST_WORKERS) $(TEST_DIST); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests; the suite is missing" >&2; fi; exit $$rc

# Every test that starts no real sandbox, agent, plan, toolchain, model client or Claude Code CLI.
test-fast: $(VENV)/.dev
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(TEST_DIST) -m "not slow" -q

lint: $(VENV)/.dev
	$(BIN)/ruff check runtime tests bench scripts
	$(BIN)/mypy
	$(BIN)/runtime lint
	$(BIN)/runtime doc-roles --check
	$(BIN)/runtime migrate --check
	$(BIN)/runtime schema --check
	$(BIN)/python scripts/claude_plugin.py --check
	$(BIN)/python scripts/reference.py --check

bench: $(VENV)/.dev
	$(BIN)/python bench/gate.py
	$(BIN)/python bench/agents.py
	$(BIN)/python bench/spawn.py
	$(BIN)/python bench/verify.py
	$(BIN)/python bench/realrepos.py
	$(BIN)/python bench/workspace.py
	$(BIN)/python bench/scratch.py
	$(BIN)/python bench/sandbox_start.py
	$(BIN)/python bench/limits.py
	$(BIN)/python bench/console.py
	$(BIN)/python bench/world.py
	$(BIN)/python bench/egress_tls.py
	$(BIN)/python bench/install.py

# A long random run of the gate's differential tests (commands the gate allows, run for real).
fuzz-gate: $(VENV)/.dev
	RUNTIME_DIFF_EXAMPLES=$${RUNTIME_DIFF_EXAMPLES:-5000} RUNTIME_DIFF_RANDOM=1 $(BIN)/python -m pytest -m differential -q tests/gate/test_differential.py

clean:
	rm -rf $(VENV) .cache .pytest_cache
