"""Overlay-aware query building: what BM25 and the embedder are asked, and the trace that explains it."""

from __future__ import annotations

from core.governance.overlay import RoleOverlay
from core.governance.query_builder import CONTEXT_WEIGHT, MISSION_WEIGHT, TASK_WEIGHT, build_query
from core.governance.requests import RetrieveRequest
from core.governance.terms import stem
from core.search.query import MAX_TERMS
from tests.unit.governance_fakes import overlay, service


def make(**changes: object) -> RoleOverlay:
    return RoleOverlay.model_validate(overlay(**changes))


def test_without_an_overlay_the_query_is_the_task_alone() -> None:
    built = build_query("How do I rotate the database credentials?", None, None)
    assert built.lexical.terms == ("rotate", "database", "credentials")
    assert built.semantic_parts == (("task", "How do I rotate the database credentials?", TASK_WEIGHT),)
    assert built.boost_added == () and built.suppress_removed == ()


def test_boost_terms_are_added_after_the_task_terms_and_not_repeated() -> None:
    built = build_query(
        "rotate database credentials",
        make(vocabulary={"boost": ["Vault", "credential", "key rotation"]}),
        None,
    )
    # "credential" is the task's "credentials" (same stem); "key rotation" adds two words.
    assert built.lexical.terms == ("rotate", "database", "credentials", "vault", "key", "rotation")
    assert built.boost_added == ("vault", "key", "rotation")


def test_suppress_terms_are_removed_from_the_query_and_kept_for_the_penalty() -> None:
    built = build_query(
        "rotate database credentials in the forum", make(vocabulary={"suppress": ["forums"]}), None
    )
    assert "forum" not in built.lexical.terms
    assert built.suppress_removed == ("forum",)
    assert stem("forum") in built.suppress_stems
    assert stem("forum") not in built.task_stems  # coverage is measured without suppressed words


def test_a_suppressed_boost_term_is_not_added() -> None:
    built = build_query("rotate keys", make(vocabulary={"boost": ["vault"], "suppress": ["vault"]}), None)
    assert built.lexical.terms == ("rotate", "keys")


def test_the_term_cap_keeps_every_task_term_before_vocabulary() -> None:
    task = " ".join(f"word{i}" for i in range(MAX_TERMS))
    built = build_query(task, make(vocabulary={"boost": ["vault", "rotation"]}), None)
    assert len(built.lexical.terms) == MAX_TERMS
    assert built.lexical.terms == tuple(f"word{i}" for i in range(MAX_TERMS))
    assert built.boost_added == ()


def test_mission_and_context_summary_join_the_semantic_query_with_smaller_weights() -> None:
    built = build_query("rotate credentials", make(), "  billing database security review  ")
    assert built.semantic_parts == (
        ("task", "rotate credentials", TASK_WEIGHT),
        ("context_summary", "billing database security review", CONTEXT_WEIGHT),
        ("mission", "Keep production databases secure and available", MISSION_WEIGHT),
    )
    assert TASK_WEIGHT > CONTEXT_WEIGHT > MISSION_WEIGHT
    # They inform the embedding only: BM25 still searches the task's own words.
    assert built.lexical.terms == ("rotate", "credentials", "vault")


def test_a_stop_word_only_task_still_has_terms() -> None:
    assert build_query("what is it", None, None).lexical.terms == ("what", "is", "it")


def test_the_bundle_traces_how_the_query_was_built() -> None:
    ov = overlay(vocabulary={"boost": ["vault"], "suppress": ["forum"]}, anti_goals=["marketing copy"])
    request = RetrieveRequest.model_validate(
        {
            "role_id": "dba",
            "task_text": "rotate forum credentials",
            "overlay": ov,
            "context_summary": "billing db",
        }
    )
    trace = service().retrieve("acme", request).query
    assert trace.task_terms == ["rotate", "forum", "credentials"]
    assert trace.lexical_terms == ["rotate", "credentials", "vault"]
    assert trace.boost_terms_added == ["vault"] and trace.suppress_terms_removed == ["forum"]
    assert trace.penalised_terms == ["forum"] and trace.anti_goals == ["marketing copy"]
    assert [p.role for p in trace.semantic_parts] == ["task", "context_summary", "mission"]
    assert trace.mode == "hybrid" and trace.fusion == "convex"


def test_diversity_uses_the_stored_chunk_vectors_and_embeds_only_the_query() -> None:
    """MMR compares the candidates' stored embeddings (one index read); no chunk is embedded again."""
    svc = service()
    embedder = svc._embedder  # type: ignore[attr-defined]  the fake that embedded the fixture corpus
    embedder.texts.clear()
    request = RetrieveRequest.model_validate({"role_id": "dba", "task_text": "rotate database credentials"})
    bundle = svc.retrieve("acme", request)
    assert bundle.selected and bundle.query.mode not in ("lexical_only", "lexical_degraded")
    assert embedder.texts == ["rotate database credentials"]  # the query, never a candidate chunk
    assert svc._index.vector_reads == 1  # type: ignore[attr-defined]
