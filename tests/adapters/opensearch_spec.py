"""The official OpenSearch API specification (`../shared/opensearch-api-spec`) as JSON Schema validators.

The specification is OpenAPI 3.1: YAML files under `spec/` whose schemas `$ref` each other across files.
Every file is registered in a `referencing.Registry` under its `file://` URI, so relative references
(`_common.yaml#/components/schemas/Field`, `../schemas/_core.bulk.yaml#/...`) resolve as written.

The published schemas are open: almost no object forbids unknown keys, so a misspelt key (`filtr`
inside `knn`) would pass, and a `oneOf` of open alternatives often matches twice and fails valid bodies
(the msearch header/body pair, `sort`). `strict=True` (the default) fixes both:
- it closes every object schema that is not a building block of another one (`unevaluatedProperties:
  false`, which sees through `allOf`/`$ref`), so an unknown key fails. Building blocks (members of
  `allOf`/`anyOf`, schemas `$ref`ed beside sibling `properties`, and everything inline inside them)
  stay open, because closing them would reject the keys a sibling member adds;
- it honours OpenAPI `discriminator`s (plain JSON Schema ignores them), dispatching a mapping property
  on its `type` instead of trying all 49 alternatives at every nesting level (minutes per mapping).
Measured soundness: all 179 request payloads recorded in the specification's own stories for bulk,
msearch, search, mget, index creation and index templates pass strict validation (4 of them fail the
open schemas). The test suite re-checks the 119 without aggregations (those take seconds each).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO_ROOT = Path(__file__).resolve().parents[2]
# QUARRY_OPENSEARCH_SPEC points elsewhere (e.g. from a git worktree, whose parent has no shared/).
SPEC_ROOT = Path(
    os.environ.get("QUARRY_OPENSEARCH_SPEC") or REPO_ROOT.parent / "shared" / "opensearch-api-spec"
)
SPEC_MISSING_REASON = (
    f"the OpenSearch API specification is not at {SPEC_ROOT} (CI clones shared/ beside main)"
)

_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)
_OPEN_KEYWORDS = ("additionalProperties", "patternProperties", "unevaluatedProperties")


def spec_available() -> bool:
    """True when the specification folder sits beside the repository."""
    return (SPEC_ROOT / "spec").is_dir()


def _load(path: Path) -> Any:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


def _subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(keyword, subschema) for every schema nested directly under `schema`."""
    for keyword in _SCHEMA_MAPS:
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            for sub in value.values():
                yield keyword, sub
    for keyword in _SCHEMA_LISTS:
        value = schema.get(keyword)
        if isinstance(value, list):
            for sub in value:
                yield keyword, sub
    for keyword in _SCHEMA_ONE:
        value = schema.get(keyword)
        if isinstance(value, Mapping):
            yield keyword, value


def _schema_roots(document: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Top-level schemas of an OpenAPI document: components.schemas and request/response bodies."""
    components = document.get("components") or {}
    yield from (s for s in (components.get("schemas") or {}).values() if isinstance(s, dict))
    for group in ("requestBodies", "responses"):
        for body in (components.get(group) or {}).values():
            for media in ((body or {}).get("content") or {}).values():
                if isinstance((media or {}).get("schema"), dict):
                    yield media["schema"]


def _walk(schema: Any, inside: bool = False) -> Iterator[tuple[dict[str, Any], bool, bool]]:
    """Every schema under `schema` as (node, is a building block, lies inside one).

    A building block is a member of `allOf`/`anyOf` (or of a `oneOf` beside other keywords). Schemas
    inside a building block stay open too: a sibling member may describe the same nested object.
    """
    stack: list[tuple[Any, bool, bool]] = [(schema, False, inside)]
    while stack:
        node, block, within = stack.pop()
        if not isinstance(node, dict):
            continue
        yield node, block, within
        has_siblings = "properties" in node or "allOf" in node
        # A one-member allOf with nothing beside it is an alias, not a composition.
        alias = len(node.get("allOf") or []) == 1 and not any(
            k in node for k in ("properties", "oneOf", "anyOf")
        )
        for keyword, sub in _subschemas(node):
            part = (
                (keyword == "allOf" and not alias)
                or keyword == "anyOf"
                or (keyword == "oneOf" and (has_siblings or block))
            )
            stack.append((sub, part, block or within))


def _composed_targets(documents: Mapping[str, Any]) -> set[str]:
    """Absolute URIs of component schemas used as building blocks anywhere in the specification."""
    targets: set[str] = set()
    for uri, document in documents.items():
        for root in _schema_roots(document):
            for node, block, _ in _walk(root):
                ref = node.get("$ref")
                if isinstance(ref, str) and (block or "properties" in node):
                    targets.add(_absolute(uri, ref))
    return targets


def _absolute(base: str, ref: str) -> str:
    path, _, fragment = ref.partition("#")
    if not path:
        return f"{base}#{fragment}"
    return (Path(base.removeprefix("file://")).parent / path).resolve().as_uri() + "#" + fragment


def close_schemas(documents: dict[str, Any]) -> None:
    """Add `unevaluatedProperties: false` to every object schema that is not a building block (of any
    OpenAPI documents keyed by their URI: Quarry's own /openapi.json too, tests/handlers/test_openapi_document.py)."""
    composed_refs = _composed_targets(documents)
    for uri, document in documents.items():
        components = (document.get("components") or {}).get("schemas") or {}
        block_roots = {
            id(schema)
            for name, schema in components.items()
            if f"{uri}#/components/schemas/{name}" in composed_refs
        }
        for root in _schema_roots(document):
            for node, block, within in _walk(root, inside=id(root) in block_roots):
                if block or within or any(k in node for k in _OPEN_KEYWORDS):
                    continue
                if "properties" in node or "allOf" in node:
                    node["unevaluatedProperties"] = False


def _resolve(documents: Mapping[str, Any], base: str, ref: str) -> tuple[str, Any]:
    uri, _, fragment = _absolute(base, ref).partition("#")
    node = documents[uri]
    for part in filter(None, fragment.split("/")):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return uri, node


def _tag(documents: Mapping[str, Any], uri: str, schema: Any, name: str) -> Any:
    """The single value property `name` must take in `schema` (through `$ref` and `allOf`), or None."""
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        uri, schema = _resolve(documents, uri, schema["$ref"])
        return _tag(documents, uri, schema, name)
    prop = (schema.get("properties") or {}).get(name) or {}
    if "const" in prop:
        return prop["const"]
    if len(prop.get("enum") or []) == 1:
        return prop["enum"][0]
    for part in schema.get("allOf") or []:
        found = _tag(documents, uri, part, name)
        if found is not None:
            return found
    return None


def _dispatch(documents: dict[str, Any]) -> None:
    """Honour OpenAPI `discriminator`s: pick the one `oneOf` member by tag instead of trying them all.

    Plain JSON Schema ignores `discriminator`, so a mapping (`Property`: 49 alternatives, nested three
    deep in ours) would be validated against every alternative at every level: minutes per mapping.
    """
    for uri, document in documents.items():
        for root in _schema_roots(document):
            for node, _, _ in _walk(root):
                name = (node.get("discriminator") or {}).get("propertyName")
                members = node.get("oneOf")
                if not name or not isinstance(members, list):
                    continue
                tags = [_tag(documents, uri, member, name) for member in members]
                if None in tags:
                    continue
                branches: list[dict[str, Any]] = [
                    {"if": {"properties": {name: {"const": t}}, "required": [name]}, "then": member}
                    for t, member in zip(tags, members, strict=True)
                ]
                default = node["discriminator"].get("x-default")
                if default in tags:
                    branches.append(
                        {"if": {"not": {"required": [name]}}, "then": members[tags.index(default)]}
                    )
                branches.append({"properties": {name: {"enum": tags}}})
                node["allOf"] = [*node.get("allOf", []), *branches]
                del node["oneOf"]


@cache
def _documents(strict: bool) -> dict[str, Any]:
    documents = {p.resolve().as_uri(): _load(p) for p in sorted((SPEC_ROOT / "spec").rglob("*.yaml"))}
    if strict:
        documents = copy.deepcopy(documents)
        close_schemas(documents)
        _dispatch(documents)
    return documents


@cache
def registry(strict: bool = True) -> Registry:
    """Every specification file as a resource, addressable by its file URI."""
    resources = [
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in _documents(strict).items()
    ]
    return Registry().with_resources(resources)


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def schema_uri(file: str, name: str) -> str:
    """URI of `components/schemas/<name>` in `spec/schemas/<file>.yaml`."""
    return (
        SPEC_ROOT / "spec" / "schemas" / f"{file}.yaml"
    ).resolve().as_uri() + f"#/components/schemas/{name}"


def request_body_uri(namespace: str, operation: str, media: str = "application/json") -> str:
    """URI of the request body schema of `operation` in `spec/namespaces/<namespace>.yaml`."""
    base = (SPEC_ROOT / "spec" / "namespaces" / f"{namespace}.yaml").resolve().as_uri()
    return f"{base}#/" + _pointer("components", "requestBodies", operation, "content", media, "schema")


def response_uri(namespace: str, response: str, media: str = "application/json") -> str:
    """URI of a response body schema (e.g. `search@200`) in `spec/namespaces/<namespace>.yaml`."""
    base = (SPEC_ROOT / "spec" / "namespaces" / f"{namespace}.yaml").resolve().as_uri()
    return f"{base}#/" + _pointer("components", "responses", response, "content", media, "schema")


@cache
def validator(uri: str, strict: bool = True) -> Draft202012Validator:
    """A validator for the schema at `uri` (see `schema_uri`, `request_body_uri`)."""
    return Draft202012Validator({"$ref": uri}, registry=registry(strict))


def errors(uri: str, instance: Any, strict: bool = True) -> list[str]:
    """Readable validation errors of `instance` against the schema at `uri` (empty when valid)."""
    found = validator(uri, strict).iter_errors(instance)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:300]}" for e in found]


def stories(*relative: str) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The specification's test stories under `tests/default/<relative>` (files or folders)."""
    for rel in relative:
        path = SPEC_ROOT / "tests" / "default" / rel
        files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
        for file in files:
            yield file, _load(file)
