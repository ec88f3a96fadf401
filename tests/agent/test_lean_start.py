"""The builtin agent starts with what its role's tools need: a role without web tools never imports the HTTP
and mail stack, and a run nobody answers never imports the approvals' store."""

from __future__ import annotations

import subprocess
import sys

from runtime.agent.tools import TOOLS, WHERE


def test_the_agent_loop_imports_no_tool_module_nor_the_approvals_until_asked():
    code = ("import sys, runtime.agent.loop\n"
            "print(','.join(m for m in ('urllib.request', 'http.client', 'email.parser', 'runtime.agent.tools.web',"
            " 'runtime.approvals.store', 'runtime.audit.records') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_tool_is_imported_when_it_is_first_looked_up():
    assert list(TOOLS) == list(WHERE) and "WebFetch" in TOOLS and "Nope" not in TOOLS
    code = ("import sys\nfrom runtime.agent.tools import TOOLS\nassert 'runtime.agent.tools.web' not in sys.modules\n"
            "TOOLS['Read']\nassert 'runtime.agent.tools.web' not in sys.modules\n"
            "TOOLS['WebFetch']\nassert 'runtime.agent.tools.web' in sys.modules\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
