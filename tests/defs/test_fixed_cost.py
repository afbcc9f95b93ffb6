"""What a small run skips or leaves to the side process: Great Expectations when no day is built, chart images
nobody can see; GX, Altair and vl-convert never in the run's own process."""

import subprocess
import sys

import dagster as dg

from pipelines import runner
from pipelines.lib import side_process
from tests.conftest import REPO, write_jsonl

REPORT = dg.AssetKey(["publish", "cache_report"])
ONE_LINE = (REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()[0]


def report_metadata(instance: dg.DagsterInstance) -> dict:
    (record,) = instance.fetch_materializations(REPORT, limit=1).records
    return record.event_log_entry.asset_materialization.metadata


def test_gx_only_when_days_are_built_and_chart_images_only_where_they_are_kept(tmp_path, monkeypatch):
    preloads = []
    monkeypatch.setattr(side_process, "preload", lambda warm=("report", "validate"): preloads.append(warm))
    write_jsonl(tmp_path / "logs" / "one.jsonl", [ONE_LINE])
    runner.configure(tmp_path / "logs", tmp_path / "w.duckdb", None)

    # a persistent instance (what a DAGSTER_HOME gives) keeps the report's charts as images for the UI
    (tmp_path / "dagster_home").mkdir()
    kept = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    assert runner.run_pipeline(instance=kept).first_day.isoformat() == "2026-11-20"
    # staging read a new file and a day was built: its checks validate it with Great Expectations (the side
    # process asked for as staging starts, so the import overlaps it, and again before the days: one process)
    assert set(preloads) == {("report", "validate")}
    preloads.clear()
    charts = report_metadata(kept)["charts"].value
    assert charts.count("data:image/png;base64,") == 3

    # nothing new: only staging and publishing run, nothing is validated, so GX is not even loaded (the report
    # starts a side process of its own); and an ephemeral instance (the CLI without DAGSTER_HOME) forgets
    # metadata at exit, so no images are drawn
    forgetful = dg.DagsterInstance.ephemeral()
    assert runner.run_pipeline(instance=forgetful).first_day is None
    assert preloads == []
    assert [r.job_name for r in forgetful.get_runs()] == ["cachemeter_publish", "cachemeter_ingest"]
    metadata = report_metadata(forgetful)
    assert "charts" not in metadata
    assert metadata["report"].value == str(tmp_path / "w.report.html")
    assert (tmp_path / "w.report.html").stat().st_size > 100_000  # the page itself is still written


def test_a_run_validates_and_reports_in_the_side_process_and_never_imports_their_libraries(tmp_path):
    # GX's import is seconds of pure Python, Altair's half of one more; in the run's own process they held the
    # GIL against the run's work (pandas stays: DuckDB imports it to bind the first query parameter). A run
    # that builds a day validates it and renders its report in the side process the CLI starts early, and so
    # does a run that builds none (its report does not wait for GX's import). (A process of its own: this
    # test process may import them.)
    write_jsonl(tmp_path / "logs" / "one.jsonl", [ONE_LINE])
    script = f"""
import os, sys
import dagster as dg
from pipelines import runner
from pipelines.lib import side_process
runner.configure({str(tmp_path / "logs")!r}, {str(tmp_path / "w.duckdb")!r}, None)
instance = dg.DagsterInstance.ephemeral()
side_process.preload()  # as the CLI does
worker = side_process._running.process.pid
first = runner.run_pipeline(instance=instance).first_day
print(first, worker != os.getpid(), side_process._running.process.pid == worker)
(record,) = instance.get_latest_asset_check_evaluation_record(
    dg.AssetCheckKey(dg.AssetKey(["core", "usage"]), "usage_distributions")),
print(record.event.asset_check_evaluation.passed, record.event.asset_check_evaluation.metadata["rows_checked"].value)
side_process.preload()
first = runner.run_pipeline(instance=instance).first_day
print(first, side_process._running.warm, side_process._running.process.pid == worker)
print([m for m in ("great_expectations", "altair", "vl_convert") if m in sys.modules])
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:4] == ["2026-11-20 True True", "True 1", "None ('report', 'validate') True", "[]"]
    assert (tmp_path / "w.report.html").stat().st_size > 100_000


def test_a_scheduled_ingest_run_leaves_great_expectations_to_the_days_own_process(tmp_path, monkeypatch):
    # The CLI builds the days in the process that staged (its runs are in-process, tagged "cli"), so staging
    # starts the import for them. The nightly schedule's ingest run is a process of its own that builds no
    # day (the pending-days sensor launches those): importing GX there would cost seconds and memory for nothing.
    from pipelines.definitions import defs as load_defs
    from pipelines.defs.nightly.jobs import CLI_TRIGGER, TRIGGER, ingest_job

    preloads = []
    monkeypatch.setattr(side_process, "preload", lambda: preloads.append("gx"))
    defs = load_defs()
    for n, (trigger, expected) in enumerate([("nightly_schedule", []), (CLI_TRIGGER[TRIGGER], ["gx"])]):
        write_jsonl(tmp_path / f"logs{n}" / "one.jsonl", [ONE_LINE])
        runner.configure(tmp_path / f"logs{n}", tmp_path / f"w{n}.duckdb", None)
        result = defs.resolve_job_def(ingest_job.name).execute_in_process(
            instance=dg.DagsterInstance.ephemeral(), tags={TRIGGER: trigger})
        assert result.success
        assert preloads == expected, trigger
        preloads.clear()
