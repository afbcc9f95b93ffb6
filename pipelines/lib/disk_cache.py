"""Results a process would otherwise rebuild on every run, kept on disk per version of what makes them.

The folder is ``$CACHEMETER_CACHE_DIR`` (default ``$XDG_CACHE_HOME/cachemeter``, else ``~/.cache/cachemeter``). A file
is named by a hash of everything its content depends on (``key_parts``), so a new version of a library or of the code
that builds it finds no file and builds anew; a file that cannot be read or written is rebuilt or skipped, never an
error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa

from pipelines.lib import options


def root() -> Path:
    """The cache folder (see the module docstring)."""
    return Path(options.env_value("cache_dir") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "cachemeter"))


def source_texts(*paths: str | os.PathLike) -> list[str]:
    """The text of each file (a module's ``__file__``), for ``key_parts``: a change to the code changes the key."""
    return [Path(p).read_text(encoding="utf-8") for p in paths]


def arrow_table(name: str, key_parts: Iterable[str], build: Callable[[], pa.Table]) -> pa.Table:
    """The table ``build`` makes, read from ``<root>/<name>-<hash of key_parts>.arrow`` when a run made it before,
    else built and written there (Arrow IPC; written under a temporary name, then renamed)."""
    digest = hashlib.sha256("\x1f".join(key_parts).encode("utf-8")).hexdigest()[:16]
    path = root() / f"{name}-{digest}.arrow"
    try:
        with pa.OSFile(str(path), "rb") as source:  # read into memory: no mapping outlives the file
            return pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        pass
    table = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False) as partial:
            with pa.ipc.new_file(partial, table.schema) as writer:
                writer.write_table(table)
        os.replace(partial.name, path)
    except OSError:
        pass
    return table
