"""The /context routes through the HTTP API Lambda, driven by the events/ samples, end to end on the
local backend: assemble, feedback, log, weights, budgets, eval, scopes, and every seed limitation beaten
(request id logged, missing enrichment reported, log:false → null id, foreign feedback → 404)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import UnavailableError
from handlers.cli.main import main as cli_main
from handlers.lambda_functions import nightly as nightly_handler
from handlers.local_server.devserver import FakeLambdaContext
from infra.wiring.root import set_container
from tests.conftest import FakeEmbedder, api_event, invoke, load_event, make_container

CALLER = "agent-coder"
ITEMS = [
    {
        "type": "memory",
        "id": "m-limiter",
        "content": "The login rate limiter allows 5 attempts per minute",
        "namespace": "auth",
    },
    {
        "type": "memory",
        "id": "m-billing",
        "content": "Billing rate limiter uses a token bucket per account",
        "namespace": "billing",
    },
    {
        "type": "memory",
        "id": "m-cooking",
        "content": "Risotto needs warm stock and patience",
        "namespace": "auth",
    },
    {
        "type": "memory",
        "id": "a-own",
        "content": "I raised the login limiter threshold",
        "source": "agent_memory",
        "owner": CALLER,
        "namespace": "auth",
    },
    {
        "type": "memory",
        "id": "a-peer",
        "content": "Reviewer says the login limiter lacks tests",
        "source": "agent_memory",
        "owner": "agent-review",
        "namespace": "auth",
    },
    {
        "type": "document",
        "id": "d-design",
        "title": "Login design",
        "text": "Login uses a rate limiter with lockout",
        "namespace": "auth",
    },
    {
        "type": "memory",
        "id": "p-cache",
        "content": "Cached answer: limiter config lives in auth.yaml",
        "source": "psychic_cache",
        "namespace": "auth",
    },
    {
        "type": "task",
        "id": "t-login",
        "title": "Fix login rate limiter",
        "description": "limiter resets too early",
    },
]


class FakeDownEmbedder(FakeEmbedder):
    """An embedder whose model endpoint is down."""

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        raise UnavailableError("bedrock", "ThrottlingException: rate exceeded")


@pytest.fixture
def links_root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "runbook.md").write_text("Runbook: if the limiter locks everyone out, flush redis.")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    (root / "notes" / "escape.md").symlink_to(tmp_path / "secret.txt")
    return root


def install(tmp_path: Path, embedder: Any = None, **settings: Any) -> Any:
    c = make_container(tmp_path / "data", embedder or FakeEmbedder(), **settings)
    set_container(c)
    report = c.indexing.bulk("acme", [{**item, "version": 1} for item in ITEMS], c.clock.now())
    assert report.indexed == len(ITEMS)
    return c


@pytest.fixture
def ctx(tmp_path: Path, links_root: Path) -> Iterator[Any]:
    yield install(tmp_path, links_root=links_root)
    set_container(None)


def assemble(tenant: str = "acme", scopes: Sequence[str] = ("read",), **body: Any) -> tuple[int, Any]:
    payload = {"query": "login rate limiter", "caller": CALLER, **body}
    return invoke(api_event("context_assemble", tenant=tenant, scopes=scopes, body=payload))


def ok(status_body: tuple[int, Any]) -> Any:
    status, body = status_body
    assert status == 200, body
    return body


def test_sample_event_assembles_a_labelled_block_within_budget(ctx: Any) -> None:
    body = ok(invoke(api_event("context_assemble")))
    assert body["assembly_id"] and body["token_budget"] == 1500
    assert 0 < body["total_tokens"] <= 1500
    block = body["context_block"]
    assert block.startswith("[LINK] task:t-login")  # the explicit link comes first
    for label in (
        "[MEMORY] memory:m-limiter",
        "[AGENT_MEMORY_OWN] memory:a-own",
        "[AGENT_MEMORY_PEER] memory:a-peer",
        "[VAULT_INDEX] document:d-design",
        "[PSYCHIC_CACHE] memory:p-cache",
    ):
        assert label in block
    by_id = {s["id"]: s for s in body["sources"]}
    assert by_id["task:t-login"]["source"] == "explicit_link"
    assert by_id["memory:a-own"]["source"] == "agent_memory_own"
    assert by_id["memory:a-peer"]["source"] == "agent_memory_peer"
    assert "memory:m-cooking" not in by_id  # no shared word; the fake embedder gives it no similarity
    assert sum(s["tokens"] for s in body["sources"]) == body["total_tokens"]


def test_own_and_peer_memory_follow_the_caller(ctx: Any) -> None:
    body = ok(assemble(caller="agent-review", sources=["agent_memory_own", "agent_memory_peer"]))
    by_id = {s["id"]: s["source"] for s in body["sources"]}
    assert by_id == {"memory:a-peer": "agent_memory_own", "memory:a-own": "agent_memory_peer"}


def test_other_namespaces_count_half_and_can_be_left_out(ctx: Any) -> None:
    body = ok(assemble(namespace="auth", sources=["memory"]))
    scores = {s["id"]: s["score"] for s in body["sources"]}
    assert scores["memory:m-billing"] == pytest.approx(scores["memory:m-limiter"] / 2, rel=1e-3)
    narrow = ok(assemble(namespace="auth", sources=["memory"], expand_namespaces=False))
    assert "memory:m-billing" not in {s["id"] for s in narrow["sources"]}


def test_the_request_id_is_logged_with_the_assembly(ctx: Any) -> None:
    body = ok(invoke(api_event("context_assemble")))
    log = ok(invoke(api_event("context_log")))
    entry = next(e for e in log["data"] if e["assembly_id"] == body["assembly_id"])
    assert entry["request_id"] == "req-context-assemble"
    assert (entry["caller"], entry["namespace"], entry["budget"]) == (CALLER, "auth-service", 1500)
    assert [s["id"] for s in entry["sources"]] == [s["id"] for s in body["sources"]]
    # a trace id stands in when there is no API Gateway request id
    event = api_event("context_assemble", headers={"x-amzn-trace-id": "Root=1-abc"})
    event["requestContext"]["requestId"] = None
    traced = ok(invoke(event))
    assert ok(invoke(api_event("context_log")))["data"][0]["request_id"] == "Root=1-abc"
    assert traced["assembly_id"]


def test_log_false_returns_a_null_id_and_logs_nothing(ctx: Any) -> None:
    body = ok(assemble(log=False))
    assert body["assembly_id"] is None and body["sources"]
    assert ok(invoke(api_event("context_log")))["data"] == []


def test_missing_enrichment_is_reported_in_warnings(tmp_path: Path) -> None:
    down = install(tmp_path)
    down.override(embedder=FakeDownEmbedder())  # the model goes down after indexing
    try:
        body = ok(assemble())
        assert not any("triple" in w or "graph" in w for w in body["warnings"])  # none configured: no graph
        assert any(
            "semantic retrieval skipped" in w and "temporarily unavailable" in w for w in body["warnings"]
        )
        assert not any("ThrottlingException" in w for w in body["warnings"])  # SDK text goes to logs only
        assert "memory:m-limiter" in {s["id"] for s in body["sources"]}  # keyword retrieval still works
    finally:
        set_container(None)


def test_the_default_setup_assembles_without_warnings(tmp_path: Path) -> None:
    # no triple store is configured by default: that is a choice, not an enrichment that failed
    install(tmp_path)
    try:
        body = ok(assemble(token_budget=2000))
        assert body["warnings"] == [] and body["sources"]
    finally:
        set_container(None)


def test_a_triple_store_that_fails_is_reported_and_counted_as_degraded(tmp_path: Path) -> None:
    from core.context.context_service import is_degraded

    facts = tmp_path / "facts.jsonl"
    facts.write_text("{not json\n")
    install(tmp_path, triples_file=facts)
    try:
        body = ok(assemble(query="Does Redis back the login rate limiter?", token_budget=2000))
        assert any("knowledge-graph" in w for w in body["warnings"]) and is_degraded(body["warnings"])
    finally:
        set_container(None)


def test_graph_lines_appear_when_a_triple_store_is_configured(tmp_path: Path) -> None:
    facts = tmp_path / "facts.jsonl"
    facts.write_text(
        json.dumps(
            {"tenant_id": "acme", "subject": "Redis", "predicate": "stores", "object": "limiter counters"}
        )
        + "\n"
        + json.dumps({"tenant_id": "other", "subject": "Redis", "predicate": "secret", "object": "x"})
        + "\n"
    )
    install(tmp_path, triples_file=facts)
    try:
        body = ok(assemble(query="Does Redis back the login rate limiter?", token_budget=2000))
        assert "[GRAPH] Redis | stores | limiter counters" in body["context_block"]
        assert "secret" not in body["context_block"]
        assert not any("triple" in w for w in body["warnings"])
    finally:
        set_container(None)


def test_a_link_left_out_of_the_link_allowance_is_still_retrieved(ctx: Any) -> None:
    # 30% of 100 tokens holds the first link only; the second is relevant, so retrieval packs it
    body = ok(assemble(token_budget=100, explicit_links=["task:t-login", "memory:a-own"], log=False))
    assert "explicit link 'memory:a-own' did not fit in the 30% link allowance" in body["warnings"]
    placed = [(s["id"], s["source"]) for s in body["sources"]]
    assert placed[0] == ("task:t-login", "explicit_link")
    assert ("memory:a-own", "agent_memory_own") in placed
    assert [i for i, _ in placed].count("task:t-login") == 1


def test_explicit_file_links_are_read_under_the_root_and_escapes_refused(ctx: Any) -> None:
    body = ok(assemble(explicit_links=["notes/runbook.md", "memory:nope"]))
    assert body["context_block"].startswith("[LINK] notes/runbook.md\nRunbook:")
    assert any("memory:nope" in w and "not found" in w for w in body["warnings"])
    for bad, reason in (
        ("../secret.txt", "'..'"),
        ("notes/escape.md", "outside the links root"),
        ("/etc/passwd", "absolute"),
    ):
        status, err = assemble(explicit_links=["notes/runbook.md", bad])
        assert status == 400, err
        assert reason in err["error"]["fields"]["explicit_links.1"]
        assert "TOP SECRET" not in json.dumps(err)


def test_file_links_are_refused_when_no_root_is_configured(tmp_path: Path) -> None:
    install(tmp_path)
    try:
        status, err = assemble(explicit_links=["notes/runbook.md"])
        assert status == 400 and "QUARRY_LINKS_ROOT" in err["error"]["fields"]["explicit_links.0"]
    finally:
        set_container(None)


def test_feedback_is_recorded_and_foreign_or_unknown_assemblies_are_404(ctx: Any) -> None:
    body = ok(invoke(api_event("context_assemble")))
    feedback = {
        "assembly_id": body["assembly_id"],
        "used_source_ids": ["memory:m-limiter", "memory:ghost"],
        "tokens_used": 40,
    }
    got = ok(invoke(api_event("context_feedback", body=feedback)))
    assert (got["recorded_ids"], got["ignored_ids"]) == (["memory:m-limiter"], ["memory:ghost"])
    entry = ok(invoke(api_event("context_log")))["data"][0]
    assert (entry["used_ids"], entry["tokens_used"]) == (["memory:m-limiter"], 40)
    status, err = invoke(api_event("context_feedback", tenant="globex", body=feedback))
    assert status == 404 and err["error"]["code"] == "not_found"
    status, _ = invoke(api_event("context_feedback", body={**feedback, "assembly_id": "no-such-id"}))
    assert status == 404


def test_the_default_sources_cover_the_entity_types_a_user_writes(ctx: Any) -> None:
    """A task written without a `source` is found by an assembly naming no sources, under its own source
    `tasks`, and `"sources": ["tasks"]` is a source the deployment has."""
    body = ok(assemble(query="login rate limiter", token_budget=4000))
    assert ("task:t-login", "tasks") in {(s["id"], s["source"]) for s in body["sources"]}, body["sources"]
    assert "[TASK]" in body["context_block"]
    only = ok(assemble(query="login rate limiter", sources=["tasks"]))
    assert {s["source"] for s in only["sources"]} == {"tasks"}
    listed = ok(invoke(api_event("context_weights")))["sources"]
    assert {"tasks", "ideas", "projects", "people", "commitments", "vault_index"} <= set(listed)


def test_bounds_alone_clamp_the_budget_a_caller_without_a_row_has_now(tmp_path: Path) -> None:
    install(tmp_path)
    assert ok(assemble(namespace="auth"))["token_budget"] == 4000  # the deployment's default budget
    row = ok(put_budget("alpha", min_budget=800, max_budget=3000))  # no budget given, none stored
    assert (row["budget"], row["min_budget"], row["max_budget"]) == (3000, 800, 3000)
    wide = ok(put_budget("beta", min_budget=800, max_budget=6000))  # the default already lies within
    assert (wide["budget"], wide["min_budget"], wide["max_budget"]) == (4000, 800, 6000)
    status, err = put_budget("gamma", min_budget=7000, max_budget=6000)
    assert status == 400 and "min_budget" in err["error"]["fields"]
    set_container(None)


@pytest.mark.parametrize(
    ("event", "scopes"),
    [
        ("context_assemble", ("write", "admin")),
        ("context_feedback", ("read",)),
        ("context_weights", ("write",)),
        ("context_budgets", ()),
        ("context_log", ("write",)),
        ("context_log_callers", ("admin",)),
        ("context_put_weight", ("read", "write")),
        ("context_eval", ("read", "write")),
    ],
)
def test_each_route_needs_its_scope(ctx: Any, event: str, scopes: tuple[str, ...]) -> None:
    status, body = invoke(api_event(event, scopes=scopes))
    assert status == 403, body
    status, _ = invoke(api_event(event, tenant=None))  # type: ignore[arg-type]
    assert status == 401


def test_invalid_requests_name_the_field(ctx: Any) -> None:
    for body, field in (
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": 16001}, "token_budget"),
        ({"query": "  "}, "query"),
        ({"sources": ["nope"]}, "sources.0"),
        ({"caller": ""}, "caller"),
    ):
        status, err = assemble(**body)
        assert status == 400 and field in err["error"]["fields"], (body, err)


def test_learning_through_the_api(ctx: Any) -> None:
    for _ in range(10):
        body = ok(assemble(namespace="auth"))
        used = [s["id"] for s in body["sources"] if s["source"] == "agent_memory_own"]
        ok(
            invoke(
                api_event(
                    "context_feedback",
                    scopes=("write",),
                    body={"assembly_id": body["assembly_id"], "used_source_ids": used},
                )
            )
        )
    report = ok(invoke(api_event("context_eval")))
    assert report["callers"] == 1 and report["assemblies"] == 10
    moved = {a["source"]: a for a in report["weight_adjustments"]}
    assert moved["agent_memory_own"]["new_weight"] > moved["agent_memory_own"]["old_weight"]
    assert moved["memory"]["new_weight"] < moved["memory"]["old_weight"]
    weights = ok(invoke(api_event("context_weights")))
    assert {(w["caller"], w["source"]) for w in weights["weights"]} >= {
        (CALLER, "agent_memory_own"),
        (CALLER, "memory"),
    }
    again = ok(invoke(api_event("context_eval")))
    assert (again["callers"], again["weights_count"]) == (0, 0)
    # processed feedback can no longer change
    entry = ok(invoke(api_event("context_log")))["data"][0]
    status, _ = invoke(
        api_event("context_feedback", body={"assembly_id": entry["assembly_id"], "used_source_ids": []})
    )
    assert status == 409


def test_manual_weights_mute_a_source_and_show_up_in_weights(ctx: Any) -> None:
    pinned = ok(
        invoke(api_event("context_put_weight", path="/context/weights/*/psychic_cache", body={"weight": 0}))
    )
    assert (pinned["caller"], pinned["weight"], pinned["manual"]) == ("*", 0.0, True)
    body = ok(assemble())
    assert "psychic_cache" not in {s["source"] for s in body["sources"]}
    status, err = invoke(
        api_event("context_put_weight", path="/context/weights/agent-coder/nope", body={"weight": 1})
    )
    assert status == 400 and "source" in err["error"]["fields"]
    status, err = invoke(api_event("context_put_weight", body={"weight": 2.0}))
    assert status == 400 and "weight" in err["error"]["fields"]


def test_budgets_fall_back_and_are_listed(ctx: Any) -> None:
    assert ok(assemble())["token_budget"] == 2000  # no namespace, nothing configured
    assert ok(assemble(namespace="auth"))["token_budget"] == 4000  # the global default
    from core.state import CallerBudget

    ctx.state.put_budget("acme", CallerBudget("*", 3000, 500, 8000))
    assert ok(assemble())["token_budget"] == 3000
    budgets = ok(invoke(api_event("context_budgets")))
    assert budgets["budgets"][0]["caller"] == "*" and budgets["null_namespace_budget"] == 2000


def put_budget(caller: str, scopes: Sequence[str] = ("admin",), **body: Any) -> tuple[int, Any]:
    path = f"/context/budgets/{caller}"
    return invoke(api_event("context_put_budget", path=path, scopes=scopes, body=body))


def test_an_admin_sets_a_callers_budget_and_the_bounds_learning_keeps_it_within(tmp_path: Path) -> None:
    from infra.timing.clock import SystemClock

    clock = LaterClock(SystemClock())
    install(tmp_path, clock=clock)
    row = ok(put_budget(CALLER, budget=1200, min_budget=1000, max_budget=1300))
    assert (row["caller"], row["budget"], row["min_budget"], row["max_budget"]) == (CALLER, 1200, 1000, 1300)
    assert ok(assemble())["token_budget"] == 1200
    narrowed = ok(put_budget(CALLER, max_budget=1100))  # the budget is clamped into the new bounds
    assert (narrowed["budget"], narrowed["min_budget"], narrowed["max_budget"]) == (1100, 1000, 1100)
    listed = ok(invoke(api_event("context_budgets")))["budgets"]
    assert [(b["caller"], b["budget"], b["max_budget"]) for b in listed] == [(CALLER, 1100, 1100)]
    budgets = []
    for _ in range(3):  # three batches nobody reported on: −5% each, stopped at the minimum
        for _ in range(10):
            ok(assemble())
        clock.ahead += 3600  # past the feedback window: unreported assemblies count as unused
        ok(invoke(api_event("context_eval")))
        budgets.append(ok(invoke(api_event("context_budgets")))["budgets"][0]["budget"])
    assert budgets == [1045, 1000, 1000]
    set_container(None)


@pytest.mark.parametrize(
    ("caller", "body", "status", "field"),
    [
        (CALLER, {"budget": 900, "min_budget": 1000}, 400, "budget"),
        (CALLER, {"budget": 1000, "min_budget": 2000, "max_budget": 1500}, 400, "min_budget"),
        (CALLER, {"budget": 0}, 400, "budget"),
        (CALLER, {"budget": 20_000}, 400, "budget"),
        (CALLER, {"budget": 1000, "minBudget": 5}, 400, "minBudget"),
        ("%20%20", {"budget": 1000}, 400, "caller"),
        ("x" * 129, {"budget": 1000}, 400, "caller"),
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field(
    ctx: Any, caller: str, body: dict[str, Any], status: int, field: str
) -> None:
    got, err = put_budget(caller, **body)
    assert (got, field in err["error"]["fields"]) == (status, True), err


def test_setting_a_budget_needs_admin(ctx: Any) -> None:
    status, err = put_budget(CALLER, scopes=("read", "write"), budget=1000)
    assert status == 403
    assert ok(invoke(api_event("context_budgets")))["budgets"] == []


class LaterClock:
    """The system clock moved `ahead` seconds into the future (the feedback window passing)."""

    def __init__(self, clock: Any) -> None:
        self._clock = clock
        self.ahead = 0.0

    def now(self) -> float:
        return float(self._clock.now()) + self.ahead

    def monotonic(self) -> float:
        return float(self._clock.monotonic())


def test_log_pages_with_a_cursor_and_filters(ctx: Any) -> None:
    for caller in ("a", "b", "a"):
        ok(assemble(caller=caller))
    first = ok(invoke(api_event("context_log", query={"limit": "2"})))
    assert len(first["data"]) == 2 and first["next_cursor"]
    rest = ok(invoke(api_event("context_log", query={"limit": "2", "cursor": first["next_cursor"]})))
    assert len(rest["data"]) == 1 and rest["next_cursor"] is None
    only_a = ok(invoke(api_event("context_log", query={"caller": "a"})))
    assert [e["caller"] for e in only_a["data"]] == ["a", "a"]
    assert ok(invoke(api_event("context_log_callers")))["data"] == ["a", "b"]
    status, err = invoke(api_event("context_log", query={"cursor": "garbage"}))
    assert status == 400 and "cursor" in err["error"]["fields"]
    assert ok(invoke(api_event("context_log", tenant="globex")))["data"] == []


def test_nightly_lambda_and_cli_run_the_cycle(ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(10):
        body = ok(assemble())
        ok(
            invoke(
                api_event(
                    "context_feedback",
                    body={"assembly_id": body["assembly_id"], "used_source_ids": [body["sources"][0]["id"]]},
                )
            )
        )
    result = nightly_handler.lambda_handler(
        load_event("eventbridge_nightly_eval"), FakeLambdaContext(aws_request_id="nightly")
    )
    assert result["callers"] == 1 and result["assemblies"] == 10
    capsys.readouterr()  # drop the metrics the handlers printed
    assert cli_main(["eval-cycle", "--data-dir", str(ctx.settings.data_dir)]) == 0
    assert json.loads(capsys.readouterr().out)["callers"] == 0  # nothing new since the nightly run


@pytest.mark.embedder
def test_semantic_context_without_a_shared_word(tmp_path: Path, real_embedder: Any) -> None:
    install(tmp_path, real_embedder)
    try:
        body = ok(assemble(query="API throttling protection for sign-in", sources=["memory"]))
        ids = [s["id"] for s in body["sources"]]
        assert ids[0] == "memory:m-limiter" and "memory:m-cooking" not in ids
    finally:
        set_container(None)
