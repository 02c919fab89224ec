"""Trust boundaries: an empty or blank API key stops the server naming the setting (it would have admitted
requests without any Authorization header), a key bound to one caller reads only that caller's weights,
budgets, callers and log, and caller names follow one rule on every route."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigurationError
from core.state import SourceWeight
from tests.conftest import api_event, invoke
from tests.handlers.test_configuration_errors import _serve

HOSTILE_CALLERS = [
    "a\x00b",
    "a\nb",
    "..",
    ".",
    "bot/../x",
    "r\u202etl",
    "zero\u200bwidth",
    "tab\tbed",
    "x" * 129,
]


@pytest.mark.parametrize("key", ["", "   ", "\t"])
def test_an_empty_or_blank_key_refuses_to_start_naming_the_setting(tmp_path: Path, key: str) -> None:
    keys = {key: {"tenant": "acme", "scopes": ["read", "write", "admin"]}, "qk_real": {"tenant": "acme"}}
    done = _serve(tmp_path, QUARRY_API_KEYS=json.dumps(keys))
    assert done.returncode == 2, done.stdout
    assert "QUARRY_API_KEYS" in done.stderr and "empty or blank" in done.stderr, done.stderr
    assert "Quarry API on" not in done.stdout and "Traceback" not in done.stderr


def test_a_key_bound_to_an_invalid_caller_refuses_to_start() -> None:
    from infra.config.settings import load_settings

    with pytest.raises(ConfigurationError) as refused:
        load_settings(api_keys={"qk_x": {"tenant": "acme", "caller": "bot\n1"}})
    assert "QUARRY_API_KEYS" in refused.value.variables


def test_the_local_server_never_takes_a_missing_header_for_an_empty_key(local: Any) -> None:
    """Defence in depth below the setting's check: a server handed an empty key still refuses."""
    from tests.handlers.serving import serving

    def call(method: str, path: str, body: Any, authorization: str | None) -> int:
        headers = {
            "content-type": "application/json",
            **({"authorization": authorization} if authorization is not None else {}),
        }
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return int(err.code)

    with serving({"": {"tenant": "acme", "scopes": ["read", "admin"]}}, 1 << 20) as url:
        assert call("DELETE", "/tenant", {"confirm": "acme"}, None) == 401
        assert call("GET", "/whoami", None, "Bearer ") == 401
        assert call("GET", "/whoami", None, "Bearer    ") == 401


def test_mcp_over_http_never_takes_an_empty_bearer_for_an_empty_key() -> None:
    from core.errors import UnauthorizedError
    from handlers.mcp.server import Gate

    gate = Gate({"": {"tenant": "acme", "scopes": ["admin"]}}, None)
    for header in ("", "Bearer", "Bearer ", "Bearer   "):
        with pytest.raises(UnauthorizedError):
            gate.bearer(header)


# ---------------------------------------------------------------- keys bound to one caller

BOT = {"tenant": "acme", "scopes": ["read"], "caller": "bot1"}


def as_key(name: str, grant: dict[str, Any], **kwargs: Any) -> tuple[int, Any]:
    event = api_event(name, **kwargs)
    event["requestContext"]["authorizer"] = {"lambda": grant}
    return invoke(event)


@pytest.fixture
def two_callers(local: Any) -> Any:
    for caller in ("bot1", "bot2"):
        assert invoke(api_event("context_assemble", body={"query": "limiter", "caller": caller}))[0] == 200
        local.state.put_weight(
            "acme", SourceWeight(caller, "memory", 0.3, 0.1, True, "2030-01-01T00:00:00Z"), None
        )
    local.state.put_weight("acme", SourceWeight("*", "memory", 0.9, 0.2, True, "2030-01-01T00:00:00Z"), None)
    from core.state import CallerBudget

    for caller in ("bot1", "bot2", "*"):
        local.state.put_budget("acme", CallerBudget(caller, 1000, 500, 2000, "2030-01-01T00:00:00Z"))
    return local


def test_a_bound_key_sees_only_its_callers_weights_budgets_callers_and_log(two_callers: Any) -> None:
    status, weights = as_key("context_weights", BOT)
    assert status == 200 and {w["caller"] for w in weights["weights"]} == {"bot1", "*"}, weights
    status, budgets = as_key("context_budgets", BOT)
    assert status == 200 and {b["caller"] for b in budgets["budgets"]} == {"bot1", "*"}, budgets
    assert as_key("context_log_callers", BOT)[1]["data"] == ["bot1"]
    log = as_key("context_log", BOT, query={})[1]["data"]
    assert log and {e["caller"] for e in log} == {"bot1"}
    assert as_key("context_log", BOT, query={"caller": "bot2"})[0] == 403
    # an unbound key (and an admin) still sees every caller
    assert {w["caller"] for w in invoke(api_event("context_weights"))[1]["weights"]} == {"bot1", "bot2", "*"}
    assert invoke(api_event("context_log_callers"))[1]["data"] == ["bot1", "bot2"]


# ---------------------------------------------------------------- one caller rule on every route


@pytest.mark.parametrize("bad", HOSTILE_CALLERS)
def test_a_caller_name_assembly_refuses_is_refused_on_every_route(local: Any, bad: str) -> None:
    from urllib.parse import quote

    answers = {
        "assemble": invoke(api_event("context_assemble", body={"query": "limiter", "caller": bad})),
        "pin": invoke(
            api_event(
                "context_put_weight",
                path=f"/context/weights/{quote(bad, safe='')}/memory",
                body={"weight": 1},
            )
        ),
        "budget": invoke(
            api_event(
                "context_put_budget", path=f"/context/budgets/{quote(bad, safe='')}", body={"budget": 900}
            )
        ),
        "log": invoke(api_event("context_log", query={"caller": bad})),
        "history": invoke(api_event("weight_history", query={"caller": bad})),
    }
    for route, (status, body) in answers.items():
        if route in ("pin", "budget") and "/" in bad:
            assert status in (400, 404), (route, body)  # an encoded '/' decodes into the segment: refused
            continue
        assert status == 400 and "caller" in body["error"]["fields"], (route, body)
    assert local.state.list_weights("acme") == [] and local.state.list_budgets("acme") == []


def test_the_wildcard_is_a_pin_target_but_not_an_assembling_caller(local: Any) -> None:
    pin = invoke(api_event("context_put_weight", path="/context/weights/*/memory", body={"weight": 0.5}))
    assert pin[0] == 200 and pin[1]["caller"] == "*"
    status, body = invoke(api_event("context_assemble", body={"query": "limiter", "caller": "*"}))
    assert status == 400 and "reserved" in body["error"]["fields"]["caller"]
    assert (
        invoke(api_event("context_assemble", body={"query": "limiter", "caller": "auth0|5f7c8ec7"}))[0] == 200
    )
