"""net::egress-allowlist: the hosts an agent may reach, for WebFetch here and the egress proxy outside.

The gate only holds the list: `WebFetch` and `WebSearch` are judged in the
engine's web handler against it (`runtime.lang.domains`), and a role that
shows a web tool without this atom reaches nothing. The `addresses` ranges
matter to the proxy only (the gate never resolves a name).
"""

from __future__ import annotations

from runtime.gate.kinds.base import Gate, PolicyError, no_more, take_list


class EgressAllowlist(Gate):
    kind = "egress-allowlist"

    def configure(self, params: dict[str, object]) -> None:
        self.domains = tuple(take_list(params, "domains"))
        self.addresses = tuple(take_list(params, "addresses"))
        ports = params.pop("ports", None)
        if not isinstance(ports, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in ports):
            raise PolicyError("parameter `ports` must be a list of port numbers")
        self.ports = tuple(ports)
        params.pop("credentials", None)  # the egress proxy's to add, outside the sandbox; nothing the gate judges
        if self.domains:
            from runtime.lang.domains import pattern_error  # only policies that name domains pay for it
        for pattern in self.domains:
            if (why := pattern_error(pattern)) is not None:
                raise PolicyError(why)
        no_more(self.kind, params)
