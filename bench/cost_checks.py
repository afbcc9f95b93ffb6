"""Time pricing a warehouse's first day and the two cost checks: ``python bench/cost_checks.py WAREHOUSE``.

Run it with each checkout's code on a copy of the same warehouse (say a 5M-request day built by ``bench/run.py``):
it reprices the day as the ``core/usage_costs`` asset does (``daily.replace_window`` of
``sql/costs/usage_costs__insert_window.sql``, part by part), then runs the priced-once and cost checks twice each
as the asset does (``checks.invariant``), printing one line per step: seconds, whether the check passed, and the
process's peak RSS so far (MB). The warehouse is changed (repriced, committed). bench/README.md, "The cost checks in
one join".
"""

from __future__ import annotations

import datetime
import resource
import sys
import time


def peak_mb() -> int:
    """Peak resident set size of this process so far, MB (Linux reports KB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main(db: str) -> None:
    from pipelines.defs import checks, daily
    from pipelines.lib import warehouse
    from pipelines.lib.sql import statement

    conn = warehouse.connect(db)
    start = conn.execute("select min(day) from core.usage").fetchone()[0]
    params = {"start": start, "end": start + datetime.timedelta(days=1)}
    conn.execute(statement("costs/price_choices__create"), params)
    began = time.perf_counter()
    daily.replace_window(conn, "costs/usage_costs__delete_window", "costs/usage_costs__insert_window", params,
                         None, True)
    print(f"pricing {time.perf_counter() - began:.2f} s, peak {peak_mb()} MB", flush=True)
    for name, sql in [("priced once", "usage_costs__rows_not_priced_once"),
                      ("cost = tokens x prices", "usage_costs__cost_not_tokens_times_prices")]:
        in_parts = "$bucket" in statement(f"checks/{sql}")  # as the asset runs it: part by part where it joins
        for _ in range(2):
            began = time.perf_counter()
            result = checks.invariant(conn, ["bench"], name, sql, params, in_parts=in_parts)
            print(f"{name}: {time.perf_counter() - began:.2f} s, passed {result.passed}, peak {peak_mb()} MB", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
