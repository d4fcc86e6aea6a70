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
from ops_support import EVAL_PROBLEMS, EVAL_STAGE, REPO_ROOT, free_port, required_tool_missing

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# trace_ledger's upstream assets (subtask_traces is a side output of the structural filter, not upstream).
LEDGER_UPSTREAM = ["raw_traces", "normalized_traces", "structural_labels", "gated_traces", "curated_traces",
                   "split_traces", "leak_clusters", "problem_pool", "arena_world"]
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

    # The asset graph: trace_ledger's whole upstream lineage, grouped (curation, arena). The UI zooms this
    # graph to fit, unlike the group and job graphs, whose off-screen nodes are not rendered at all.
    graph = _open(browser, f"{webserver}/assets/trace_ledger?view=lineage&lineageScope=upstream&lineageDepth=10",
                  [*LEDGER_UPSTREAM, "trace_ledger", "Graph depth"], artifacts_dir / "ui-asset-graph.png")
    assert re.search(r"^curation$", graph, re.M) and re.search(r"^arena$", graph, re.M), "group boxes missing"

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

    # The evaluation report's metadata: the markdown report opens in a dialog with the comparison table (the
    # fixture's one measured row over its hold-out sample, the paper's rows marked as not measured here) and
    # the ASR and pass@k plots inlined as PNG images.
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, f"{webserver}/assets/eval_report", ["Show Markdown", "stages", "Side-by-side comparison"],
          artifacts_dir / "ui-eval-report-asset.png")
    browser.find_element(By.XPATH, "//tr[td[1][normalize-space(.)='report']]//a[contains(., 'Show Markdown')]").click()
    dialog = WebDriverWait(browser, UI_TIMEOUT_S).until(
        lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, "[role=dialog]") if "Evaluation report" in e.text),
                       None))
    row = re.search(rf"^{EVAL_STAGE} ([\d.]+) ([\d.]+)-([\d.]+) (\d+) / (\d+) ", dialog.text, re.M)
    assert row, dialog.text[:2000]
    asr, low, high, solved, n = float(row[1]), float(row[2]), float(row[3]), int(row[4]), int(row[5])
    assert n == EVAL_PROBLEMS and 0 <= solved <= n and 0 <= low <= asr <= high <= 100
    assert dialog.text.count("published, not measured here") >= 2
    plots = [img for img in dialog.find_elements(By.TAG_NAME, "img")
             if (img.get_attribute("src") or "").startswith("data:image/png;base64,")]
    assert len(plots) == 2, "the ASR and pass@k plots are not shown in the report metadata"
    assert all(browser.execute_script("return arguments[0].naturalWidth", img) > 0 for img in plots)
    browser.save_screenshot(str(artifacts_dir / "ui-eval-report.png"))
