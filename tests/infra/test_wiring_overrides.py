"""The composition root's overrides: a swapped part is what every service uses from then on, parts built
from the old one are rebuilt, and parts that did not depend on it are kept (infra/wiring/root.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.search.search_api import SearchRequest
from infra.config.settings import load_settings
from infra.wiring.root import Container
from tests.conftest import FakeEmbedder
from tests.fakes import RaisingEmbedder

DOCS = [{"type": "memory", "id": f"m-{i}", "content": f"harbor crane log {i} cargo berth"} for i in range(5)]


def indexed(tmp_path: Path, embedder: FakeEmbedder) -> Container:
    c = Container(load_settings(data_dir=tmp_path, cache="memory"), embedder=embedder)
    report = c.indexing.bulk("acme", DOCS, c.clock.now())
    assert not report.errors
    return c


def test_a_part_given_at_construction_is_the_one_services_use(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    c = indexed(tmp_path, fake)
    texts = len(fake.texts)
    hits = c.search.search("acme", SearchRequest(query="harbor crane", strategy="semantic")).results
    assert {hit.entity_id for hit in hits} == {d["id"] for d in DOCS}
    assert fake.texts[texts:] == ["harbor crane"]


def test_overriding_a_part_rebuilds_the_services_built_from_the_old_one(tmp_path: Path) -> None:
    c = indexed(tmp_path, FakeEmbedder())
    index, before = c.index, c.search
    down = RaisingEmbedder()
    c.override(embedder=down)
    answer = c.search.search("acme", SearchRequest(query="harbor crane", strategy="semantic"))
    assert answer.query_info.degraded and down.calls == 1  # the model is down: keyword results, said so
    assert c.search is not before
    assert c.index is index  # the index never depended on the embedder: same connection, same data
    keyword = c.search.search("acme", SearchRequest(query="harbor crane", strategy="keyword")).results
    assert len(keyword) == len(DOCS)


def test_an_override_outlives_an_override_of_a_part_it_would_be_built_from(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    c = Container(load_settings(data_dir=tmp_path), embedder=fake)
    c.override(configured_embedder=FakeEmbedder(32))  # `embedder` is normally built from this one
    assert c.embedder is fake
    report = c.indexing.bulk("acme", DOCS[:1], c.clock.now())
    assert not report.errors and fake.texts  # written with the overridden embedder


def test_an_unknown_part_is_refused_by_name(tmp_path: Path) -> None:
    c = Container(load_settings(data_dir=tmp_path))
    with pytest.raises(TypeError, match="embeder"):
        c.override(embeder=FakeEmbedder())


def test_a_part_cannot_be_assigned_around_override(tmp_path: Path) -> None:
    c = Container(load_settings(data_dir=tmp_path))
    search = c.search
    with pytest.raises(TypeError, match="override"):
        c.embedder = FakeEmbedder()  # type: ignore[misc]  # what a test might try: it would keep `search`
    assert c.search is search
    c.settings = load_settings(data_dir=tmp_path)  # not a part: an attribute like any other


def test_no_test_or_bench_writes_into_the_containers_slots() -> None:
    root = Path(__file__).resolve().parents[2]
    needle = "__dict__" + "["  # split so this file does not find itself
    writers = [
        str(path.relative_to(root))
        for folder in ("tests", "bench", "handlers", "infra", "scripts")
        for path in (root / folder).rglob("*.py")
        if needle in path.read_text(encoding="utf-8")
    ]
    assert writers == ["infra/wiring/root.py"], (
        "use Container.override(...) instead"
    )  # the container keeps its own


def test_every_declared_input_is_a_part() -> None:
    from infra.wiring.root import PARTS

    assert {
        name: sorted(p.inputs - PARTS.keys()) for name, p in PARTS.items() if p.inputs - PARTS.keys()
    } == {}


def test_a_builder_reading_a_part_it_does_not_declare_fails(tmp_path: Path) -> None:
    from infra.wiring.root import PARTS, Part

    c = Container(load_settings(data_dir=tmp_path))
    sneaky = Part(lambda box: box.clock)  # declares no inputs, reads the clock
    sneaky.name = "integrity"
    original = PARTS["integrity"]
    PARTS["integrity"] = sneaky
    try:
        with pytest.raises(TypeError, match="integrity reads clock"):
            c.part("integrity")
    finally:
        PARTS["integrity"] = original
