"""Reading log files (lib/logfiles.py): damaged CSV and JSON arrays keep every sound record."""

import csv
import json

import pyarrow as pa
import pytest

from pipelines.ingest import readers as logfiles
from pipelines.ingest.discover import LogFile, SourceConfigError, load_source_yaml
from pipelines.ingest.readers import read_records


def records_of(path):
    unreadable = []
    tables = list(read_records(LogFile(path=path, relative=path.name), unreadable))
    rows = pa.concat_tables(tables).to_pylist() if tables else []
    return [(r["source_line"], json.loads(r["line"])) for r in rows], unreadable


CANONICAL = "request_id,ts,provider,model,uncached_input_tokens,output_tokens,note\n"


def canonical_row(i, note="n"):
    return f"r{i},2026-11-20T10:00:00Z,openai,gpt-4.1,{100 + i},10,{note}\n"


def test_a_cell_longer_than_the_csv_default_field_limit_keeps_every_row(tmp_path):
    path = tmp_path / "usage.csv"
    path.write_text(CANONICAL + canonical_row(1) + canonical_row(2, '"' + "x" * 200_000 + '"')
                    + "".join(canonical_row(i) for i in range(3, 6)))
    rows, unreadable = records_of(path)
    assert unreadable == []
    assert [(line, r["request_id"]) for line, r in rows] == [(2, "r1"), (3, "r2"), (4, "r3"), (5, "r4"), (6, "r5")]
    assert len(rows[1][1]["note"]) == 200_000


def test_an_unreadable_csv_row_is_reported_and_reading_goes_on(tmp_path, monkeypatch):
    # a csv.Error mid-file (here: a field over a low limit the reader may not raise) costs that row only
    original = csv.field_size_limit()
    csv.field_size_limit(1000)
    monkeypatch.setattr(csv, "field_size_limit", lambda *new: 1000)
    path = tmp_path / "usage.csv"
    path.write_text(CANONICAL + canonical_row(1) + canonical_row(2, "y" * 5000) + canonical_row(3))
    try:
        rows, unreadable = records_of(path)
    finally:
        monkeypatch.undo()
        csv.field_size_limit(original)
    assert [(line, r["request_id"]) for line, r in rows] == [(2, "r1"), (4, "r3")]
    assert [(u.source_line, u.reason) for u in unreadable] == [(3, "unreadable CSV row: field larger than field limit (1000)")]
    assert json.loads(unreadable[0].raw_excerpt)["length_bytes"] == len(canonical_row(2, "y" * 5000))


def body(i):
    return {"ts": "2026-11-20T10:00:00Z", "provider": "openai", "model": "gpt-4.1", "request_id": f"a{i}",
            "response": {"usage": {"prompt_tokens": 100 + i, "completion_tokens": 1}}}


ARRAY = json.dumps([body(i) for i in range(1, 1001)], indent=1)


@pytest.mark.parametrize("damaged, kept, reason", [
    (ARRAY[: len(ARRAY) * 3 // 4], None, "malformed JSON array: the array is cut short in record"),
    (ARRAY[: ARRAY.rindex("}") + 1] + ",\n", 1000, "the array is cut short after record 1000 and its comma"),
    (ARRAY[: ARRAY.rindex("}") + 1] + ",\n]", 1000, "malformed JSON array: trailing comma after record 1000"),
    (ARRAY.replace('"request_id": "a501"', '"request_id": a501', 1), 500, "record 501 is malformed: Expecting value"),
    (ARRAY[: ARRAY.rindex("}") + 1], 1000, "the array is cut short after record 1000;"),
])
def test_a_damaged_json_array_keeps_every_complete_record_and_quarantines_the_tail(tmp_path, damaged, kept, reason):
    path = tmp_path / "export.json"
    path.write_text(damaged)
    rows, unreadable = records_of(path)
    if kept is None:  # cut at 75%: every record whose text is whole before the cut
        kept = sum(1 for i in range(1, 1001) if json.dumps(body(i), indent=1).replace("\n", "\n ") in damaged)
        assert 740 < kept < 760
    assert [line for line, _ in rows] == list(range(1, kept + 1))
    assert [r["request_id"] for _, r in rows] == [f"a{i}" for i in range(1, kept + 1)]
    (tail,) = unreadable
    assert tail.source_line == kept + 1 and reason in tail.reason, tail.reason


def test_a_sound_json_array_and_json_lines_under_a_json_name_read_as_before(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps([body(1), body(2)]))
    (tmp_path / "b.json").write_text(json.dumps(body(3)) + "\n" + json.dumps(body(4)) + "\n")
    rows_a, bad_a = records_of(tmp_path / "a.json")
    rows_b, bad_b = records_of(tmp_path / "b.json")
    assert (bad_a, bad_b) == ([], [])
    assert [(n, r["request_id"]) for n, r in rows_a + rows_b] == [(1, "a1"), (2, "a2"), (1, "a3"), (2, "a4")]


# ---- source.yaml ------------------------------------------------------------------------------


def alias_bomb(levels: int) -> str:
    """An ``app:`` whose value is ``9 ** levels`` strings built from a few lines of anchors and aliases."""
    rows = ['  - &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"  - &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels + 1)]
    return "app:\n" + "\n".join(rows) + "\n"


@pytest.mark.parametrize("content, message", [
    ("provider: openai\ntenant:\n", "tenant has no value; give it one or remove the line"),
    ("app: ''\n", "app has no value"),
    ("model: ~\n", "model has no value"),
    ("trace_start:\nblock_size_tokens: 512\n", "trace_start has no value"),
    ("tenant: no\n", "tenant reads as the boolean False"),
    ("app: [a, b]\n", "app must be text, not a list"),
    (alias_bomb(5), "line 2: anchors and aliases (&, *, <<) are not allowed"),
    ("base: &b {provider: openai}\n<<: *b\n", "line 1: anchors and aliases"),
    ("app: " + "x" * 20_000 + "\n", "line 1: a value of 20,000 characters is over the 10,000-character limit"),
])
def test_source_yaml_refuses_empty_values_aliases_and_huge_values_naming_file_and_key(tmp_path, content, message):
    path = tmp_path / "source.yaml"
    path.write_text(content)
    with pytest.raises(SourceConfigError) as raised:
        load_source_yaml(path)
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value), str(raised.value)


def test_source_yaml_refuses_a_file_too_large_for_a_settings_file_without_parsing_it(tmp_path):
    path = tmp_path / "source.yaml"
    path.write_text("# padding\n" * 200_000)
    with pytest.raises(SourceConfigError, match="2,000,000 bytes is over the 1,000,000-byte limit"):
        load_source_yaml(path)


def test_source_yaml_still_reads_numbers_and_dates_as_before(tmp_path):
    path = tmp_path / "source.yaml"
    path.write_text("provider: self_hosted\nmodel: 4\ntenant: acme\ntrace_start: 2026-11-27T00:00:00Z\n"
                    "block_size_tokens: 512\ndeployments:\n  prod: gpt-4o\n")
    assert load_source_yaml(path) == {"provider": "self_hosted", "model": "4", "tenant": "acme",
                                      "trace_start": "2026-11-27T00:00:00+00:00", "block_size_tokens": 512,
                                      "deployments": {"prod": "gpt-4o"}}


from hypothesis import given, settings, strategies as st  # noqa: E402

_PIECES = st.lists(st.sampled_from(["{}", " ", "\t", "\r", "\x0b", "\x0c", "\u00a0", "é", "a", '"k"', "\u2028", "\x00"]),
                   max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_PIECES, max_size=12), ends=st.booleans(), first=st.integers(0, 10**6))
def test_lines_split_strip_and_skip_blanks_as_the_line_by_line_decoder(lines, ends, first):
    """The split over the buffer (numpy offsets, Arrow kernels) gives the numbers and texts that decoding line by line
    does: CRs at a line's end removed, lines of ASCII whitespace only skipped (bytes.strip), other characters kept."""
    buffer = "\n".join(lines).encode() + (b"\n" if ends and lines else b"")
    table, consumed = logfiles._lines(buffer, first, [])
    pieces = buffer.split(b"\n")
    if buffer.endswith(b"\n"):
        pieces.pop()
    numbers, texts = logfiles._decode(pieces if buffer else [], first, [])
    assert consumed == len(pieces if buffer else [])
    assert table["source_line"].to_pylist() == numbers and table["line"].to_pylist() == texts
    assert table.schema.field("line").type == pa.string()
