"""Lines appended to a staged log file are staged alone (pipelines/ingest/appends.py), beside the file's staged rows.

The oracle is a staging of the whole file as it ends up, into a new warehouse: after every append the warehouse
staged part by part holds exactly its rows, quarantined lines, duplicate copies and manifest row. The corpus mixes
clean and broken records of the fast lane's formats, duplicate request ids across the parts, blank lines and
records without an id (their ids are minted from the file and line)."""

import json
import random
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from pipelines.ingest import appends
from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from tests.sql.test_fast_lane import corpus, logged_request

LATEST = datetime(2030, 1, 1, tzinfo=timezone.utc)
TABLES = {
    "core.usage": "select * from core.usage",
    "core.quarantine": "select * exclude (quarantined_at) from core.quarantine",
    "stage.duplicate_rows": "select * from stage.duplicate_rows",
    "stage.files": "select * exclude (staged_at, lines_staged) from stage.files",  # lines_staged: kept by appends only
}


@pytest.fixture
def parts_taken(monkeypatch):
    """Every file staged before may take the appended path (the bench's files are large; these are not), and the
    appended parts that path took, as (file, lines before)."""
    monkeypatch.setattr(appends, "MIN_STAGED_BYTES", 0)
    taken = []
    found = appends.appended_part

    def spy(log, entry, folder, last_line=0):
        part = found(log, entry, folder, last_line)
        if part is not None:
            taken.append((log.relative, part.lines_before))
        return part
    monkeypatch.setattr(appends, "appended_part", spy)
    return taken


def lines_of(seed: int, n: int, bodies: bool = False) -> list[str]:
    """n corpus lines without request bodies (unless ``bodies``), a blank line now and then, some without a request id."""
    rng = random.Random(seed)
    out = []
    for text in corpus(seed, n):
        try:
            record = json.loads(text)
        except ValueError:
            out.append(text)
            continue
        if isinstance(record, dict):
            if not bodies:
                record.pop("request", None)
            elif rng.random() < 0.5:
                record["request"] = logged_request(rng, len(out))
            if rng.random() < 0.1:
                record.pop("request_id", None)
        out.append(json.dumps(record))
        if rng.random() < 0.02:
            out.append("")
    return out


def stage(db: Path, logs: Path) -> list:
    conn = warehouse.connect(db)
    try:
        return ingest.stage_logs(conn, logs, latest=LATEST)
    finally:
        conn.close()


def contents(db: Path) -> dict:
    conn = warehouse.connect(db)
    try:
        return {name: sorted(map(repr, conn.execute(sql).fetchall())) for name, sql in TABLES.items()}
    finally:
        conn.close()


def assert_as_staged_whole(tmp_path: Path, db: Path, logs: Path, name: str) -> dict:
    whole = tmp_path / f"whole-{name}.duckdb"
    stage(whole, logs)
    got, want = contents(db), contents(whole)
    for table in TABLES:
        assert got[table] == want[table], table
    return got


def staged_log(tmp_path: Path, lines: list[str]) -> tuple[Path, Path, Path]:
    """``logs/app.jsonl`` holding ``lines``, staged into ``w.duckdb``: (logs folder, the file, the warehouse)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "w.duckdb"
    stage(db, logs)
    return logs, log, db


def append(log: Path, text: str) -> None:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(text)


def test_appended_lines_stage_alone_and_as_the_whole_file_stages_them(tmp_path, parts_taken):
    lines = lines_of(3, 3000)
    logs, log, db = staged_log(tmp_path, lines[:2000])
    append(log, "\n".join(lines[2000:2600]) + "\n")
    stage(db, logs)
    got = assert_as_staged_whole(tmp_path, db, logs, "1")
    # a second night, with copies of earlier records (duplicate ids across the parts: the earliest line is kept)
    append(log, "\n".join(lines[2600:] + lines[:50]) + "\n")
    results = stage(db, logs)
    got = assert_as_staged_whole(tmp_path, db, logs, "2")
    assert parts_taken == [("app.jsonl", 2000), ("app.jsonl", 2600)]  # its lines: blank ones counted
    conn = warehouse.connect(db)  # kept, so the next append does not count the file's lines again
    assert conn.execute("select lines_staged from stage.files").fetchall() == [(3058 + 50,)]
    conn.close()
    assert len(got["core.usage"]) > 1500 and len(got["stage.duplicate_rows"]) > 20
    (result,) = results  # the whole file's accounting (records: a container line holds several, a blank line none)
    assert result.rows_in == result.rows_accepted + result.rows_quarantined > 3000


def test_a_last_line_still_being_written_is_read_as_a_whole_staging_reads_it(tmp_path, parts_taken):
    # quarantined as malformed while half written (a break test: it was left out until the next run, and the manifest
    # kept a size short of the file); the staged content then ends mid-line, so the next run stages the file whole
    lines = lines_of(5, 800)
    logs, log, db = staged_log(tmp_path, lines[:500])
    half = len(lines[700]) // 2
    append(log, "\n".join(lines[500:700]) + "\n" + lines[700][:half])
    stage(db, logs)
    got = assert_as_staged_whole(tmp_path, db, logs, "half")
    assert any(row.startswith("('app.jsonl', 701, None, 'malformed JSON") for row in got["core.quarantine"])
    append(log, lines[700][half:] + "\n" + "\n".join(lines[701:]) + "\n")
    stage(db, logs)
    assert parts_taken == [("app.jsonl", 500)]  # then whole: the staged content ended mid-line
    assert_as_staged_whole(tmp_path, db, logs, "end")


@pytest.mark.parametrize("appended", ["request bodies", "a transcript"])
def test_lines_that_depend_on_the_lines_before_them_stage_the_whole_file(tmp_path, parts_taken, appended):
    # a body's divergence is measured against the previous body of its app, a streamed snapshot may supersede an
    # earlier one: such an appended part is read, found out and the whole file staged (the same rows either way)
    bodies = lines_of(7, 600, bodies=True)
    logs, log, db = staged_log(tmp_path, bodies[:400])
    if appended == "request bodies":
        more = bodies[400:]
    else:
        more = [json.dumps({"type": "assistant", "uuid": f"u{i}", "sessionId": "s", "requestId": "req_1",
                            "timestamp": "2026-10-01T00:00:0{i}.000Z",
                            "message": {"model": "claude-sonnet-4-5", "id": "msg_1", "type": "message", "role": "assistant",
                                        "usage": {"input_tokens": 10, "cache_read_input_tokens": 0,
                                                  "cache_creation_input_tokens": 0, "output_tokens": 1 + 50 * i}}})
                for i in range(3)]
    append(log, "\n".join(more) + "\n")
    stage(db, logs)
    assert parts_taken == [("app.jsonl", 400)]  # tried, then staged whole
    assert_as_staged_whole(tmp_path, db, logs, "end")


def test_a_file_rewritten_before_its_staged_end_is_staged_whole(tmp_path, parts_taken):
    lines = lines_of(9, 300)
    logs, log, db = staged_log(tmp_path, lines[:200])
    # the staged content's last line changed in place (same length), then lines appended: not an append
    text = log.read_text(encoding="utf-8").splitlines()
    text[-1] = text[-1].replace("chat", "chit") if "chat" in text[-1] else " " + text[-1][1:]
    log.write_text("\n".join(text + lines[200:]) + "\n", encoding="utf-8")
    stage(db, logs)
    assert parts_taken == []
    assert_as_staged_whole(tmp_path, db, logs, "end")


def test_only_the_days_of_the_appended_lines_are_pending(tmp_path, parts_taken):
    def day(d: int, n: int) -> list[str]:
        return [json.dumps({"ts": f"2026-10-{d:02d}T10:00:00Z", "provider": "openai", "request_id": f"r{d}-{i}",
                            "response": {"id": "c", "object": "chat.completion", "model": "gpt-4.1",
                                         "usage": {"prompt_tokens": 100 + i, "completion_tokens": 5}}}) for i in range(n)]
    logs, log, db = staged_log(tmp_path, day(1, 50) + day(2, 50))
    conn = warehouse.connect(db)
    conn.execute("delete from stage.pending_days")
    conn.close()
    append(log, "\n".join(day(3, 40)) + "\n")
    stage(db, logs)
    conn = warehouse.connect(db)
    assert [d.isoformat() for (d,) in conn.execute("select day from stage.pending_days order by 1").fetchall()] == ["2026-10-03"]
    assert conn.execute("select max(source_line) from core.usage").fetchall() == [(140,)]
    # a bad line appended alone: data_quality counts it on the day of the accepted line before it, a row that stays
    # (a break test: no day was pending, so the finding never reached the marts)
    conn.execute("delete from stage.pending_days")
    conn.close()
    append(log, day(4, 1)[0] + "\n" + '{"ts": "2026-10-05T10:00:00Z", "provid\n')
    stage(db, logs)
    conn = warehouse.connect(db)
    assert [d.isoformat() for (d,) in conn.execute("select day from stage.pending_days order by 1").fetchall()] == ["2026-10-04"]
    conn.execute("delete from stage.pending_days")
    conn.close()
    append(log, '{"ts": "2026-10-05T10:00:00Z", "provid\n')
    stage(db, logs)
    conn = warehouse.connect(db)
    assert [d.isoformat() for (d,) in conn.execute("select day from stage.pending_days order by 1").fetchall()] == ["2026-10-04"]
    conn.close()
    assert parts_taken == [("app.jsonl", 100), ("app.jsonl", 140), ("app.jsonl", 142)]


def test_a_small_file_is_staged_whole(tmp_path):
    # the default threshold: small files are staged many at a time, whole (appends.MIN_STAGED_BYTES)
    logs, log, db = staged_log(tmp_path, lines_of(1, 50))
    conn = warehouse.connect(db)
    entry = ingest.generations.Entry(*conn.execute(
        f"select {ingest.generations.MANIFEST_COLUMNS} from stage.files").fetchall()[0])
    conn.close()
    append(log, "\n".join(lines_of(2, 10)) + "\n")
    from pipelines.ingest.discover import discover
    (found,) = discover(logs)
    assert appends.appended_part(found, entry, tmp_path) is None


def usage_line(day: int, rid: str | None, prompt: int) -> str:
    """One OpenAI usage record on 2026-10-``day`` (no request id when ``rid`` is None: minted from file and line)."""
    record = {"ts": f"2026-10-{day:02d}T10:00:00Z", "provider": "openai", "request_id": rid,
              "response": {"id": "c", "object": "chat.completion", "model": "gpt-4.1",
                           "usage": {"prompt_tokens": prompt, "completion_tokens": 5}}}
    if rid is None:
        del record["request_id"]
    return json.dumps(record) + "\n"


def pending_after_staging(db: Path, logs: Path) -> list[str]:
    """The days one staging of ``logs`` marks pending (none are pending before it)."""
    conn = warehouse.connect(db)
    conn.execute("delete from stage.pending_days")
    conn.close()
    stage(db, logs)
    conn = warehouse.connect(db)
    try:
        return [d.isoformat() for (d,) in conn.execute("select day from stage.pending_days order by 1").fetchall()]
    finally:
        conn.close()


def test_a_repeated_id_in_a_file_staged_again_whole_leaves_its_day_alone_until_its_kept_copy_changes(tmp_path):
    """A cost of the nightly run: a small file (staged again whole each time it grows) holding a request id twice had
    the repeat's day marked pending on every run, with the days whose baselines read it, though nothing on it changed:
    the batch's rows hold both copies before the duplicate rule, the rows it replaced only the kept one (the demo
    with one such file rebuilt its 14 days for one appended line)."""
    logs, log, db = staged_log(tmp_path, [usage_line(1, "a", 10).strip(), usage_line(1, "a", 11).strip(),
                                          usage_line(2, "b", 12).strip()])
    append(log, usage_line(3, "c", 13))
    assert pending_after_staging(db, logs) == ["2026-10-03"]  # not 2026-10-01, where the copy of "a" stays a duplicate
    append(log, usage_line(4, "d", 14))
    assert pending_after_staging(db, logs) == ["2026-10-04"]
    # another file whose name sorts first takes "b" over: the day of the copy it demotes is rebuilt, and its own
    (logs / "0-first.jsonl").write_text(usage_line(5, "b", 15))
    assert pending_after_staging(db, logs) == ["2026-10-02", "2026-10-05"]
    conn = warehouse.connect(db)
    assert conn.execute("select source_file, day, prompt_tokens from core.usage where request_id in ('a', 'b') "
                        "order by 1").fetchall() == [("0-first.jsonl", date(2026, 10, 5), 15),
                                                     ("app.jsonl", date(2026, 10, 1), 10)]
    conn.close()
    (logs / "0-first.jsonl").unlink()  # and gives it back when it goes (its rows stay, as history: nothing changes)
    assert pending_after_staging(db, logs) == []


def test_a_bad_line_appended_after_a_repeated_id_is_placed_on_the_kept_copy_s_day(tmp_path):
    """A break test of the change above: data_quality places a quarantined line on the day of the nearest kept line
    before it (cache_alerts__insert_data_quality.sql), not on a duplicate copy's, so the bad line appended after the
    repeat marks the kept copy's day (2026-10-01), not the duplicate's (2026-10-02)."""
    logs, log, db = staged_log(tmp_path, [usage_line(1, "a", 10).strip(), usage_line(2, "a", 11).strip(), "not json"])
    append(log, "also not json\n")
    assert pending_after_staging(db, logs) == ["2026-10-01"]


def test_a_bad_line_a_blanked_kept_line_no_longer_places_moves_to_the_day_before(tmp_path):
    """A break test: data_quality places the bad last line on the day of the nearest kept line before it; blanking
    that line (2026-10-03) moves the bad line to 2026-10-02, whose share of quarantined records changes too. The
    first line is over 4 KB, so the file edited in place is staged again as itself, not kept as history."""
    b = usage_line(3, "b", 11)
    logs, log, db = staged_log(tmp_path, [usage_line(1, "pad", 9).replace('"openai"', '"openai", "pad": "' + "x" * 4200 + '"').strip(),
                                          usage_line(2, "a", 10).strip(), b.strip(), "not json"])
    log.write_text(log.read_text().replace(b, " " * (len(b) - 1) + "\n"))
    assert pending_after_staging(db, logs) == ["2026-10-02", "2026-10-03"]


def otlp_line(*spans: tuple[str, int, int]) -> str:
    """One OTLP trace line holding one gen_ai span per (response id, day of 2026-10, input tokens)."""
    def span(rid: str, day: int, tokens: int) -> dict:
        ns = int(datetime(2026, 10, day, 10, tzinfo=timezone.utc).timestamp() * 1e9)
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1",
                      "gen_ai.response.id": rid, "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 5}
        return {"traceId": "1efd741ba1b89f731e0c0f20f32b5179", "spanId": "ec16e7cd4084aa21", "name": "chat", "kind": 3,
                "startTimeUnixNano": str(ns), "endTimeUnixNano": str(ns + 10**9), "status": {},
                "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                               for k, v in attributes.items()]}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "x"}, "spans": [span(*s) for s in spans]}]}]}) + "\n"


def test_a_bad_item_on_a_duplicate_copy_s_line_is_placed_on_that_copy_s_day(tmp_path):
    """A break test: data_quality places a quarantined item that shares its line with a duplicate copy on that copy's
    day (2026-10-02), not on the kept line's before it (2026-10-05); the copy's id is restaged (both copies written
    again as they were), so only the placement marks its day. The first line is over 4 KB (staged as itself)."""
    pad = otlp_line(("pad", 1, 99)).replace('"chat", "kind"', '"' + "x" * 4200 + '", "kind"')
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "x.otlp.jsonl"
    db = tmp_path / "w.duckdb"
    lines = [pad, otlp_line(("a", 5, 100)), otlp_line(("a", 2, 100)), otlp_line(("d", 2, 100)), otlp_line(("b", 6, 100))]
    log.write_text("".join(lines))
    stage(db, logs)
    lines[2] = otlp_line(("a", 2, 100), ("bad", 3, -5))  # a negative token count: that span is quarantined
    log.write_text("".join(lines))
    assert pending_after_staging(db, logs) == ["2026-10-02"]
    conn = warehouse.connect(db)
    assert conn.execute("select source_line, duplicate_request_id is not null from core.quarantine "
                        "order by all").fetchall() == [(3, False), (3, True)]
    conn.close()


def test_a_span_made_a_duplicate_marks_the_day_its_line_now_gives_the_bad_line_after_it(tmp_path):
    """A break test: data_quality places a bad line on the day of the last record of the kept line before it. That
    line holds two spans, Y (2026-10-05) then X (10-07); a file whose name sorts first takes X over, so the line
    gives Y's day now: 10-05 is rebuilt with X's day, though no record of it changed."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "x.otlp.jsonl").write_text(otlp_line(("Y", 5, 100), ("X", 7, 100)) + "not json\n")
    db = tmp_path / "w.duckdb"
    stage(db, logs)
    (logs / "0.jsonl").write_text(usage_line(7, "X", 100))
    assert pending_after_staging(db, logs) == ["2026-10-05", "2026-10-07"]


def test_a_small_file_rewritten_with_its_history_kept_marks_the_days_its_history_shares(tmp_path):
    """A break test of the change above: a file rewritten to its first line keeps its old generation as history
    (``app.jsonl#1``), whose copy of that line's minted id now shares 2026-10-01 with the new generation's: the day is
    rebuilt, though the file's own rows on it are the same."""
    logs, log, db = staged_log(tmp_path, [usage_line(1, None, 10).strip(), usage_line(2, None, 11).strip()])
    log.write_text(usage_line(1, None, 10))
    # (2026-10-02: the file's line on it now stays only as history)
    assert pending_after_staging(db, logs) == ["2026-10-01", "2026-10-02"]


@pytest.mark.parametrize("kind", ["gzip", "utf-16"])
def test_a_gzip_or_utf16_file_is_staged_whole(tmp_path, parts_taken, kind):
    # a gzip member appended is not lines of text, a UTF-16 file's bytes are not UTF-8: read whole (readers.py)
    import gzip
    lines = lines_of(4, 120)
    logs = tmp_path / "logs"
    logs.mkdir()
    name = "app.jsonl.gz" if kind == "gzip" else "app.jsonl"

    def write(text: str, mode: str) -> None:
        data = text.encode("utf-16") if kind == "utf-16" and mode == "wb" else \
            text.encode("utf-16-le") if kind == "utf-16" else text.encode()
        with (gzip.open if kind == "gzip" else open)(logs / name, mode) as handle:
            handle.write(data)
    write("\n".join(lines[:80]) + "\n", "wb")
    db = tmp_path / "w.duckdb"
    stage(db, logs)
    write("\n".join(lines[80:]) + "\n", "ab")
    stage(db, logs)
    assert parts_taken == []
    assert_as_staged_whole(tmp_path, db, logs, "end")


def test_the_result_says_which_files_had_only_their_appended_lines_read(tmp_path, parts_taken):
    # the ingest asset's metadata counts them (files_appended_to) and its table says how each file was read
    logs, log, db = staged_log(tmp_path, lines_of(6, 100))
    (logs / "other.jsonl").write_text("\n".join(lines_of(8, 20)) + "\n", encoding="utf-8")
    append(log, "\n".join(lines_of(10, 30)) + "\n")
    results = {r.source_file: (r.appended, r.skipped) for r in stage(db, logs)}
    assert results == {"app.jsonl": (True, False), "other.jsonl": (False, False)}
    assert {r.source_file: (r.appended, r.skipped) for r in stage(db, logs)} == {
        "app.jsonl": (False, True), "other.jsonl": (False, True)}


@pytest.mark.parametrize("reader", ["fast lane", "general reader"])
def test_lines_a_whole_read_took_past_the_size_it_found_are_not_staged_twice(tmp_path, parts_taken, monkeypatch, reader):
    # a log written while it is staged whole: the readers read to its end, past the size found (which the manifest
    # recorded); the next run's appended part started at that size, so it held lines staged already (a break test).
    # The manifest now records the bytes the lane read, so the next part starts after them; where it cannot say (the
    # general reader: here, the lane failing on the file), the rows past the staged lines send the file to a whole read
    lines = [line for line in lines_of(12, 900) if line]  # no blank line: the fast lane reads the file
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.jsonl"
    log.write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    planned = ingest.generations.plan

    def plan_then_write(*args, **kwargs):
        out = planned(*args, **kwargs)
        append(log, "\n".join(lines[300:500]) + "\n")  # after the file was found, before it is read
        return out
    with monkeypatch.context() as patch:
        patch.setattr(ingest.generations, "plan", plan_then_write)
        if reader == "general reader":
            patch.setattr(ingest, "_fast_lane", lambda *args, **kwargs: None)
        db = tmp_path / "w.duckdb"
        stage(db, logs)
    append(log, "\n".join(lines[500:]) + "\n")
    stage(db, logs)
    assert parts_taken == ([("app.jsonl", 500)] if reader == "fast lane" else [])
    assert_as_staged_whole(tmp_path, db, logs, "end")
