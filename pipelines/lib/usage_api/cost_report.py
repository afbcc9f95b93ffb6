"""Load the stored Anthropic cost report pages into ``core.billed_costs`` (what was billed, exactly).

The pages sit raw under ``<logs>/_cachemeter/usage_api/anthropic_cost_report/<YYYY-MM-DD>/page-NNNN.json.raw``
(``pages.py``). A page is ``{"data": [{"starting_at", "ending_at", "results": [{"amount", "currency",
"workspace_id", "description", "cost_type", "context_window", "model", "service_tier", "token_type",
"inference_geo"}]}], "has_more", "next_page"}`` with ``amount`` the lowest currency unit (cents) as a
decimal string: ``"128463.00"`` is $1,284.63 (``sources.billed_usd``). Each day folder is loaded whole in
one transaction, replacing that day's rows; a day with a page that failed to fetch (the
``usage_api_fetch_failed`` record ``pages.py`` stores in its place) or is not the documented shape keeps
its earlier rows, and that page goes to ``core.quarantine`` with the reason (line 0: the whole page).
Pages are parsed with ``json`` into ``Decimal`` amounts (never floats); nothing is read by DuckDB's
``read_json``, whose path globbing would misread ``[`` in a folder name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines.lib.sql import statement
from pipelines.lib.usage_api import MANAGED_DIR, sources
from pipelines.lib.usage_api.client import PageFailure
from pipelines.lib.warehouse import transaction

SOURCE = "anthropic_cost_report"
CENT_DIGITS = 10  # core.billed_costs.amount_cents is DECIMAL(38, 10): an amount with more decimals is refused, not rounded
RESULT_KEYS = ("workspace_id", "description", "cost_type", "context_window", "model", "service_tier", "token_type",
               "inference_geo")
SCHEMA = pa.schema([("day", pa.date32()), ("provider", pa.string()), ("source_file", pa.string()),
                    ("result_index", pa.int32()), *[(key, pa.string()) for key in RESULT_KEYS],
                    ("currency", pa.string()), ("amount_cents", pa.decimal128(38, CENT_DIGITS)),
                    ("billed_usd", pa.decimal128(38, CENT_DIGITS + 2))])


@dataclass
class Loaded:
    """What ``load`` did: days replaced, result rows written, and ``{page file: reason}`` of pages refused."""

    days: int = 0
    rows: int = 0
    refused: dict[str, str] = field(default_factory=dict)


def load(conn: duckdb.DuckDBPyConnection, logs: Path) -> Loaded:
    """Replace ``core.billed_costs`` for every stored cost-report day under ``logs``; returns ``Loaded``.

    Idempotent: loading the same pages again writes the same rows. Raises nothing for a bad page (it is
    quarantined and its day kept as it was); ``duckdb.Error`` only for a warehouse that cannot be written.
    """
    loaded = Loaded()
    root = Path(logs) / MANAGED_DIR / SOURCE
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        try:
            day = date.fromisoformat(folder.name)
        except ValueError:
            continue  # not a day folder cachemeter wrote
        pages = sorted(folder.glob("page-*.json.raw"))
        rows, problems = [], {}
        for page in pages:
            relative = page.relative_to(logs).as_posix()
            try:
                rows += _rows(json.loads(page.read_bytes(), parse_float=Decimal), relative, len(rows))
            except (ValueError, PageFailure) as exc:  # json.JSONDecodeError is a ValueError
                problems[relative] = str(exc)
        with transaction(conn):
            files = [page.relative_to(logs).as_posix() for page in pages]
            conn.execute("delete from core.quarantine where source_format = $source and source_file in "
                         "(select unnest($files::varchar[]))", {"source": SOURCE, "files": files})
            if problems:
                conn.executemany(statement("costs/billed_costs__quarantine_page"),
                                 [{"file": f, "source": SOURCE, "reason": r} for f, r in problems.items()])
            else:
                conn.execute("delete from core.billed_costs where day = $day and provider = 'anthropic'", {"day": day})
                conn.register("billed_rows", pa.Table.from_pylist([{**r, "day": day} for r in rows], schema=SCHEMA))
                try:
                    conn.execute("insert into core.billed_costs by name select * from billed_rows")
                finally:
                    conn.unregister("billed_rows")
        loaded.refused.update(problems)
        if not problems:
            loaded.days += 1
            loaded.rows += len(rows)
    return loaded


def _rows(page: object, relative: str, before: int) -> list[dict]:
    """The result rows of one page; ``PageFailure`` naming what is wrong with a page that is not documented."""
    if isinstance(page, dict) and "usage_api_fetch_failed" in page:
        raise PageFailure(f"the page was not fetched: {page['usage_api_fetch_failed']}")
    sources.cost_next_page(page)  # the documented shape, every amount a decimal string in USD
    rows = []
    for bucket in page["data"]:
        datetime.fromisoformat(str(bucket["starting_at"]).replace("Z", "+00:00"))  # ValueError when not a time
        for result in bucket["results"]:
            cents = Decimal(result["amount"])
            if cents.as_tuple().exponent < -CENT_DIGITS:
                raise PageFailure(f"amount {result['amount']!r} has more than {CENT_DIGITS} decimals of a cent")
            rows.append({"provider": "anthropic", "source_file": relative, "result_index": before + len(rows) + 1,
                         **{key: _text(result.get(key)) for key in RESULT_KEYS},
                         "currency": result.get("currency", "USD"), "amount_cents": cents,
                         "billed_usd": sources.billed_usd(result)})
    return rows


def _text(value: object) -> str | None:
    return None if value is None else str(value)
