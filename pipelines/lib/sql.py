"""Load the project's SQL files (one statement per file, DuckDB dialect).

The files live in the top-level ``sql/`` folder of the repository; an installed wheel carries
them as ``pipelines/sql``. ``statement("costs/usage_costs__insert")`` returns the text of
``sql/costs/usage_costs__insert.sql``. Raises ``FileNotFoundError`` naming the file when absent.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_CANDIDATES = (_PACKAGE_DIR / "sql", _PACKAGE_DIR.parent / "sql")


def sql_root() -> Path:
    """The folder holding the SQL files (installed copy first, then the repository's)."""
    for candidate in _CANDIDATES:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no sql/ folder next to the package; looked in {_CANDIDATES}")


@cache
def statement(name: str) -> str:
    """Text of ``sql/<name>.sql``; ``name`` is a path such as ``"schema/core_usage"``."""
    path = sql_root() / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"SQL file not found: {path}")
    return path.read_text(encoding="utf-8")


def statements_in(folder: str) -> list[str]:
    """Texts of every ``sql/<folder>/*.sql`` file, in file-name order (used for schema and macros)."""
    return [p.read_text(encoding="utf-8") for p in sorted((sql_root() / folder).glob("*.sql"))]


def params_for(text: str, params: dict) -> dict:
    """The subset of ``params`` that ``text`` names as ``$name`` (DuckDB rejects unused named parameters)."""
    return {k: v for k, v in params.items() if f"${k}" in text}
