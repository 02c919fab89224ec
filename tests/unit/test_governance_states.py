"""One bundle per warning state, each produced from the fixed corpus in tests/fixtures/governance_corpus.json,
plus the invariants every bundle keeps: forbidden sources never selected, every rejection explained, every
candidate accounted for."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.governance.bundle import RejectReason, RetrievalBundle, WarningState
from core.governance.governed_retrieval import GovernedRetrievalService
from core.governance.requests import RetrieveRequest
from tests.unit.governance_fakes import overlay, service


def retrieve(
    svc: GovernedRetrievalService, task: str, overlay_json: dict[str, Any] | None = None, **request: Any
) -> RetrievalBundle:
    given = {} if overlay_json is None else {"overlay": overlay_json}  # absent: the stored overlay
    body = {"role_id": "dba", "task_text": task, **given, **request}
    return svc.retrieve("acme", RetrieveRequest.model_validate(body))


def states(bundle: RetrievalBundle) -> list[str]:
    return [w.state.value for w in bundle.warnings]


def selected_ids(bundle: RetrievalBundle) -> list[str]:
    return [c.document_id for c in bundle.selected]


@pytest.fixture(scope="module")
def svc() -> GovernedRetrievalService:
    return service()


def test_healthy_when_an_overlay_finds_strong_fresh_consistent_evidence(
    svc: GovernedRetrievalService,
) -> None:
    bundle = retrieve(svc, "rotate database credentials", overlay())
    assert states(bundle) == ["healthy"]
    assert bundle.summary.status == "ok" and bundle.summary.strong_match
    assert {"rot-runbook", "rot-wiki", "rot-forum"} <= set(selected_ids(bundle))
    # The runbook's verbatim mirror is dropped as a near duplicate of it.
    mirror = next(r for r in bundle.rejected if r.document_id == "rot-runbook-mirror")
    assert mirror.reason is RejectReason.NEAR_DUPLICATE and "rot-runbook#0" in mirror.detail
    assert "cosine" in mirror.detail  # hybrid retrieval diversifies over chunk embeddings


def test_no_overlay_uses_the_shared_corpus_with_default_policy(svc: GovernedRetrievalService) -> None:
    bundle = retrieve(svc, "rotate database credentials")
    assert states(bundle) == ["no_overlay"]
    assert bundle.warnings[0].action == "continue"
    assert bundle.summary.overlay_applied is False
    assert bundle.query.boost_terms_added == [] and bundle.query.mission is None
    assert "rot-runbook" in selected_ids(bundle)


def test_stored_overlay_is_used_when_the_request_has_none() -> None:
    svc = service()
    svc.put_overlay("acme", "dba", overlay(source_policy={"forbidden": ["forum"]}))
    bundle = retrieve(svc, "rotate database credentials")
    assert bundle.summary.overlay_applied and "forbidden_hit" in states(bundle)
    # Another tenant does not see acme's overlay.
    other = svc.retrieve("globex", RetrieveRequest(role_id="dba", task_text="rotate database credentials"))
    assert states(other) == ["no_overlay"]
    # `overlay: null` is the retrieval seed's "shared corpus only": the stored overlay is not applied
    shared = retrieve(svc, "rotate database credentials", overlay=None)
    assert not shared.summary.overlay_applied and "no_overlay" in states(shared)


def test_no_strong_match_when_nothing_in_the_corpus_is_about_the_task(svc: GovernedRetrievalService) -> None:
    bundle = retrieve(svc, "quantum chromodynamics lattice simulation", overlay())
    assert states(bundle) == ["no_strong_match"]
    assert bundle.warnings[0].action == "warn" and bundle.summary.status == "warn"
    assert bundle.selected == [] and not bundle.summary.strong_match


def test_forbidden_hit_removes_the_best_scoring_candidate_and_says_why(svc: GovernedRetrievalService) -> None:
    open_bundle = retrieve(svc, "rotate database credentials", overlay(), lexical_only=True)
    assert selected_ids(open_bundle)[0] == "rot-forum"  # the forum post is the strongest lexical match
    bundle = retrieve(
        svc, "rotate database credentials", overlay(source_policy={"forbidden": ["forum"]}), lexical_only=True
    )
    assert states(bundle) == ["forbidden_hit"]
    assert "rot-forum" not in selected_ids(bundle)
    forum = next(r for r in bundle.rejected if r.document_id == "rot-forum")
    assert forum.reason is RejectReason.FORBIDDEN_SOURCE and "forum" in forum.detail
    assert forum.relevance == max(r.relevance for r in bundle.rejected)
    assert bundle.provenance.forbidden_sources_removed == ["forum"]
    assert bundle.warnings[0].chunk_ids == ["rot-forum#0"]


def test_stale_dominant_when_most_selected_evidence_is_outside_the_window(
    svc: GovernedRetrievalService,
) -> None:
    policy = {"freshness_days": 365}
    bundle = retrieve(svc, "expense reimbursement reports", overlay(retrieval_policy=policy))
    assert states(bundle) == ["stale_dominant"]
    stale = {c.document_id for c in bundle.selected if c.stale}
    assert stale == {"expense-2019", "expense-2020"} and len(bundle.selected) == 3
    assert bundle.provenance.freshness_posture == "stale" and bundle.provenance.stale_selected == 2
    # With reject_stale the old documents are dropped instead, and the warning goes away.
    strict = retrieve(
        svc, "expense reimbursement reports", overlay(retrieval_policy={**policy, "reject_stale": True})
    )
    assert selected_ids(strict) == ["expense-2025"]
    assert {r.reason for r in strict.rejected if r.document_id.startswith("expense-20")} == {
        RejectReason.STALE
    }
    assert "stale_dominant" not in states(strict)


def test_conflicting_when_two_high_trust_sources_say_opposite_things(svc: GovernedRetrievalService) -> None:
    bundle = retrieve(svc, "can production deploys happen on friday", overlay())
    assert states(bundle) == ["conflicting"]
    warning = bundle.warnings[0]
    assert warning.action == "warn"
    assert set(warning.chunk_ids) == {"deploy-policy#0", "deploy-handbook#0"}


def test_agreeing_high_trust_sources_do_not_conflict() -> None:
    agreeing = [
        {
            "id": "a",
            "title": "Friday deploys",
            "text": "Production deploys on Friday are allowed after review.",
            "source": "policies",
            "trust": "high",
        },
        {
            "id": "b",
            "title": "Release calendar",
            "text": "Production deploys on Friday are allowed with a peer review.",
            "source": "handbook",
            "trust": "high",
        },
    ]
    bundle = retrieve(service(documents=agreeing), "can production deploys happen on friday", overlay())
    assert len(bundle.selected) == 2 and "conflicting" not in states(bundle)


def test_lexical_only_works_with_no_embedder_at_all() -> None:
    bundle = retrieve(service(embedder=None), "rotate database credentials", overlay(), lexical_only=True)
    assert bundle.query.mode == "lexical_only" and bundle.query.semantic_parts == []
    assert bundle.diagnostics.embedder is None
    assert selected_ids(bundle)[:2] == ["rot-forum", "rot-runbook"]
    # Diversity still works without vectors: the mirror is a near duplicate by term overlap.
    mirror = next(r for r in bundle.rejected if r.document_id == "rot-runbook-mirror")
    assert mirror.reason is RejectReason.NEAR_DUPLICATE and "jaccard" in mirror.detail


def test_without_an_embedder_a_hybrid_request_degrades_to_lexical_and_says_so() -> None:
    bundle = retrieve(service(embedder=None), "rotate database credentials", overlay())
    assert bundle.query.mode == "lexical_degraded"
    assert bundle.diagnostics.degraded_reason == "no embedder configured"
    assert "rot-runbook" in selected_ids(bundle)


def test_every_candidate_is_selected_or_rejected_with_a_reason(svc: GovernedRetrievalService) -> None:
    for task in (
        "rotate database credentials",
        "expense reimbursement reports",
        "incident timeline postmortem",
    ):
        bundle = retrieve(svc, task, overlay(source_policy={"forbidden": ["forum"], "min_trust": "medium"}))
        assert all(r.reason in RejectReason and r.detail for r in bundle.rejected)
        ids = [c.chunk_id for c in bundle.selected] + [r.chunk_id for r in bundle.rejected]
        assert len(ids) == len(set(ids)) == bundle.summary.candidates
        assert bundle.diagnostics.counts["selected"] == len(bundle.selected)


def test_min_trust_rejects_low_trust_sources(svc: GovernedRetrievalService) -> None:
    bundle = retrieve(
        svc, "rotate database credentials", overlay(source_policy={"min_trust": "medium"}), lexical_only=True
    )
    forum = next(r for r in bundle.rejected if r.document_id == "rot-forum")
    assert forum.reason is RejectReason.BELOW_MIN_TRUST
    assert all(c.trust in ("high", "medium") for c in bundle.selected)


weights = st.floats(min_value=0.0, max_value=1.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    relevance=st.floats(min_value=0.01, max_value=1.0),
    trust=weights,
    preference=weights,
    diversity=weights,
    min_score=st.floats(min_value=0.0, max_value=0.5),
    lexical_only=st.booleans(),
    task=st.sampled_from(
        ["rotate database credentials", "forum thread config file", "database credentials vault"]
    ),
)
def test_a_forbidden_source_is_never_selected_whatever_the_policy(
    svc: GovernedRetrievalService,
    relevance: float,
    trust: float,
    preference: float,
    diversity: float,
    min_score: float,
    lexical_only: bool,
    task: str,
) -> None:
    policy = {
        "min_score": min_score,
        "diversity": diversity,
        "weights": {"relevance": relevance, "trust": trust, "freshness": 0.0, "preference": preference},
    }
    # Even when the forbidden source is also boosted by vocabulary: forbidden wins.
    ov = overlay(
        retrieval_policy=policy,
        vocabulary={"boost": ["forum", "thread"]},
        source_policy={"forbidden": ["forum"]},
    )
    bundle = retrieve(svc, task, ov, lexical_only=lexical_only)
    assert "forum" not in {c.source for c in bundle.selected}
    assert any(r.reason is RejectReason.FORBIDDEN_SOURCE for r in bundle.rejected)
    assert WarningState.FORBIDDEN_HIT in bundle.summary.states
