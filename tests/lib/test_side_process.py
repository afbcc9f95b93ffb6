"""The side process (lib/side_process.py): what it loads first, what waits for what, a report written there."""

import threading
from multiprocessing import Pipe

import duckdb

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
