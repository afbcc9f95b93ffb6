"""The HTML report, opened in a real headless Chromium: the charts draw, titles show, no console errors.

Chromium comes from Debian's ``chromium`` package, installed here when missing. The screenshot is kept
in ``tests/artifacts/report.png`` (the README's ``docs/report.png`` is a copy of it).
"""

import re
import shutil
import subprocess

import pytest

from pipelines.lib import report, warehouse
from tests import system_packages
from tests.conftest import REPO, run_pipeline

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=15000", "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    """The path of Debian's Chromium, installed first when missing (``tests.system_packages``)."""
    system_packages.ensure("chromium", lambda: shutil.which("chromium") is not None)
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    db = run_pipeline(tmp, REPO / "fixtures" / "demo_logs")
    with warehouse.connect(warehouse.snapshot_path(db), read_only=True) as conn:
        return report.write(conn, tmp / "report.html", days=30)


def test_report_is_self_contained(report_file):
    page = report_file.read_text()
    assert not re.search(r'<script[^>]+src=|<link[^>]+href="https?:', page)  # nothing fetched over the network
    assert "Costliest prefix families" in page and "hit_rate_drop" in page


def test_charts_draw_in_headless_chromium(report_file, tmp_path):
    browser = chromium()
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([browser, *FLAGS, *profile, "--dump-dom", report_file.as_uri()], capture_output=True, text=True,
                         timeout=120)
    charts = re.findall(r'<svg[^>]*class="marks"[^>]*>(.*?)</svg>', dom.stdout, flags=re.S)
    assert len(charts) == 1  # one Vega view holding the three charts
    assert charts[0].count("<path") > 20 and len(charts[0]) > 10_000  # lines, areas and bars drew, not an empty frame
    for title in report.CHART_TITLES:
        assert title in dom.stdout
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "error" in line.lower()], console
    artefacts = REPO / "tests" / "artifacts"
    artefacts.mkdir(exist_ok=True)
    shot = subprocess.run([browser, *FLAGS, *profile, f"--screenshot={artefacts / 'report.png'}", "--window-size=1000,1500",
                           report_file.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and (artefacts / "report.png").stat().st_size > 20_000
