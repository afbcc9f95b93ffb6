"""marts.whatif_routing replays only the days whose usage changed (lib/whatif/routing_mart.py)."""

import sys
from datetime import date

import duckdb

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.whatif import routing_columns, routing_inputs, routing_mart
from tests.conftest import REPO

START, END = date(2026, 10, 1), date(2026, 10, 5)


def mart(conn) -> list[tuple]:
    return conn.execute("select * from marts.whatif_routing order by all").fetchall()


def full_recompute(conn) -> list[tuple]:
    """The mart as a replay of every day from scratch, request by request (routing.Replayer), gives it."""
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
    real_batches = routing_inputs.usage_request_batches  # a replayed day's requests are read by it alone
    monkeypatch.setattr(routing_inputs, "usage_request_batches",
                        lambda conn, day, after, rows: replayed.append(day) or real_batches(conn, day, after, rows))

    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=4, kept_days=0, removed_days=0)
    first = mart(conn)
    assert len(first) == 4 * 2 * 3 and first == full_recompute(conn)

    # the same window again (late data or repricing marks days pending): nothing is replayed, nothing changes
    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=0, kept_days=4, removed_days=0)
    assert mart(conn) == first and len(replayed) == 4

    # one request of the second day changes: that day alone is replayed, and the mart is a full recompute's
    conn.execute("update core.usage set cache_read_tokens = 0, prompt_tokens = prompt_tokens + 7 "
                 "where request_id = (select min(request_id) from core.usage where day = '2026-10-02')")
    assert routing_mart.refresh(conn, START, END) == routing_mart.Refreshed(replayed_days=1, kept_days=3, removed_days=0)
    assert replayed[4:] == [date(2026, 10, 2)]
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


def test_a_day_is_replayed_in_bounded_chunks_with_the_rows_of_a_whole_replay(tmp_path, monkeypatch):
    """Memory flat in the day's size: the mart never holds more than CHUNK_ROWS requests of a day at once,
    reads a day in ceil(rows / SLICE_ROWS) slices of request time, and its rows are those of replaying each
    day's requests whole (chunk and slice edges split the hot family too)."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(300, 2, tmp_path / "logs", seed=5)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    ingest.stage_logs(conn, tmp_path / "logs")
    monkeypatch.setattr(routing_inputs, "CHUNK_ROWS", 7)
    monkeypatch.setattr(routing_inputs, "SLICE_ROWS", 40)
    monkeypatch.setattr(routing_inputs, "usage_requests", None)  # a whole day at once is not read
    reads = []
    real_statement = routing_inputs.statement
    monkeypatch.setattr(routing_inputs, "statement", lambda name: reads.append(name) or real_statement(name))
    fed = []
    real_feed = routing_columns.ColumnReplay.feed
    monkeypatch.setattr(routing_columns.ColumnReplay, "feed",
                        lambda self, codes, prompt, cacheable, spans=None:
                        fed.append(len(codes)) or real_feed(self, codes, prompt, cacheable, spans))
    assert routing_mart.refresh(conn, START, END).replayed_days == 2
    assert max(fed) == 7 and sum(fed) == 6 * conn.execute("select count(*) from core.usage where prompt_tokens > 0").fetchall()[0][0]
    per_day = [n for (n,) in conn.execute("select count(*) from core.usage where prompt_tokens > 0 group by day").fetchall()]
    assert reads.count("whatif/routing__usage_requests") == sum(-(-n // 40) for n in per_day) > len(per_day)
    monkeypatch.undo()
    assert mart(conn) == full_recompute(conn) and len(mart(conn)) == 2 * 2 * 3
