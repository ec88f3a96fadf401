"""What the console's tests share: a real `runtime console` process, and a real headless Chromium (Debian's,
through chromedriver, driven by Selenium) whose screenshots are kept in `.cache/console-screenshots/`."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, RUNTIME, require

SHOTS = REPO / ".cache" / "console-screenshots"


def chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture
def browser() -> Iterator[object]:
    found = chromium()
    require(found is not None, "Chromium and chromedriver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert found is not None
    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=found[1]), options=options)
    driver.set_page_load_timeout(30)
    # A page opens as a shell whose script fetches its content: an element is looked for until it is there.
    driver.implicitly_wait(10)
    try:
        yield driver
    finally:
        driver.quit()


class Console:
    """A `runtime console --no-open` process: its printed URL, and the base of its pages."""

    def __init__(self, state: Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([RUNTIME, "console", "--no-open", "--state-dir", str(state)], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), (self.url, self.proc.stderr.read() if self.proc.poll() else "")
        self.base = self.url.split("?")[0].rstrip("/")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def wait(predicate: Callable[[], object], timeout: float = 10.0) -> bool:
    """Whether ``predicate`` holds within ``timeout``; an element the live update replaced meanwhile is looked
    up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if predicate():
                return True
        except (StaleElementReferenceException, NoSuchElementException):
            pass
        time.sleep(0.1)
    return False


def click(driver: object, selector: str, timeout: float = 10.0) -> bool:
    """Click the element ``selector`` names, looked up afresh until the click lands (the live update may
    redraw it between the lookup and the click)."""
    return wait(lambda: driver.find_element("css selector", selector).click() or True,  # type: ignore[attr-defined]
                timeout)


def shot(driver: object, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))  # type: ignore[attr-defined]
