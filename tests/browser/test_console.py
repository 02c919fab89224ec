"""The browser console in a real headless Chromium against a real local server: it loads cleanly, draws
searches, comparisons, assemblies and governed bundles, renders hostile text as text, and a read-only
key gets no write controls while the server refuses its writes anyway."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.driver import require_browser, start_browser
from tests.browser.seed import FULL_KEY, HOSTILE_TITLE, READ_KEY, call, demo_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_browser()
    with demo_server(tmp_path_factory.mktemp("console") / "data") as base:
        yield base


@pytest.fixture(scope="module")
def browser(url: str) -> Iterator[Any]:
    driver = start_browser(require_browser())
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, css: str, count: int = 1, timeout: float = 10) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count)
    return list(driver.find_elements(By.CSS_SELECTOR, css))


def until_text(driver: Any, css: str, wanted: str, timeout: float = 10) -> None:
    """Wait until the element's text contains `wanted`; the console re-renders it meanwhile, so an element
    found a moment ago may be gone (stale) when its text is read: that is "not yet", not a failure."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(
        driver, timeout, ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)
    ).until(lambda d: wanted in find(d, css).text)


def find(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def errors(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def use_key(driver: Any, base: str, key: str) -> None:
    driver.get(base + "/")
    find(driver, "#key").send_keys(key)
    find(driver, "#key-form button[type=submit]").click()

    until_text(driver, "#who", "tenant demo")


def fill(driver: Any, css: str, text: str) -> None:
    field = find(driver, css)
    field.clear()
    field.send_keys(text)


def tab(driver: Any, view: str) -> None:
    find(driver, f".tab[data-view={view}]").click()


def test_console_loads_without_errors_and_keeps_the_key_out_of_the_url(browser: Any, url: str) -> None:
    browser.get(url + "/")
    assert browser.title == "Quarry console"
    assert find(browser, "#who").text == "no key"
    use_key(browser, url, FULL_KEY)
    assert "admin, read, write" in find(browser, "#who").text
    assert errors(browser) == []
    assert FULL_KEY not in browser.current_url
    assert browser.execute_script("return sessionStorage.getItem('quarry.key')") == FULL_KEY
    assert browser.execute_script("return localStorage.length") == 0


def test_a_search_shows_results_with_highlights_and_an_explanation(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    fill(browser, "#search-query", "login limiter")
    find(browser, "#search-form button[type=submit]").click()
    items = wait_for(browser, "#search-results > li[data-key]")
    assert items[0].get_attribute("data-key") in {"task:t-login", "document:d-design", "memory:m-auth"}
    assert wait_for(items[0], "mark")[0].text.lower() in {"login", "limiter"}
    explanation = find(items[0], "[data-testid=explanation]")
    assert "lexical" in explanation.text and "vector" in explanation.text and "fused" in explanation.text
    assert "#1" in explanation.text  # the best hit of a leg is its #1 (the API counts from 0)
    fills = explanation.find_elements("css selector", ".meter > div")
    assert len(fills) == 3 and any(f.size["width"] > 0 for f in fills)
    assert "strategy" in find(browser, "#search-info").text
    assert errors(browser) == []


def test_compare_shows_two_lists_with_rank_moves(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "compare")
    fill(browser, "#compare-query", "rate limiter")
    find(browser, "#compare-form button[type=submit]").click()
    left = wait_for(browser, "#compare-left > li")
    right = wait_for(browser, "#compare-right > li")
    assert left and right
    assert all(find(li, ".move").text for li in right)  # every right-hand result says how it moved
    assert find(browser, "#compare-a-title").text == "keyword"
    assert find(browser, "#compare-b-title").text == "semantic"
    assert errors(browser) == []


def test_an_assembly_shows_each_sources_share_of_the_budget(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "context")
    fill(browser, "#context-query", "login rate limiter")
    fill(browser, "#context-caller", "agent-coder")
    fill(browser, "#context-budget", "800")
    find(browser, "#context-form button[type=submit]").click()
    segments = wait_for(browser, "[data-testid=budget-bar] > div[data-source]")
    bar_width = find(browser, "[data-testid=budget-bar]").size["width"]
    assert sum(s.size["width"] for s in segments) <= bar_width
    assert all(s.size["width"] > 0 for s in segments)
    assert "of 800 tokens" in find(browser, "#context-out h3").text
    # the default setup has no triple store: nothing was skipped, so nothing warns
    assert "knowledge-graph" not in find(browser, "#context-out").text
    find(browser, "#context-learning").click()
    wait_for(browser, "#context-learn svg.chart path")
    assert errors(browser) == []


def test_a_governed_retrieval_shows_selected_and_rejected_with_reasons(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "retrieve")
    fill(browser, "#retrieve-role", "dba")
    fill(browser, "#retrieve-task", "How do I rotate the database credentials?")
    find(browser, "#retrieve-form button[type=submit]").click()
    selected = wait_for(browser, "[data-testid=selected] > li")
    assert "why:" in selected[0].text
    assert wait_for(browser, "[data-testid=rejected] tr", 2)  # a header and at least one rejection
    # ranks and chunks count from 1, as in the search view (the API counts from 0)
    texts = " ".join(li.text for li in selected)
    assert "rank #1" in texts and not re.search(r"rank #?0\b|chunk 0\b", texts), texts
    assert errors(browser) == []


def test_a_hostile_document_renders_as_text(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    fill(browser, "#search-query", "quarterly payload")
    find(browser, "#search-form button[type=submit]").click()
    item = wait_for(browser, "#search-results > li[data-key='document:d-hostile']")[0]
    assert find(item, ".result-title").text == HOSTILE_TITLE
    assert "<img src=x onerror=alert(document.domain)>" in find(item, ".snippet").text
    assert browser.find_elements("css selector", "main img, main script") == []
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - raises when no alert ever opened
    assert errors(browser) == []


def test_snippets_with_anything_but_escaped_text_and_marks_are_shown_literally(
    browser: Any, url: str
) -> None:
    browser.get(url + "/")
    script = """
      const done = arguments[arguments.length - 1];
      import('/console/dom.js').then((dom) => {
        const render = (s) => { const d = document.createElement('div'); d.append(dom.snippetNodes(s));
                                return [d.innerHTML, d.textContent]; };
        done([render('a &lt;b&gt; <mark>x</mark> &amp; y'), render('<img src=x onerror=alert(1)>'),
              render('<mark>open'), render('<b>bold</b>'), render('a & b')]);
      });"""
    escaped, tag, unclosed, other, stray = browser.execute_async_script(script)
    assert escaped == ["a &lt;b&gt; <mark>x</mark> &amp; y", "a <b> x & y"]
    assert tag[1] == "<img src=x onerror=alert(1)>" and "<img" not in tag[0]
    assert unclosed[1] == "<mark>open" and other[1] == "<b>bold</b>" and stray[1] == "a & b"


def test_a_read_only_key_sees_no_delete_control_and_the_server_refuses_one(browser: Any, url: str) -> None:
    use_key(browser, url, READ_KEY)
    assert find(browser, "#who").text.endswith("read")
    tab(browser, "entities")
    fill(browser, "#entities-query", "cache")
    find(browser, "#entities-form button[type=submit]").click()
    wait_for(browser, "#entities-list > li[data-key='task:t-cache']")[0].click()
    wait_for(browser, "#entities-detail .card")
    assert browser.find_elements("css selector", "[data-testid=delete]") == []
    assert "read-only key" in find(browser, "#entities-detail").text
    assert "warm the search cache after deploys" in find(browser, "#entities-detail").text  # its fields
    status, body = call(url, "DELETE", "/entities/task/t-cache", key=READ_KEY)
    assert status == 403 and body["error"]["code"] == "forbidden"
    assert call(url, "POST", "/search", {"query": "cache warm"}, key=READ_KEY)[1]["results"]


def test_a_full_key_browses_newest_first_and_deletes_after_confirming(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "entities")
    fill(browser, "#entities-type", "task")
    find(browser, "#entities-form button[type=submit]").click()  # no query: GET /entities, newest first
    wait_for(browser, "#entities-list > li[data-key='task:t-rate']")[0].click()
    button = wait_for(browser, "[data-testid=delete]")[0]
    button.click()
    assert "Confirm" in button.text  # the first click only arms it
    assert call(url, "POST", "/search", {"query": "export API"})[1]["results"]
    button.click()
    wait_for(browser, "#entities-detail p")
    assert "deleted task:t-rate" in find(browser, "#entities-detail").text
    results = call(url, "POST", "/search", {"query": "export API"})[1]["results"]
    assert all(r["entity_id"] != "t-rate" for r in results)


def test_a_memory_shows_its_supersession_chain_both_ways_and_its_lifecycle(browser: Any, url: str) -> None:
    old = {"content": "The session timeout is fifteen minutes", "trust_level": "agent"}
    new = {"content": "The session timeout is thirty minutes", "supersedes": "m-ttl-old", "pinned": True,
           "trust_level": "user"}  # fmt: skip
    assert call(url, "PUT", "/entities/memory/m-ttl-old", old)[0] == 200
    assert call(url, "PUT", "/entities/memory/m-ttl", new)[0] == 200
    use_key(browser, url, READ_KEY)
    tab(browser, "entities")
    fill(browser, "#entities-query", "session timeout")
    find(browser, "#entities-form button[type=submit]").click()
    wait_for(browser, "#entities-list > li[data-key='memory:m-ttl']")[0].click()
    until_text(browser, "[data-testid=supersedes]", "supersedes memory:m-ttl-old")
    lifecycle = find(browser, "[data-testid=memory]").text
    assert "pinned: never decays" in lifecycle and "trust user" in lifecycle
    assert not browser.find_elements("css selector", "#entities-list > li[data-key='memory:m-ttl-old']")
    find(browser, "[data-testid=supersedes] a").click()  # the older end of the chain opens in place
    until_text(browser, "[data-testid=superseded-by]", "superseded by memory:m-ttl")
    lifecycle = find(browser, "[data-testid=memory]").text
    assert "decays: halves every 30 days unused" in lifecycle and "trust agent" in lifecycle
    assert "fifteen minutes" in find(browser, "#entities-detail").text
    find(browser, "[data-testid=superseded-by] a").click()  # and back to the newer one
    until_text(browser, "[data-testid=supersedes]", "supersedes memory:m-ttl-old")


def test_quality_charts_stored_golden_set_runs_per_strategy(browser: Any, url: str) -> None:
    use_key(browser, url, READ_KEY)
    tab(browser, "quality")
    assert not find(browser, "#quality-run").is_displayed()  # running one needs admin
    use_key(browser, url, FULL_KEY)
    tab(browser, "quality")
    fill(browser, "#quality-role", "dba")
    find(browser, "#quality-run").click()
    wait_for(browser, "#quality-out svg.chart rect", 4, timeout=30)
    find(browser, "#quality-run").click()
    wait_for(browser, "#quality-out .chip", 1)
    until_text(browser, "#quality-out .info", "2 runs", timeout=30)
    lines = browser.find_elements("css selector", "#quality-out svg.chart path")
    assert len(lines) == 4  # nDCG@10 over the runs, one line per strategy
    assert "keyword" in find(browser, "#quality-out table").text
    assert errors(browser) == []


def test_a_link_with_a_query_searches_at_once_with_the_sessions_key(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    browser.get("about:blank")
    browser.get(url + "/#q=warm%20cache")
    assert wait_for(browser, "#search-results > li[data-key='task:t-cache']")
    started = browser.execute_script(
        "return performance.getEntriesByName('quarry:first-results')[0].startTime"
    )
    assert started > 0
    assert errors(browser) == []


def new_tab(driver: Any, url: str) -> None:
    """Open `url` as a tab that has never held a key (the key lives in one tab's sessionStorage)."""
    driver.get(url.split("#")[0])
    driver.execute_script("sessionStorage.clear()")
    driver.get("about:blank")  # so the next load is a new document, not a move within this one
    driver.get(url)


def test_a_first_visit_says_where_the_key_comes_from(browser: Any, url: str) -> None:
    new_tab(browser, url + "/")
    hint = find(browser, "#key-hint")
    assert hint.is_displayed() and "local-api-key" in hint.text and "make serve" in hint.text
    use_key(browser, url, FULL_KEY)
    assert not find(browser, "#key-hint").is_displayed()


def test_a_failed_search_leaves_no_results_of_the_previous_query(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    fill(browser, "#search-query", "login limiter")
    find(browser, "#search-form button[type=submit]").click()
    wait_for(browser, "#search-results > li[data-key]")
    fill(browser, "#search-query", "cache")
    fill(browser, "#search-filters", "colour=red")  # not a filterable field: a 400
    find(browser, "#search-form button[type=submit]").click()
    until_text(browser, "#status", "400")
    assert browser.find_elements("css selector", "#search-results > li") == []
    assert find(browser, "#search-info").text == ""
    fill(browser, "#search-filters", "")
    assert ["400" in e["message"] for e in errors(browser)] == [True]  # the refused search, nothing else


def test_a_link_opened_in_a_new_tab_searches_once_the_key_is_given(browser: Any, url: str) -> None:
    new_tab(browser, url + "/#q=warm%20cache")
    assert find(browser, "#search-query").get_attribute("value") == "warm cache"  # kept, not lost
    assert browser.find_elements("css selector", "#search-results > li") == []
    find(browser, "#key").send_keys(FULL_KEY)
    find(browser, "#key-form button[type=submit]").click()
    assert wait_for(browser, "#search-results > li[data-key='task:t-cache']")
    assert errors(browser) == []


def test_changing_the_hash_in_an_open_tab_searches_again(browser: Any, url: str) -> None:
    use_key(browser, url, FULL_KEY)
    tab(browser, "compare")
    browser.execute_script("location.hash = '#q=' + encodeURIComponent('limiter README')")
    assert wait_for(browser, "#search-results > li[data-key='task:t-docs']")
    assert find(browser, "#view-search").is_displayed()
    assert find(browser, "#search-query").get_attribute("value") == "limiter README"
