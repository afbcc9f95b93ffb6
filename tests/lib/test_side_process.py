"""The side process (lib/side_process.py): what it loads first, what waits for what, a report written there."""

import subprocess
import sys
import threading
from multiprocessing import Pipe
from pathlib import Path

import duckdb
import pytest

from pipelines.lib import side_process, warehouse


def test_a_report_is_answered_while_gx_still_loads_and_a_validation_waits_for_it(monkeypatch):
    # serve() loads the first warm-up before answering, the later ones in a thread beside the answers: a run that
    # builds no day asks only for its report and must not wait for Great Expectations' seconds of import
    gx_loading, events = threading.Event(), []
    monkeypatch.setattr(side_process, "WARM_UPS", {"report": lambda: events.append("report libraries"),
                                                   "validate": lambda: (gx_loading.wait(10), events.append("gx"))})
    monkeypatch.setattr(side_process, "REQUESTS", {"report": lambda *a: events.append("report") or "page",
                                                   "validate": lambda *a: events.append("validate") or "checked"})
    ours, theirs = Pipe()
    server = threading.Thread(target=side_process.serve, args=(theirs, ("report", "validate")), daemon=True)
    server.start()
    ours.send(("report", ()))
    assert ours.poll(10) and ours.recv() == ("ok", "page")
    assert events == ["report libraries", "report"]  # GX still loading
    ours.send(("validate", ()))
    assert not ours.poll(0.3)  # held until GX has loaded
    gx_loading.set()
    assert ours.poll(10) and ours.recv() == ("ok", "checked")
    assert events == ["report libraries", "report", "gx", "validate"]
    ours.send(("nonsense", ()))
    assert ours.recv() == ("error", "KeyError: 'nonsense'")
    ours.close()
    server.join(10)
    assert not server.is_alive()  # the socket closed: the process would end


def test_the_report_is_written_from_the_snapshot_by_the_side_process(tmp_path):
    snapshot = warehouse.snapshot_path(tmp_path / "w.duckdb")  # an empty warehouse's snapshot
    with duckdb.connect(str(snapshot)) as conn:
        warehouse.prepare(conn)
    out = tmp_path / "report.html"
    try:
        charts = side_process.running(("report",)).ask("report", str(snapshot), str(out), 30, True)
    finally:
        side_process.stop()
    assert [title for title, _ in charts] == ["Token hit rate per day (top apps)",
                                              "Cost vs no-cache cost (savings shaded)", "Lost savings by cause"]
    assert all(png.startswith(b"\x89PNG") for _, png in charts)
    assert "No data yet." in out.read_text(encoding="utf-8")


def test_gx_imports_without_running_scipy_stats_or_its_unused_integrations_and_still_validates():
    # GX's import runs `from scipy import stats` for three expectations cachemeter never uses (1.5-1.8 s of its
    # import here); deferred, the module is bound but not run until an attribute is read. Its SQL and AWS
    # integrations (SQLAlchemy, boto3: installed here for Dagster and object-store logs) are hidden while it
    # imports, so it takes its own "not installed" placeholders (also after the report's libraries, as a CLI run's
    # side process loads them first; one of them importing SQLAlchemy would turn the hiding off). A new
    # interpreter, so that nothing this test process imported before counts.
    script = """
import sys
import pyarrow as pa
from pipelines.lib import side_process
side_process._report_libraries()  # what a CLI run's side process loads before GX: none of them may load the hidden ones
side_process.defer_scipy_stats()
specs = [("ExpectColumnValuesToBeInSet", {"column": "provider", "value_set": ["openai"]}),
         ("ExpectColumnValuesToBeBetween", {"column": "tokens", "min_value": 0, "max_value": 10})]
table = pa.table({"provider": ["openai", "azure"], "tokens": [3, 11]})
sink = pa.BufferOutputStream()
with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
results = side_process.validate(specs, sink.getvalue().to_pybytes())
print([(r["success"], r["unexpected_count"], r["examples"]) for r in results])
print(sorted(name for name in side_process.GX_UNUSED_INTEGRATIONS if name in sys.modules))
from great_expectations.compatibility import sqlalchemy as gx_sqlalchemy
print(type(gx_sqlalchemy.sqlalchemy).__name__)
import sqlalchemy  # hidden only while GX imported
print(sqlalchemy.__name__)
print("scipy.stats._stats_py" in sys.modules)
from scipy import stats
print(stats.norm.cdf(0.0), "scipy.stats._stats_py" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(side_process.__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[(False, 1, ['azure']), (False, 1, ['11'])]", "[]", "NotImported",
                                        "sqlalchemy", "False", "0.5 True"]


def test_a_hidden_package_is_not_installed_inside_the_block_only_and_never_half_hidden(tmp_path, monkeypatch):
    (tmp_path / "cm_probe_pkg").mkdir()
    (tmp_path / "cm_probe_pkg" / "__init__.py").write_text("VALUE = 7\n")
    (tmp_path / "cm_probe_pkg" / "part.py").write_text("PART = 8\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("cm_probe_pkg.part", "cm_probe_pkg"):  # gone again after the test, whatever its outcome
        monkeypatch.setitem(sys.modules, name, None)  # recorded as absent before: removed at teardown
        monkeypatch.delitem(sys.modules, name)
    with side_process.hidden(frozenset({"cm_probe_pkg"})):
        with pytest.raises(ModuleNotFoundError, match="cm_probe_pkg"):
            import cm_probe_pkg  # noqa: F401
    import cm_probe_pkg
    assert cm_probe_pkg.VALUE == 7
    # imported already: hiding its submodule would leave the package half set up, so nothing is hidden
    with side_process.hidden(frozenset({"cm_probe_pkg"})):
        from cm_probe_pkg import part
    assert part.PART == 8
