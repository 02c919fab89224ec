"""The published JSON Schemas: committed copies match the models, real overlays and bundles validate
against them (jsonschema), and validation names every bad field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from core.errors import InvalidInputError, NotFoundError
from core.governance.requests import RetrieveRequest
from core.governance.schema_validation import json_schema, parse_overlay, schema_names, validate_document
from tests.unit.governance_fakes import overlay, service

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schemas"
REGENERATE = "regenerate with: .venv/bin/quarry schema --write schemas"


def example_overlay() -> dict[str, Any]:
    event = json.loads((ROOT / "events" / "put_overlay.json").read_text())
    return dict(json.loads(event["body"]))


def bundle_json(**request: Any) -> dict[str, Any]:
    body = {"role_id": "dba", "task_text": "rotate database credentials", **request}
    return service().retrieve("acme", RetrieveRequest.model_validate(body)).model_dump(mode="json")


@pytest.mark.parametrize("name", ["role_overlay", "retrieval_bundle"])
def test_committed_schema_matches_the_model(name: str) -> None:
    committed = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    assert committed == json_schema(name), REGENERATE
    Draft202012Validator.check_schema(committed)


def test_schema_names_and_unknown_schema() -> None:
    assert schema_names() == ["retrieval_bundle", "role_overlay"]
    assert json_schema("overlay") == json_schema("role_overlay")
    with pytest.raises(NotFoundError):
        json_schema("nope")


def test_a_full_overlay_validates_against_the_published_schema() -> None:
    schema = json.loads((SCHEMA_DIR / "role_overlay.schema.json").read_text())
    Draft202012Validator(schema).validate(example_overlay())
    assert validate_document("overlay", example_overlay()) == {"valid": True, "errors": []}


@pytest.mark.parametrize(
    "request_changes",
    [
        {"overlay": overlay(source_policy={"forbidden": ["forum"]})},
        {"lexical_only": True},
        {"task_text": "quantum chromodynamics"},
    ],
)
def test_bundles_validate_against_the_published_schema(request_changes: dict[str, Any]) -> None:
    schema = json.loads((SCHEMA_DIR / "retrieval_bundle.schema.json").read_text())
    bundle = bundle_json(**request_changes)
    Draft202012Validator(schema).validate(json.loads(json.dumps(bundle)))
    assert validate_document("bundle", bundle)["valid"] is True


def test_malformed_overlay_names_each_bad_field() -> None:
    bad = {
        "role_id": "has space",
        "mission": "",
        "vocabulary": {"boost": "vault"},
        "retrieval_policy": {"max_chunks": 0, "diversty": 0.5},
        "eval_profile": {"golden_set": [{"id": "q", "task_text": "t", "expected_ids": []}]},
    }
    schema = json.loads((SCHEMA_DIR / "role_overlay.schema.json").read_text())
    assert not Draft202012Validator(schema).is_valid(bad)
    result = validate_document("overlay", bad)
    assert result["valid"] is False
    assert {e["path"] for e in result["errors"]} == {
        "role_id",
        "mission",
        "vocabulary.boost",
        "retrieval_policy.max_chunks",
        "retrieval_policy.diversty",
        "eval_profile.golden_set.0.expected_ids",
    }
    assert all(e["message"] and "[object Object]" not in e["message"] for e in result["errors"])


def test_a_broken_bundle_is_reported_by_field() -> None:
    bundle = bundle_json()
    bundle["warnings"] = []
    bundle["selected"][0]["scores"].pop("final")
    bundle["rejected"][0]["reason"] = "because"
    paths = {e["path"] for e in validate_document("bundle", bundle)["errors"]}
    assert paths == {"warnings", "selected.0.scores.final", "rejected.0.reason"}


def test_parse_overlay_takes_the_role_from_the_path_and_refuses_a_mismatch() -> None:
    body = overlay()
    body.pop("role_id")
    assert parse_overlay(body, "dba").role_id == "dba"
    with pytest.raises(InvalidInputError) as err:
        parse_overlay(overlay(), "other-role")
    assert set(err.value.fields) == {"role_id"}
    with pytest.raises(InvalidInputError) as err:
        parse_overlay(["not", "an", "object"], "dba")
    assert set(err.value.fields) == {"body"}
