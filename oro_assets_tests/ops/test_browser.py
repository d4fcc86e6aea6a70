"""The Dagster UI in a real headless Chromium, against the webserver on a materialised temporary instance.

Uses Debian's ``chromium`` and ``chromium-driver`` packages (never a downloaded browser build). Without
them the test is skipped with a message, except when ``CI`` is set. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from ops_support import REPO_ROOT, free_port, required_tool_missing

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
DAILY_CURATION_ASSETS = ["raw_traces", "normalized_traces", "structural_labels", "subtask_traces", "gated_traces",
                         "curated_traces", "split_traces", "trace_ledger"]
UI_TIMEOUT_S = 60


def _webserver_command(port: int) -> list[str]:
    script = Path(sys.executable).parent / "dagster-webserver"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "dagster_webserver"]
    return [*base, "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)]


def _stop(proc: subprocess.Popen) -> None:
    """Stop the webserver and its code-server child (they share the process group we created)."""
    if proc.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def webserver(materialised_root, artifacts_dir) -> Iterator[str]:
    port = free_port()
    log_path = artifacts_dir / "dagster-webserver.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(_webserver_command(port), cwd=REPO_ROOT, env=materialised_root.env(),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"dagster-webserver exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"dagster-webserver did not answer on {url} within 180 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        _stop(proc)


@pytest.fixture
def browser():
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        required_tool_missing(f"Debian chromium/chromium-driver not installed ({', '.join(missing)} missing); "
                              "install with: apt-get install -y chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="oro-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--window-size=1920,1400", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver, url: str, expected: list[str | re.Pattern], shot: Path, scroll_to: str | None = None) -> str:
    """Load ``url``, wait until the page's text shows every expected string/pattern, save a screenshot
    (after scrolling the element whose text is ``scroll_to`` into view)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def missing(text: str) -> list[str]:
        return [e.pattern if isinstance(e, re.Pattern) else e for e in expected
                if not (e.search(text) if isinstance(e, re.Pattern) else e in text)]

    driver.get(url)
    text = ""

    def shown(d) -> bool:
        nonlocal text
        text = d.find_element(By.TAG_NAME, "body").text
        return not missing(text)

    try:
        WebDriverWait(driver, UI_TIMEOUT_S, poll_frequency=0.5).until(shown)
    except TimeoutException:
        driver.save_screenshot(str(shot))
        pytest.fail(f"{url} did not show {missing(text)} within {UI_TIMEOUT_S} s (screenshot {shot}); "
                    f"page text:\n{text[:3000]}")
    if scroll_to is not None:
        target = driver.find_element(By.XPATH, f"//*[normalize-space(text())='{scroll_to}']")
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", target)
    time.sleep(1)  # let the graph finish its zoom-to-fit animation (or the scroll) before the screenshot
    driver.save_screenshot(str(shot))
    return text


def test_ui_shows_assets_checks_and_report_metadata(materialised_root, webserver, browser, artifacts_dir):
    ledger = pl.read_parquet(materialised_root.data_dir / "warehouse" / "trace_ledger" /
                             f"{materialised_root.partition}.parquet")
    raw = materialised_root.traces_per_day
    kept = ledger.filter(pl.col("fate") == "kept").height
    subtask = ledger.filter(pl.col("reason") == "subtask").height
    assert ledger.height == raw and 0 < kept < raw

    # The asset graph of the curation group: every daily curation asset is a node.
    _open(browser, f"{webserver}/locations/oro_assets/asset-groups/curation", DAILY_CURATION_ASSETS,
          artifacts_dir / "ui-asset-graph.png")

    # The catalog lists assets of every group, materialised or not.
    _open(browser, f"{webserver}/assets", ["arena_world", "curated_traces", "eval_problems", "Materialized"],
          artifacts_dir / "ui-asset-catalog.png")

    # One asset's page: its description, schema and the rejection funnel (markdown table rendered as a table).
    # Shares are hand-computed from the ledger Parquet: kept/raw and subtask/raw.
    page = _open(browser, f"{webserver}/assets/trace_ledger", [
        "rejection_funnel", "reason_counts", "One row per raw record",
        re.compile(rf"\bkept\s+{kept}\s+{kept / raw:.1%}"),
        re.compile(rf"\bsubtask\s+{subtask}\s+{subtask / raw:.1%}"),
        "Latest check results",
    ], artifacts_dir / "ui-trace-ledger.png", scroll_to="rejection_funnel")
    for column in ("trace_id", "raw_sha256", "fate", "stage", "reason", "pool"):
        assert column in page

    # The blocking conservation check and its latest result.
    checks = _open(browser, f"{webserver}/assets/trace_ledger?view=checks", [
        re.compile(r"conservation\s+Succeeded"), "This is a blocking asset check.", re.compile(r"Evaluation result\s+Passed"),
    ], artifacts_dir / "ui-trace-ledger-checks.png")
    assert "Raw record count = ledger rows" in checks
