"""Coding-agent session transcripts: streamed snapshots are collapsed to the fullest, never dropped as duplicates.

Claude Code writes one transcript line per content block of a streamed response, every line with the
response's ``message.id`` and ``requestId`` and a growing ``output_tokens`` (ccusage#901, #938); Codex CLI
writes cumulative ``token_count`` events, sometimes twice (fixtures/formats/codex/SOURCE.md). The final
snapshot is the bill: earlier ones are quarantined as superseded (visible in core.quarantine and counted in
stage.files.rows_superseded), a later, fuller one is never the copy dropped, and a file that grows or a copy in
another file does not change that. The exact classes and costs of the fixtures are in
fixtures/formats/expected.yaml (tests/sql/test_formats.py).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.ingest import containers, stage as ingest
from pipelines.lib import warehouse
from pipelines.lib.sql import statement
from tests.conftest import query, run_pipeline

LATEST = datetime(2030, 1, 1, tzinfo=timezone.utc)
SESSION = "5f0c2d7e-8a41-4b6e-9c3d-1e2f3a4b5c6d"


def snapshot(line_no: int, message_id: str, output: int, ts: str = "2026-11-24T09:14:05.000Z") -> str:
    """One Claude Code assistant line of ``message_id`` with ``output`` output tokens so far (sonnet 4.5)."""
    return json.dumps({
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop", "sessionId": SESSION,
        "version": "2.0.37", "type": "assistant", "uuid": f"00000000-0000-4000-8000-{line_no:012d}", "timestamp": ts,
        "requestId": "req_" + message_id, "message": {
            "model": "claude-sonnet-4-5-20250929", "id": message_id, "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "(placeholder)"}], "stop_reason": None,
            "usage": {"input_tokens": 4, "cache_creation_input_tokens": 2319, "cache_read_input_tokens": 16870,
                      "cache_creation": {"ephemeral_5m_input_tokens": 2319, "ephemeral_1h_input_tokens": 0},
                      "output_tokens": output, "service_tier": "standard"}}}) + "\n"


USER_LINE = json.dumps({"parentUuid": None, "sessionId": SESSION, "type": "user", "uuid": "00000000-0000-4000-8000-00000000ffff",
                        "timestamp": "2026-11-24T09:14:00.000Z", "message": {"role": "user", "content": "(placeholder)"}}) + "\n"


@pytest.fixture
def conn(tmp_path):
    with warehouse.connect(tmp_path / "w.duckdb") as connection:
        yield connection


def usage(conn) -> list[tuple]:
    return conn.execute("select source_file, source_line, request_id, output_tokens from core.usage order by 1, 2").fetchall()


def files(conn) -> list[tuple]:
    return conn.execute("select source_file, rows_in, rows_accepted, rows_quarantined, rows_superseded "
                        "from stage.files order by 1").fetchall()


def test_a_grown_transcript_bills_its_new_final_snapshot_and_supersedes_the_one_billed_before(tmp_path, conn):
    path = tmp_path / "logs" / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(USER_LINE + snapshot(2, "msg_A", 9))  # Claude Code mid-stream: one partial snapshot so far
    ingest.stage_logs(conn, tmp_path / "logs", latest=LATEST)
    name = f"projects/-home-dev-shop/{SESSION}.jsonl"
    assert usage(conn) == [(name, 2, "msg_A", 9)]
    with path.open("a") as f:  # the response finishes: two more lines, the last with the final count
        f.write(snapshot(3, "msg_A", 9) + snapshot(4, "msg_A", 159))
    ingest.stage_logs(conn, tmp_path / "logs", latest=LATEST)
    assert usage(conn) == [(name, 4, "msg_A", 159)]
    assert conn.execute("select source_line, reason from core.quarantine order by 1").fetchall() == [
        (2, "superseded streaming snapshot of request msg_A: line 4 of this file is its final snapshot (the bill)"),
        (3, "superseded streaming snapshot of request msg_A: line 4 of this file is its final snapshot (the bill)")]
    # the user line is not a record; rows_in = accepted + quarantined, of which 2 superseded snapshots
    assert files(conn) == [(name, 3, 1, 2, 2)]
    assert conn.execute(statement("checks/files__rows_do_not_add_up")).fetchall() == [(0, "[]")]


def test_a_fuller_snapshot_in_another_file_wins_over_the_first_file_s_partial_copy(tmp_path, conn):
    # a.jsonl sorts first but holds only a partial snapshot (a session cut mid-stream); b.jsonl (the resumed
    # session) holds the same response complete: the duplicate rule must keep b's, not the first file's
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(snapshot(1, "msg_X", 9))
    (logs / "b.jsonl").write_text(snapshot(1, "msg_X", 159))
    ingest.stage_logs(conn, logs, latest=LATEST)
    assert usage(conn) == [("b.jsonl", 1, "msg_X", 159)]
    assert conn.execute("select source_file, duplicate_request_id from core.quarantine").fetchall() == [("a.jsonl", "msg_X")]
    # an incremental warehouse equals a fresh build: b arriving after a gives the same
    with warehouse.connect(tmp_path / "fresh.duckdb") as fresh:
        (tmp_path / "later").mkdir()
        (tmp_path / "later" / "a.jsonl").write_text(snapshot(1, "msg_X", 9))
        ingest.stage_logs(fresh, tmp_path / "later", latest=LATEST)
        (tmp_path / "later" / "b.jsonl").write_text(snapshot(1, "msg_X", 159))
        ingest.stage_logs(fresh, tmp_path / "later", latest=LATEST)
        assert usage(fresh) == [("b.jsonl", 1, "msg_X", 159)]


def rollout_chunk(*records: dict) -> pa.Table:
    return pa.table({"source_line": pa.array(range(1, len(records) + 1), pa.int64()),
                     "line": [json.dumps(r) for r in records]})


def token_count(total: dict | None, last: dict | None = None) -> dict:
    info = None if total is None else {"total_token_usage": total, **({"last_token_usage": last} if last else {})}
    return {"timestamp": "2026-11-24T11:00:20.000Z", "type": "event_msg", "payload": {"type": "token_count", "info": info}}


def tokens(i: int, c: int, o: int, r: int) -> dict:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": r, "total_tokens": i + o}


def turns(table: pa.Table) -> list[dict]:
    return [json.loads(t)["codex_token_count"] for t in table["line"].to_pylist()]


def test_codex_cumulative_totals_become_per_turn_usage_across_chunks():
    # ccusage's Codex parser: last_token_usage, else total_token_usage minus the previous event's totals; the
    # previous totals and the model carry from one chunk of the file to the next
    state: dict = {}
    first = containers.reshape(rollout_chunk(
        {"timestamp": "2026-11-24T11:00:00.000Z", "type": "session_meta", "payload": {"id": "s1", "cli_version": "0.30.0"}},
        {"timestamp": "2026-11-24T11:00:04.000Z", "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        token_count(None),  # rate limits only
        token_count(tokens(5000, 0, 300, 128))), state)
    second = containers.reshape(rollout_chunk(token_count(tokens(11400, 4864, 520, 192))), state)
    assert turns(first) == [{"id": "codex:s1:5300", "model": "gpt-5-codex", "turn": tokens(5000, 0, 300, 128)}]
    assert turns(second) == [{"id": "codex:s1:11920", "model": "gpt-5-codex",
                              "turn": {"input_tokens": 6400, "cached_input_tokens": 4864, "output_tokens": 220,
                                       "reasoning_output_tokens": 64, "total_tokens": 6620}}]
    # last_token_usage wins where written; a repeated event keeps its cumulative id (collapsed by the SQL)
    again = containers.reshape(rollout_chunk(token_count(tokens(11400, 4864, 520, 192), tokens(6400, 4864, 220, 64))), state)
    assert turns(again)[0]["id"] == "codex:s1:11920" and turns(again)[0]["turn"] == tokens(6400, 4864, 220, 64)


def test_superseded_snapshots_are_not_bad_data_for_the_data_quality_rule(tmp_path):
    # 120 responses of three snapshots each: 240 of 360 records quarantined as superseded, none bad
    lines = [USER_LINE]
    for n in range(120):
        ts = f"2026-11-24T{n // 60 + 9:02d}:{n % 60:02d}:00.000Z"
        lines += [snapshot(3 * n + 1, f"msg_{n}", 1, ts), snapshot(3 * n + 2, f"msg_{n}", 9, ts), snapshot(3 * n + 3, f"msg_{n}", 159, ts)]
    path = tmp_path / "logs" / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert query(db, "select rows_in, rows_accepted, rows_quarantined, rows_superseded from stage.files") == [(360, 120, 240, 240)]
    assert query(db, "select count(*), sum(output_tokens) from core.usage") == [(120, 120 * 159)]
    assert query(db, "select count(*) from marts.cache_alerts where rule = 'data_quality'") == [(0,)]
    # the day's cost is the final snapshots' bill: 120 x (4*3 + 16870*0.3 + 2319*3.75 + 159*15) / 1e6
    assert query(db, "select sum(cost_usd) from core.usage_costs") == [(Decimal("1.938510000000000"),)]
    assert query(db, "select day from core.usage group by 1") == [(date(2026, 11, 24),)]
