"""A tiny progress hook: long steps report ``(step, done, total, label)``; the CLI listens and draws bars.

Besides counted progress (``report``), a step says what it is doing now (``doing``: "building core.usage_costs",
"checking priced_rows_equal_usage_rows"), so a long step of one large day (a 5M-request day spends tens of seconds in one
file and one day) shows which part runs rather than a bar standing still.

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


def doing(label: str) -> None:
    """Tell the listener, if any, what the current step is doing now (step ``"doing"``, ``label`` as the label):
    a short phrase such as ``"publishing to core.usage"``; counts are left as they are."""
    report("doing", 0, 0, label)
