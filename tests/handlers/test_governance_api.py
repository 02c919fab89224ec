"""Governed retrieval through the HTTP API Lambda and the CLI, driven by the events/ samples, end to end on
a fresh local container (SQLite index and state, a deterministic fake embedder)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from core.models import Filters, LexicalQuery
from handlers.cli import main as cli
from infra.wiring.root import Container, set_container
from tests.conftest import FakeEmbedder, api_event, invoke, make_container
from tests.fakes import FakeClock, RaisingEmbedder
from tests.unit.governance_fakes import FAKE_DIMENSION

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "governance_corpus.json"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Container]:
    """A fresh local container with a fixed clock and the fixture corpus loaded through POST /corpus."""
    c = make_container(tmp_path / "data", FakeEmbedder(dimension=FAKE_DIMENSION))
    c.override(clock=FakeClock())
    set_container(c)
    status, body = invoke(api_event("load_corpus"))
    assert status == 200, body
    yield c
    set_container(None)


def overlay_body() -> dict[str, Any]:
    return dict(json.loads(api_event("put_overlay")["body"]))


def schema(name: str) -> dict[str, Any]:
    return dict(json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text()))


def test_corpus_load_reports_documents_chunks_and_errors(app: Container) -> None:
    documents = [
        {"id": "ok", "title": "Vault basics", "text": "Vault stores secrets. " * 200, "source": "wiki"},
        {
            "id": "pre",
            "title": "Pre-chunked",
            "chunks": ["first passage", {"text": "second passage"}],
            "trust": 0.7,
        },
        {"id": "bad-text", "title": "Half an emoji", "text": "\ud800"},
    ]
    # Documents that break the published CorpusDocument schema: the request is a 400 naming each field.
    bad = [{"id": "no-content", "title": "Empty"}, {"title": "No id", "text": "x", "trust": "sky-high"}]
    status, body = invoke(api_event("load_corpus", body={"documents": documents + bad}))
    assert status == 400, body
    assert set(body["error"]["fields"]) == {"documents.3", "documents.4.id", "documents.4.trust"}
    status, body = invoke(api_event("load_corpus", body={"documents": documents}))
    assert status == 200, body
    assert body["documents_ingested"] == 2
    # ~1200 words are chunked into several ~300-token chunks; the pre-made chunks are used as they are.
    assert body["chunks_ingested"] > 2 + 2
    assert [(e["index"], e["id"]) for e in body["errors"]] == [(2, "bad-text")]  # what no schema states
    # Each pre-made chunk is its own retrievable unit.
    hits = app.index.lexical("acme", LexicalQuery(terms=("second", "passage")), Filters(), 5)
    assert [(h.key.entity_id, h.chunk_no) for h in hits] == [("pre", 1)]


def test_corpus_body_must_hold_documents(app: Container) -> None:
    status, body = invoke(api_event("load_corpus", body={"docs": []}))
    assert status == 400 and "documents" in body["error"]["fields"]


def test_overlay_crud_with_tenant_isolation_and_scopes(app: Container) -> None:
    status, stored = invoke(api_event("put_overlay"))
    assert status == 200 and stored["role_id"] == "dba"
    Draft202012Validator(schema("role_overlay")).validate(stored)
    status, got = invoke(api_event("get_overlay"))
    assert status == 200 and got == stored
    # Another tenant's overlay does not exist for globex, whether reading or deleting it.
    assert invoke(api_event("get_overlay", tenant="globex"))[0] == 404
    assert invoke(api_event("delete_overlay", tenant="globex"))[0] == 404
    # Writing needs the write scope.
    assert invoke(api_event("put_overlay", scopes=["read"]))[0] == 403
    assert invoke(api_event("delete_overlay"))[0] == 200
    assert invoke(api_event("get_overlay"))[0] == 404
    assert invoke(api_event("delete_overlay"))[0] == 404


def test_malformed_overlay_is_a_400_naming_each_bad_field(app: Container) -> None:
    bad = overlay_body()
    bad["retrieval_policy"]["max_chunks"] = 0
    bad["source_policy"]["min_trust"] = "absolute"
    bad["vocabulary"]["boots"] = ["typo"]
    bad["mission"] = ""
    status, body = invoke(api_event("put_overlay", body=bad))
    assert status == 400
    assert set(body["error"]["fields"]) == {
        "retrieval_policy.max_chunks",
        "source_policy.min_trust",
        "vocabulary.boots",
        "mission",
    }
    # A role_id that contradicts the path is refused too.
    status, body = invoke(api_event("put_overlay", body={**overlay_body(), "role_id": "someone-else"}))
    assert status == 400 and set(body["error"]["fields"]) == {"role_id"}


def test_retrieve_with_the_stored_overlay_returns_a_valid_governed_bundle(app: Container) -> None:
    invoke(api_event("put_overlay"))
    status, bundle = invoke(api_event("retrieve"))
    assert status == 200, bundle
    Draft202012Validator(schema("retrieval_bundle")).validate(bundle)
    assert bundle["version"] == "1.0" and bundle["role_id"] == "dba"
    assert bundle["summary"]["overlay_applied"] is True
    assert "rot-runbook" in [c["document_id"] for c in bundle["selected"]]
    assert all(c["source"] != "forum" for c in bundle["selected"])
    forum = [r for r in bundle["rejected"] if r["source"] == "forum"]
    assert forum and {r["reason"] for r in forum} <= {"forbidden_source"}
    assert "forbidden_hit" in bundle["summary"]["states"]
    assert bundle["query"]["context_summary"] == "Quarterly security review of the billing database"


def test_retrieve_with_an_inline_malformed_overlay_names_the_nested_fields(app: Container) -> None:
    bad = overlay_body()
    bad["retrieval_policy"]["diversity"] = 2
    event = api_event("retrieve", body={"role_id": "dba", "task_text": "rotate keys", "overlay": bad})
    status, body = invoke(event)
    assert status == 400
    assert "overlay.retrieval_policy.diversity" in body["error"]["fields"]


def test_lexical_only_never_calls_the_embedder(app: Container) -> None:
    down = RaisingEmbedder()
    app.override(embedder=down)  # retrieval is rebuilt with the broken embedder
    body = {"role_id": "dba", "task_text": "rotate database credentials", "lexical_only": True}
    status, bundle = invoke(api_event("retrieve", body=body))
    assert status == 200, bundle
    assert down.calls == 0 and bundle["query"]["mode"] == "lexical_only"
    assert bundle["summary"]["states"] == ["no_overlay"] and bundle["selected"]
    # Without lexical_only the outage degrades to lexical retrieval instead of failing.
    status, degraded = invoke(api_event("retrieve", body={**body, "lexical_only": False}))
    assert status == 200 and degraded["query"]["mode"] == "lexical_degraded"
    reason = degraded["diagnostics"]["degraded_reason"]
    assert "embedder is temporarily unavailable" in reason and "unreachable" not in reason and down.calls == 1


def test_schemas_are_published(app: Container) -> None:
    status, published = invoke(api_event("get_schema"))
    assert status == 200 and published == schema("retrieval_bundle")
    status, published = invoke(api_event("get_schema", path="/schemas/role_overlay"))
    assert status == 200 and published == schema("role_overlay")
    assert invoke(api_event("get_schema", path="/schemas/secrets"))[0] == 404
    assert invoke(api_event("get_schema", tenant=None))[0] == 401


def test_golden_set_runs_and_is_stored_for_admins(app: Container) -> None:
    invoke(api_event("put_overlay"))
    assert invoke(api_event("eval_overlay", scopes=["read", "write"]))[0] == 403
    status, report = invoke(api_event("eval_overlay"))
    assert status == 200, report
    assert set(report["strategies"]) == {"keyword", "semantic", "rrf", "convex"}
    assert report["default"] == "convex" and report["queries"] == 2
    (record,) = app.state.list_evals("acme", "overlay:dba", 10)
    assert record.metrics["strategies"] == report["strategies"]


def test_cli_validate_and_load_corpus(
    app: Container, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "overlay.json"
    good.write_text(json.dumps(overlay_body()))
    assert cli.main(["validate", "overlay", str(good)]) == 0
    assert json.loads(capsys.readouterr().out) == {"valid": True, "errors": []}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"role_id": "dba", "retrieval_policy": {"max_chunks": "many"}}))
    assert cli.main(["validate", "overlay", str(bad)]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is False
    assert {e["path"] for e in result["errors"]} == {"mission", "retrieval_policy.max_chunks"}
    # load-corpus uses the installed container (no --data-dir): the fake embedder, tenant acme.
    assert cli.main(["load-corpus", str(CORPUS), "--tenant", "acme", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"documents_ingested": 12, "chunks_ingested": 13, "errors": [], "unindexed_fields": []}
    assert cli.main(["retrieve", "dba", "rotate database credentials", "--tenant", "acme", "--json"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    assert bundle["role_id"] == "dba" and bundle["summary"]["states"] == ["no_overlay"]
    assert cli.main(["schema", "retrieval_bundle"]) == 0
    assert json.loads(capsys.readouterr().out) == schema("retrieval_bundle")


@pytest.mark.embedder
def test_a_paraphrase_is_a_strong_match_only_with_real_semantics(semantic: Container) -> None:
    # all-MiniLM-L6-v2: the task shares no content word with the runbook ("db passwords" vs "database
    # credentials"), so only the semantic side can find it.
    semantic.override(clock=FakeClock())
    assert invoke(api_event("load_corpus"))[0] == 200
    task = {"role_id": "dba", "task_text": "how often must the db passwords be changed"}
    status, hybrid = invoke(api_event("retrieve", body=task))
    assert status == 200 and hybrid["query"]["mode"] == "hybrid"
    assert hybrid["selected"][0]["document_id"] in {"rot-runbook", "rot-runbook-mirror"}
    assert hybrid["summary"]["strong_match"] is True
    status, lexical = invoke(api_event("retrieve", body={**task, "lexical_only": True}))
    assert status == 200 and "no_strong_match" in lexical["summary"]["states"]


def test_the_nightly_run_scores_and_stores_every_stored_overlays_golden_set(app: Container) -> None:
    from handlers.lambda_functions import nightly
    from handlers.local_server.devserver import FakeLambdaContext
    from tests.conftest import load_event

    invoke(api_event("put_overlay"))
    invoke(api_event("put_overlay", tenant="globex"))
    result = nightly.lambda_handler(load_event("eventbridge_nightly_eval"), FakeLambdaContext())
    scored = {(g["tenant"], g["role_id"]) for g in result["golden_sets"]}
    assert scored == {("acme", "dba"), ("globex", "dba")}
    for tenant in ("acme", "globex"):
        (record,) = app.state.list_evals(tenant, "overlay:dba", 10)
        assert set(record.metrics["strategies"]) == {"keyword", "semantic", "rrf", "convex"}
        assert 0.0 <= record.metrics["strategies"]["convex"]["ndcg_at_10"] <= 1.0


def test_tuning_adopts_a_fusion_setting_only_when_it_improves_the_golden_set(app: Container) -> None:
    invoke(api_event("put_overlay"))
    tune = api_event("tune_overlay")
    assert invoke(api_event("eval_overlay", path="/overlays/dba/tune", scopes=["read", "write"]))[0] == 403
    status, first = invoke(tune)
    assert status == 200, first
    assert first["best_ndcg_at_10"] >= first["current_ndcg_at_10"]
    stored = app.governed_retrieval.get_overlay("acme", "dba").retrieval_policy
    assert {"fusion": stored.fusion, "semantic_weight": stored.semantic_weight} == first["adopted"]
    assert first["changed"] == (first["best_ndcg_at_10"] > first["current_ndcg_at_10"])
    # Tuning again from the adopted setting finds nothing strictly better: nothing changes.
    status, second = invoke(api_event("eval_overlay", path="/overlays/dba/tune"))
    assert status == 200 and second["changed"] is False
    assert invoke(api_event("eval_overlay", path="/overlays/nobody/tune"))[0] == 404
