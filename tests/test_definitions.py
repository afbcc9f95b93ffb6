"""The code location (pipelines/definitions.py) passes ``dg check defs``, as CI runs it: every asset,
check, job, schedule, sensor and resource loads, with a temporary instance and warehouse."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_dg_check_defs(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "CACHEMETER_DB": str(tmp_path / "warehouse" / "w.duckdb")}
    done = subprocess.run([str(Path(sys.executable).parent / "dg"), "check", "defs"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All definitions loaded successfully" in done.stdout + done.stderr
