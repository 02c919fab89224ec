"""The console reads and deletes entities whose ids need percent-encoding in a URL (`d<svg`, `café`): it
encodes each path segment once, and the server decodes every route the same way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser.driver import require_browser
from tests.browser.seed import FULL_KEY, call, demo_server
from tests.browser.test_console import browser, errors, fill, find, tab, until_text, use_key, wait_for  # noqa: F401

pytestmark = pytest.mark.slow
ODD_IDS = {"d<svg": "angle brackets in the id", "café": "an accented id", "x%41": "a literal percent"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    with demo_server(tmp_path_factory.mktemp("console-ids") / "data") as base:
        items = [{"type": "task", "id": i, "title": f"oddity {t}", "version": 1} for i, t in ODD_IDS.items()]
        status, body = call(base, "POST", "/entities", {"items": items})
        assert status == 200 and body["indexed"] == len(items), body
        yield base


@pytest.mark.parametrize("entity_id", sorted(ODD_IDS))
def test_an_id_that_needs_encoding_is_read_and_deleted(
    browser: Any,  # noqa: F811 - test_console's fixture, on this module's server
    url: str,
    entity_id: str,
) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "entities")
    fill(browser, "#entities-type", "task")
    find(browser, "#entities-form button[type=submit]").click()
    key = f"task:{entity_id}"
    item = next(
        li for li in wait_for(browser, "#entities-list > li[data-key]") if li.get_attribute("data-key") == key
    )
    item.click()
    until_text(browser, "#entities-detail", ODD_IDS[entity_id])  # GET /entities/task/<encoded id>
    button = wait_for(browser, "[data-testid=delete]")[0]
    button.click()
    button.click()  # the second click confirms
    until_text(browser, "#entities-detail", f"deleted {key}")
    status, _ = call(url, "GET", "/entities/task/" + quote(entity_id, safe=""))
    assert status == 404
    assert errors(browser) == []
