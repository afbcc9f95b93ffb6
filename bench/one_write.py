"""What one write of each row with its costs would save: ``python bench/one_write.py WAREHOUSE [--repeat R]``.

The issue's first lever for the usage path ("one write of each row, costs as columns"), measured on a built
warehouse of one day (e.g. the 5M bench day's) without changing the pipeline. Each round writes the day's rows into
new warehouse files with the run's memory limit (1 GB), three ways, alternating, each statement then checkpointed:

* ``usage``: ``core.usage``'s rows as publishing writes them (``CREATE TABLE AS`` of the day's rows);
* ``costs``: ``core.usage_costs``' rows as pricing writes them (``sql/costs/usage_costs__insert_window.sql``'s
  select, after ``sql/costs/price_choices__create.sql``);
* ``one``: both in one table: every ``core.usage`` column and every cost column, priced as the rows are written
  (the same select, its ``final`` step carrying the usage row's columns).

``usage + costs`` is today's pair of writes; ``one`` what pricing as staging publishes would write instead. The
readers that join the two tables are left out (``bench/README.md``, "Costs as columns of core.usage", measured
them: 16.4 s joined against 8.5 s on one table at 5M rows). Prints one JSON line: each way's seconds per round and
medians, and whether ``one`` holds the same rows as the pair joined (an ``EXCEPT ALL`` both ways over all columns).
Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipelines.lib.sql import statement  # noqa: E402


def one_table_select(pricing: str, usage_columns: list[str]) -> str:
    """The pricing statement's select with its ``final`` step carrying ``usage_columns`` too (costs as columns)."""
    select = pricing[pricing.index("with\n"):]
    final = select.index("final as (\n    select\n") + len("final as (\n    select\n")
    cost_part = select[final:select.index("    from scaled\n)", final)]
    carried = [c for c in usage_columns if not re.search(rf"(^|[\s,]){c}(\s*,|\s*$|\s+as\b)", cost_part, re.M)]
    return (select[:final] + "".join(f"        {c},\n" for c in carried) + select[final:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    conn = duckdb.connect()
    conn.execute(f"attach '{args.warehouse}' as warehouse (read_only)")
    conn.execute("use warehouse")
    conn.execute("SET memory_limit = '1GB'")
    conn.execute("SET TimeZone = 'UTC'")
    (start, end), = conn.execute("select min(day), max(day) + 1 from core.usage").fetchall()
    params = {"start": start, "end": end}
    usage_columns = [r[0] for r in conn.execute("select column_name from duckdb_columns() where schema_name = 'core' "
                                                 "and table_name = 'usage' order by column_index").fetchall()]
    conn.execute(statement("costs/price_choices__create"), params)
    pricing = statement("costs/usage_costs__insert_window")
    costs_select = pricing[pricing.index("with\n"):]
    ways = {
        "usage": "select * from core.usage where day >= $start and day < $end",
        "costs": costs_select,
        "one": one_table_select(pricing, usage_columns),
    }
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(prefix="one-write-", dir=args.warehouse.parent) as folder:
        for round_ in range(args.repeat):
            for way, select in ways.items():
                target = Path(folder) / f"{way}-{round_}.duckdb"
                conn.execute(f"attach '{target}' as out")
                started = time.perf_counter()
                conn.execute(f"create table out.t as {select}", {k: v for k, v in params.items() if f"${k}" in select})
                conn.execute("checkpoint out")
                seconds[way].append(round(time.perf_counter() - started, 2))
                conn.execute("detach out")
        last = args.repeat - 1
        for way in ("usage", "costs", "one"):
            conn.execute(f"attach '{Path(folder) / f'{way}-{last}.duckdb'}' as {way}_db (read_only)")
        costs_only = [r[0] for r in conn.execute("select * from costs_db.t limit 0").description
                      if r[0] not in usage_columns]
        pair = ("select u.*, " + ", ".join(f'c."{c}"' for c in costs_only)
                + " from usage_db.t u join costs_db.t c using (request_id, day)")
        listed = ", ".join(f'"{c}"' for c in usage_columns + costs_only)
        same = all(conn.execute(q).fetchone()[0] == 0 for q in (
            f"select count(*) from (select {listed} from ({pair}) except all select {listed} from one_db.t)",
            f"select count(*) from (select {listed} from one_db.t except all select {listed} from ({pair}))"))
    medians = {way: statistics.median(s) for way, s in seconds.items()}
    print(json.dumps({"rounds": args.repeat, "seconds": seconds, "median_s": medians,
                      "pair_s": round(medians["usage"] + medians["costs"], 2),
                      "one_over_pair": round(medians["one"] / (medians["usage"] + medians["costs"]), 3),
                      "same_rows": same}))


if __name__ == "__main__":
    main()
