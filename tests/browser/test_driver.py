"""Without a browser the console tests skip with a reason, unless QUARRY_REQUIRE_BROWSER=1 (CI) makes that
a failure."""

from __future__ import annotations

import pytest

from tests.browser import driver


def test_a_missing_browser_skips_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "browser_binary", lambda: None)
    monkeypatch.delenv("QUARRY_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="missing chromium"):
        driver.require_browser()


def test_a_missing_browser_fails_when_one_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "browser_binary", lambda: None)
    monkeypatch.setenv("QUARRY_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="QUARRY_REQUIRE_BROWSER=1"):
        driver.require_browser()
