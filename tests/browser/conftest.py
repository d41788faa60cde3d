"""Real-browser tests: Debian's Chromium driven by Playwright's Python package.

They skip, saying how to install what is missing, when there is no Chromium (or no
``playwright`` package). Playwright never downloads a browser here: it is pointed at
the system's ``chromium`` (``TASKQ_CHROMIUM`` overrides the path). The browser lives
for one module: Playwright's sync API keeps an event loop running in this thread while
it is open, which would stop ``asyncio.run`` in the tests after it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

INSTALL_HINT = "install it with `apt-get install -y chromium` (Debian) or set TASKQ_CHROMIUM"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    explicit = os.environ.get("TASKQ_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:
        pytest.skip(f"browser tests need Chromium: {INSTALL_HINT}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser tests need the playwright package: pip install -e '.[dev]'")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=LAUNCH_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
