"""Envelope and batch keys read by name (json_transform): an explicit JSON null differs from an absent key
only where the old positional reader kept it, for batch lines (pipelines/ingest/formats.yaml, stage 1)."""

from tests.conftest import write_jsonl
from tests.sql.test_ingest_normalise import rows, stage

BODY = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1795172742, "model": "gpt-4.1-mini",
        "usage": {"prompt_tokens": 1200, "completion_tokens": 30}}


def test_batch_keys_tell_a_failed_request_from_a_line_that_is_no_batch_result(tmp_path):
    write_jsonl(tmp_path / "logs" / "b.jsonl", [
        {"custom_id": {"k": 1}, "response": [BODY]},  # a custom_id but no batch response: read as itself
        {"custom_id": "c-2", "response": None},  # an explicit null response: a failed batch request
        {"custom_id": "c-3", "error": None, "response": {"status_code": 200, "body": BODY}},  # error: null is no error
        {"custom_id": "c-4", "error": {"code": "server_error"}, "response": None},
    ])
    conn, results = stage(tmp_path, tmp_path / "logs")
    assert (results[0].rows_in, results[0].rows_accepted, results[0].rows_quarantined) == (4, 1, 3)
    reasons = dict(rows(conn, "select source_line, reason from core.quarantine"))
    assert reasons[1].startswith("unknown shape: no recognised usage object (top-level keys: custom_id, response)")
    assert reasons[2] == "batch request failed (status none, no error code): not billed"
    assert reasons[4] == "batch request failed (status none, server_error): not billed"
    assert rows(conn, "select source_line, source_format, uncached_input_tokens, service_tier from core.usage") == [
        (3, "openai_batch_output", 1200, "batch")]
