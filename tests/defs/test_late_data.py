"""Late data: a file for an already-built day is noticed by the sensor; that day, and the days whose
baselines read it, are rebuilt once."""

import json
from datetime import date

import dagster as dg
import duckdb
import pytest

from tests.conftest import query, run_pipeline, write_jsonl
from tests.defs.test_pipeline import hit_rate_logs


def late_rows(n: int) -> list[dict]:
    return [{"ts": f"2026-11-03T23:{i:02d}:00Z", "provider": "openai", "model": "gpt-4.1", "tenant": "acme", "app": "bot",
             "request_id": f"late-{i}", "response": {"usage": {"prompt_tokens": 4000, "completion_tokens": 10,
                                                                "prompt_tokens_details": {"cached_tokens": 3000}}}}
            for i in range(n)]


def evaluate(sensor, instance=None):
    """Evaluate a sensor as the daemon would, with the code location's own resources."""
    from pipelines.definitions import defs

    resources = dict(defs().resources)
    context = dg.build_sensor_context(instance=instance or dg.DagsterInstance.ephemeral(),
                                      resources={k: resources[k] for k in ("duckdb", "settings")})
    result = sensor(context)
    requests = result if isinstance(result, list) else [result] if isinstance(result, dg.RunRequest) else []
    # the daemon refuses a request for a job the sensor does not target, and a request naming none from a sensor of
    # several jobs (a break test: every tick of the notices' cachemeter_publish request failed so under the daemon)
    targets = {job.name for job in sensor.jobs}
    for request in requests:
        assert (request.job_name or (next(iter(targets)) if len(targets) == 1 else None)) in targets, (request, targets)
    return requests


def test_a_late_file_is_staged_and_its_day_and_the_days_reading_it_are_rebuilt_in_one_run(tmp_path):
    from pipelines.defs.ingest.sensors import late_logs_sensor
    from pipelines.defs.nightly.sensors import pending_days_sensor
    from pipelines.definitions import defs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))  # 2026-11-01 .. 2026-11-10
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert evaluate(late_logs_sensor) == [] and evaluate(pending_days_sensor) == []  # nothing new
    before = dict(query(db, "select day, requests from marts.daily_savings"))

    write_jsonl(tmp_path / "logs" / "late" / "2026-11-03-replay.jsonl", late_rows(12))
    (request,) = evaluate(late_logs_sensor)
    assert request.job_name == "cachemeter_ingest" and request.partition_key is None

    loaded, instance = defs(), dg.DagsterInstance.ephemeral()
    assert loaded.resolve_job_def("cachemeter_ingest").execute_in_process(instance=instance).success
    # one run over the late day and the staged days whose baselines read it (up to 21 days after it by default)
    (request,) = evaluate(pending_days_sensor, instance)
    assert request.job_name == "cachemeter_daily"
    assert (request.tags["dagster/asset_partition_range_start"], request.tags["dagster/asset_partition_range_end"]) == (
        "2026-11-03", "2026-11-10")
    assert loaded.resolve_job_def("cachemeter_daily").execute_in_process(instance=instance, tags=request.tags).success
    after = dict(query(db, "select day, requests from marts.daily_savings"))
    assert after[date(2026, 11, 3)] == before[date(2026, 11, 3)] + 12
    assert {d: n for d, n in after.items() if d != date(2026, 11, 3)} == {d: n for d, n in before.items() if d != date(2026, 11, 3)}
    assert query(db, "select count(*), count(distinct request_id) from core.usage where request_id like 'late-%'") == [(12, 12)]
    assert evaluate(late_logs_sensor) == [] and evaluate(pending_days_sensor, instance) == []  # nothing left to do


def test_alert_baselines_come_from_stored_series_days_and_missing_ones_are_refilled(tmp_path):
    # a one-day rebuild reads its 7-day baseline from marts.series_days; a warehouse without those rows
    # (built before the table existed) gets them back from core.usage_priced on its next run
    from pipelines import runner
    from pipelines.defs.nightly import jobs
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
    keys = dg.AssetSelection.assets(*[dg.AssetKey(k) for k in jobs.DAILY_ASSETS])
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
    write_jsonl(tmp_path / "logs" / "late" / "2026-11-05-replay.jsonl", [usage(5, i, 4000, 0, tag="late") for i in range(120)])
    run_pipeline(tmp_path, tmp_path / "logs")

    fresh_db = built_from_scratch(tmp_path, tmp_path / "logs")
    # 11-05 now holds 60 requests at 3,000 cached tokens and 120 at 0: the 11-08 baseline (cache reads /
    # prompt tokens of 11-01 .. 11-07) falls from 0.75 to 7 x 60 x 3,000 / ((7 x 60 + 120) x 4,000) = 0.583
    reads, prompt = 7 * 60 * 3000, (7 * 60 + 120) * 4000
    assert query(fresh_db, baseline) == [(reads / prompt,)]
    assert snapshot(db) == snapshot(fresh_db)


# --- incremental runs equal a build from scratch: the incident rules' "previous traffic day" -------------

def usage(day: int, i: int, prompt: int, cached: int, tag: str = "x", write: int = 0, body: str | None = None,
          provider: str = "openai") -> dict:
    """One request on 2026-11-<day>: OpenAI Chat (acme/bot, gpt-4.1) or Anthropic Messages (acme/api)."""
    ts = f"2026-11-{day:02d}T{i % 24:02d}:{i // 24 % 60:02d}:00Z"
    if provider == "openai":
        record = {"ts": ts, "provider": "openai", "model": "gpt-4.1", "tenant": "acme", "app": "bot",
                  "request_id": f"{tag}-{day}-{i}", "response": {"usage": {
                      "prompt_tokens": prompt, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": cached}}}}
    else:
        record = {"ts": ts, "tenant": "acme", "app": "api", "request_id": f"{tag}-{day}-{i}-a", "response": {
            "id": f"msg-{tag}-{day}-{i}", "type": "message", "model": "claude-sonnet-4-5-20250929", "usage": {
                "input_tokens": prompt - cached - write, "cache_creation_input_tokens": write,
                "cache_read_input_tokens": cached, "output_tokens": 10}}}
    if body is not None:  # a logged request body: its opening is fingerprinted
        record["request"] = {"model": "gpt-4.1", "messages": [{"role": "system", "content": body},
                                                              {"role": "user", "content": "hi"}]}
    return record


def steady(day: int, rate: float, n: int = 60) -> list[dict]:
    """n requests at a token hit rate of about ``rate``, cache-read sizes varied (not pinned)."""
    return [usage(day, i, 4000, int(4000 * rate) - i % 7 * 3) for i in range(n)]


def pinned(day: int) -> list[dict]:
    """60 requests whose cache reads are all 2,000 tokens while prompts vary (the opening changes after it)."""
    return [usage(day, i, 4000 + i % 10 * 100, 2000) for i in range(60)]


def rotating(day: int) -> list[dict]:
    """60 requests with no cache reads whose logged system prompts each open differently (a rotating preamble)."""
    return [usage(day, i, 4000, 0, body=f"{i:04d} request {'x' * 3000}") for i in range(60)]


def unread_writes(day: int) -> list[dict]:
    """60 Anthropic requests that write 30,000 tokens to the cache and read none: a negative return."""
    return [usage(day, i, 31000, 0, write=30000, provider="anthropic") for i in range(60)]


def built_from_scratch(tmp_path, logs):
    """A warehouse built by one run over ``logs`` (in ``tmp_path/fresh``), to compare an incremental one with."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    return run_pipeline(fresh, logs)


def alerts(db) -> list[tuple]:
    return query(db, "select rule, day, severity from marts.cache_alerts order by day, rule")


def test_nightly_runs_after_quiet_days_judge_incidents_as_a_build_from_scratch(tmp_path):
    # Whether a day starts an incident depends on what came before it; a nightly run used to read too
    # few days back to see the previous traffic day's own baseline (rotating preamble), or compared with
    # whatever traffic day came before however far back (negative cache ROI), so it found incidents a
    # build of the same logs from scratch does not.
    from tests.conftest import snapshot

    logs = tmp_path / "logs"
    for day in range(1, 10):
        write_jsonl(logs / f"day{day:02d}.jsonl", steady(day, 0.5))
    # heavy, well-cached traffic on 11-03: inside 11-10's baseline (11-03 .. 11-09), not 11-12's
    write_jsonl(logs / "day03-heavy.jsonl", [usage(3, i, 40000, 39000 - i % 7 * 3, tag="heavy") for i in range(600)])
    write_jsonl(logs / "day10.jsonl", pinned(10))
    write_jsonl(logs / "writes-day01.jsonl", unread_writes(1))
    db = run_pipeline(tmp_path, logs)
    # 11-10 drops from 0.89 (with the heavy day) to 0.5 with pinned reads: it is the incident's first day
    assert ("rotating_preamble", date(2026, 11, 10), "critical") in alerts(db)

    # the next night: 11-11 had no traffic; 11-12 rotates on, and the writes return after 8 quiet days
    write_jsonl(logs / "day12.jsonl", rotating(12))
    write_jsonl(logs / "writes-day10.jsonl", unread_writes(10))
    run_pipeline(tmp_path, logs)

    fresh_db = built_from_scratch(tmp_path, logs)
    # 11-12 continues the incident of 11-10 (its previous traffic day, within baseline_days + 1), and the
    # negative return of 11-10 is new (the 7 days ending 11-09 had no traffic): one alert each, on 11-10
    assert [a for a in alerts(fresh_db) if a[1] >= date(2026, 11, 10)] == [
        ("negative_cache_roi", date(2026, 11, 10), "warning"), ("rotating_preamble", date(2026, 11, 10), "critical")]
    assert snapshot(db) == snapshot(fresh_db)


def test_late_data_moving_an_incident_start_rebuilds_the_drops_it_mutes(tmp_path):
    # A late file for 11-03 raises 11-10's baseline, so 11-10 becomes the incident's first day instead of
    # 11-12; the hit-rate drop of 11-18 was muted by 11-12's alert and now is not. 11-18 is 15 days after
    # the late day: beyond 2 x baseline_days, within 3 x baseline_days (dependent_days, 21).
    from tests.conftest import snapshot

    logs = tmp_path / "logs"
    for day in range(1, 10):
        write_jsonl(logs / f"day{day:02d}.jsonl", steady(day, 0.5))
    write_jsonl(logs / "day10.jsonl", pinned(10))
    write_jsonl(logs / "day12.jsonl", rotating(12))
    for day in range(13, 18):
        write_jsonl(logs / f"day{day:02d}.jsonl", steady(day, 0.8))
    write_jsonl(logs / "day18.jsonl", steady(18, 0.3))
    db = run_pipeline(tmp_path, logs)
    assert [a for a in alerts(db) if a[0] == "rotating_preamble"] == [("rotating_preamble", date(2026, 11, 12), "critical")]
    assert not [a for a in alerts(db) if a[1] == date(2026, 11, 18)]

    write_jsonl(logs / "late-day03.jsonl", [usage(3, i, 40000, 39000 - i % 7 * 3, tag="late") for i in range(600)])
    run_pipeline(tmp_path, logs)
    fresh_db = built_from_scratch(tmp_path, logs)
    assert [a for a in alerts(fresh_db) if a[0] == "rotating_preamble"] == [("rotating_preamble", date(2026, 11, 10), "critical")]
    assert ("hit_rate_drop", date(2026, 11, 18), "warning") in alerts(fresh_db)
    assert snapshot(db) == snapshot(fresh_db)


def test_days_pending_only_as_dependents_mark_no_further_days(tmp_path):
    # a run that dies after staging leaves its pending days; the next run must not widen them again
    from pipelines.lib import warehouse
    from pipelines.lib.sql import statement

    conn = warehouse.connect(tmp_path / "w.duckdb")
    conn.execute("insert into core.usage (request_id, day, source_file) "
                 "select 'r' || i, date '2026-10-01' + i::int, 'f.jsonl' from range(60) t(i)")
    # pending days as (days after 2026-10-01, dependent)
    pending = lambda: conn.execute("select day - date '2026-10-01', dependent from stage.pending_days "  # noqa: E731
                                   "order by all").fetchall()
    dependents = lambda: conn.execute(statement("core/pending_days__insert_dependents"), {"dependent_days": 21})  # noqa: E731
    conn.execute("insert into stage.pending_days by name select date '2026-10-03' as day, now() as staged_at")
    dependents()
    dependents()  # again, as a run after one that died
    assert pending() == [(2, False)] + [(n, True) for n in range(3, 24)]
    # a file then changes 2026-10-20, pending so far only as a dependent: its own dependents follow
    conn.execute("create or replace temp view staged_items as select timestamptz '2026-10-20 12:00:00+00' as ts, "
                 "null::varchar as reason, 'new.jsonl' as source_file, 1 as source_line, 0 as source_item, 'n1' as request_id")
    conn.execute("create or replace temp view batch_usage_rows as select * exclude (price_model) from core.usage where false")
    conn.execute("create or replace temp table touched_ids as select 'none' as request_id where false")
    conn.execute("create or replace temp table restaged_ids as select 'none' as request_id where false")
    conn.execute("create or replace temp view batch_files as select 'new.jsonl' as source_file, false as appended")
    conn.execute("create or replace temp view batch_predecessors as select null::varchar as old_file, null::varchar as action "
                 "where false")
    conn.execute(statement("ingest/pending_days__insert_batch"))
    dependents()
    assert pending() == ([(2, False)] + [(n, True) for n in range(3, 19)] + [(19, False), (19, True)]
                         + [(n, True) for n in range(20, 41)])


@pytest.mark.parametrize("how", ["edited in place", "a new file"])
def test_bad_lines_a_duplicate_moves_to_an_earlier_day_rebuild_that_day(tmp_path, how):
    # break tests: data_quality places a file's quarantined lines on the day of the nearest accepted line before them;
    # when that line became a duplicate (its id edited to one a file sorting first holds, or such a file arriving),
    # its two bad lines moved to the day before, which was not rebuilt: its data_quality alert was missing until
    # --all-days (the edit: since staging compares a day's rows before and after; the new file: before that too)
    def record(day: int, i: int, rid: str | None = None, app: str = "search") -> dict:
        return {"ts": f"2026-10-{day:02d}T{i // 60:02d}:{i % 60:02d}:00Z", "provider": "openai", "model": "gpt-4o-2024-11-20",
                "tenant": "acme", "app": app, "request_id": rid or f"s-{day:02d}-{i:04d}",
                "response": {"object": "chat.completion", "usage": {
                    "prompt_tokens": 6000, "completion_tokens": 200, "total_tokens": 6200,
                    "prompt_tokens_details": {"cached_tokens": 5000}}}}

    logs = tmp_path / "logs"
    lines = [json.dumps(record(7, i)) for i in range(100)] + [json.dumps(record(8, 0)), "not json", '{"broken']
    lines += [json.dumps(record(8, i)) for i in range(1, 100)]
    write_jsonl(logs / "search.jsonl", lines)
    if how == "edited in place":
        write_jsonl(logs / "a-ids.jsonl", [record(9, 1, rid="X-08-0000", app="other")])
    alerts = lambda db: query(db, "select day::varchar, message from marts.cache_alerts "  # noqa: E731
                                  "where rule = 'data_quality' order by day")
    db = run_pipeline(tmp_path / "inc", logs)
    assert [day for day, _ in alerts(db)] == ["2026-10-08"]  # the bad lines count on the day of the line before them
    if how == "edited in place":  # the same length: the same file, staged again
        lines[100] = lines[100].replace('"s-08-0000"', '"X-08-0000"')
        write_jsonl(logs / "search.jsonl", lines)
    else:
        write_jsonl(logs / "a-ids.jsonl", [record(9, 1, rid="s-08-0000", app="other")])
    run_pipeline(tmp_path / "inc", logs)
    fresh = run_pipeline(tmp_path / "fresh", logs)
    expected = [("2026-10-07", "2 of 102 records (2.0%) of 2026-10-07 were quarantined, in 1 file(s); see core.quarantine "
                               "for the reasons")]
    assert alerts(fresh) == expected and alerts(db) == expected
