"""The DynamoDB adapters as wiring builds them: from settings, against a moto server on loopback that
starts empty, through the standard AWS_ENDPOINT_URL_DYNAMODB variable."""

from __future__ import annotations

import pytest
from moto.server import ThreadedMotoServer

from infra.config.settings import load_settings
from infra.dynamodb import build_cache, build_state_store
from tests.adapters.statestore_data import T1, update, with_feedback

NOW = 1_900_000_000.0


@pytest.fixture
def endpoint(monkeypatch, tmp_path):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ENDPOINT_URL_DYNAMODB": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "QUARRY_STATE_TABLE": "wired-state",
        "QUARRY_CACHE_TABLE": "wired-cache",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield f"http://{host}:{port}"
    server.stop()


def test_built_adapters_create_their_tables_and_run_the_feedback_learning_flow(endpoint):
    settings = load_settings()
    assert settings.creates_dynamodb_tables
    store, cache = build_state_store(settings), build_cache(settings)

    ids = with_feedback(store, ["a-1", "a-2"])
    assert store.pending_callers(2) == [(T1, "agent")]
    assert store.apply_learning(T1, update(ids)) is True
    assert store.apply_learning(T1, update(ids)) is False
    assert store.get_weights(T1, "agent")[0].weight == 1.2

    cache.set("k", {"v": 1}, 60, NOW)
    assert cache.get("k", NOW) == {"v": 1} and cache.incr("gen") == 1
    # a second cold start finds the tables and keeps the data
    assert build_state_store(load_settings()).get_assembly(T1, "a-1").processed is True
