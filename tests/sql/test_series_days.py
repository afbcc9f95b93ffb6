"""marts.series_days (sql/marts/series_days__insert_window.sql): the day's most common divergence span."""

from datetime import date

import duckdb

from pipelines.lib import warehouse
from pipelines.lib.sql import statement

DAY = date(2026, 11, 20)


def series_span(spans: list[str | None]) -> str | None:
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    for n, span in enumerate(spans):
        conn.execute("insert into core.usage (request_id, day, provider, model, tenant, app, prompt_tokens, "
                     "cache_read_tokens, request_count, divergence_span) values ($id, $day, 'openai', 'gpt-4.1', "
                     "'t', 'bot', 1000, 0, 1, $span)", {"id": f"r{n}", "day": DAY, "span": span})
        conn.execute("insert into core.usage_costs (request_id, day, priced) values ($id, $day, false)",
                     {"id": f"r{n}", "day": DAY})
    conn.execute(statement("marts/series_days__insert_window"),
                 {"days": [DAY], "first": DAY, "last": DAY})
    return conn.execute("select common_span from marts.series_days").fetchone()[0]


def test_the_most_common_span_wins_and_rows_without_a_body_do_not_vote():
    assert series_span(["digits:10 timestamp", None, None, None, "hex:8", "digits:10 timestamp"]) == "digits:10 timestamp"


def test_a_tie_goes_to_the_greater_span_on_every_run():
    # two shapes, two rows each: DuckDB's mode() returned either, depending on hash-table order
    spans = ["alpha:6 word", "digits:10 timestamp", "alpha:6 word", "digits:10 timestamp"]
    assert {series_span(spans if n % 2 else spans[::-1]) for n in range(6)} == {"digits:10 timestamp"}


def test_a_series_without_bodies_has_no_span():
    assert series_span([None, None]) is None


def test_a_day_without_a_request_count_counts_no_requests_for_the_incident_rule():
    # usage buckets that report tokens but no request count (an Anthropic usage report) leave the day's
    # requests null; the incident rule's pooling added it as a number and the run failed
    # ("unsupported operand type(s) for +=: 'int' and 'NoneType'", found by a break test)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    conn.execute("insert into marts.series_days (day, provider, model, tenant, app, requests, prompt_tokens, "
                 "cache_read_tokens) values ($day, 'anthropic', 'claude-haiku-4-5', 't', 'bot', null, 1000, 900)",
                 {"day": DAY})
    conn.register("series_keys", conn.sql("select 'anthropic' as provider, 'claude-haiku-4-5' as model, "
                                          "'t' as tenant, 'bot' as app"))
    rows = conn.execute(statement("alerts/incidents__series_days")).fetchall()
    assert [(r[4], r[5], r[6], r[7]) for r in rows] == [(DAY, 0, 1000, 900)]


def test_a_series_of_rows_without_a_model_keeps_its_span_read_sizes_openings_and_hit_prompts():
    # every part of the series row is joined on its series with a null model matching a null one: the span and the
    # most common read size of a series whose log names no model were null (a join on model = null matched nothing)
    conn = warehouse.prepare(duckdb.connect(":memory:"))
    rows = [  # (id, prompt tokens, cache read tokens, divergence span, opening hash)
        ("a", 1000, 800, "digits:10 timestamp", "h1"), ("b", 1000, 800, "digits:10 timestamp", "h2"),
        ("c", 1200, 800, None, None), ("d", 900, 0, None, "h1")]
    for rid, prompt, read, span, opening in rows:
        conn.execute("insert into core.usage (request_id, day, provider, model, tenant, app, prompt_tokens, "
                     "cache_read_tokens, cache_write_5m_tokens, cache_write_1h_tokens, request_count, divergence_span, "
                     "rendered_chars, opening_hashes, divergence_offset_chars) values ($id, $day, 'openai', null, 't', "
                     "'bot', $prompt, $read, 0, 0, 1, $span, $chars, $hashes, $offset)",
                     {"id": rid, "day": DAY, "prompt": prompt, "read": read, "span": span,
                      "chars": 4000 if opening else None, "hashes": [opening] if opening else None,
                      "offset": 120 if span else None})
        conn.execute("insert into core.usage_costs (request_id, day, priced) values ($id, $day, false)",
                     {"id": rid, "day": DAY})
    conn.execute(statement("marts/series_days__insert_window"), {"days": [DAY], "first": DAY, "last": DAY})
    row = conn.execute("select model, requests, hits, body_rows, distinct_openings, median_offset, distinct_hit_prompts, "
                       "common_span, top_read_count, top_read_tokens from marts.series_days").fetchall()
    assert row == [(None, 4, 3, 3, 2, 120.0, 2, "digits:10 timestamp", 3, 800)]
