"""What the commands print to a terminal: never a password, never a control sequence that log data carries.

Log data reaches the terminal in the run summary (file names, model, tenant and app names in incident messages), in
``cachemeter sql`` tables and in error messages that quote a value. A model name holding ``ESC ] 0 ; ... BEL`` or
``ESC [ 2 J`` retitled and cleared the user's terminal, and a right-to-left override (U+202E) reversed the text after
it (a break test). Errors from DuckDB quote the ``--db`` target whole, a PostgreSQL catalog's password included
(``cachemeter sql --db "ducklake:postgres:... password=..."`` printed it, a break test; ``run`` and ``doctor`` already
redacted theirs). ``Console`` does both to every string it prints; ``visible`` is for a table cell.
"""

from __future__ import annotations

import re

from rich.console import Console as RichConsole

from pipelines.lib import lake

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with a password redacted (``lake.redacted``) and each control or bidirectional-override character
    written as its escape (``\\x1b``, ``\\u202e``), so that it shows rather than acts. Tabs and newlines are kept."""
    return _INVISIBLE.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), lake.redacted(text))


def one_line(text: str) -> str:
    """``visible(text)`` with line breaks written as ``\\n`` and ``\\r``: a value printed inside a one-line message
    (an app name holding a newline split an incident's line in two)."""
    return visible(text).replace("\r", "\\r").replace("\n", "\\n")


class Console(RichConsole):
    """rich's ``Console`` whose ``print`` passes every string argument through ``visible`` (renderables such as tables
    are printed as they are: their cells are given through ``visible`` where they hold data)."""

    def print(self, *objects, **kwargs) -> None:  # noqa: A003 (rich's name)
        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)
