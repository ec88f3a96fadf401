"""runtime attest show|verify|key: the signed provenance of the commits the runtime makes (`runtime.attest`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from runtime.attest.signing import ENV, ensure_key
from runtime.attest.verdict import Finding, Repo, Require, Status, check, check_push, pushed, trust_root
from runtime.errors import UsageError
from runtime.printable import printable

if TYPE_CHECKING:
    from runtime.cli.settings import AttestKey, AttestShow, AttestVerify
    from runtime.lang.jsontypes import JSONDict

_MARK = {Status.VALID: "ok", Status.INVALID: "INVALID", Status.UNATTESTED: "unattested", Status.PLAIN: "plain"}


def run(args: AttestShow | AttestVerify | AttestKey) -> int:
    from runtime.cli.settings import AttestKey, AttestShow

    if isinstance(args, AttestKey):
        return _key(args)
    if isinstance(args, AttestShow):
        return _show(args)
    return _verify(args)


def _finding_json(finding: Finding, require: Require) -> JSONDict:
    out: JSONDict = {"commit": finding.commit, "status": str(finding.status), "passes": finding.passes(require),
                     "reason": finding.reason, "signer": finding.signer}
    if finding.statement is not None:
        out["statement"] = json.loads(finding.statement.to_json())
    return out


def _verify(args: AttestVerify) -> int:
    repo = Repo(".")
    trust = trust_root(Path(args.key) if args.key else None)
    require = Require(args.require)
    if args.pre_receive:
        if args.revs:
            raise UsageError("--pre-receive reads what the push brings from its standard input: give no REV")
        findings = check_push(repo, pushed(sys.stdin), trust)
    else:
        findings = check(repo, args.revs or ("HEAD",), trust, args.notes)
    failing = [f for f in findings if not f.passes(require)]
    if args.json:
        for finding in findings:
            print(json.dumps(_finding_json(finding, require)))
        return 1 if failing else 0
    for finding in findings:
        if finding.status == Status.PLAIN and require != Require.ALL:
            continue
        mark = _MARK[finding.status] if finding.passes(require) or finding.status != Status.PLAIN else "unattested"
        print(printable(f"{finding.commit[:12]} {mark:<10} {finding.reason}"))
    checked = len(findings)
    if failing:
        what = "the push is refused: " if args.pre_receive else ""
        rule = ("every commit" if require == Require.ALL else "a commit the runtime made") + \
            " must carry an attestation of that very commit, signed by an allowed key"
        print(printable(f"{what}{len(failing)} of {checked} commit{'' if checked == 1 else 's'} fail (--require {require}): {rule}"), file=sys.stderr)
        return 1
    valid = sum(1 for f in findings if f.status == Status.VALID)
    print(f"{checked} commit{'' if checked == 1 else 's'} checked: {valid} attested, none failing (--require {require})")
    return 0


def _show(args: AttestShow) -> int:
    repo = Repo(".")
    trust = trust_root(Path(args.key) if args.key else None)
    commit = repo.resolve(args.commit)
    if commit is None:
        raise UsageError(f"{args.commit}: no such commit")
    finding = check(repo, [f"{commit}^!"], trust)[0]
    if args.json:
        print(json.dumps(_finding_json(finding, Require.AGENT), indent=1))
        return 0 if finding.passes(Require.NONE) else 1
    print(printable(f"commit {commit}: {_MARK[finding.status]}: {finding.reason}"))
    said = finding.statement
    if said is not None:
        facts = said.predicate
        rows: list[tuple[str, str]] = [("signed by", finding.signer or "(not verified)"), ("made", facts.made),
                                       ("tree", said.tree), ("base", facts.base)]
        if facts.task is not None:
            rows += [("agent", f"{facts.agent_id} ({facts.role})"), ("task", f"{facts.task.path} sha256:{facts.task.sha256}"),
                     ("goal", facts.task.goal.strip().splitlines()[0] if facts.task.goal.strip() else "")]
        if facts.policy_sha256:
            rows.append(("policy", facts.policy_sha256))
        if facts.backend:
            rows.append(("backend", f"{facts.backend}{f' ({facts.model})' if facts.model else ''}, "
                                    f"{'in the OS sandbox' if facts.sandbox else 'without the OS sandbox'}"))
        if facts.limits is not None:
            limits = facts.limits
            rows.append(("limits", f"{limits.timeout_s} s, {limits.max_turns} turns, {limits.max_tool_calls} tool calls, "
                                   f"{limits.memory_mb} MiB, {limits.max_processes} processes"))
        for c in facts.checks:
            rows.append(("check", f"{c.atom} {c.status}" + (f": {' '.join(c.tests.trailer().split())}" if c.tests else "")))
        if facts.gate is not None:
            decided = ", ".join(f"{n} {d}" for d, n in facts.gate.decisions.items()) or "none"
            rows.append(("gate", f"{facts.gate.tool_calls} calls: {decided}; audit head {facts.gate.audit_head}"))
        if facts.egress is not None:
            e = facts.egress
            rows.append(("egress", f"{e.requests} requests ({e.refused} refused), {e.bytes_up} B up, {e.bytes_down} B down"
                                   + (f"; {', '.join(e.hosts)}" if e.hosts else "")))
        if facts.merge is not None:
            m = facts.merge
            rows.append(("merge", f"{m.merged} into {m.into}" + (f" (run {m.run_id}" + (f", {m.subtask})" if m.subtask else ")")
                                                                if m.run_id else "")))
            for c in m.checks:
                rows.append(("re-check", f"{c.atom} {c.status}"))
        for name, value in rows:
            print(printable(f"  {name:<10} {value}"))
    return 0 if finding.passes(Require.NONE) else 1


def _key(args: AttestKey) -> int:
    key = ensure_key()
    if args.json:
        print(json.dumps({"path": str(key.path), "public": key.public, "fingerprint": key.fingerprint,
                          "allowed_signers": key.allowed_signers_line()}))
        return 0
    where = f"named by {ENV}" if os.environ.get(ENV) else "its default place"
    print(f"signing key: {key.path} ({key.fingerprint}; {where})")
    print("its line for an allowed_signers file (a CI step's or a server hook's --key):")
    print(key.allowed_signers_line())
    return 0
