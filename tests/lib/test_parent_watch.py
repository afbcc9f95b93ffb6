"""pipelines/lib/parent_watch.py: a pool's workers end when the process that started them is killed."""

import os
import signal
import subprocess
import sys
import time

from tests.conftest import REPO

PARENT = """
import multiprocessing, os, sys
from concurrent.futures import ProcessPoolExecutor
from pipelines.lib import parent_watch

if __name__ == "__main__":
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=parent_watch.exit_with_parent, initargs=(os.getpid(),))
    print(pool.submit(os.getpid).result(), flush=True)  # the worker's id, once it runs
    sys.stdin.read()  # wait to be killed
"""


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone too (waiting for init to reap it)
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_worker_ends_within_seconds_of_its_parents_kill(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    worker = int(parent.stdout.readline())
    assert not gone(worker)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert gone(worker)  # before, the idle worker waited on its call queue for good
