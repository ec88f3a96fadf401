"""Signed provenance of the commits the runtime makes: what was asked and what ran, bound to the commit.

- `statement`: the in-toto Statement of one commit and the runtime's predicate (typed once; its JSON Schema is
  `schemas/attestation.schema.json`);
- `envelope`: the DSSE envelope it travels in;
- `signing`: the orchestrator's SSH signing key and `ssh-keygen -Y` signatures, an `allowed_signers` file as
  the trust root;
- `store`: signing a statement and keeping it (a git note under ``refs/notes/agent-runtime``, a file in the run
  folder);
- `verdict`: checking commits, ranges and what a push brings (a server's `pre-receive` hook).

The spawn (`runtime.spawn.provenance`) and the plan's merges (`runtime.orchestration`) attest; `runtime attest`
shows and checks.
"""
