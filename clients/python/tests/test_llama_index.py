"""The LlamaIndex retrievers against a real `quarry serve`: NodeWithScore with the node id `type:id`, the
text plain, Quarry's score as the node score; the context retriever gives the budgeted block by source."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore
from quarry_client.llama_index import QuarryContextRetriever, QuarryRetriever


def test_hits_are_nodes_with_scores(server: str) -> None:
    nodes = QuarryRetriever(server, "k-read", similarity_top_k=3, strategy="keyword").retrieve("cache volume")
    assert len(nodes) == 2 and all(isinstance(n, NodeWithScore) for n in nodes)
    assert {n.node.node_id for n in nodes} == {"memory:m-cache", "memory:m-host"}
    assert nodes[0].score is not None and nodes[0].score >= (nodes[1].score or 0)
    assert nodes[0].node.metadata["entity_type"] == "memory" and "<mark>" not in nodes[0].node.get_content()


@pytest.mark.asyncio
async def test_the_async_path_and_the_context_retriever(server: str) -> None:
    nodes = await QuarryRetriever(server, "k-read", similarity_top_k=1).aretrieve("signing keys")
    assert [n.node.node_id for n in nodes] == ["memory:m-keys"]
    context = QuarryContextRetriever("li-agent", server, "k-read", token_budget=300)
    sources = context.retrieve("how often are signing keys rotated?")
    assert sources and sources[0].node.metadata["assembly_id"]
    assert any("ninety days" in n.node.get_content() for n in sources)
    assert sum(n.node.metadata["tokens"] for n in sources) <= 300
