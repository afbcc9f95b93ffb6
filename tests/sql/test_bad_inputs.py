"""The bad-input corpus (fixtures/bad) and property-based tests: no crash, no silent drop, ever."""

import json
import shutil

import yaml
import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.ingest import stage as ingest
from pipelines.lib import warehouse
from tests.conftest import REPO

CORPUS = REPO / "fixtures" / "bad"


def test_every_kind_of_bad_input_is_accepted_or_quarantined_with_its_reason(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(CORPUS, logs, ignore=shutil.ignore_patterns("*.py", "*.md", "*.yaml"))
    (logs / "huge_single_line.jsonl").write_text('{"ts": "2026-11-20T10:00:00Z", "response": {"usage": '
                                                 '{"prompt_tokens": 1, "completion_tokens": 1}}, "pad": "'
                                                 + "x" * 50_000_000 + '"}\n')
    expected = yaml.safe_load((CORPUS / "expected_outcomes.yaml").read_text())
    expected["huge_single_line.jsonl"] = [1, 1, 0, None]
    conn = warehouse.connect(tmp_path / "w.duckdb")
    results = {r.source_file: r for r in ingest.stage_logs(conn, logs)}
    assert set(results) == set(expected)
    for name, (rows_in, accepted, quarantined, reason) in expected.items():
        result = results[name]
        assert result.rows_in == result.rows_accepted + result.rows_quarantined, name
        if name == "cut_mid_stream.jsonl.gz":  # every complete line before the cut, then one record for the tail
            complete = zlib.decompressobj(wbits=31).decompress((logs / name).read_bytes()).count(b"\n")
            rows_in, accepted = complete + 1, complete
        assert (result.rows_in, result.rows_accepted, result.rows_quarantined) == (rows_in, accepted, quarantined), name
        if reason:
            reasons = conn.execute("select string_agg(reason, ' | ') from core.quarantine where source_file = $f",
                                   {"f": name}).fetchall()[0][0]
            assert reason in reasons, (name, reasons)
    days = dict(conn.execute("select request_id, day::varchar from core.usage where request_id in ('o1', 'o2')").fetchall())
    assert days == {"o1": "2026-11-21", "o2": "2026-11-20"}  # offsets become UTC days


# ---- property-based: generated and mutated payloads through every adapter ----------------------

counts = st.one_of(st.integers(min_value=-10, max_value=10**7), st.integers(min_value=10**12, max_value=2**80),
                   st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5), st.none(), st.booleans(),
                   st.lists(st.integers(), max_size=2))
small = st.integers(min_value=0, max_value=50_000)


def bodies(count):
    """One response body per adapter shape, with counts drawn from ``count``."""
    return st.one_of(
        st.fixed_dictionaries({"object": st.just("chat.completion"), "usage": st.fixed_dictionaries(
            {"prompt_tokens": count, "completion_tokens": count},
            optional={"prompt_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": count, "cache_write_tokens": count}),
                      "completion_tokens_details": st.fixed_dictionaries({"reasoning_tokens": count})})}),
        st.fixed_dictionaries({"object": st.just("response"), "usage": st.fixed_dictionaries(
            {"input_tokens": count, "output_tokens": count},
            optional={"input_tokens_details": st.fixed_dictionaries({}, optional={"cached_tokens": count})})}),
        st.fixed_dictionaries({"type": st.just("message"), "usage": st.fixed_dictionaries(
            {"input_tokens": count, "output_tokens": count},
            optional={"cache_read_input_tokens": count, "cache_creation_input_tokens": count,
                      "cache_creation": st.fixed_dictionaries({}, optional={"ephemeral_5m_input_tokens": count,
                                                                            "ephemeral_1h_input_tokens": count})})}),
        st.fixed_dictionaries({"usageMetadata": st.fixed_dictionaries(
            {"promptTokenCount": count}, optional={"cachedContentTokenCount": count, "candidatesTokenCount": count,
                                                   "thoughtsTokenCount": count})}),
        st.fixed_dictionaries({"usage": st.fixed_dictionaries({"inputTokens": count, "outputTokens": count},
                                                              optional={"cacheReadInputTokens": count, "cacheWriteInputTokens": count})}),
        st.fixed_dictionaries({"usage": st.fixed_dictionaries({"prompt_tokens": count, "completion_tokens": count,
                                                               "prompt_cache_hit_tokens": count},
                                                              optional={"prompt_cache_miss_tokens": count})}),
        st.fixed_dictionaries({"timestamp": count, "input_length": count, "output_length": count,
                               "hash_ids": st.lists(st.integers(min_value=0, max_value=50), max_size=4)}),
    )


envelopes = st.fixed_dictionaries(
    {"response": st.one_of(bodies(counts), bodies(small))},
    optional={"ts": st.one_of(st.just("2026-11-20T10:00:00Z"), st.integers(), st.text(max_size=8), st.none()),
              "provider": st.sampled_from(["openai", "azure", "anthropic", "google", "aws", "deepseek", "nope", ""]),
              "model": st.text(max_size=8), "request_id": st.text(max_size=6)})


def mutate(record: dict, data) -> str:
    """Serialise, sometimes damaged: cut short, a byte flipped, or wrapped in an array."""
    text = json.dumps(record)
    kind = data.draw(st.sampled_from(["as is", "as is", "cut", "flip", "array"]))
    if kind == "cut":
        return text[: data.draw(st.integers(min_value=0, max_value=len(text)))]
    if kind == "flip":
        i = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
        return text[:i] + data.draw(st.sampled_from(["}", '"', "\\", "\u00e9", "0"])) + text[i + 1:]
    return f"[{text}]" if kind == "array" else text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_generated_and_mutated_payloads_never_crash_or_vanish(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("prop")
    records = data.draw(st.lists(envelopes, min_size=1, max_size=25))
    lines = [mutate(r, data) for r in records]
    lines = [l for l in lines if l.strip()]  # blank lines are not records
    (tmp / "logs").mkdir()
    (tmp / "logs" / "source.yaml").write_text("trace_start: 2026-11-20T00:00:00Z\nmodel: m\n")
    (tmp / "logs" / "gen.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    conn = warehouse.connect(tmp / "w.duckdb")
    (result,) = ingest.stage_logs(conn, tmp / "logs")
    assert result.rows_in == len(lines) == result.rows_accepted + result.rows_quarantined
    bad = conn.execute("select count(*) from core.usage where prompt_tokens <> uncached_input_tokens + cache_read_tokens "
                       "+ cache_write_5m_tokens + cache_write_1h_tokens or least(uncached_input_tokens, cache_read_tokens, "
                       "cache_write_5m_tokens, cache_write_1h_tokens, output_tokens) < 0").fetchall()[0][0]
    assert bad == 0
    assert conn.execute("select count(*) from core.quarantine where reason is null or reason = ''").fetchall()[0][0] == 0

