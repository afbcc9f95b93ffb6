"""Worker processes end when the process that started them dies.

``ProcessPoolExecutor`` workers (``spawn``) wait on their call queue; if the parent is killed (``kill -9`` of a
``cachemeter run``, the out-of-memory killer) nothing tells them, and each killed run left its idle workers
(about 190 MB each) and multiprocessing's resource tracker running for good. Each pool starts its workers with
``exit_with_parent`` as the initializer: a daemon thread that ends the worker within a second of its parent's
death. Polling the parent id is the portable way (Linux's ``PR_SET_PDEATHSIG`` has no macOS counterpart); an
orphan is re-parented, so its parent id changes.
"""

from __future__ import annotations

import os
import threading
import time

POLL_SECONDS = 1.0


def exit_with_parent(parent_pid: int, poll_seconds: float = POLL_SECONDS) -> None:
    """Start a daemon thread that ends this process (exit status 1, no clean-up: the parent that would read the
    results is gone) once its parent is no longer ``parent_pid``. A pool's ``initializer`` with ``(os.getpid(),)``."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_seconds)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
