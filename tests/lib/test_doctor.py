"""pipelines/lib/doctor.py: the setup checks say what was found and how to fix it."""

from pathlib import Path

from pipelines.lib import doctor


def test_dagster_home_unset_after_make_demo_names_the_folder_it_recorded_runs_in(tmp_path, monkeypatch):
    # `make demo` sets DAGSTER_HOME=./.dagster_home for its own command only, and copies dagster.yaml there
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".dagster_home").mkdir()
    (tmp_path / ".dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    result = doctor._dagster_home()
    assert result.status == "warn"
    assert result.detail.endswith(f"export DAGSTER_HOME={tmp_path / '.dagster_home'}")


def test_dagster_home_unset_on_a_fresh_checkout_says_which_command_sets_it(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert doctor._dagster_home() == doctor.Result(
        "DAGSTER_HOME", "warn", "not set: runs are not recorded; `make dagster-dev` sets ./.dagster_home")


def test_dagster_home_without_its_configuration_and_with_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    assert doctor._dagster_home().status == "warn"
    (Path(tmp_path) / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    assert doctor._dagster_home() == doctor.Result("DAGSTER_HOME", "ok", str(tmp_path))


def test_every_check_runs_on_a_folder_with_no_warehouse_and_none_raises(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = doctor.run_checks(tmp_path / "none.duckdb")
    assert [r.name for r in results] == ["install", "price catalogue", "settings", "warehouse", "snapshot",
                                         "DAGSTER_HOME", "alert webhook"]
    assert results[3] == doctor.Result("warehouse", "warn",
                                       f"{tmp_path / 'none.duckdb'} does not exist yet: "
                                       f"`cachemeter run --db {tmp_path / 'none.duckdb'}` builds it")
    assert results[0].status == "ok" and results[1].status == "ok"


def test_the_snapshot_check_names_days_staged_but_not_built(tmp_path):
    # a break test: a first run killed after staging (no snapshot yet) left doctor saying only "missing"; README:
    # "when days are staged but not built yet ... they say which, and so does `cachemeter doctor`"
    (tmp_path / "w.unbuilt.json").write_text('{"unbuilt_days": ["2026-11-18", "2026-11-19"]}')
    result = doctor._snapshot(tmp_path / "w.duckdb")
    assert result.status == "warn" and result.detail == (
        f"{tmp_path / 'w.snapshot.duckdb'} missing: a successful `cachemeter run` publishes it; 2 UTC days from "
        "2026-11-18 to 2026-11-19 staged but not built yet (the last run did not finish, or one is under way): their "
        "numbers are missing or out of date here until a run builds them")


def test_the_webhook_check_fails_on_settings_no_post_can_succeed_with(monkeypatch, tmp_path):
    """A break test: doctor said "ok" to a malformed URL, an unknown format and PagerDuty without its routing key,
    each of which fails every post of every run."""
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", "htp:/bad")
    assert doctor._webhook(tmp_path / "w.duckdb") == doctor.Result(
        "alert webhook", "fail", "CACHEMETER_WEBHOOK_URL: the webhook URL is malformed (it needs http:// or https:// "
                                 "and a host; not shown, it is a secret)")
    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", "https://events.example/v2/enqueue")
    monkeypatch.setenv("CACHEMETER_WEBHOOK_FORMAT", "pagerduty")
    monkeypatch.delenv("CACHEMETER_PAGERDUTY_ROUTING_KEY", raising=False)
    assert doctor._webhook(tmp_path / "w.duckdb").status == "fail"
    assert "routing key is not set" in doctor._webhook(tmp_path / "w.duckdb").detail
    monkeypatch.setenv("CACHEMETER_PAGERDUTY_ROUTING_KEY", "R0UT1NG")
    assert doctor._webhook(tmp_path / "w.duckdb") == doctor.Result(
        "alert webhook", "ok", "CACHEMETER_WEBHOOK_URL is set (value hidden), format pagerduty")


def test_the_webhook_check_names_notices_not_delivered_yet_and_those_given_up(monkeypatch, tmp_path):
    """What the next run posts (a notice tried and still due), read from the warehouse itself (its attempts reach the
    snapshot a run late), and notices given up lately; a failed attempt of a notice no longer due is not named (a
    re-check saw doctor warn of one forever)."""
    from datetime import datetime, timedelta, timezone

    from pipelines.lib import warehouse

    monkeypatch.setenv("CACHEMETER_WEBHOOK_URL", "https://hooks.example/T/B/secret")
    db = tmp_path / "w.duckdb"
    now = datetime.now(timezone.utc)
    with warehouse.connect(db) as conn:
        conn.execute("insert into marts.cache_incidents (incident_key, rule, severity, status, opened_day, last_day, "
                     "message) values ('a', 'hit_rate_drop', 'critical', 'open', date '2026-11-20', date '2026-11-21', "
                     "'acme/support-bot: token hit rate dropped')")
        attempts = [("a", "opened", 1, now - timedelta(days=1), "failed", 500, "HTTP 500"),
                    ("a", "opened", 2, now - timedelta(hours=1), "failed", None, "timed out"),
                    ("gone", "opened", 1, now - timedelta(days=2), "failed", 503, "HTTP 503"),  # no incident: not due
                    ("b", "opened", 3, now - timedelta(days=1), "dead_letter", 422, "HTTP 422"),
                    ("c", "opened", 3, now - timedelta(days=30), "dead_letter", 422, "HTTP 422")]  # long ago
        conn.executemany("insert into marts.alert_deliveries (alert_id, notice, attempt, attempted_at, status, "
                         "http_status, error) values (?, ?, ?, ?, ?, ?, ?)", attempts)
    assert doctor._webhook(db) == doctor.Result(
        "alert webhook", "warn", "CACHEMETER_WEBHOOK_URL is set (value hidden), format generic; 1 incident notice(s) "
                                 "tried and not delivered yet (last error: timed out); the next run posts them again; "
                                 "1 notice(s) given up (dead_letter: the webhook refused the request "
                                 "webhook.max_attempts times) in the last 7 days: see marts.alert_deliveries")


def test_doctor_names_a_bad_settings_file_instead_of_failing_on_it(tmp_path, monkeypatch):
    # a break test: a settings file with 'seven' for a count stopped doctor with "an unexpected error ... please
    # report it", the one problem it is there to name
    config = tmp_path / "mine.yaml"
    config.write_text("alerts:\n  baseline_days: seven\n")
    monkeypatch.setenv("CACHEMETER_CONFIG", str(config))
    results = {r.name: r for r in doctor.run_checks(tmp_path / "none.duckdb")}
    assert results["settings"] == doctor.Result(
        "settings", "fail", "setting alerts.baseline_days / CACHEMETER_ALERT_BASELINE_DAYS: 'seven' is not a int")
    assert results["alert webhook"].status == "warn" and "settings cannot be read" in results["alert webhook"].detail
    config.write_text("alerts:\n  baseline_days: 3\n")
    assert doctor._settings() == doctor.Result("settings", "ok", f"{config}; variables CACHEMETER_<NAME> override "
                                                                 "single settings")


def test_a_damaged_warehouse_or_snapshot_fails_its_check(tmp_path):
    # a break test: a file that is no DuckDB warehouse was a "warn" (doctor exited 0), a truncated snapshot "ok"
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    db.write_bytes(b"not a database" * 100)
    assert doctor._warehouse(db).status == "fail"
    db.unlink()
    warehouse.connect(db).close()  # prepared, nothing staged
    assert doctor._warehouse(db) == doctor.Result("warehouse", "ok", f"{db}: no usage yet (a run has staged no "
                                                                     "accepted record)")
    snapshot = tmp_path / "w.snapshot.duckdb"
    snapshot.write_bytes(db.read_bytes()[:5000])
    result = doctor._snapshot(db)
    assert result.status == "fail" and "the next successful `cachemeter run` publishes it again" in result.detail


def test_a_dagster_home_that_is_no_folder_or_whose_configuration_does_not_parse_fails(tmp_path, monkeypatch):
    # a break test: DAGSTER_HOME with `storage: [unclosed` was "ok", and every run then stopped on Dagster's ParserError
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text("storage: [unclosed\n")
    result = doctor._dagster_home()
    assert result.status == "fail" and result.detail.startswith(f"{tmp_path / 'dagster.yaml'} cannot be read")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster.yaml"))
    assert doctor._dagster_home() == doctor.Result("DAGSTER_HOME", "fail", f"{tmp_path / 'dagster.yaml'} is not a folder: "
                                                                           "Dagster keeps its runs in one")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "new"))
    assert doctor._dagster_home().status == "warn" and "does not exist yet: a run creates it" in doctor._dagster_home().detail


def test_a_warehouse_of_another_release_is_a_warning_that_names_the_run_that_upgrades_it(tmp_path):
    # a break test: a warehouse built by an older commit was "ok" while report and whatif ttft refused it ("the
    # warehouse lacks what this command reads")
    import duckdb

    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    assert doctor._warehouse(db).status == "ok"
    with duckdb.connect(str(db)) as conn:  # as an older release left it: its schema files' fingerprint
        conn.execute("update stage.definitions_version set sha = 'an older release'")
    result = doctor._warehouse(db)
    assert result.status == "warn" and "written by another version of cachemeter: the next `cachemeter run` brings " \
                                       "it up to date" in result.detail
    warehouse.connect(db).close()  # what a run does first
    assert doctor._warehouse(db).status == "ok"
