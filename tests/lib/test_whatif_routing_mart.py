"""marts.whatif_routing replays only the days whose usage changed (lib/whatif/routing_mart.py)."""

import sys
from datetime import date

import duckdb

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.whatif import routing_inputs, routing_mart
from tests.conftest import REPO

START, END = date(2026, 10, 1), date(2026, 10, 5)


def mart(conn) -> list[tuple]:
    return conn.execute("select * from marts.whatif_routing order by all").fetchall()


def full_recompute(conn) -> list[tuple]:
    """The mart as a replay of every day from scratch gives it."""
    scratch = duckdb.connect(":memory:")
    scratch.register("rows_in", routing_mart.routing_rows(routing_inputs.usage_requests(conn)))
    return scratch.execute("select * from rows_in order by all").fetchall()


def test_a_second_refresh_of_unchanged_days_replays_none_and_a_changed_day_alone_is_replayed(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(400, 4, tmp_path / "logs", seed=3)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    ingest.stage_logs(conn, tmp_path / "logs")
    replayed = []
    real_rows = routing_mart.routing_rows
    monkeypatch.setattr(routing_mart, "routing_rows", lambda by_day: replayed.append(sorted(by_day)) or real_rows(by_day))

    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=4, kept_days=0, removed_days=0)
    first = mart(conn)
    assert len(first) == 4 * 2 * 3 and first == full_recompute(conn)

    # the same window again (late data or repricing marks days pending): nothing is replayed, nothing changes
    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=0, kept_days=4, removed_days=0)
    assert mart(conn) == first and replayed[-1] == []

    # one request of the second day changes: that day alone is replayed, and the mart is a full recompute's
    conn.execute("update core.usage set cache_read_tokens = 0, prompt_tokens = prompt_tokens + 7 "
                 "where request_id = (select min(request_id) from core.usage where day = '2026-10-02')")
    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=1, kept_days=3, removed_days=0)
    assert replayed[-1] == [date(2026, 10, 2)]
    assert mart(conn) == full_recompute(conn) != first

    # a day left without usage rows loses its mart rows
    conn.execute("delete from core.usage where day = '2026-10-04'")
    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=0, kept_days=3, removed_days=1)
    assert mart(conn) == full_recompute(conn) and {r[0] for r in mart(conn)} == {date(2026, 10, d) for d in (1, 2, 3)}


def test_other_mart_settings_replay_every_day(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(60, 2, tmp_path / "logs", seed=4)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    ingest.stage_logs(conn, tmp_path / "logs")
    routing_mart.refresh(conn, START, END)
    monkeypatch.setattr(routing_mart, "SETTINGS", routing_mart.SETTINGS + ";another")
    assert routing_mart.refresh(conn, START, END).replayed_days == 2
