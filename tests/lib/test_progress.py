"""The progress hook (lib/progress.py) and what a run reports through it."""

from pipelines.lib import progress
from tests.conftest import REPO, query, run_pipeline


def test_reports_reach_the_listener_and_nothing_breaks_without_one():
    progress.set_listener(None)
    progress.report("ingest", 1, 2, "a.jsonl")  # no listener: nowhere, no error
    progress.doing("pricing")
    heard = []
    progress.set_listener(lambda *report: heard.append(report))
    try:
        progress.report("ingest", 1, 2, "a.jsonl")
        progress.doing("publishing to core.usage")
        progress.warn("a.jsonl: changed while it was read")
    finally:
        progress.set_listener(None)
    assert heard == [("ingest", 1, 2, "a.jsonl"), ("doing", 0, 0, "publishing to core.usage"),
                     ("warning", 0, 0, "a.jsonl: changed while it was read")]


def test_a_run_says_what_it_is_doing_in_order_staging_then_each_table_of_the_day_and_its_checks(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "messages.jsonl").write_bytes((REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_bytes())
    heard = []
    progress.set_listener(lambda step, done, total, label: heard.append(label) if step == "doing" else None)
    try:
        db = run_pipeline(tmp_path, logs)
    finally:
        progress.set_listener(None)
    assert query(db, "select count(*) from core.usage")[0][0] > 0
    # staging: the lane, then the publish (the fixture's lines all take the lane: nothing is read again)
    assert heard[:2] == ["normalising records", "publishing to core.usage"]
    assert "checking rows_in_equal_accepted_plus_quarantined" in heard
    # each daily table as its step starts, pricing before the marts that read the prices, then its checks
    built = [label for label in heard if label.startswith("building ")]
    assert {"building core.usage_costs", "building marts.daily_savings", "building marts.cache_alerts"} <= set(built)
    assert built.index("building core.usage_costs") < built.index("building marts.daily_savings")
    assert heard.index("checking priced_rows_equal_usage_rows") > heard.index("building core.usage_costs")
