"""The Dagster UI of a deployed cachemeter, in a real headless Chromium: the asset graph and the
partition view of a daily asset, after a ``cachemeter run`` on the bundled demo.

``dagster-webserver`` serves the local workspace (``workspace.yaml``) on a free port with a temporary
``DAGSTER_HOME``; the screenshots are kept in ``tests/artifacts/``, and ``docs/dagster_asset_graph.png`` and
``docs/dagster_partitions.png`` (shown in the README and docs/deploy.md) are copies of them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import date
from pathlib import Path

import duckdb
import pytest
from PIL import Image

from tests.conftest import REPO
from tests.deploy.processes import alive, children_of, free_port
from tests.test_report_browser import FLAGS as REPORT_FLAGS
from tests.test_report_browser import chromium

BIN = Path(sys.executable).parent
# the report test's flags, with more virtual time: the React app fetches, lays out and zooms before the shot
FLAGS = [f for f in REPORT_FLAGS if not f.startswith("--virtual-time-budget")] + ["--virtual-time-budget=25000",
                                                                                "--hide-scrollbars"]
DEMO_DAY = "2026-11-25"  # the demo's first day of the rotating-preamble incident


def graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    # generous: a re-execution request launches a run, which takes tens of seconds on a loaded 2-core machine
    with urllib.request.urlopen(request, timeout=90) as response:
        return json.load(response)["data"]


def wait_until_loaded(port: int, server: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    """Until the webserver answers and its code location is loaded; fails with the server's log otherwise."""
    deadline = time.monotonic() + timeout_s
    query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        try:
            entries = graphql(port, query)["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail("dagster-webserver did not load the code location in time:\n" + log.read_text()[-3000:])


def screenshot(browser: str, url: str, out: Path, profile: Path, size: str) -> Path:
    shot = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                           f"--screenshot={out}", url], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and out.is_file(), shot.stderr[-2000:]
    return out


def assert_real_picture(path: Path, width: int, height: int) -> None:
    """A PNG of the window's size that shows a page, not a blank or half-loaded frame."""
    assert path.stat().st_size > 40_000
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size == (width, height)
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert len(colours) > 500  # text, nodes, status colours: a blank or spinner page has a few dozen
    assert max(count for count, _ in colours) < 0.9 * width * height  # not one flat background


def test_asset_graph_and_partitions_screenshots(tmp_path):
    browser = chromium()
    home = tmp_path / "dagster_home"
    home.mkdir()
    # the repository's instance settings, without the first-visit newsletter dialog over the page
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text() + "\nnux:\n  enabled: false\n")
    db = tmp_path / "warehouse" / "cachemeter.duckdb"
    env = {**os.environ, "DAGSTER_HOME": str(home), "CACHEMETER_DB": str(db),
           "CACHEMETER_LOGS": str(REPO / "fixtures" / "demo_logs")}
    run = subprocess.run([str(BIN / "cachemeter"), "run", "--logs", env["CACHEMETER_LOGS"], "--db", str(db)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    with duckdb.connect(str(db), read_only=True) as conn:
        first_day, days = conn.execute("select min(day), count(distinct day) from marts.daily_savings").fetchone()
    env["CACHEMETER_PARTITIONS_START"] = first_day.isoformat()  # the demo's first day, as a deployment sets it

    port = free_port()
    log = tmp_path / "webserver.log"
    with log.open("w") as out:
        # own process group not needed: the webserver stops its code server itself on SIGTERM
        server = subprocess.Popen([str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port),
                                   "-w", str(REPO / "workspace.yaml")], cwd=tmp_path, env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        wait_until_loaded(port, server, log)
        groups = sorted({node["groupName"] for node in graphql(port, "{ assetNodes { groupName } }")["assetNodes"]})
        assert len(groups) > 1
        stats = graphql(port, '{ assetNodeOrError(assetKey: {path: ["core", "usage"]}) '
                              '{ ... on AssetNode { partitionStats { numMaterialized numPartitions } } } }')
        stats = stats["assetNodeOrError"]["partitionStats"]
        assert stats["numMaterialized"] == days == 10  # every demo day shows as materialized
        assert days <= stats["numPartitions"] <= (date.today() - first_day).days + 2  # starts at the first day
        expanded = ",".join(f"global@global:{group}" for group in groups)  # every group open, not folded boxes
        graph = screenshot(browser, f"http://127.0.0.1:{port}/asset-groups?expanded={expanded}",
                           tmp_path / "graph.png", tmp_path / "profile-graph", "1400,1200")
        partitions = screenshot(browser, f"http://127.0.0.1:{port}/assets/core/usage?view=partitions&partition={DEMO_DAY}",
                                tmp_path / "partitions.png", tmp_path / "profile-partitions", "1400,1000")
        # (after the screenshots, which would show the queued run) the CLI's runs are listed under the job names and the UI can re-execute them
        runs = graphql(port, "{ runsOrError { ... on Runs { results { runId jobName } } } }")["runsOrError"]["results"]
        assert sorted(r["jobName"] for r in runs) == ["cachemeter_daily", "cachemeter_ingest"]
        daily = next(r["runId"] for r in runs if r["jobName"] == "cachemeter_daily")
        again = graphql(port, 'mutation { launchPipelineReexecution(reexecutionParams: {parentRunId: "%s", '
                              'strategy: ALL_STEPS}) { __typename ... on LaunchRunSuccess { run { jobName status } } '
                              '... on PythonError { message } } }' % daily)["launchPipelineReexecution"]
        assert again == {"__typename": "LaunchRunSuccess", "run": {"jobName": "cachemeter_daily", "status": "QUEUED"}}
        children = children_of(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in children if alive(pid)]  # its code server went with it

    assert_real_picture(graph, 1400, 1200)
    assert_real_picture(partitions, 1400, 1000)
    # kept in tests/artifacts (ignored); docs/dagster_*.png are copies of them (cp after a run to refresh)
    artefacts = REPO / "tests" / "artifacts"
    artefacts.mkdir(exist_ok=True)
    shutil.copy(graph, artefacts / "dagster_asset_graph.png")
    shutil.copy(partitions, artefacts / "dagster_partitions.png")
