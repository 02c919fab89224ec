"""The API's answers are written by orjson (handlers/http_api/json_answers.py): the same JSON values
Powertools' own serializer wrote, text beyond ASCII as UTF-8, and what orjson cannot write still written."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from aws_lambda_powertools.shared.json_encoder import Encoder
from pydantic import BaseModel

from handlers.http_api.json_answers import dumps
from tests.conftest import api_event, invoke


def _standard(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), cls=Encoder)


class _Model(BaseModel):
    name: str
    score: float


def test_an_answer_parses_to_the_values_powertools_wrote() -> None:
    answer = {
        "results": [
            {"entity_id": "t1", "score": 1e-05, "rank": 0, "title": "Café – 東京", "tags": ["a", "b"]}
        ],
        "facets": {3: 1, "open": 2},
        "next_cursor": None,
        "exact": True,
        "ratio": 0.1 + 0.2,
    }
    assert json.loads(dumps(answer)) == json.loads(_standard(answer))


def test_text_beyond_ascii_is_written_as_utf8() -> None:
    text = dumps({"title": "Café – 東京"})
    assert "Café – 東京" in text and "\\u" not in text


def test_decimals_and_models_are_written_as_powertools_wrote_them() -> None:
    value = {"price": Decimal("1.10"), "model": _Model(name="x", score=0.5)}
    assert (
        json.loads(dumps(value))
        == json.loads(_standard(value))
        == {"price": "1.10", "model": {"name": "x", "score": 0.5}}
    )
    assert json.loads(dumps({"nan": Decimal("NaN")})) == {"nan": None}  # valid JSON, where NaN was not


def test_what_orjson_cannot_write_is_written_by_the_standard_serializer() -> None:
    assert json.loads(dumps({"big": 2**70, "n": [1, 2]})) == {"big": 2**70, "n": [1, 2]}


def test_a_search_answer_carries_utf8_text_through_the_handler(local: Any) -> None:
    item = {"type": "task", "id": "t1", "title": "Café déjà vu à Zürich", "status": "open", "project_id": "p"}
    status, body = invoke(api_event("bulk_entities", body={"items": [item]}))
    assert status == 200 and not body["errors"], body
    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext

    event = api_event("search", body={"query": "café zürich", "strategy": "keyword"})
    raw = lambda_handler(event, FakeLambdaContext(aws_request_id="utf8"))["body"]
    assert "Café déjà vu à Zürich" in raw
    assert [r["title"] for r in json.loads(raw)["results"]] == ["Café déjà vu à Zürich"]


def test_a_refusal_before_the_resolver_is_written_the_same_way(local: Any) -> None:
    from handlers.lambda_functions.api import lambda_handler
    from handlers.local_server.devserver import FakeLambdaContext

    event = api_event("search", raw_body='{"query": "x", "ché": 1, "ché": 2}')  # the body gate's 400
    answer = lambda_handler(event, FakeLambdaContext(aws_request_id="gate"))
    assert answer["statusCode"] == 400 and "'ché'" in answer["body"]
    assert json.loads(answer["body"])["error"]["fields"] == {"body": "repeats the key 'ché'"}
