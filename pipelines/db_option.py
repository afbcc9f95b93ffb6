"""The ``--db`` option of the commands, declared once: a blank value, or one with blanks around it, is refused where it
is given.

``--db "$WAREHOUSE"`` in a cron line with the variable unset passes ``--db ""``: ``report``, ``sql`` and ``doctor``
ended in "ValueError: PosixPath('.') has an empty name ... an unexpected error" and ``whatif`` in that line alone
(a break test). A blank ``CACHEMETER_DB`` is unset before any command reads it (``options.unset_blank_variables``).
"""

from __future__ import annotations

import typer

ENV = "CACHEMETER_DB"


def db_option(default, help: str, envvar: str | None = ENV):  # noqa: A002 (typer's name)
    """``typer.Option`` for ``--db`` (``envvar`` read when the option is not given; None: the option alone)."""
    return typer.Option(default, "--db", envvar=envvar, help=help, callback=_not_blank)


def _not_blank(value: str | None) -> str | None:
    """``value``; raises ``typer.BadParameter`` (a usage error, exit code 2) when it is blank, or begins or ends with a
    blank (``--db ' /data/w.duckdb'`` built a whole warehouse under a folder named " " in the working directory, a
    break test)."""
    if value is not None and not str(value).strip():
        raise typer.BadParameter('is empty: give the warehouse file or DuckLake target (was a variable in --db "$X" '
                                 "left unset?)")
    if value is not None and str(value) != str(value).strip():
        raise typer.BadParameter(f"{str(value)!r} begins or ends with a blank: give the path without it")
    return value
