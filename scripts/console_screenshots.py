"""Screenshots of each console view at 1280×800 (docs/console/*.png) from the seeded demo tenant of the
browser tests: `PYTHONPATH=. .venv/bin/python scripts/console_screenshots.py [out-dir]`."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.browser.driver import require_browser, start_browser
from tests.browser.seed import FULL_KEY, call, demo_server


def _fill(driver: Any, css: str, text: str) -> None:
    field = driver.find_element("css selector", css)
    field.clear()
    field.send_keys(text)


def _wait(driver: Any, css: str, timeout: float = 20) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.find_elements("css selector", css))


def _click(driver: Any, css: str) -> None:
    driver.find_element("css selector", css).click()


def _shot(driver: Any, out: Path, name: str) -> None:
    time.sleep(0.2)
    driver.save_screenshot(str(out / f"{name}.png"))


def _views(driver: Any, url: str, out: Path) -> None:
    """Sign in with the full key, then take each view's screenshot in turn."""
    driver.get(url + "/")
    _fill(driver, "#key", FULL_KEY)
    _click(driver, "#key-form button[type=submit]")
    _wait(driver, "body[data-scopes~=admin]")
    _search_and_compare(driver, out)
    _governed(driver, out)
    _context(driver, url, out)
    _entities(driver, out)
    _quality(driver, out)


def _search_and_compare(driver: Any, out: Path) -> None:
    _fill(driver, "#search-query", "login rate limiter")
    _click(driver, "#search-form button[type=submit]")
    _wait(driver, "#search-results [data-testid=explanation]")
    _shot(driver, out, "search")
    _click(driver, ".tab[data-view=compare]")
    _fill(driver, "#compare-query", "rate limiter")
    _click(driver, "#compare-form button[type=submit]")
    _wait(driver, "#compare-right li")
    _shot(driver, out, "compare")


def _governed(driver: Any, out: Path) -> None:
    _click(driver, ".tab[data-view=retrieve]")
    _fill(driver, "#retrieve-role", "dba")
    _fill(driver, "#retrieve-task", "How do I rotate the database credentials?")
    _click(driver, "#retrieve-form button[type=submit]")
    _wait(driver, "[data-testid=selected] li")
    _shot(driver, out, "governed")


def _context(driver: Any, url: str, out: Path) -> None:
    _click(driver, ".tab[data-view=context]")
    _fill(driver, "#context-caller", "agent-coder")
    _fill(driver, "#context-budget", "120")
    for query in ("login limiter lockout", "rate limiter token bucket", "login rate limiter"):
        _fill(driver, "#context-query", query)
        _click(driver, "#context-form button[type=submit]")
        _wait(driver, "[data-testid=budget-bar] div")
        time.sleep(0.3)
        _click(driver, "#context-out input[type=checkbox]")  # feedback: the first item was used
        _click(driver, "#context-out .bar-form button")
        _wait(driver, "#context-out .chip.ok")
    call(url, "POST", "/context/eval", {})  # learn from the feedback now (nightly otherwise)
    _click(driver, "#context-learning")
    _wait(driver, "#context-learn svg path")
    _shot(driver, out, "context")


def _entities(driver: Any, out: Path) -> None:
    _click(driver, ".tab[data-view=entities]")
    _fill(driver, "#entities-query", "limiter")
    _click(driver, "#entities-form button[type=submit]")
    _wait(driver, "#entities-list li[data-key]")
    _click(driver, "#entities-list li[data-key]")
    _wait(driver, "#entities-detail .card")
    _shot(driver, out, "entities")


def _quality(driver: Any, out: Path) -> None:
    _click(driver, ".tab[data-view=quality]")
    _fill(driver, "#quality-role", "dba")
    for _ in range(3):  # three stored runs, so the per-run lines have a shape
        _click(driver, "#quality-run")
        time.sleep(1.5)
    _wait(driver, "#quality-out svg rect", 60)
    _shot(driver, out, "quality")


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console")
    out.mkdir(parents=True, exist_ok=True)
    driver = start_browser(require_browser())
    # The page itself at 1280×800 (a headless window's size includes no chrome, but pin it anyway).
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        with tempfile.TemporaryDirectory() as tmp, demo_server(Path(tmp) / "data") as url:
            _views(driver, url, out)
    finally:
        driver.quit()
    for png in sorted(out.glob("*.png")):
        print(f"{png}: {png.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
