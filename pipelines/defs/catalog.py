"""What the Dagster UI shows about each warehouse table, taken from the SQL that defines it.

The description of an asset is what its table holds (the comment above its ``CREATE TABLE`` in
``sql/schema``), and its column schema (names, types, units) comes from the column comments there,
so the UI, ``docs/tables.md`` and the SQL cannot disagree. Every asset has the same owner and sits in
the group named by its key's first part (``core/usage`` in ``core``).
"""

from functools import cache

import dagster as dg

from pipelines.lib import table_docs

OWNERS = ["team:cachemeter"]


@cache
def _tables() -> dict[str, table_docs.Table]:
    return {t.name: t for t in table_docs.tables()}


def table_spec(key: list[str]) -> dict:
    """``group_name``, ``owners``, ``description`` and ``metadata`` (column schema, table name) for the
    asset whose key names a table (``["core", "usage"]`` -> ``core.usage``); raises ``KeyError`` when
    ``sql/schema`` defines no such table."""
    table = _tables()[".".join(key)]
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind.lower(), description=comment)
                                     for name, kind, comment in table.columns])
    return {"group_name": key[0], "owners": OWNERS, "description": table.description,
            "metadata": {"dagster/column_schema": schema, "dagster/table_name": table.name}}

