"""Typed per-tenant metrics: searches, cache hits, writes, assemblies and degraded answers are
emitted as CloudWatch EMF with a `tenant` dimension, one tenant never counted under another."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from core.errors import UnavailableError
from core.ports import Embedder
from handlers.observability.tenant_metrics import TenantMetric
from tests.conftest import api_event, invoke


def emitted(out: str) -> Counter[tuple[str, str]]:
    """(metric, tenant) → summed value, from the EMF lines a run printed."""
    found: Counter[tuple[str, str]] = Counter()
    for line in out.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        blob = json.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            if ["service", "tenant"] not in [sorted(d) for d in directive["Dimensions"]]:
                continue
            for metric in directive["Metrics"]:
                value = blob[metric["Name"]]
                found[(metric["Name"], blob["tenant"])] += sum(value) if isinstance(value, list) else value
    return found


def test_searches_cache_hits_writes_and_assemblies_are_counted_per_tenant(
    local: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert invoke(api_event("put_entity", body={"content": "rate limiter notes"}))[0] in (200, 201)
    for _ in range(2):
        assert invoke(api_event("search", body={"query": "limiter"}))[0] == 200
    assert invoke(api_event("search", tenant="globex", body={"query": "limiter"}))[0] == 200
    assert invoke(api_event("context_assemble", body={"query": "limiter", "caller": "agent"}))[0] == 200
    got = emitted(capsys.readouterr().out)
    assert got[(TenantMetric.WRITES, "acme")] == 1
    assert got[(TenantMetric.SEARCHES, "acme")] == 2 and got[(TenantMetric.SEARCH_CACHE_HITS, "acme")] == 1
    assert got[(TenantMetric.SEARCHES, "globex")] == 1 and got[(TenantMetric.WRITES, "globex")] == 0
    assert got[(TenantMetric.ASSEMBLIES, "acme")] == 1
    assert got[(TenantMetric.DEGRADED_ANSWERS, "acme")] == 0


def test_a_degraded_search_is_counted(local: Any, capsys: pytest.CaptureFixture[str]) -> None:
    class Down(Embedder):
        dimension, model_id = 64, "down"

        def embed_query(self, texts: Any) -> Any:
            raise UnavailableError("embedder", "throttled")

        embed = embed_query

    local.search._embedder = Down()
    status, body = invoke(api_event("search", body={"query": "how does the limiter work?"}))
    assert status == 200 and body["query_info"]["degraded"]
    assert emitted(capsys.readouterr().out)[(TenantMetric.DEGRADED_ANSWERS, "acme")] == 1


def test_with_metrics_disabled_searches_print_no_metrics(
    local: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `quarry serve` turns metrics off: before, each search printed a tenant EMF line and every 100th a
    # line holding the last 100 latencies (Powertools kept them while "disabled").
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    assert invoke(api_event("put_entity", body={"content": "rate limiter notes"}))[0] in (200, 201)
    for i in range(120):
        assert invoke(api_event("search", body={"query": f"limiter {i}"}))[0] == 200
    assert '"_aws"' not in capsys.readouterr().out
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    assert invoke(api_event("search", body={"query": "limiter"}))[0] == 200
    out = capsys.readouterr().out
    assert emitted(out)[(TenantMetric.SEARCHES, "acme")] == 1  # on again: counted, nothing kept from before
    latencies = [json.loads(line)["SearchLatency"] for line in out.splitlines() if "SearchLatency" in line]
    assert len(latencies) == 1 and len(latencies[0]) == 1  # this search's latency alone
