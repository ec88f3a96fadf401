#!/bin/sh
# `make demo`: the roles, one composed bundle, and the gate deciding real calls.
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
