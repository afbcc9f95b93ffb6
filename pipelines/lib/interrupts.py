"""SIGINT and SIGTERM held while a run opens the warehouse and before Dagster takes over its signals.

Dagster turns a signal into a clean stop only inside a job's execution (``capture_interrupts``). Before that a
run imports libraries and opens and prepares the warehouse, and a ``KeyboardInterrupt`` raised there landed in the
middle of whatever was running: inside pandas' import started by DuckDB's parameter binding (the next statement then
failed on "partially initialized module 'pandas'"), or inside a DuckDB call that turned it into an error another
handler took for an ordinary one, so the run went on and exited 0 (a break test: Ctrl-C in the first second of a
run). ``hold`` notes a signal instead; ``release`` restores the handlers and raises ``Interrupted`` if one came,
at a point where nothing is half done. A run waiting for another's lock asks ``check`` on every poll, so Ctrl-C still
stops the wait at once.
"""

from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
MESSAGE = "interrupted (SIGTERM or Ctrl-C) before it began its work; nothing was staged or built"

_received: list[int] = []
_previous: dict[int, object] = {}


class Interrupted(Exception):
    """A signal came while it was held; the message says so (``MESSAGE``)."""


def hold() -> None:
    """Note SIGINT and SIGTERM instead of acting on them, until ``release``. Only the main thread can set signal
    handlers: elsewhere (a run started from a test's or a server's thread) this does nothing."""
    if threading.current_thread() is not threading.main_thread() or _previous:
        return
    _received.clear()
    for number in SIGNALS:
        _previous[number] = signal.signal(number, _note)


def check() -> None:
    """Raise ``Interrupted`` when a held signal came (the handlers stay held)."""
    if _received:
        raise Interrupted(MESSAGE)


def release(raise_held: bool = True) -> None:
    """Restore the handlers ``hold`` replaced; then raise ``Interrupted`` when a signal came meanwhile (unless
    ``raise_held`` is False: on the way out of an error, which is raised instead)."""
    for number, handler in _previous.items():
        signal.signal(number, handler)
    _previous.clear()
    came = bool(_received)
    _received.clear()
    if came and raise_held:
        raise Interrupted(MESSAGE)


def _note(number: int, _frame) -> None:
    _received.append(number)
