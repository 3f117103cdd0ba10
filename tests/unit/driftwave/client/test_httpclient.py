"""httpx as the command line imports it: without its own command-line tool, and whole for
everything the command line does with it."""

from __future__ import annotations

from tests.support.freshpython import run_fresh

PROBE = """
import sys
from driftwave.client.httpclient import httpx
assert "httpx._main" not in sys.modules and "pygments" not in sys.modules
assert sys.modules["httpx"] is httpx
answer = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, json=[1]))).get(
    "http://fleet.test/v1/rollouts"
)
assert answer.json() == [1]
import httpx._main
assert callable(httpx._main.main) and "httpx._main" in sys.modules
print("ok")
"""


def test_httpx_loads_without_its_tool_and_the_tool_loads_later_on_demand() -> None:
    done = run_fresh(PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
