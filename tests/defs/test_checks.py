"""Data checks: they pass on a clean run and each one fails when its rule is broken."""

from datetime import date

import dagster as dg
import duckdb
import pytest

from pipelines.defs import checks, partitions
from pipelines.lib.sql import statement
from tests.conftest import run_pipeline
from tests.defs.test_pipeline import hit_rate_logs

WINDOW = {"start": date(2026, 11, 1), "end": date(2026, 11, 11)}


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("checks")
    hit_rate_logs(tmp / "logs", broken_from=date(2026, 11, 8))
    return run_pipeline(tmp, tmp / "logs")


@pytest.fixture
def db(clean_db, tmp_path):
    target = tmp_path / "w.duckdb"
    target.write_bytes(clean_db.read_bytes())
    return target


def test_every_check_passes_on_a_clean_run_and_is_recorded(tmp_path):
    from pipelines.definitions import defs
    from pipelines import runner
    from pipelines.defs.nightly import jobs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)
    loaded = defs()
    definitions = list(loaded.assets) + list(loaded.asset_checks)
    result = dg.materialize(definitions, resources=dict(loaded.resources), instance=dg.DagsterInstance.ephemeral(),
                            selection=dg.AssetSelection.assets(*[dg.AssetKey(k) for k in jobs.INGEST_ASSETS]))
    evaluations = result.get_asset_check_evaluations()
    result = dg.materialize(definitions, resources=dict(loaded.resources), instance=dg.DagsterInstance.ephemeral(),
                            selection=dg.AssetSelection.assets(*[dg.AssetKey(k) for k in jobs.DAILY_ASSETS]),
                            partition_key="2026-11-08")
    evaluations += result.get_asset_check_evaluations()
    names = {e.check_name: e.passed for e in evaluations}
    assert names == {"rows_in_equal_accepted_plus_quarantined": True, "token_classes_sum_to_prompt": True,
                     "request_id_unique": True, "usage_distributions": True, "priced_rows_equal_usage_rows": True,
                     "cost_equals_tokens_times_prices": True, "cost_distributions": True,
                     "totals_equal_line_items": True, "savings_distributions": True, "agrees_with_core_usage": True}
    gx_metadata = next(e for e in evaluations if e.check_name == "usage_distributions").metadata
    assert gx_metadata["rows_checked"].value == 60


BREAKS = [
    ("token_classes_sum_to_prompt", "usage__token_classes_do_not_close",
     "update core.usage set uncached_input_tokens = uncached_input_tokens + 1 where request_id = '2026-11-03-5'"),
    ("request_id_unique", "usage__duplicate_request_ids",
     "insert into core.usage select * from core.usage where request_id = '2026-11-03-5'"),
    # the same id on a day outside the window still counts against the window's row
    ("request_id_unique", "usage__duplicate_request_ids",
     "insert into core.usage select * replace (date '2026-10-20' as day) from core.usage where request_id = '2026-11-03-5'"),
    ("priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
     "delete from core.usage_costs where request_id = '2026-11-03-5'"),
    ("priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
     "insert into core.usage_costs select * from core.usage_costs where request_id = '2026-11-03-5'"),
    ("priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
     "update core.usage_costs set day = day + 1 where request_id = '2026-11-03-5'"),
    ("cost_equals_tokens_times_prices", "usage_costs__cost_not_tokens_times_prices",
     "update core.usage_costs set cost_usd = cost_usd + 0.000000000000001 where request_id = '2026-11-03-5'"),
    ("cost_equals_tokens_times_prices", "usage_costs__cost_not_tokens_times_prices",
     "update core.usage_costs set list_cost_usd = list_cost_usd + 0.000000000000001 where request_id = '2026-11-03-5'"),
    # a cost row whose tokens are not those its list cost prices
    ("cost_equals_tokens_times_prices", "usage_costs__cost_not_tokens_times_prices",
     "update core.usage_costs set output_tokens = output_tokens + 1 where request_id = '2026-11-03-5'"),
    # a billed amount the cost does not carry
    ("cost_equals_tokens_times_prices", "usage_costs__cost_not_tokens_times_prices",
     "update core.usage_costs set reported_cost_usd = 1 where request_id = '2026-11-03-5'"),
    # a usage row whose tokens or billed amount are not those its cost row priced
    ("priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
     "update core.usage set output_tokens = output_tokens + 1 where request_id = '2026-11-03-5'"),
    ("priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
     "update core.usage set reported_cost_usd = 1 where request_id = '2026-11-03-5'"),
    ("totals_equal_line_items", "daily_savings__totals_differ_from_line_items",
     "update marts.daily_savings set savings_usd = savings_usd - 0.01 where day = '2026-11-03'"),
    ("totals_equal_line_items", "daily_savings__totals_differ_from_line_items",
     "update marts.daily_savings set list_cost_usd = list_cost_usd + 0.01 where day = '2026-11-03'"),
    ("rows_in_equal_accepted_plus_quarantined", "files__rows_do_not_add_up",
     "update stage.files set rows_quarantined = rows_quarantined + 1"),
]


@pytest.mark.parametrize("name, predicate, damage", BREAKS, ids=[f"{b[0]}-{n}" for n, b in enumerate(BREAKS)])
def test_each_invariant_fails_when_its_rule_is_broken(db, name, predicate, damage, monkeypatch):
    monkeypatch.setattr(partitions, "PART_ROWS", 25)  # in parts: a day each (60 rows), cut into 3 buckets of ids
    by_id = predicate in IN_ID_BUCKETS  # these take a bucket of ids: one bucket of the window's 600 rows here
    fast = checks.FAST_PASSES.get(predicate)
    with duckdb.connect(str(db)) as conn:
        clean = checks.invariant(conn, ["x"], name, predicate, WINDOW, in_id_buckets=by_id)
        assert clean.passed and ("passed_by" in clean.metadata) == (fast is not None)
        conn.execute(damage)
        if fast is not None:  # a fast pass never passes a broken window: its count sends it to the predicate
            assert conn.execute(statement(f"checks/{fast}"), WINDOW).fetchone()[0] >= 1  # each damaged day
        broken = checks.invariant(conn, ["x"], name, predicate, WINDOW, in_id_buckets=by_id)
        assert "passed_by" not in broken.metadata
        if predicate in IN_PARTS:  # the assets run these part by part: the same count either way
            assert len(partitions.window_parts(conn, WINDOW, by_ids="$bucket" in statement(f"checks/{predicate}"))) == (
                30 if predicate in CUT_BY_IDS else 10)
            in_parts = checks.invariant(conn, ["x"], name, predicate, WINDOW, in_parts=True)
            assert (in_parts.passed, in_parts.metadata["violations"].value) == (False, broken.metadata["violations"].value)
        if by_id:  # and bucket by bucket: 600 or 601 rows in 6 or 7 buckets of ids
            monkeypatch.setattr(partitions, "BUCKET_ROWS", 100)
            assert len(partitions.id_buckets(conn, WINDOW)) in (6, 7)
            in_buckets = checks.invariant(conn, ["x"], name, predicate, WINDOW, in_id_buckets=True)
            assert (in_buckets.passed, in_buckets.metadata["violations"].value) == (False, broken.metadata["violations"].value)
    assert not broken.passed and broken.metadata["violations"].value >= 1
    assert broken.severity == dg.AssetCheckSeverity.ERROR


# the predicates the assets run once per part of their window (checks.invariant(in_parts=True))
IN_PARTS = {"usage_costs__rows_not_priced_once", "daily_savings__totals_differ_from_line_items"}
# of those, the predicates whose parts are cut by request ids too where a day is large (they take $bucket)
CUT_BY_IDS = {"usage_costs__rows_not_priced_once"}
# the predicates the assets run once per bucket of the window's request ids (checks.invariant(in_id_buckets=True))
IN_ID_BUCKETS = {"usage__duplicate_request_ids"}


def test_a_fast_pass_leaves_a_usage_row_repeated_with_its_cost_row_to_the_unique_id_check(db):
    # the digests compare multisets: a usage row and its cost row both repeated leave them equal; the priced-once
    # predicate counts each copy, and request_id_unique (blocking, on core.usage upstream) stops the run first
    with duckdb.connect(str(db)) as conn:
        conn.execute("insert into core.usage select * from core.usage where request_id = '2026-11-03-5'")
        conn.execute("insert into core.usage_costs select * from core.usage_costs where request_id = '2026-11-03-5'")
        fast = conn.execute(statement("checks/usage_costs__priced_once_digests_differ"), WINDOW).fetchone()[0]
        exact = conn.execute(statement("checks/usage_costs__rows_not_priced_once"), partitions.whole(WINDOW)).fetchone()[0]
        unique = checks.invariant(conn, ["x"], "request_id_unique", "usage__duplicate_request_ids", WINDOW,
                                  in_id_buckets=True)
    assert (fast, exact) == (0, 2)
    assert not unique.passed and unique.metadata["violations"].value == 1


def test_the_fast_pass_counts_each_damaged_day_and_the_predicate_every_damaged_row(db, monkeypatch):
    # several days damaged at once: the fast pass counts the days, then the predicate runs and counts the rows,
    # the same count as with no fast pass at all
    damage = ["delete from core.usage_costs where request_id = '2026-11-02-1'",
              "update core.usage set cache_read_tokens = cache_read_tokens + 1 where request_id = '2026-11-05-3'",
              "update core.usage_costs set day = day + 1 where request_id = '2026-11-07-2'"]
    args = (["x"], "priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once", WINDOW)
    with duckdb.connect(str(db)) as conn:
        for text in damage:
            conn.execute(text)
        fast = conn.execute(statement("checks/usage_costs__priced_once_digests_differ"), WINDOW).fetchone()[0]
        with_fast = checks.invariant(conn, *args, in_parts=True)
        monkeypatch.setattr(checks, "FAST_PASSES", {})
        exact = checks.invariant(conn, *args, in_parts=True)
    assert fast == 4  # days 2, 5, 7 and 8 (the moved cost row's old and new day)
    # the unpriced row, the changed row, the moved row counted on its usage day and on its cost day
    assert with_fast.metadata["violations"].value == exact.metadata["violations"].value == 4
    assert not with_fast.passed and "passed_by" not in with_fast.metadata


def test_a_check_run_in_id_buckets_counts_each_repeated_id_once_in_its_bucket(db, monkeypatch):
    # three ids repeated: two inside the window, one also on a day outside it; 600 ids in 12 buckets
    monkeypatch.setattr(partitions, "BUCKET_ROWS", 50)
    with duckdb.connect(str(db)) as conn:
        conn.execute("insert into core.usage select * from core.usage where request_id in ('2026-11-03-5', '2026-11-09-1')")
        conn.execute("insert into core.usage select * replace (date '2026-10-20' as day) from core.usage "
                     "where request_id in ('2026-11-04-2', '2026-11-03-5')")
        buckets = partitions.id_buckets(conn, WINDOW)
        per_bucket = [conn.execute(statement("checks/usage__duplicate_request_ids"), b).fetchone()[0] for b in buckets]
        result = checks.invariant(conn, ["x"], "request_id_unique", "usage__duplicate_request_ids", WINDOW,
                                  in_id_buckets=True)
    assert len(buckets) == 13 and sum(per_bucket) == 3 and max(per_bucket) < 3  # 602 rows in the window
    assert result.metadata["violations"].value == 3 and not result.passed


def test_a_window_is_cut_into_runs_of_days_of_at_most_part_rows_usage_rows(db, monkeypatch):
    # 60 usage rows a day, 2026-11-01 .. 2026-11-10; a day with more than PART_ROWS rows stands alone
    monkeypatch.setattr(partitions, "PART_ROWS", 130)
    with duckdb.connect(str(db)) as conn:
        conn.execute("insert into core.usage select * replace (request_id || '-copy' as request_id) "
                     "from core.usage where day = '2026-11-06'")  # 120 rows
        parts = partitions.window_parts(conn, {**WINDOW, "other": 1})
        empty = partitions.window_parts(conn, {"start": date(2025, 1, 1), "end": date(2025, 1, 4)})
        monkeypatch.setattr(partitions, "PART_ROWS", 50)
        cut = partitions.window_parts(conn, {**WINDOW, "other": 1}, by_ids=True)
        per_bucket = [conn.execute("select count(*) from core.usage where day >= $start and day < $end "
                                   "and hash(request_id) % $buckets::ubigint = $bucket::ubigint",
                                   {k: p[k] for k in ("start", "end", "bucket", "buckets")}).fetchone()[0] for p in cut]
    assert [(p["start"].day, p["end"].day, p["other"]) for p in parts] == [
        (1, 3, 1), (3, 5, 1), (5, 6, 1), (6, 7, 1), (7, 9, 1), (9, 11, 1)]
    assert empty == [{"start": date(2025, 1, 1), "end": date(2025, 1, 4)}]
    # by ids, at PART_ROWS 50: each day alone, a day of 60 rows in two buckets of its ids, the day of 120 in three
    assert [(p["start"].day, p["end"].day, p["bucket"], p["buckets"]) for p in cut] == [
        (d, d + 1, b, 3 if d == 6 else 2) for d in range(1, 11) for b in range(3 if d == 6 else 2)]
    assert sum(per_bucket) == 660 and sum(per_bucket[10:13]) == 120 and max(per_bucket) < 60


def test_a_check_run_in_parts_counts_every_part_of_the_window(db, monkeypatch):
    monkeypatch.setattr(partitions, "PART_ROWS", 1)
    with duckdb.connect(str(db)) as conn:
        conn.execute("delete from core.usage_costs where request_id in ('2026-11-03-5', '2026-11-09-1', '2026-11-09-2')")
        result = checks.invariant(conn, ["x"], "priced_rows_equal_usage_rows", "usage_costs__rows_not_priced_once",
                                  WINDOW, in_parts=True)
    assert result.metadata["violations"].value == 3 and not result.passed


def test_distribution_check_warns_with_the_unexpected_values(db):
    suite = [checks.gx().ExpectColumnValuesToBeInSet(column="provider", value_set=checks.KNOWN_PROVIDERS)]
    sql = "select provider from core.usage where day >= $start and day < $end"
    with duckdb.connect(str(db)) as conn:
        assert checks.distribution(conn, ["x"], "d", sql, WINDOW, suite).passed
        conn.execute("update core.usage set provider = 'mystery' where request_id = '2026-11-03-5'")
        result = checks.distribution(conn, ["x"], "d", sql, WINDOW, suite)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    outcome = result.metadata["ExpectColumnValuesToBeInSet:provider"].value
    assert outcome["unexpected"] == 1 and outcome["examples"] == ["mystery"] and outcome["rows"] == 600


def test_distribution_checks_read_large_windows_in_chunks(db, monkeypatch):
    from pipelines.lib import expectations

    monkeypatch.setattr(expectations, "CHUNK_ROWS", 64)
    suite = [checks.gx().ExpectColumnValuesToBeBetween(column="prompt_tokens", min_value=0, max_value=4000)]
    with duckdb.connect(str(db)) as conn:
        result = checks.distribution(conn, ["x"], "d", "select prompt_tokens from core.usage where day >= $start and day < $end",
                                     WINDOW, suite)
    assert result.passed and result.metadata["rows_checked"].value == 600


def test_distribution_checks_validate_a_fixed_size_sample_of_a_large_window(db, monkeypatch):
    monkeypatch.setenv("CACHEMETER_GX_SAMPLE_ROWS", "100")
    suite = [checks.gx().ExpectColumnValuesToBeBetween(column="prompt_tokens", min_value=0, max_value=4000)]
    sql = "select prompt_tokens from core.usage where day >= $start and day < $end"
    with duckdb.connect(str(db)) as conn:
        sampled = checks.distribution(conn, ["x"], "d", sql, WINDOW, suite)
        conn.execute("update core.usage set prompt_tokens = 99999")  # every row out of bounds: any sample sees it
        failing = checks.distribution(conn, ["x"], "d", sql, WINDOW, suite)
    assert sampled.passed and sampled.metadata["rows_checked"].value == 100
    assert sampled.metadata["rows_in_window"].value == 600
    outcome = failing.metadata["ExpectColumnValuesToBeBetween:prompt_tokens"].value
    assert not failing.passed and outcome["unexpected"] == 100 and outcome["rows_in_window"] == 600
    monkeypatch.setenv("CACHEMETER_GX_SAMPLE_ROWS", "lots")
    with duckdb.connect(str(db)) as conn, pytest.raises(ValueError, match="CACHEMETER_GX_SAMPLE_ROWS"):
        checks.distribution(conn, ["x"], "d", sql, WINDOW, suite)


def test_distribution_checks_pass_on_every_supported_format(tmp_path):
    # fixtures/formats on 2026-11-20 names xai, mistral, cohere, openrouter and self_hosted providers too
    import shutil

    from pipelines import runner
    from pipelines.defs.nightly import jobs
    from pipelines.definitions import defs
    from tests.conftest import REPO

    shutil.copytree(REPO / "fixtures" / "formats", tmp_path / "logs")
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)
    loaded = defs()
    for keys, partition in ((jobs.INGEST_ASSETS, None), (jobs.DAILY_ASSETS, "2026-11-20")):
        result = dg.materialize(list(loaded.assets), resources=dict(loaded.resources), instance=dg.DagsterInstance.ephemeral(),
                                selection=dg.AssetSelection.assets(*[dg.AssetKey(k) for k in keys]), partition_key=partition)
        failed = [(e.check_name, e.metadata) for e in result.get_asset_check_evaluations() if not e.passed]
        assert not failed, failed


def test_the_accounting_check_names_the_files_that_do_not_add_up_and_by_how_much(db):
    with duckdb.connect(str(db)) as conn:
        (name, rows_in), *_ = conn.execute("select source_file, rows_in from stage.files order by 1").fetchall()
        conn.execute("delete from core.usage where rowid in (select rowid from core.usage where source_file = ? limit 2)",
                     [name])
        result = checks.invariant(conn, ["x"], "rows_in_equal_accepted_plus_quarantined", "files__rows_do_not_add_up", {})
    assert not result.passed and result.metadata["violations"].value == 1
    assert result.metadata["offending"].value == [{
        "source_file": name, "rows_in": rows_in, "rows_accepted": rows_in, "rows_quarantined": 0,
        "usage_rows": rows_in - 2, "quarantine_rows": 0}]


def test_a_run_stopped_by_a_blocking_check_says_which_check_and_its_examples(tmp_path, monkeypatch):
    from pipelines import runner
    from pipelines.lib import sql
    from tests.conftest import REPO, write_jsonl

    line = (REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()[0]
    write_jsonl(tmp_path / "logs" / "one.jsonl", [line])
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)
    real = sql.statement

    def undercounting(name):  # the accounting predicate as if core.usage had lost the file's row
        text = real(name)
        return text.replace("from core.usage group by all", "from core.usage where false group by all") \
            if name == "checks/files__rows_do_not_add_up" else text

    monkeypatch.setattr(checks, "statement", undercounting)
    with pytest.raises(runner.PipelineError) as stopped:
        runner.run_pipeline(instance=dg.DagsterInstance.ephemeral())
    message = str(stopped.value)
    assert message.startswith("ingest and pricing failed: 1 blocking asset check failed")
    assert ("stage/files rows_in_equal_accepted_plus_quarantined: 1 violation (sql/checks/files__rows_do_not_add_up.sql); "
            'for instance [{"source_file": "one.jsonl", "rows_in": 1, "rows_accepted": 1, "rows_quarantined": 0, '
            '"usage_rows": 0, "quarantine_rows": 0}]') in message
