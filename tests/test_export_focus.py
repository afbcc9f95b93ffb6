"""``cachemeter export focus``: the warehouse as a FinOps FOCUS 1.2 dataset, checked against the spec's
required-column, type and value rules (tests/focus_rules.py) and against marts.daily_savings."""

import csv
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import date
from decimal import Decimal

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from pipelines.lib import focus, warehouse
from tests import focus_rules
from tests.conftest import REPO, query, run_pipeline


def cachemeter(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "160"}, timeout=300)


def read_csv_as_text(path):
    names = next(csv.reader(path.open()))
    return pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(
        column_types={n: pa.string() for n in names}, strings_can_be_null=True))


@pytest.fixture(scope="module")
def demo_export(demo_warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("focus") / "demo.parquet"
    done = cachemeter("export", "focus", "--out", str(out), "--db", str(demo_warehouse), cwd=out.parent)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_demo_export_follows_the_focus_rules(demo_export):
    out, stdout = demo_export
    table = pq.read_table(out)
    assert table.num_rows > 100 and f"{table.num_rows:,} FOCUS rows over 10 day(s)" in stdout
    assert focus_rules.violations(table) == []


def test_demo_billed_cost_sums_equal_daily_savings_cost_per_day_exactly(demo_export, demo_warehouse):
    out, _ = demo_export
    by_day = defaultdict(Decimal)
    list_by_day = defaultdict(Decimal)
    for row in pq.read_table(out, columns=["ChargePeriodStart", "BilledCost", "ListCost"]).to_pylist():
        by_day[row["ChargePeriodStart"].date()] += row["BilledCost"]
        list_by_day[row["ChargePeriodStart"].date()] += row["ListCost"]
    marts = query(demo_warehouse, "select day, sum(cost_usd), sum(list_cost_usd) from marts.daily_savings "
                                  "group by day order by day")
    assert [(d, c) for d, c, _ in marts] == sorted(by_day.items())
    assert [(d, lc) for d, _, lc in marts] == sorted(list_by_day.items())
    assert len(marts) == 10 and all(c > 0 for _, c, _ in marts)


def test_demo_grain_is_day_provider_model_tenant_app_token_class(demo_export, demo_warehouse):
    table = pq.read_table(demo_export[0]).to_pylist()
    keys = [(r["ChargePeriodStart"], r["ProviderName"], r["x_Model"], r["x_Tenant"], r["x_App"], r["x_TokenClass"],
             r["ListUnitPrice"]) for r in table]
    assert len(keys) == len(set(keys))
    # tokens are conserved: ConsumedQuantity per token class equals the marts' tokens
    consumed = defaultdict(int)
    for r in table:
        consumed[r["x_TokenClass"]] += int(r["ConsumedQuantity"])
    (read, write, output), = query(demo_warehouse, "select sum(cache_read_tokens), sum(cache_write_tokens), "
                                                   "sum(output_tokens) from marts.daily_savings")
    assert (consumed["cache_read"], consumed["cache_write_5m"] + consumed["cache_write_1h"], consumed["output"]) \
        == (read, write, output)


def test_csv_export_of_a_window_follows_the_text_formats(demo_warehouse, tmp_path):
    out = tmp_path / "nov.csv"
    done = cachemeter("export", "focus", "--out", str(out), "--from", "2026-11-20", "--to", "2026-11-21",
                      "--db", str(demo_warehouse), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = read_csv_as_text(out)
    assert focus_rules.violations(table, text=True) == []
    assert set(table.column("ChargePeriodStart").to_pylist()) == {"2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z"}
    billed = sum(Decimal(v) for v in table.column("BilledCost").to_pylist())
    assert billed == query(demo_warehouse, "select sum(cost_usd) from marts.daily_savings "
                                           "where day between '2026-11-20' and '2026-11-21'")[0][0]


def test_a_billed_row_is_split_over_its_token_classes_to_the_last_digit(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "billed" / "openrouter_responses_gpt-5.6-sol.jsonl", logs)
    db = run_pipeline(tmp_path, logs)
    with warehouse.connect(db, read_only=True) as conn:
        table = focus.charges(conn)
    assert focus_rules.violations(table) == []
    rows = {r["x_TokenClass"]: r for r in table.to_pylist()}
    assert sum(r["BilledCost"] for r in rows.values()) == Decimal("0.028375")           # what OpenRouter billed
    assert sum(r["ListCost"] for r in rows.values()) == Decimal("0.0219")              # genai-prices' list
    assert {c: (r["ConsumedQuantity"], r["ListUnitPrice"], r["x_CostBasis"]) for c, r in rows.items()} == {
        "uncached_input": (1100, Decimal("4"), "billed"), "cache_read": (2500, Decimal("0.4"), "billed"),
        "cache_write_5m": (2500, Decimal("5"), "billed"), "output": (200, Decimal("20"), "billed")}
    # each class's share of its row's bill is in proportion to its list cost: the write row's 0.021875 / 0.017
    assert rows["cache_write_5m"]["BilledCost"] == round(Decimal("0.0125") * Decimal("0.021875") / Decimal("0.017"), 15)
    assert (rows["cache_read"]["ProviderName"], rows["cache_read"]["PublisherName"], rows["cache_read"]["SkuId"],
            rows["cache_read"]["Tags"]) == ("OpenRouter", "openai", "openrouter/openai/gpt-5.6-sol/cache_read",
                                            '{"tenant":"acme","app":"agent"}')


@pytest.mark.parametrize("args, message", [
    (["--out", "f.txt"], "must end in .parquet or .csv"),
    (["--out", "f.csv", "--from", "2026-13-01"], "Invalid value for '--from'"),
    (["--out", "f.csv", "--from", "2026-11-22", "--to", "2026-11-21"], "--from 2026-11-22 is after --to 2026-11-21"),
    (["--out", "f.csv", "--db", "missing.duckdb"], "does not exist"),
    ([], "Missing option '--out'"),
])
def test_bad_arguments_get_one_clear_error_and_no_traceback(tmp_path, args, message):
    done = cachemeter("export", "focus", *args, cwd=tmp_path)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "f.csv").exists() and not (tmp_path / "f.txt").exists()


def test_unpriced_requests_left_out_of_the_export_are_counted_in_a_warning(tmp_path):
    import json

    logs = tmp_path / "logs"
    logs.mkdir()
    records = [{"ts": f"2026-11-20T09:0{n}:00Z", "provider": "openai", "model": model, "request_id": f"r{n}",
                "response": {"usage": {"prompt_tokens": 2000, "completion_tokens": 10}}}
               for n, model in enumerate(["gpt-4o", "no-such-model-x", "no-such-model-x"])]
    (logs / "usage.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    db = run_pipeline(tmp_path, logs)
    done = cachemeter("export", "focus", "--out", "f.csv", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: 2 unpriced request(s) left out" in done.stderr
    with warehouse.connect(db, read_only=True) as conn:
        assert focus.unpriced_requests(conn) == 2
        assert focus.unpriced_requests(conn, last_day=date(2026, 11, 19)) == 0


def test_a_zero_or_tiny_amount_is_written_in_plain_notation_and_a_failed_write_keeps_the_last_export(tmp_path,
                                                                                                       monkeypatch):
    # a break test: a $0 reported cost came out as 0E-15 (Arrow's CSV writer spells zero and amounts below 10^-6 in
    # scientific notation; FOCUS decimals are plain), and a full disk left a truncated file over the last export
    from datetime import datetime, timezone

    amounts = pa.array([Decimal("0"), Decimal("0.0000001"), Decimal("-0.000000000000001"), None],
                       pa.decimal128(38, 15))
    table = pa.table({"BilledCost": amounts, "Tags": ['{"tenant":"a,b"}', None, "x", "y"],
                      "ChargePeriodStart": pa.array([datetime(2026, 11, 1, tzinfo=timezone.utc)] * 4,
                                                    pa.timestamp("us", tz="UTC"))})
    out = tmp_path / "f.csv"
    focus.write(table, out)
    rows = list(csv.reader(out.open()))
    assert [r[0] for r in rows] == ["BilledCost", "0.000000000000000", "0.000000100000000", "-0.000000000000001", ""]
    assert rows[1][1:] == ['{"tenant":"a,b"}', "2026-11-01T00:00:00Z"]
    previous = out.read_bytes()

    def full_disk(table, path, suffix):
        path.write_bytes(b"BilledCost,Ta")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(focus, "_write_to", full_disk)
    with pytest.raises(OSError):
        focus.write(table, out)
    assert out.read_bytes() == previous and sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]


def test_the_last_representable_day_is_a_valid_upper_bound(demo_warehouse, tmp_path):
    # a break test: --to 9999-12-31 stopped with "OverflowError: date value out of range"
    done = cachemeter("export", "focus", "--out", "f.csv", "--to", "9999-12-31", "--db", str(demo_warehouse), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(read_csv_as_text(tmp_path / "f.csv")) > 100


def test_an_empty_range_warns_and_a_file_in_the_outputs_path_is_named(demo_warehouse, tmp_path):
    # break tests: a range with no data wrote a header-only file with exit code 0 and no word; a file where a folder
    # of --out should be said "File exists"
    done = cachemeter("export", "focus", "--out", "f.csv", "--from", "2030-01-01", "--db", str(demo_warehouse),
                      cwd=tmp_path)
    assert done.returncode == 0 and "warning: no priced usage in 2030-01-01 .. the last day: the file holds the header " \
                                    "only" in done.stderr, done.stderr
    assert len((tmp_path / "f.csv").read_text().splitlines()) == 1
    (tmp_path / "afile").write_text("x")
    done = cachemeter("export", "focus", "--out", "afile/sub/f.csv", "--db", str(demo_warehouse), cwd=tmp_path)
    assert done.returncode == 1 and "cannot write afile/sub/f.csv: afile is a file, not a folder" in done.stderr, done.stderr


def test_an_export_gets_the_mode_a_new_file_would_not_mkstemps_0600(tmp_path):
    # a break test: every export (and an existing 0644 file it replaced) came out 0600, unreadable to the FinOps tools
    # under another account it is written for
    from pipelines.lib import file_modes

    table = pa.table({"BilledCost": pa.array([Decimal("1")], pa.decimal128(38, 15))})
    out = tmp_path / "f.csv"
    out.write_text("old\n")
    out.chmod(0o644)
    focus.write(table, out)
    assert out.stat().st_mode & 0o777 == 0o666 & ~file_modes.umask()
    previous = os.umask(0o027)
    try:
        focus.write(table, tmp_path / "g.parquet")
    finally:
        os.umask(previous)
    assert (tmp_path / "g.parquet").stat().st_mode & 0o777 == 0o640
