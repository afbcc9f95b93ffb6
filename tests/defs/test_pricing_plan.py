"""The pricing statement's plan: its hash joins build over the window's price keys, never its usage rows.

Measured here (DuckDB 1.5.5): with the keys derived inside the statement, a second run of the bundled
demo turned the pricing join's LEFT into RIGHT (the usage rows became the hash table), and at 20M usage
rows over four days repricing ran out of the 1 GB memory limit that way. This test fails on that code.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb

from pipelines.lib.sql import statement
from tests.conftest import REPO, run_pipeline


def hash_join_build_sides(node: dict) -> Iterator[dict]:
    """Every hash join's build side (its second child in DuckDB's JSON plan) under ``node``."""
    if node.get("name") == "HASH_JOIN":
        yield node["children"][1]
    for child in node.get("children", []):
        yield from hash_join_build_sides(child)


def scanned_tables(node: dict) -> set[str]:
    """Qualified names of the tables scanned under ``node``, unquoted (``temp.main.price_choices``)."""
    tables = {node["extra_info"]["Table"].replace('"', "")} if node.get("name") == "SEQ_SCAN" else set()
    for child in node.get("children", []):
        tables |= scanned_tables(child)
    return tables


def pricing_plan(db: Path) -> list[dict]:
    """DuckDB's JSON plan of pricing the whole warehouse, after its price choices are built as the asset does."""
    with duckdb.connect(str(db)) as conn:
        start, end = conn.execute("select min(day), max(day) + 1 from core.usage").fetchone()
        params = {"start": start, "end": end}
        conn.execute(statement("costs/price_choices__create"), params)
        return json.loads(conn.execute("explain (format json) " + statement("costs/usage_costs__insert_window"),
                                       params).fetchone()[1])


def test_a_second_run_keeps_the_usage_rows_on_the_probe_side_of_the_pricing_join(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(REPO / "fixtures" / "demo_logs", logs)
    db = run_pipeline(tmp_path, logs)
    # nothing new, but the price book is rewritten: the estimates a later repricing (a new day, a
    # catalogue upgrade, --all-days) plans with are these
    run_pipeline(tmp_path, logs)
    plan = pricing_plan(db)
    builds = [side for root in plan for side in hash_join_build_sides(root)]
    assert builds, "the pricing statement has no hash join: this test no longer looks at the right plan"
    assert all(scanned_tables(side) == {"temp.main.price_choices"} for side in builds), \
        [sorted(scanned_tables(side)) for side in builds]
