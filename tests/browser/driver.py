"""Headless Debian Chromium through the system chromedriver (selenium never downloads a driver here)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMEDRIVER = Path("/usr/bin/chromedriver")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser_binary() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def require_browser() -> str:
    """The browser's path; without one (or chromedriver, or selenium) a skip — or a failure when
    QUARRY_REQUIRE_BROWSER=1 (CI, where a skipped browser test would hide a broken console)."""
    binary = browser_binary()
    missing = []
    if binary is None:
        missing.append("chromium")
    if not CHROMEDRIVER.exists():
        missing.append(str(CHROMEDRIVER))
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (the dev extra)")
    if missing:
        reason = f"no browser for the console tests: missing {', '.join(missing)} (apt-get install chromium chromium-driver)"
        if os.environ.get("QUARRY_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + "; QUARRY_REQUIRE_BROWSER=1 makes this a failure")
        pytest.skip(reason)
    assert binary is not None
    return binary


def start_browser(binary: str, width: int = 1280, height: int = 800) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
                "--hide-scrollbars", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
