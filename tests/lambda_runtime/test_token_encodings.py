"""TokenEncodings=openai as Lambda runs it: the API function with bpe-openai's layer at /opt (built by
layers/token-encodings/Makefile for this machine) counts a context budget in cl100k_base and o200k_base, the
counts bpe-openai gives here; without a named encoding it still counts the estimate. The stack runs
Embedder=bedrock, as the template's rule requires; no Bedrock is reachable here, so the tenant brings its own
vectors (QUARRY_BYO_VECTOR_TENANTS): no model is called and the assembly searches its keyword leg, which is
all a token count needs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from deploy.lambda_emulator import EmulatedFunction
from deploy.lambda_local import deployment
from tests.conftest import require_tokens_extra
from tests.lambda_runtime.conftest import _delete_indices, call, eventually

TENANT = "tokens-t"
TEXT = "Rotate the signing keys every quarter; the vault's audit log records each rotation and who did it."


@pytest.fixture(scope="module")
def api(lambda_runtime: None, opensearch_url: str) -> Iterator[EmulatedFunction]:
    name = f"quarry-k{uuid.uuid4().hex[:8]}"
    overrides = {"Embedder": "bedrock", "TokenEncodings": "openai"}
    with deployment(
        "local_invoke",
        opensearch_url,
        overrides=overrides,
        stack_name=name,
        environment={
            "QUARRY_OPENSEARCH_INDEX_PREFIX": name,
            "QUARRY_BYO_VECTOR_TENANTS": f'{{"{TENANT}": 8}}',
        },
    ) as stack:
        assert stack.stack.function("ApiFunction").layers == ("TokenEncodingsLayer",)
        yield stack.function("ApiFunction")
    _delete_indices(opensearch_url, name)


def test_the_api_function_counts_a_budget_in_the_callers_encoding_from_the_layer(
    api: EmulatedFunction,
) -> None:
    require_tokens_extra()
    import bpe_openai

    status, body = call(api, "PUT", "/entities/memory/keys", TENANT, {"content": TEXT})
    assert status in (200, 201, 202), body

    def assembled(encoding: str | None) -> dict[str, Any] | None:
        request = {"query": "signing keys rotation", "caller": "bot", "log": False, "token_budget": 400}
        if encoding:
            request["token_encoding"] = encoding
        status, body = call(api, "POST", "/context/assemble", TENANT, request)
        assert status == 200, body
        return body if body["sources"] else None

    counted: dict[str, int] = {}
    for encoding in ("cl100k_base", "o200k_base"):
        answer = eventually(lambda encoding=encoding: assembled(encoding))
        assert answer is not None and answer["token_encoding"] == encoding
        real = len(bpe_openai.get_encoding(encoding).encode_ordinary(str(answer["context_block"])))
        assert answer["total_tokens"] == real, (answer, real)  # 27 and 28 for this block
        counted[encoding] = real
    estimate = assembled(None)  # the default: ceil(characters / 4) of each part, 31 here
    assert estimate is not None and estimate["token_encoding"] == "estimate"
    assert estimate["total_tokens"] >= -(-len(str(estimate["context_block"])) // 4)
    assert estimate["total_tokens"] not in counted.values()
