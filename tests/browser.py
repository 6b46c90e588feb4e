"""Headless Chromium for the HTML report's tests, driven by Selenium with Debian's driver.

Owns finding the browser (Debian's ``chromium`` and ``chromium-driver``
packages; nothing is downloaded: Selenium Manager is never asked), starting
one headless session, and taking a screenshot of a page. Without Chromium,
:func:`missing` names the packages to install, so the browser tests skip
with that message and every other test runs.

As a script it takes the README's screenshot:
``python -m tests.browser report.html docs/report.png``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["INSTALL", "missing", "screenshot", "session"]

INSTALL = "apt-get install chromium chromium-driver"
_BROWSERS = ("chromium", "chromium-browser")
_DRIVERS = ("chromedriver",)


def _which(names: tuple[str, ...]) -> str | None:
    return next((p for p in map(shutil.which, names) if p), None)


def missing() -> str | None:
    """Why no browser session can start here (a message naming what to install), or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[test]'"
    if _which(_BROWSERS) is None or _which(_DRIVERS) is None:
        return f"headless Chromium is not installed (Debian: {INSTALL})"
    return None


@contextmanager
def session(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """One headless Chromium driven by Selenium; closed on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _which(_BROWSERS) or ""
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--no-first-run",
                "--disable-background-networking"):
        options.add_argument(arg)
    # Given the driver's path, Selenium never runs Selenium Manager (which would download one).
    driver = webdriver.Chrome(options=options, service=Service(_which(_DRIVERS) or ""))
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, page: Path, out: Path, width: int = 1280) -> None:
    """A screenshot of ``page`` (the top of it, as a person first sees it) to ``out``."""
    driver.set_window_size(width, 1100)
    driver.get(page.resolve().as_uri())
    out.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(out))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.browser PAGE.html OUT.png", file=sys.stderr)
        return 2
    problem = missing()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    with session() as driver:
        screenshot(driver, Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
