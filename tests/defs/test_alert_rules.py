"""The remaining alert rules of marts.cache_alerts, each on a small dataset built to trip it (and one that must not)."""

import json
from datetime import date, timedelta
from decimal import Decimal


from tests.conftest import query, run_pipeline, write_jsonl


def openai_rows(day: date, n: int, prompt: int, cached: int = 0, app="bot", tenant="acme", key=None, model="gpt-4.1"):
    return [{"ts": f"{day}T{i % 24:02d}:{i % 60:02d}:00Z", "provider": "openai", "model": model, "tenant": tenant, "app": app,
             "request_id": f"{tenant}-{app}-{day}-{i}",
             **({"request": {"prompt_cache_key": key}} if key else {}),
             "response": {"usage": {"prompt_tokens": prompt, "completion_tokens": 5,
                                    "prompt_tokens_details": {"cached_tokens": cached}}}} for i in range(n)]


def alerts(db, rule):
    return query(db, "select day, tenant, app, observed, lost_savings_usd, message from marts.cache_alerts "
                     "where rule = $rule order by day", {"rule": rule})


def test_unpriced_usage_names_the_model_and_the_fix(tmp_path):
    write_jsonl(tmp_path / "logs" / "a.jsonl", openai_rows(date(2026, 11, 20), 3, 2000, model="house-model-x"))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    (row,) = alerts(db, "unpriced_usage")
    assert row[3] == 3.0 and "openai house-model-x: 3 requests" in row[5] and "add it with --prices" in row[5]


def test_data_quality_fires_when_a_days_files_reject_too_much(tmp_path):
    good = openai_rows(date(2026, 11, 20), 180, 2000)
    write_jsonl(tmp_path / "logs" / "a.jsonl", [json.dumps(r) for r in good] + ['{"broken'] * 20)
    write_jsonl(tmp_path / "logs" / "b.jsonl", openai_rows(date(2026, 11, 21), 150, 2000, app="clean"))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    rows = alerts(db, "data_quality")
    assert [(r[0], r[3]) for r in rows] == [(date(2026, 11, 20), 0.1)]


def test_data_quality_blames_the_day_a_bad_line_was_written_among_not_every_day_its_file_covers(tmp_path):
    # a live file covering three days; today 20 bad lines are written at its end, among today's records
    good = [json.dumps(r) for d in (18, 19, 20) for r in openai_rows(date(2026, 11, d), 150, 2000)]
    path = write_jsonl(tmp_path / "logs" / "live.jsonl", good + ['{"broken'] * 20)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    rows = alerts(db, "data_quality")
    # before, each of the three days showed the file's 20 of 470 (4.3%), so the incident opened on 11-18
    assert [(r[0], r[3]) for r in rows] == [(date(2026, 11, 20), 20 / 170)]
    assert rows[0][5].startswith("20 of 170 records (11.8%) of 2026-11-20 were quarantined, in 1 file(s)")
    # the file grows with more bad lines after a good day: the earlier days' evidence does not move
    with path.open("a") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in openai_rows(date(2026, 11, 21), 150, 2000)))
        handle.write('{"broken\n' * 30)
    run_pipeline(tmp_path, tmp_path / "logs")
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 20), 20 / 170),
                                                                  (date(2026, 11, 21), 30 / 180)]


def test_data_quality_places_bad_lines_that_open_a_file_on_its_first_day(tmp_path):
    good = openai_rows(date(2026, 11, 20), 150, 2000)
    write_jsonl(tmp_path / "logs" / "a.jsonl", ['{"broken'] * 10 + [json.dumps(r) for r in good])
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 20), 10 / 160)]


def test_data_quality_places_a_file_with_no_good_line_on_the_newest_usage_day_it_was_written_by(tmp_path):
    # a provider changes its format: the new file's every line is quarantined. It has no accepted line to place its
    # bad ones by, and raised nothing; its lines now count on the newest usage day on or before its last write
    write_day(tmp_path / "logs", 20)
    write_day(tmp_path / "logs", 21)
    written(write_jsonl(tmp_path / "logs" / "new-format.jsonl", ['{"usage_v2": {"in": 1}}'] * 40), "2026-11-21 18:00")
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 21), 40 / 190)]
    # one arriving alone on a later night is judged too (the day it counts on is rebuilt); one written before the
    # logs begin counts on their first day
    written(write_jsonl(tmp_path / "logs" / "late.jsonl", ['{"broken'] * 20), "2026-11-20 10:00")
    written(write_jsonl(tmp_path / "logs" / "early.jsonl", ['{"broken'] * 5), "2026-11-01 06:00")
    run_pipeline(tmp_path, tmp_path / "logs")
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 20), 25 / 175),
                                                                  (date(2026, 11, 21), 40 / 190)]


def test_a_file_with_no_good_line_moves_as_logs_arrive_and_leaves_no_day_counting_it_twice(tmp_path):
    # a stray file written after the logs end counts on their newest day, which moves as nights add days: the day
    # it leaves is rebuilt too (it kept counting the file: three nights, 30 lines alerted for 10 quarantined), so
    # night by night gives what one build of the same folder gives; so does a touch, or good lines appended
    logs, nightly = tmp_path / "logs", tmp_path / "nightly"
    write_day(logs, 20)
    write_day(logs, 21)
    written(write_jsonl(logs / "stray.jsonl", ['{"broken'] * 10), "2026-11-25 12:00")
    run_pipeline(nightly, logs)
    for day in (22, 23):
        write_day(logs, day)
        db = run_pipeline(nightly, logs)
        assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, day), 10 / 160)]
    written(logs / "stray.jsonl", "2026-11-22 12:00")  # touched: it moves back a day
    run_pipeline(nightly, logs)
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 22), 10 / 160)]
    assert alerts(db, "data_quality") == alerts(run_pipeline(tmp_path / "one_go", logs), "data_quality")
    with (logs / "stray.jsonl").open("a") as handle:  # good lines appended: its bad ones now open its first day
        handle.write("".join(json.dumps(r) + "\n" for r in openai_rows(date(2026, 11, 23), 5, 2000, app="late")))
    run_pipeline(nightly, logs)
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 23), 10 / 165)]
    assert alerts(db, "data_quality") == alerts(run_pipeline(tmp_path / "again", logs), "data_quality")


def test_a_warehouse_judged_without_files_of_no_good_line_is_judged_again(tmp_path):
    # a warehouse built before such files were placed has no alert for them: the first run of this release judges
    # the days their lines count on again (sql/migrations/cache_alerts__judge_unaccepted_files.sql)
    import duckdb

    write_day(tmp_path / "logs", 20)
    written(write_jsonl(tmp_path / "logs" / "new-format.jsonl", ['{"usage_v2": {"in": 1}}'] * 40), "2026-11-20 18:00")
    db = run_pipeline(tmp_path, tmp_path / "logs")
    judged = alerts(db, "data_quality")
    assert [(r[0], r[3]) for r in judged] == [(date(2026, 11, 20), 40 / 190)]
    with duckdb.connect(str(db)) as conn:  # as an older release left it
        conn.execute("delete from marts.cache_alerts where rule = 'data_quality'")
        conn.execute("delete from stage.definitions_version")
    run_pipeline(tmp_path, tmp_path / "logs")  # the logs unchanged: only the migration marks the day
    assert alerts(db, "data_quality") == judged


def write_day(logs, day: int, n: int = 150):
    """One log file of ``n`` good OpenAI records on 2026-11-<day>, last written at the end of that day."""
    return written(write_jsonl(logs / f"good-{day}.jsonl", openai_rows(date(2026, 11, day), n, 2000)), f"2026-11-{day} 23:59")


def written(path, when: str):
    """Set ``path``'s modification time to ``when`` (UTC, 'YYYY-MM-DD HH:MM'), as the day its last line was written."""
    import os
    from datetime import datetime, timezone

    stamp = datetime.fromisoformat(when).replace(tzinfo=timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def test_negative_cache_roi_is_one_open_incident_while_writes_are_never_read(tmp_path):
    # Anthropic claude-sonnet-4-5: 5m writes at $3.75 vs $3.00 input -> $0.75/MTok premium; 60 x 30,000 written/day
    records = []
    for d in range(4):
        day = date(2026, 11, 10) + timedelta(days=d)
        records += [{"ts": f"{day}T{i % 24:02d}:00:00Z", "provider": "anthropic", "model": "claude-sonnet-4-5", "tenant": "acme",
                     "app": "agent", "request_id": f"{day}-{i}",
                     "response": {"type": "message", "usage": {"input_tokens": 100, "cache_creation_input_tokens": 30_000,
                                                              "cache_read_input_tokens": 0, "output_tokens": 10}}}
                    for i in range(60)]
    write_jsonl(tmp_path / "logs" / "a.jsonl", records)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    rows = alerts(db, "negative_cache_roi")
    assert [r[0] for r in rows] == [date(2026, 11, 10) + timedelta(days=d) for d in range(4)]  # daily evidence
    assert rows[0][4] == Decimal("1.35")  # 60 x 30,000 x $0.75 / 1e6, no reads to offset it
    # one incident, still open; the newest day (11-13) is not complete yet, so it counts 3 days of waste
    assert query(db, "select rule, opened_day, last_day, status, lost_savings_usd from marts.cache_incidents") == [
        ("negative_cache_roi", date(2026, 11, 10), date(2026, 11, 12), "open", Decimal("4.05"))]


def test_below_cache_minimum_points_at_prompts_just_under_the_floor(tmp_path):
    # OpenAI caches from 1,024 prompt tokens (reference/providers.md 1.4): 1,000-token prompts never hit
    write_jsonl(tmp_path / "logs" / "a.jsonl", openai_rows(date(2026, 11, 20), 60, 1000) +
                openai_rows(date(2026, 11, 20), 60, 400, app="short"))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    rows = alerts(db, "below_cache_minimum")
    assert [(r[2], r[3]) for r in rows] == [("bot", 1.0)]
    assert "just under the 1,024-token cache minimum" in rows[0][5]
    assert rows[0][4] == Decimal("0.09")  # 60 x 1,000 tokens x ($2.00 - $0.50) / 1e6


def test_cross_tenant_prefix_respects_the_isolated_tenants_setting(tmp_path, monkeypatch):
    config = tmp_path / "cachemeter.yaml"
    config.write_text("alerts:\n  cross_tenant_prefix:\n    isolated_tenants: [bank]\n")
    monkeypatch.setenv("CACHEMETER_CONFIG", str(config))
    day = date(2026, 11, 20)
    write_jsonl(tmp_path / "logs" / "a.jsonl", openai_rows(day, 5, 2000, tenant="bank", key="shared-opening") +
                openai_rows(day, 5, 2000, tenant="shop", key="shared-opening") +
                openai_rows(day, 5, 2000, tenant="shop", app="x", key="only-shop") +
                openai_rows(day, 5, 2000, tenant="toys", app="x", key="only-shop"))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    rows = alerts(db, "cross_tenant_prefix")
    assert [(r[1], r[3]) for r in rows] == [("bank,shop", 2.0)]
    assert "although bank must be isolated" in rows[0][5]


def test_negative_cache_roi_on_a_new_day_reads_the_stored_family_days_as_a_full_build_does(tmp_path):
    # the rule and its incident's lost savings read earlier days from marts.prefix_families: a nightly run that
    # adds the fifth day to four stored ones must give the alerts and the incident a build of all five gives
    def day_records(d: int) -> list[dict]:
        day = date(2026, 11, 10) + timedelta(days=d)
        return [{"ts": f"{day}T{i % 24:02d}:00:00Z", "provider": "anthropic", "model": "claude-sonnet-4-5", "tenant": "acme",
                 "app": "agent", "request_id": f"{day}-{i}",
                 "response": {"type": "message", "usage": {"input_tokens": 100, "cache_creation_input_tokens": 30_000 + d,
                                                          "cache_read_input_tokens": 1_000 * (i % 3), "output_tokens": 10}}}
                for i in range(60)]
    nightly, full = tmp_path / "nightly", tmp_path / "full"
    for d in range(4):
        write_jsonl(nightly / "logs" / f"{d}.jsonl", day_records(d))
        write_jsonl(full / "logs" / f"{d}.jsonl", day_records(d))
    run_pipeline(nightly, nightly / "logs")
    write_jsonl(nightly / "logs" / "4.jsonl", day_records(4))
    write_jsonl(full / "logs" / "4.jsonl", day_records(4))
    incremental, whole = run_pipeline(nightly, nightly / "logs"), run_pipeline(full, full / "logs")
    incident = "select rule, opened_day, last_day, status, lost_savings_usd from marts.cache_incidents"
    assert alerts(incremental, "negative_cache_roi") == alerts(whole, "negative_cache_roi")
    assert len(alerts(whole, "negative_cache_roi")) == 5
    assert query(incremental, incident) == query(whole, incident)
    # 4 complete days: 60 x (30,000 + d) written at a $0.75/MTok premium, less 40 x 1,000 and 1,000 x 2 ... read a day
    # at $3.00 - $0.30 = $2.70/MTok saved: sum over d of (60 x (30,000 + d) x 0.75 - 60,000 x 2.70) / 1e6
    expected = sum(Decimal(60 * (30_000 + d)) * Decimal("0.75") - Decimal(60_000) * Decimal("2.70") for d in range(4)) / 10**6
    assert query(whole, incident)[0][4] == expected


def test_a_day_alerted_file_wide_by_an_older_release_is_judged_again(tmp_path):
    import duckdb

    good = [json.dumps(r) for d in (19, 20) for r in openai_rows(date(2026, 11, d), 150, 2000)]
    write_jsonl(tmp_path / "logs" / "live.jsonl", good + ['{"broken'] * 20)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    clean = alerts(db, "data_quality")
    with duckdb.connect(str(db)) as conn:  # the older rule's alert on the file's first day
        conn.execute("insert into marts.cache_alerts select * replace (date '2026-11-19' as day, date '2026-11-19' as "
                     "first_day, md5('old') as alert_id, '20 of 320 records (6.2%) in the 1 file(s) behind 2026-11-19 "
                     "were quarantined; see core.quarantine for the reasons' as message) "
                     "from marts.cache_alerts where rule = 'data_quality'")
        conn.execute("delete from stage.definitions_version")  # files from an older release
    run_pipeline(tmp_path, tmp_path / "logs")  # the logs unchanged: only the migration can mark the day pending
    assert alerts(db, "data_quality") == clean == [(date(2026, 11, 20), None, None, 20 / 170, None, clean[0][5])]


def test_data_quality_counts_a_re_sent_duplicate_on_its_own_day(tmp_path):
    # z.jsonl holds 11-20 then 11-21; a.jsonl (sorts first, so its copies are kept) re-sends 11-20's ids: z's
    # 11-20 lines are duplicates of 11-20, not quarantined records of the 11-21 lines after them
    day_20 = openai_rows(date(2026, 11, 20), 120, 2000)
    write_jsonl(tmp_path / "logs" / "z.jsonl", day_20 + openai_rows(date(2026, 11, 21), 120, 2000, app="other"))
    write_jsonl(tmp_path / "logs" / "a.jsonl", day_20)
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 11, 20), 120 / 240)]


def test_data_quality_counts_each_duplicate_copy_of_one_line_on_its_own_day(tmp_path, monkeypatch):
    """A break test: a line of two records (an OTLP batch of two spans), both duplicate copies of another file's,
    counted both its copies on one of their two days, whichever ``stage.duplicate_rows`` held first (and a run that
    wrote those rows again could move them). Each counts on its own day: 1 of 2 records on 2026-10-05 and on 10-07."""
    from tests.sql.test_appends import otlp_line, usage_line

    monkeypatch.setenv("CACHEMETER_QUALITY_MIN_RECORDS", "1")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "0.jsonl").write_text(usage_line(7, "A", 100) + usage_line(5, "B", 100))
    (logs / "x.otlp.jsonl").write_text(otlp_line(("A", 7, 100), ("B", 5, 100)) + otlp_line(("C", 6, 100)))
    db = run_pipeline(tmp_path, logs)
    assert [(r[0], r[3]) for r in alerts(db, "data_quality")] == [(date(2026, 10, 5), 0.5), (date(2026, 10, 7), 0.5)]
    assert query(db, "select count(*) from core.quarantine where duplicate_request_id is not null") == [(2,)]
