#!/bin/sh
# `make demo`: the roles, a composed bundle, the gate on real calls, then a real spawn.
set -eu
BIN=${BIN:-.venv/bin}
ROOT=$(pwd)
POLICY=.cache/demo/fix-tokenizer.policy.json
mkdir -p .cache/demo

echo "== runtime roles"
"$BIN/runtime" roles

echo
echo "== runtime compose manifests/examples/fix-tokenizer.toml"
"$BIN/runtime" compose manifests/examples/fix-tokenizer.toml --policy-out "$POLICY"

echo
echo "== runtime check: tool calls of an edit-local agent, judged by the compiled policy"
"$BIN/python" scripts/demo_checks.py "$BIN/runtime" "$POLICY" scripts/demo-calls.tsv

echo
echo "== runtime spawn: the scripted model plays an edit-local agent in a fresh git repository"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r manifests/examples/spawn-demo/project "$WORK/repo"
git -C "$WORK/repo" init -q -b trunk
git -C "$WORK/repo" add -A
git -C "$WORK/repo" -c user.name=demo -c user.email=demo@localhost commit -qm "a calculator with a bug"
SANDBOX=""
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "(installing bubblewrap, the OS sandbox agents run in: apt-get install bubblewrap)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } >/dev/null 2>&1 || true
fi
if ! command -v bwrap >/dev/null 2>&1; then
    echo
    echo "############################################################################"
    echo "# bubblewrap is not installed: this demo runs the agent WITHOUT the OS      #"
    echo "# sandbox (the gate still applies). Install it: apt-get install bubblewrap #"
    echo "############################################################################"
    echo
    SANDBOX="--no-os-sandbox"
else
    echo "(sandbox: bubblewrap $(bwrap --version | cut -d' ' -f2))"
fi
cd "$WORK/repo"
set +e
RUNTIME_STATE_DIR="$WORK/state" "$ROOT/$BIN/runtime" spawn --catalog "$ROOT" $SANDBOX \
    "$ROOT/manifests/examples/spawn-demo/task.toml"
status=$?
set -e
echo
echo "== what the gate decided (runtime audit show --kind gate)"
RUNTIME_STATE_DIR="$WORK/state" "$ROOT/$BIN/runtime" audit show --kind gate
echo
echo "== the commit the orchestrator made on the agent branch"
git --no-pager log --stat -1 agent/ag-demo-mean
[ "$status" -eq 0 ] || exit "$status"

echo
echo "== runtime run: a plan of three agents (two in parallel, then one using their results), merged"
cd "$WORK"
cp -r "$ROOT/manifests/examples/spawn-demo/project" "$WORK/plan-repo"
git -C "$WORK/plan-repo" init -q -b trunk
git -C "$WORK/plan-repo" add -A
git -C "$WORK/plan-repo" -c user.name=demo -c user.email=demo@localhost commit -qm "a calculator with a bug"
cd "$WORK/plan-repo"
RUNTIME_STATE_DIR="$WORK/plan-state" "$ROOT/$BIN/runtime" run --catalog "$ROOT" $SANDBOX --merge \
    "$ROOT/manifests/examples/plan/plan.toml"
echo
echo "== trunk after the run"
git --no-pager log --oneline --graph trunk
