"""Python's cyclic garbage collector, paused while a process loads its libraries.

A full collection walks every object the collector tracks, and importing Dagster, SQLAlchemy, pandas and
Great Expectations creates a few hundred thousand of them, which live as long as the process: during a run's
start-up the collector walked them again and again. Measured on a one-line run (``gc.callbacks``, 2026-12-05):
0.40 s of the run's process (five full collections 0.29 s) and 0.26 s of the side process, about 0.4 s of a
3.2 s run's wall time. ``paused()`` turns the collector off while libraries load, then ``gc.freeze()`` moves
what was loaded to the permanent generation (Python's ``gc`` docs: "ignore them in all the future
collections"), so later collections walk only the objects the work itself creates. Objects are still freed
by reference counting meanwhile; only cycles created while paused wait for the freeze, which keeps them (a
module's own cycles, which live for the process anyway).

Only a process cachemeter started for itself (``cachemeter`` and its side process call ``own_process()``)
freezes: in a host process (a test session, a notebook, a Dagster code server calling the runner) a freeze
would also keep whatever garbage cycles of the host's were waiting for their collection, open DuckDB
connections among them. There the collector is only paused.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # paused() blocks open, in any thread of this process
_was_enabled = False  # the collector's state before the outermost block (a host may have turned it off)
_freezes = False  # own_process() was called


def own_process() -> None:
    """Declare this process cachemeter's own (the CLI's, the side process's): the end of a pause freezes."""
    global _freezes
    _freezes = True


def pause() -> None:
    """Turn the collector off until the matching ``resume()`` (see ``paused``)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1


def resume() -> None:
    """End one ``pause()``; the last one open freezes the objects that exist now (in a process of our own) and
    turns the collector back on if it was on before the first."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            if _freezes:
                gc.freeze()
            if _was_enabled:
                gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """Run the block with the collector off; at the end of the outermost block open (over all threads), freeze
    the objects that exist then (in a process of our own) and turn the collector back on if it was on before.
    Nests; thread-safe."""
    pause()
    try:
        yield
    finally:
        resume()
