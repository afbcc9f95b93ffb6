"""What a small run skips: Great Expectations when no day is built, chart images nobody can see."""

import dagster as dg

from pipelines import runner
from pipelines.lib import expectations
from tests.conftest import REPO, write_jsonl

REPORT = dg.AssetKey(["publish", "cache_report"])
ONE_LINE = (REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()[0]


def report_metadata(instance: dg.DagsterInstance) -> dict:
    (record,) = instance.fetch_materializations(REPORT, limit=1).records
    return record.event_log_entry.asset_materialization.metadata


def test_gx_only_when_days_are_built_and_chart_images_only_where_they_are_kept(tmp_path, monkeypatch):
    preloads = []
    monkeypatch.setattr(expectations, "preload", lambda: preloads.append("gx"))
    write_jsonl(tmp_path / "logs" / "one.jsonl", [ONE_LINE])
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)

    # a persistent instance (what a DAGSTER_HOME gives) keeps the report's charts as images for the UI
    (tmp_path / "dagster_home").mkdir()
    kept = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    assert runner.run_pipeline(instance=kept).first_day.isoformat() == "2026-11-20"
    # staging read a new file and a day was built: its checks validate it with Great Expectations (asked for
    # as staging starts, so the import overlaps it, and again before the days: once a process in truth)
    assert set(preloads) == {"gx"}
    preloads.clear()
    charts = report_metadata(kept)["charts"].value
    assert charts.count("data:image/png;base64,") == 3

    # nothing new: only staging and publishing run, nothing is validated, so GX is not even loaded; and an
    # ephemeral instance (the CLI without DAGSTER_HOME) forgets metadata at exit, so no images are drawn
    forgetful = dg.DagsterInstance.ephemeral()
    assert runner.run_pipeline(instance=forgetful).first_day is None
    assert preloads == []
    assert [r.job_name for r in forgetful.get_runs()] == ["cachemeter_publish", "cachemeter_ingest"]
    metadata = report_metadata(forgetful)
    assert "charts" not in metadata
    assert metadata["report"].value == str(tmp_path / "report.html")
    assert (tmp_path / "report.html").stat().st_size > 100_000  # the page itself is still written


def test_the_checks_import_great_expectations_only_after_the_background_preload_has_finished(monkeypatch):
    # Importing the package from two threads at once fails half-way on its circular imports (seen in the
    # suite: a day failed with "partially initialized module 'sqlalchemy.orm.exc'"), so the expectation
    # objects an asset builds (checks.gx) wait for the preload thread, and so does validation.
    import threading

    import great_expectations  # noqa: F401  already imported, so only the wait can hold checks.gx()

    from pipelines.defs import checks

    started, release, events = threading.Event(), threading.Event(), []

    def slow_preload():  # the first call (the preload thread's) takes until released; later ones are the cache's
        if started.is_set():
            return "batches"
        started.set()
        release.wait(10)
        events.append("preload done")
        return "batches"

    slow_preload.cache_clear = lambda: None
    monkeypatch.setattr(expectations, "_batch_definition", slow_preload)
    monkeypatch.setattr(expectations, "_preload", None)
    expectations.preload()
    assert started.wait(10)
    caller = threading.Thread(target=lambda: events.append(("gx", checks.gx().__name__)))
    caller.start()
    caller.join(0.5)
    assert caller.is_alive() and events == []  # held while the preload runs
    release.set()
    caller.join(10)
    assert events == ["preload done", ("gx", "great_expectations.expectations")]


def test_a_scheduled_ingest_run_leaves_great_expectations_to_the_days_own_process(tmp_path, monkeypatch):
    # The CLI builds the days in the process that staged (its runs are in-process, tagged "cli"), so staging
    # starts the import for them. The nightly schedule's ingest run is a process of its own that builds no
    # day (the pending-days sensor launches those): importing GX there would cost seconds and memory for nothing.
    from pipelines.definitions import defs as load_defs
    from pipelines.defs.nightly.jobs import CLI_TRIGGER, TRIGGER, ingest_job

    preloads = []
    monkeypatch.setattr(expectations, "preload", lambda: preloads.append("gx"))
    defs = load_defs()
    for n, (trigger, expected) in enumerate([("nightly_schedule", []), (CLI_TRIGGER[TRIGGER], ["gx"])]):
        write_jsonl(tmp_path / f"logs{n}" / "one.jsonl", [ONE_LINE])
        runner.configure(tmp_path / f"logs{n}", tmp_path / f"w{n}.duckdb", None)
        result = defs.resolve_job_def(ingest_job.name).execute_in_process(
            instance=dg.DagsterInstance.ephemeral(), tags={TRIGGER: trigger})
        assert result.success
        assert preloads == expected, trigger
        preloads.clear()
