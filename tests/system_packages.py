"""Debian packages the browser and PostgreSQL tests need, installed once when missing.

pytest-xdist runs test modules on several workers at once, so two workers may need a package at the
same moment. ``apt-get`` takes dpkg's lock and fails at once when another ``apt-get`` holds it (a CI
run failed this way: the Chromium test and the PostgreSQL test installed at the same time). Workers
therefore queue on one file lock, and ``apt-get`` itself waits for dpkg's lock (``DPkg::Lock::Timeout``)
in case something outside the suite holds it.
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Callable
from pathlib import Path

LOCK = Path("/tmp/cachemeter-tests-apt.lock")
APT = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-y", "-q"]


def ensure(package: str, installed: Callable[[], bool]) -> None:
    """Install Debian's ``package`` unless ``installed()`` already says so; tries the cached package
    lists first, then ``apt-get update``. Raises AssertionError naming the package and apt's last words."""
    if installed():
        return
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        said = ""
        for command in ([*APT, "install", package], [*APT, "update"], [*APT, "install", package]):
            if installed():
                return
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as error:  # no apt-get here, or it hung
                said = str(error)
                continue
            said = (done.stderr or done.stdout).strip()[-400:]
        assert installed(), f"Debian's {package} package could not be installed: {said}"
