"""Data checks run inside the assets they guard, on the partition window just written.

Accounting invariants are blocking ERROR checks, one SQL predicate each (``sql/checks/*.sql``,
each returning a ``violations`` count that must be 0). Distribution checks are WARN checks run by
Great Expectations on pandas batches of the window, in a process of its own (``lib/expectations.py``).
Observed values go into the check metadata.
"""

import json

import dagster as dg
import duckdb

from pipelines.defs.partitions import id_buckets, whole, window_parts
from pipelines.lib import expectations, progress
from pipelines.lib.providers import PROVIDERS
from pipelines.lib.sql import params_for, statement

# every provider the adapters can name (lib/providers.PROVIDERS: the priced ones, DashScope, self-hosted engines)
KNOWN_PROVIDERS = sorted({p.name for p in PROVIDERS})


def invariant_spec(asset_key: list[str], name: str, description: str) -> dg.AssetCheckSpec:
    """A blocking ERROR check: downstream assets do not run when it fails."""
    return dg.AssetCheckSpec(name, asset=dg.AssetKey(asset_key), blocking=True, description=description)


def distribution_spec(asset_key: list[str], name: str, description: str) -> dg.AssetCheckSpec:
    """A WARN check computed with Great Expectations."""
    return dg.AssetCheckSpec(name, asset=dg.AssetKey(asset_key), description=description)


def invariant(conn: duckdb.DuckDBPyConnection, asset_key: list[str], name: str, sql_name: str,
              params: dict, in_parts: bool = False, in_id_buckets: bool = False) -> dg.AssetCheckResult:
    """Run ``sql/checks/<sql_name>.sql``; passes when it counts 0 violations.

    The statement returns one row: ``violations`` first, then optionally ``offending``, a JSON list of
    examples (kept in the metadata, at most ``OFFENDING_EXAMPLES``, and shown by the CLI when a blocking
    check fails). With ``in_parts`` it runs once per part of the window (``partitions.window_parts``, for
    a predicate whose violations are each within one day; cut by request ids too where it takes ``$bucket``,
    for one whose violations are each within one request) and the counts and examples are summed; with
    ``in_id_buckets`` once per bucket of request ids (``partitions.id_buckets``, for a predicate over
    every id of the window that takes ``$bucket`` and ``$buckets``), summed the same way. A predicate with a fast
    pass (``FAST_PASSES``) runs only when that pass counts more than 0 over the whole window; a window it passes
    is recorded with metadata ``passed_by`` naming the fast pass's file.
    """
    progress.doing(f"checking {name}")
    fast = FAST_PASSES.get(sql_name)
    if fast is not None:  # a cheaper sufficient statement first: its 0 is the predicate's 0
        fast_text = statement(f"checks/{fast}")
        if conn.execute(fast_text, params_for(fast_text, params)).fetchone()[0] == 0:
            return dg.AssetCheckResult(check_name=name, asset_key=dg.AssetKey(asset_key), passed=True,
                                       severity=dg.AssetCheckSeverity.ERROR,
                                       metadata={"violations": 0, "predicate": f"sql/checks/{sql_name}.sql",
                                                 "passed_by": f"sql/checks/{fast}.sql"})
    text = statement(f"checks/{sql_name}")
    violations, offending, has_offending = 0, [], False
    parts = (window_parts(conn, params, by_ids="$bucket" in text) if in_parts
             else id_buckets(conn, params) if in_id_buckets else [params])
    for part in parts:
        cursor = conn.execute(text, params_for(text, whole(part)))
        row = cursor.fetchall()[0]
        columns = [d[0] for d in cursor.description]
        violations += int(row[0])
        if "offending" in columns:
            has_offending = True
            offending += json.loads(row[columns.index("offending")])
    metadata = {"violations": violations, "predicate": f"sql/checks/{sql_name}.sql"}
    if has_offending:
        metadata["offending"] = dg.MetadataValue.json(offending[:OFFENDING_EXAMPLES])
    return dg.AssetCheckResult(check_name=name, asset_key=dg.AssetKey(asset_key), passed=violations == 0,
                               severity=dg.AssetCheckSeverity.ERROR, metadata=metadata)


# Predicates with a fast pass: ``sql/checks/<value>.sql`` counts 0 only when ``<key>.sql`` would (a sufficient condition
# without the predicate's join: per-day counts and hash sums of each table's rows; the file says why its 0 is the
# predicate's). A window that passes it is never joined; one that fails it runs the predicate, which counts and names
# the violations. At 5M usage rows a day: 0.3 s against 2.4 s (bench/README.md, "The priced-once check without a join").
FAST_PASSES = {"usage_costs__rows_not_priced_once": "usage_costs__priced_once_digests_differ"}

OFFENDING_EXAMPLES = 5  # as many as each predicate lists (sql/checks/files__rows_do_not_add_up.sql)


def distribution(conn: duckdb.DuckDBPyConnection, asset_key: list[str], name: str, sql: str, params: dict,
                 suite: list) -> dg.AssetCheckResult:
    """Validate the rows of ``sql`` with a GX suite; WARN severity, per-expectation outcomes in metadata."""
    outcomes = expectations.validate(conn, sql, params, suite)
    metadata = {f"{o.expectation}:{o.column}": dg.MetadataValue.json(o.as_metadata()) for o in outcomes}
    metadata["rows_checked"] = max((o.element_count for o in outcomes), default=0)
    metadata["rows_in_window"] = max((o.rows_in_window for o in outcomes), default=0)
    return dg.AssetCheckResult(check_name=name, asset_key=dg.AssetKey(asset_key),
                               passed=all(o.success for o in outcomes),
                               severity=dg.AssetCheckSeverity.WARN, metadata=metadata)


def gx() -> "expectations._Kinds":
    """GX expectations by their class names, described for the GX process (``expectations.Expect``):
    ``gx().ExpectColumnValuesToBeBetween(column=..., min_value=..., max_value=...)``."""
    return expectations.gx
