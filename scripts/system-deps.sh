#!/usr/bin/env bash
# The system packages the test suite needs (`make test` and .ci/run both call this): installed with
# apt-get when something is missing and this is root, else one line saying what to install. Without
# them the tests that need them skip, and fail under CI, which this script then fails first.
set -euo pipefail

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have git || missing+=(git)
have make || missing+=(make)
have npm || missing+=(npm)                 # the Claude Code CLI the end-to-end tests drive
have bwrap || missing+=(bubblewrap)        # the agents' OS sandbox
have setpriv || missing+=(util-linux)      # a root orchestrator drops to the agent's uid with it
have ssh-keygen || missing+=(openssh-client)  # signs the attestation of each verified commit
have socat || missing+=(socat)             # Claude Code's own sandbox relays its network through it on Linux
have strace || missing+=(strace)           # the gate's differential tests trace what allowed commands execute
have ip || missing+=(iproute2)             # the Ray tests' loopback-only network namespace
have chromium || missing+=(chromium)       # the console's tests in a real browser (headless)
have chromedriver || missing+=(chromium-driver)  # ...driven by Selenium through it
# The sandbox's seccomp filter is built with the system's libseccomp.
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing+=(libseccomp2)
# The toolchain tests build a crate with the host's cargo (rustup's, where it is installed), and the
# real-repository tests test a Go module with the host's go.
have cargo || [ -x "${HOME:-/nonexistent}/.cargo/bin/cargo" ] || missing+=(cargo)
have go || missing+=(golang-go)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && have apt-get; then
    echo "installing what the tests need: ${missing[*]} (apt-get)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    exit 0
fi
echo "the tests need system packages that are missing: ${missing[*]} (Debian, Ubuntu: sudo apt-get install ${missing[*]})" >&2
if [ -n "${CI:-}" ]; then
    exit 1
fi
