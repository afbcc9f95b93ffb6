"""Every setting is declared once (pipelines/lib/options.py); the files and tables made from it cannot drift."""

import re

import pytest

from pipelines.defs.settings import CachemeterSettings
from pipelines.lib import alert_rules, options
from tests.conftest import REPO


def test_bundled_config_file_is_generated_from_the_declaration():
    assert (REPO / "cachemeter.yaml").read_text() == options.render_config(), \
        "regenerate with: python -m pipelines.lib.options"


def test_readme_settings_and_rules_tables_are_generated_from_the_declarations():
    readme = (REPO / "README.md").read_text()
    assert options.readme_with_tables(readme) == readme, "regenerate with: python -m pipelines.lib.options"
    # the thresholds the rules table shows are the declared defaults
    assert "0.20+ below its trailing 7-day baseline (critical from 0.40), 50+ requests" in readme
    assert "by more than 1% and $0.01 on a day (critical from 10%)" in readme


def test_the_bundled_file_reads_back_as_the_declared_defaults():
    from pipelines.defs.settings import load_config

    config = load_config(REPO / "cachemeter.yaml")
    assert options.values(config, environ={}) == {o.name: o.default for o in options.FILE_OPTIONS}


def test_every_variable_the_code_reads_is_declared():
    read = set()
    for path in [*(REPO / "pipelines").rglob("*.py"), REPO / "tests" / "conftest.py", REPO / "Makefile"]:
        read |= set(re.findall(r"CACHEMETER_[A-Z][A-Z_]*[A-Z]", path.read_text()))
    # CACHEMETER_LOGS_DIR is the compose file's host folder (deploy/), not read by the code
    assert read - {o.env for o in options.OPTIONS} == set()


def test_resource_fields_and_sql_parameters_are_the_declared_names():
    settings = CachemeterSettings()
    assert {o.name for o in options.FILE_OPTIONS} <= set(CachemeterSettings.model_fields)
    assert settings.alert_min_drop == 0.20 and settings.webhook_window_days == 3  # cachemeter.yaml defaults
    params = settings.sql_params()
    assert params["alert_min_drop"] == 0.20 and params["isolated_tenants"] == []
    # every $parameter of the rule statements (and the marts that take a baseline) is a declared option
    # or a window bound: nothing is named in SQL that the declaration does not hold
    used = set()
    rule_files = [*(REPO / "sql" / "alerts" / f"cache_alerts__insert_{rule}.sql" for rule in alert_rules.NAMES),
                  REPO / "sql" / "marts" / "series_days__insert_window.sql",
                  REPO / "sql" / "marts" / "prefix_families__insert_window.sql"]
    for path in rule_files:
        used |= set(re.findall(r"\$([a-z_]+)", re.sub(r"--[^\n]*", "", path.read_text())))
    assert {"alert_min_drop", "alert_baseline_days", "mismatch_share", "isolated_tenants"} <= used
    # days, first, last: the days series_days aggregates (series_days__days.sql) and their bounds, which the asset finds
    assert used - set(params) - {"start", "end", "days", "first", "last"} == set()


def test_a_variable_overrides_the_file_and_a_bad_value_names_the_setting(monkeypatch):
    config = {"alerts": {"hit_rate_drop": {"min_drop": 0.3}, "cross_tenant_prefix": {"isolated_tenants": ["acme"]}}}
    got = options.values(config, environ={"CACHEMETER_ALERT_CRITICAL_DROP": "0.5", "CACHEMETER_WEBHOOK_MAX_ATTEMPTS": "9"})
    assert (got["alert_min_drop"], got["alert_critical_drop"], got["webhook_max_attempts"]) == (0.3, 0.5, 9)
    assert got["isolated_tenants"] == ["acme"]
    assert options.values({}, environ={"CACHEMETER_ISOLATED_TENANTS": "a, b"})["isolated_tenants"] == ["a", "b"]
    with pytest.raises(ValueError, match=r"alerts.min_requests / CACHEMETER_ALERT_MIN_REQUESTS: 'many' is not a int"):
        options.values({}, environ={"CACHEMETER_ALERT_MIN_REQUESTS": "many"})
    with pytest.raises(ValueError, match=r"alerts.data_quality.min_records"):
        options.values({"alerts": {"data_quality": {"min_records": 2.5}}}, environ={})
    # a blank variable (CACHEMETER_X=" " left by a template) is unset: the file's value stands, not "' ' is not a float"
    assert options.values(config, environ={"CACHEMETER_ALERT_MIN_DROP": "  "})["alert_min_drop"] == 0.3
    environ = {"CACHEMETER_DB": " ", "CACHEMETER_REPORT_DAYS": "", "CACHEMETER_LOGS": "logs", "OTHER": " "}
    assert options.unset_blank_variables(environ) == ["CACHEMETER_DB", "CACHEMETER_REPORT_DAYS"]
    assert environ == {"CACHEMETER_LOGS": "logs", "OTHER": " "}
    monkeypatch.setenv("CACHEMETER_INCIDENT_RECOVERY_DAYS", "4")
    assert CachemeterSettings.from_env().incident_thresholds().recovery_days == 4


def test_a_setting_out_of_its_units_range_is_refused_naming_it():
    # a break test: alerts.baseline_days -3 was accepted and failed deep in the run ("Out of Range Error: Invalid
    # RANGE PRECEDING value"); a min_drop of 5 on a hit rate (a share, 0..1) was accepted and never fired
    with pytest.raises(ValueError, match=r"alerts.baseline_days / CACHEMETER_ALERT_BASELINE_DAYS: -3 is out of "
                                         r"range \(days: from 1 to 36,500\)"):
        options.values({"alerts": {"baseline_days": -3}}, environ={})
    with pytest.raises(ValueError, match=r"alerts.hit_rate_drop.min_drop .*: 5 is out of range \(share: from 0 to 1\)"):
        options.values({"alerts": {"hit_rate_drop": {"min_drop": 5}}}, environ={})
    with pytest.raises(ValueError, match=r"CACHEMETER_WEBHOOK_TIMEOUT_SECONDS: '-1' is out of range"):
        options.values({}, environ={"CACHEMETER_WEBHOOK_TIMEOUT_SECONDS": "-1"})
    with pytest.raises(ValueError, match=r"CACHEMETER_USAGE_API_TIMEOUT_SECONDS: '-1' is out of range"):
        options.env_value("usage_api_timeout_seconds", {"CACHEMETER_USAGE_API_TIMEOUT_SECONDS": "-1"})
    with pytest.raises(ValueError, match=r"'nan' is out of range"):
        options.values({}, environ={"CACHEMETER_ALERT_MIN_DROP": "nan"})
    # a break test: a webhook timeout of 0 failed every post on "BlockingIOError" (a non-blocking socket), a time
    # budget of 0 posted nothing and the runs stayed green
    for name in ("webhook_timeout_seconds", "webhook_time_budget_seconds", "usage_api_timeout_seconds"):
        variable = f"CACHEMETER_{name.upper()}"
        with pytest.raises(ValueError, match=rf"{variable}: '0' is out of range \(seconds: from 0.1 to 1,000,000,000\)"):
            options.env_value(name, {variable: "0"})
    # break tests: no upper end, so huge values were taken and failed part-way through a run, naming no setting:
    # report_days 1,000,000 ("date value out of range"), alert_baseline_days 3e9 (a cast to INT32), complete_lag_hours
    # 1e20 ("Python int too large to convert to C int"), webhook_timeout_seconds 1e20 ("timestamp out of range")
    for variable, value, said in (("CACHEMETER_REPORT_DAYS", "1000000", r"days: from 1 to 36,500"),
                                  ("CACHEMETER_ALERT_BASELINE_DAYS", "3000000000", r"days: from 1 to 36,500"),
                                  ("CACHEMETER_ROI_WINDOW_DAYS", "99999999999999999999", r"days: from 1 to 36,500"),
                                  ("CACHEMETER_COMPLETE_LAG_HOURS", "99999999999999999999", r"hours: from 0 to 876,000"),
                                  ("CACHEMETER_WEBHOOK_TIMEOUT_SECONDS", "99999999999999999999", r"seconds: from 0.1 to 1,000,000,000"),
                                  ("CACHEMETER_ALERT_MIN_REQUESTS", "9223372036854775807", r"requests: from 0 to 2,147,483,647"),
                                  ("CACHEMETER_MISMATCH_SHARE", "inf", r"share: from 0 to 1,000")):
        with pytest.raises(ValueError, match=rf"{variable}: '{value}' is out of range \({said}\)"):
            options.check_environment({variable: value})  # (the variables of environment-only settings)
            options.values({}, environ={variable: value})
    assert options.values({}, environ={"CACHEMETER_MISMATCH_SHARE": "9"})["mismatch_share"] == 9  # a bill 10x the list
    # a bad usage-API schedule or bucket width stopped every run (the schedule's definition) with "an unexpected error"
    with pytest.raises(ValueError, match=r"CACHEMETER_USAGE_API_CRON: '0 2 \* \*' is not a value in cron"):
        options.check_environment({"CACHEMETER_USAGE_API_CRON": "0 2 * *"})
    with pytest.raises(ValueError, match=r"CACHEMETER_USAGE_API_BUCKET_WIDTH: '2h' is not one of 1d, 1h"):
        options.check_environment({"CACHEMETER_USAGE_API_BUCKET_WIDTH": "2h"})
    with pytest.raises(ValueError, match=r"webhook.format / CACHEMETER_WEBHOOK_FORMAT: 'telegram' is not one of "
                                         r"generic, slack, pagerduty, alertmanager"):
        options.values({"webhook": {"format": "telegram"}}, environ={})
    # a share of a reported amount may pass 1 (a cost off by more than 100%); the edges of a range are in it
    taken = options.values({"alerts": {"cost_mismatch": {"share": 2.5}, "hit_rate_drop": {"min_drop": 1},
                                       "unpriced_usage": {"min_requests": 0}}}, environ={})
    assert (taken["mismatch_share"], taken["alert_min_drop"], taken["unpriced_min_requests"]) == (2.5, 1, 0)


def test_a_settings_file_with_a_key_that_names_no_setting_is_refused(tmp_path, monkeypatch):
    from pipelines.defs.settings import load_config

    # a break test: `alertz:` and `webhook: {formatt: slack}` were ignored, and the defaults used without a word
    path = tmp_path / "mine.yaml"
    path.write_text("alertz:\n  baseline_days: 3\nwebhook:\n  formatt: slack\n  url_env: HOOK\nalerts:\n")
    with pytest.raises(ValueError, match=r"mine.yaml: unknown settings alertz \(alerts\?\), webhook.formatt "
                                         r"\(webhook.format\?\)"):
        load_config(path)
    path.write_text("alerts: 5\n")
    with pytest.raises(ValueError, match=r"an unknown setting alerts \(a section: its settings go under it\)"):
        load_config(path)
    # a named file that is not there: the defaults were used without a word
    monkeypatch.setenv("CACHEMETER_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ValueError, match=r"CACHEMETER_CONFIG names .*nope.yaml, which does not exist"):
        CachemeterSettings.from_env()
    monkeypatch.delenv("CACHEMETER_CONFIG")
    assert CachemeterSettings.from_env().alert_baseline_days == 7  # unset: the bundled defaults


def test_a_memory_limit_is_a_size_and_every_set_variable_is_checked_up_front():
    # a break test: --memory-limit -5GB ran; CACHEMETER_MEMORY_LIMIT=abc said DuckDB's "Memory must have a number",
    # naming no setting
    memory = options.BY_NAME["memory_limit"]
    assert [memory.parse(t) for t in ("1GB", "512 MB", "2GiB", "1.5gb")] == ["1GB", "512 MB", "2GiB", "1.5gb"]
    # a number without its unit, and a limit of nothing: DuckDB refuses the one ("Unknown unit for memory: ''") and
    # cannot work under the other; both passed and stopped every run deep inside (a break test)
    for bad in ("-5GB", "abc", "5 apples", "", "1000000", "0", "0GB"):
        with pytest.raises(ValueError, match=r"CACHEMETER_MEMORY_LIMIT: .* is not a value in bytes \(DuckDB size\)"):
            memory.parse(bad)
    with pytest.raises(ValueError, match=r"CACHEMETER_NIGHTLY_DEADLINE_HOUR: '25' is out of range \(hour \(UTC\): "
                                         r"from 0 to 23\)"):
        options.check_environment({"CACHEMETER_NIGHTLY_DEADLINE_HOUR": "25"})
    options.check_environment({"CACHEMETER_MEMORY_LIMIT": "2GB", "CACHEMETER_SQL_TIMEOUT": "0"})  # good ones pass
