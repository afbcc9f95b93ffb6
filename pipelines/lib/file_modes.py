"""The mode of a file written under a temporary name and renamed into place.

``tempfile.mkstemp`` and ``NamedTemporaryFile`` create their file with mode 0600 whatever the umask, so an export or
a note renamed into place was readable by its owner only, and an existing 0644 file became 0600 (a break test: a
FOCUS export meant for FinOps tooling, and the unbuilt-days note meant for readers under another account).
``as_created`` gives it the mode ``open()`` would have: 0666 less the process's umask.
"""

from __future__ import annotations

import os
from pathlib import Path


def as_created(path: str | os.PathLike) -> None:
    """Set ``path``'s mode to 0666 less the umask. Raises ``OSError`` when it cannot be changed."""
    os.chmod(path, 0o666 & ~umask())


def umask() -> int:
    """The process's umask, read without changing it (Linux's ``/proc/self/status``; elsewhere set and restored at
    once: another thread creating a file in that instant would get no umask)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
