"""Late data: a file for an already-built day is noticed by the sensor; that day, and the days whose
baselines read it, are rebuilt once."""

from datetime import date

import dagster as dg
import duckdb

from tests.conftest import query, run_pipeline, write_jsonl
from tests.defs.test_pipeline import hit_rate_logs


def late_rows(n: int) -> list[dict]:
    return [{"ts": f"2026-11-03T23:{i:02d}:00Z", "provider": "openai", "model": "gpt-4.1", "tenant": "acme", "app": "bot",
             "request_id": f"late-{i}", "response": {"usage": {"prompt_tokens": 4000, "completion_tokens": 10,
                                                                "prompt_tokens_details": {"cached_tokens": 3000}}}}
            for i in range(n)]


def evaluate(sensor):
    from pipelines.defs.settings import CachemeterSettings

    result = sensor(dg.build_sensor_context(resources={"settings": CachemeterSettings.from_env()}))
    return result if isinstance(result, list) else []


def test_a_late_file_is_staged_and_its_day_and_the_days_reading_it_are_rebuilt_once(tmp_path):
    from pipelines import runner
    from pipelines.defs.ingest.sensors import late_logs_sensor
    from pipelines.definitions import defs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))  # 2026-11-01 .. 2026-11-10
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert evaluate(late_logs_sensor) == []  # nothing new
    before = dict(query(db, "select day, requests from marts.daily_savings"))

    write_jsonl(tmp_path / "logs" / "late" / "2026-11-03-replay.jsonl", late_rows(12))
    (request,) = evaluate(late_logs_sensor)
    assert request.job_name == "cachemeter_ingest" and request.partition_key is None

    loaded = defs()
    assets, resources = list(loaded.assets), dict(loaded.resources)
    keys = lambda ks: dg.AssetSelection.assets(*[dg.AssetKey(k) for k in ks])  # noqa: E731
    assert dg.materialize(assets, resources=resources, selection=keys(runner.INGEST_KEYS),
                          instance=dg.DagsterInstance.ephemeral()).success
    # the late day, and the staged days whose baselines read it (up to 14 days after it by default)
    requests = evaluate(late_logs_sensor)
    assert {r.job_name for r in requests} == {"cachemeter_nightly"}
    assert [r.partition_key for r in requests] == [f"2026-11-{d:02d}" for d in range(3, 11)]

    for r in requests:
        assert dg.materialize(assets, resources=resources, selection=keys(runner.DAILY_KEYS), partition_key=r.partition_key,
                              instance=dg.DagsterInstance.ephemeral()).success
    after = dict(query(db, "select day, requests from marts.daily_savings"))
    assert after[date(2026, 11, 3)] == before[date(2026, 11, 3)] + 12
    assert {d: n for d, n in after.items() if d != date(2026, 11, 3)} == {d: n for d, n in before.items() if d != date(2026, 11, 3)}
    assert query(db, "select count(*), count(distinct request_id) from core.usage where request_id like 'late-%'") == [(12, 12)]
    assert evaluate(late_logs_sensor) == []  # staged and rebuilt: nothing left to do


def test_alert_baselines_come_from_stored_series_days_and_missing_ones_are_refilled(tmp_path):
    # a one-day rebuild reads its 7-day baseline from marts.series_days; a warehouse without those rows
    # (built before the table existed) gets them back from core.usage_priced on its next run
    from pipelines import runner
    from pipelines.definitions import defs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    alerts = "select rule, day, severity, observed, baseline, lost_savings_usd from marts.cache_alerts order by all"
    series = "select * from marts.series_days order by all"
    built_alerts, built_series = query(db, alerts), query(db, series)
    assert any(rule == "hit_rate_drop" and day == date(2026, 11, 8) for rule, day, *_ in built_alerts)

    with duckdb.connect(str(db)) as conn:
        conn.execute("delete from marts.series_days where day < '2026-11-08'")
    loaded = defs()
    keys = dg.AssetSelection.assets(*[dg.AssetKey(k) for k in runner.DAILY_KEYS])
    assert dg.materialize(list(loaded.assets), resources=dict(loaded.resources), selection=keys,
                          partition_key="2026-11-08", instance=dg.DagsterInstance.ephemeral()).success
    assert query(db, series) == built_series
    assert query(db, alerts) == built_alerts


def test_late_data_rebuilds_the_days_whose_baselines_read_it_like_a_fresh_build(tmp_path):
    # a late file lowers 2026-11-05's hit rate; the prefix-family baselines and alert rules of the
    # following days (trailing 7-day baselines, 7-day ROI window) read that day, so they are rebuilt
    # too: the warehouse then equals one built from scratch from the same logs
    from tests.conftest import snapshot

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    baseline = "select baseline from marts.cache_alerts where rule = 'hit_rate_drop' and day = '2026-11-08'"
    assert query(db, baseline) == [(0.75,)]
    late = [{**row, "ts": f"2026-11-05T{i % 24:02d}:30:00Z", "request_id": f"late-05-{i}",
             "response": {"usage": {"prompt_tokens": 4000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}}}}
            for i, row in enumerate(late_rows(120))]
    write_jsonl(tmp_path / "logs" / "late" / "2026-11-05-replay.jsonl", late)
    run_pipeline(tmp_path, tmp_path / "logs")

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    fresh_db = run_pipeline(fresh, tmp_path / "logs")
    # 11-05 now holds 60 requests at 3,000 cached tokens and 120 at 0: the 11-08 baseline (cache reads /
    # prompt tokens of 11-01 .. 11-07) falls from 0.75 to 7 x 60 x 3,000 / ((7 x 60 + 120) x 4,000) = 0.583
    reads, prompt = 7 * 60 * 3000, (7 * 60 + 120) * 4000
    assert query(fresh_db, baseline) == [(reads / prompt,)]
    assert snapshot(db) == snapshot(fresh_db)
