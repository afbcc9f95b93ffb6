"""A tiny progress hook: long steps report ``(step, done, total, label)``; the CLI listens and draws bars.

Assets run in-process under the CLI, so a module-level listener is enough; under ``dagster dev`` no
listener is set and reports go nowhere (Dagster's own logs show the step).
"""

from __future__ import annotations

from collections.abc import Callable

Listener = Callable[[str, int, int, str], None]
_listener: Listener | None = None


def set_listener(listener: Listener | None) -> None:
    """Install (or with ``None`` remove) the function that receives progress reports."""
    global _listener
    _listener = listener


def report(step: str, done: int, total: int, label: str = "") -> None:
    """Tell the listener, if any, that ``done`` of ``total`` units of ``step`` are finished."""
    if _listener is not None:
        _listener(step, done, total, label)


def warn(message: str) -> None:
    """Tell the listener, if any, a one-line warning for the user (step ``"warning"``, ``message`` as the label)."""
    report("warning", 0, 0, message)
