"""No usage key is silently ignored; OpenAI-compatible cache fields; billed amounts in ticks and response_cost;
cache writes without their TTL split. Fixtures in fixtures/usage_keys (each line's source: SOURCE.md there).

Costs are exact: tokens x USD per million tokens from the genai-prices 0.2.3 snapshot for 2026-11-20.
"""

import shutil
from decimal import Decimal

import pytest

from pipelines.ingest import formats
from pipelines.lib import prices, providers
from tests.conftest import REPO, query, run_pipeline

FIXTURES = REPO / "fixtures" / "usage_keys"
M = Decimal(1_000_000)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("usage_keys")
    shutil.copytree(FIXTURES, tmp / "logs", ignore=shutil.ignore_patterns("*.md"))
    return run_pipeline(tmp, tmp / "logs")


def rows_of(db, source_file):
    return {r[0]: r[1:] for r in query(db, f"""
        select u.source_line, u.provider, u.uncached_input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens,
               u.cache_write_1h_tokens, u.output_tokens, c.priced, c.list_cost_usd, c.cost_basis, c.cost_usd,
               c.unpriced_reason, u.usage_issue
        from core.usage u join core.usage_costs c using (request_id) where u.source_file = '{source_file}'""")}


# ---- 2. OpenAI-compatible providers: each one's documented cached-token field -----------------------

OPENAI_COMPATIBLE = {
    # line: provider, classes [uncached, read, write 5m, write 1h, output], list cost, billed
    # Moonshot Kimi K2: prompt_tokens_details.cached_tokens (platform.kimi.ai; openclaw#7073); 0.95 / 0.16 / 4
    1: ("moonshotai", [904, 4096, 0, 0, 300], (904 * Decimal("0.95") + 4096 * Decimal("0.16") + 300 * 4) / M, None),
    # moonshot-v1 context caching: top-level usage.cached_tokens (openclaw#7073); spelled "moonshot"; 1 / 1 / 3
    2: ("moonshotai", [952, 2048, 0, 0, 100], (952 + 2048 + 100 * 3) / M, None),
    # Zhipu GLM: prompt_tokens_details.cached_tokens (docs.bigmodel.cn, docs.z.ai context caching); 0.276 / 0.055 / 1.103
    3: ("zhipuai", [1600, 6400, 0, 0, 500],
        (1600 * Decimal("0.276") + 6400 * Decimal("0.055") + 500 * Decimal("1.103")) / M, None),
    # xAI: prompt_tokens_details.cached_tokens, reasoning beside completion (50 + 120), billed in ticks of 1e-10 USD
    # (docs.x.ai/developers/cost-tracking: 8,350,000 ticks = $0.000835); 1.25 / 0.2 / 2.5 from 2026-04-30
    4: ("xai", [200, 800, 0, 0, 170], (200 * Decimal("1.25") + 800 * Decimal("0.2") + 170 * Decimal("2.5")) / M,
        Decimal("0.000835")),
    # Fireworks: prompt_tokens_details.cached_tokens (docs.fireworks.ai); accounts/.../models/ path; 0.56 / 0.28 / 1.68
    6: ("fireworks", [928, 3072, 0, 0, 200], (928 * Decimal("0.56") + 3072 * Decimal("0.28") + 200 * Decimal("1.68")) / M, None),
    # Perplexity: no cache field; usage.cost.total_cost is billed (docs.perplexity.ai UsageInfo.cost), request fee in it
    7: ("perplexity", [20, 0, 0, 0, 300], Decimal(320) / M, Decimal("0.00532")),
    # Together: no cache field documented (genai-prices' together extractor reads none); 0.88 / 0.88
    8: ("together", [1500, 0, 0, 0, 100], 1600 * Decimal("0.88") / M, None),
}


@pytest.mark.parametrize("line", sorted(OPENAI_COMPATIBLE))
def test_openai_compatible_cache_fields_are_read_and_priced_exactly(run, line):
    provider, classes, list_cost, billed = OPENAI_COMPATIBLE[line]
    got = rows_of(run, "openai_compatible.jsonl")[line]
    assert got[0] == provider
    assert list(got[1:6]) == classes
    assert got[6] is True and got[7] == list_cost
    assert got[8:10] == (("billed", billed) if billed is not None else ("list", list_cost))


def test_a_provider_outside_the_catalogue_is_kept_unpriced_with_the_reason(run):
    # Alibaba DashScope explicit cache (Model Studio context cache): prompt_tokens_details.cache_creation_input_tokens
    # with its 5-minute split; 2059 - 0 read - 2048 written = 11 uncached
    got = rows_of(run, "openai_compatible.jsonl")[5]
    assert got[:6] == ("dashscope", 11, 0, 2048, 0, 201)
    assert got[6] is False and got[7] is None and got[9] is None
    assert got[10] == "no price for dashscope model qwen-plus (catalogue id qwen-plus) on 2026-11-20; add it with --prices"


def test_an_unknown_provider_name_keeps_a_well_formed_body_priced_by_its_models_catalogue_provider(run):
    # issue 18: an unknown provider name is no reason to drop a well-formed OpenAI-shaped body; gpt-4.1 is
    # priced under OpenAI in genai-prices (2 / 0.5 / 8 per MTok): 976 uncached + 1024 read + 100 output
    got = rows_of(run, "unknown_provider.jsonl")
    assert got[1][:6] == ("openai", 976, 1024, 0, 0, 100)
    assert got[1][6] is True and got[1][7] == (976 * 2 + 1024 * Decimal("0.5") + 100 * 8) / M
    assert got[1][11] == "provider 'acme-llm' is not a known provider: counted under openai, the catalogue's provider of model gpt-4.1"
    # a model no catalogue lists: kept under its own (lower-cased) name, unpriced with the reason
    assert got[2][:6] == ("acme-llm", 500, 0, 0, 0, 20) and got[2][6] is False
    assert got[2][10].startswith("no price for acme-llm model acme-large-2")
    assert got[2][11] == "provider 'acme-llm' is not a known provider: kept unpriced (no catalogue provider for model acme-large-2)"
    assert query(run, "select count(*) from core.quarantine where source_file = 'unknown_provider.jsonl'") == [(0,)]


# ---- 3. billed amounts: LiteLLM StandardLoggingPayload response_cost ----------------------------------

def test_litellm_response_cost_is_the_billed_cost(run):
    # docs.litellm.ai/docs/proxy/logging_spec: response_cost (USD) beside LiteLLM's copy of the response;
    # startTime in Unix seconds; usage_object is the cache-inclusive Usage (1000 - 512 cached); gpt-4.1 2 / 0.5 / 8
    got = rows_of(run, "litellm_standard_logging_payload.jsonl")[1]
    assert got[:6] == ("openai", 488, 512, 0, 0, 100)
    assert got[7] == (488 * 2 + 512 * Decimal("0.5") + 100 * 8) / M
    assert got[8:10] == ("billed", Decimal("0.00123"))


# ---- 4. a cache write without its 5m / 1h split: priced at the 5-minute default, flagged -----------------

def test_a_write_total_without_its_split_is_priced_at_the_5_minute_rate_and_flagged(run):
    # Anthropic prompt caching: cache_control's ttl defaults to 5m; claude-sonnet-4-5 3 / 3.75 (5m) / 6 (1h) / 15
    got = rows_of(run, "write_split.jsonl")
    five_minute = (10 * 3 + 2000 * Decimal("3.75") + 50 * 15) / M
    for line, how in ((1, "both zero"), (2, "missing")):
        assert list(got[line][1:6]) == [10, 0, 2000, 0, 50]
        assert got[line][7] == five_minute == Decimal("0.00828")
        assert got[line][11] == (f"cache write of 2000 tokens without its 5m / 1h split ({how}): "
                                 "priced at the documented default TTL, 5 minutes")
    assert list(got[3][1:6]) == [10, 0, 0, 2000, 50] and got[3][7] == (30 + 2000 * 6 + 750) / M and got[3][11] is None


# ---- 1. no silent usage key: a finding per format family ---------------------------------------------

UNMAPPED = {  # line: (source_format, body key, tokens); the documented shape of each (SOURCE.md)
    1: ("openai_chat", "usage.prompt_tokens_details.audio_tokens", 400),
    2: ("anthropic_messages", "usage.server_tool_use.web_search_requests", 2),
    3: ("gemini_generate_content", "usageMetadata.responseTokenCount", 10),
    5: ("otel_genai_span", "gen_ai.usage.input_tokens.audio", 300),
    6: ("openinference_span", "llm.token_count.prompt_details.audio", 200),
    7: ("langfuse_generation", "u.input_audio_tokens", 200),
    8: ("litellm_spend_log", "metadata.usage_object.prompt_tokens_details.audio_tokens", 250),
    # Gemini prices audio input apart from text (genai-prices input_audio_mtok): the AUDIO element of the breakdown
    9: ("gemini_generate_content", "usageMetadata.promptTokensDetails[AUDIO].tokenCount", 300),
}


def test_every_unmapped_usage_key_is_kept_on_its_row_and_reported_per_day(run):
    got = {r[0]: r[1:] for r in query(run, "select source_line, source_format, unmapped_usage, usage_issue from core.usage "
                                           "where source_file = 'unmapped_keys.jsonl'")}
    # none quarantined: Langfuse's total (1040 = 840 + 200) is explained; line 4, Bedrock's cacheDetails, is no finding
    assert set(got) == set(UNMAPPED) | {4}
    # a break test: Bedrock's per-TTL split (cacheDetails, priced by write_by_ttl) was also flagged "not priced"
    assert got.pop(4) == ("bedrock_converse", None, None)
    for line, (source_format, key, tokens) in UNMAPPED.items():
        assert got[line][0] == source_format
        assert got[line][1] == f'{{"{key}":{tokens}}}'
        assert got[line][2] == f"usage keys not mapped to a token class (not priced): {key} = {tokens}"
    findings = query(run, "select message, observed from marts.cache_alerts where rule = 'data_quality' order by message")
    assert len(findings) == len(UNMAPPED)
    for source_format, key, tokens in UNMAPPED.values():
        message = (f"{source_format} usage key {key} carried {tokens:,} tokens on 1 row(s) on 2026-11-20 that no token "
                   "class maps, so they are not priced")
        assert [observed for m, observed in findings if m.startswith(message)] == [tokens], message
    # the rows are kept and priced as counted: the audio key is not added to any class
    assert query(run, "select uncached_input_tokens, output_tokens from core.usage where request_id = 'un-openai'") == [(1200, 80)]


def test_the_fast_lane_defers_a_documented_unpriced_key_and_takes_a_zero_one(tmp_path):
    """OpenAI's prompt_tokens_details.audio_tokens is documented and priced by no token class here: a count above
    zero leaves the lane (the general normaliser reports it), a zero stays."""
    import json

    from pipelines.ingest import stage as ingest
    from pipelines.ingest.discover import discover
    from pipelines.lib import warehouse
    from tests.sql.test_fast_lane import lane_deferred
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "audio.jsonl").write_text("".join(
        json.dumps({"ts": "2026-11-20T10:00:00Z", "request_id": f"a-{audio}", "response": {
            "id": "c", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": audio}}}}) + "\n"
        for audio in (400, 0)), encoding="utf-8")
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    log = discover(logs)[0]
    assert lane_deferred(conn, log) == [1]
    conn.close()


def test_the_fast_lane_defers_a_gemini_breakdown_naming_audio_and_takes_a_text_one(tmp_path):
    """Gemini's per-modality breakdown: an AUDIO element (priced apart, formats.yaml unpriced_modalities) leaves the
    lane for the general walk, which names it; a breakdown of text alone stays in the lane."""
    import json

    from pipelines.ingest.discover import discover
    from pipelines.lib import warehouse
    from tests.sql.test_fast_lane import lane_deferred
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "gemini.jsonl").write_text("".join(
        json.dumps({"ts": "2026-11-20T10:00:00Z", "request_id": f"g-{i}", "response": {
            "responseId": f"r{i}", "modelVersion": "gemini-2.5-flash",
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9, "promptTokensDetails": details}}}) + "\n"
        for i, details in enumerate([[{"modality": "TEXT", "tokenCount": 100}],
                                     [{"modality": "TEXT", "tokenCount": 60}, {"modality": "AUDIO", "tokenCount": 40}]], 1)),
        encoding="utf-8")
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    assert lane_deferred(conn, discover(logs)[0]) == [2]
    conn.close()


def test_every_usage_key_declaration_has_a_source():
    decl = formats.load()
    declared = [f for f in decl.formats.values() if f.usage is not None]
    assert {f.name for f in declared} >= {"openai_chat", "anthropic_messages", "gemini_generate_content",
                                          "bedrock_converse", "otel_genai_span", "openinference_span",
                                          "langfuse_generation", "litellm_spend_log"}
    for f in declared:
        for key, source in {**f.usage.informational, **f.usage.unpriced}.items():
            assert source.strip(), (f.name, key)


# ---- 5. one provider table -------------------------------------------------------------------------

def test_catalogue_names_come_from_the_one_provider_table():
    assert prices.PROVIDER_TO_CATALOGUE is providers.PROVIDER_TO_CATALOGUE
    assert prices.CATALOGUE_TO_PROVIDER is providers.CATALOGUE_TO_PROVIDER
    assert providers.PROVIDER_TO_CATALOGUE == {p.name: p.catalogue for p in providers.PROVIDERS if p.catalogue}
    from genai_prices.data_snapshot import get_snapshot
    ids = {p.id for p in get_snapshot().providers}
    assert set(providers.PROVIDER_TO_CATALOGUE.values()) <= ids
    # every OpenAI-compatible provider of the survey is known, under its own or an alias spelling
    for spelling in ("moonshotai", "moonshot", "kimi", "zhipuai", "zai", "together_ai", "fireworks_ai", "perplexity",
                     "groq", "deepseek", "mistralai", "x-ai", "dashscope", "qwen"):
        assert spelling in providers.PROVIDER_ALIASES, spelling


def test_both_readers_give_these_rows_alike(tmp_path):
    # the fast lane (typed reader) and the general normaliser agree on every fixture row, flags included
    from pipelines.ingest import stage as ingest
    from pipelines.lib import warehouse
    got = []
    for lane in (True, False):
        logs = tmp_path / f"logs_{lane}"
        shutil.copytree(FIXTURES, logs, ignore=shutil.ignore_patterns("*.md"))
        conn = warehouse.connect(tmp_path / f"w_{lane}.duckdb")
        ingest.stage_logs(conn, logs, fast_lane=lane)
        got.append(conn.execute("select source_file, source_line, provider, uncached_input_tokens, cache_read_tokens, "
                                "cache_write_5m_tokens, cache_write_1h_tokens, output_tokens, reported_cost_usd, "
                                "usage_issue, unmapped_usage::varchar from core.usage order by 1, 2").fetchall())
        conn.close()
    assert len(got[0]) == 23 and got[0] == got[1]  # 21 + the two unknown-provider rows


def test_the_provider_check_knows_every_provider_of_the_table():
    from pipelines.defs import checks
    assert checks.KNOWN_PROVIDERS == sorted(p.name for p in providers.PROVIDERS)
    assert "dashscope" in checks.KNOWN_PROVIDERS and "self_hosted" in checks.KNOWN_PROVIDERS


# ---- 1b. the fast lane defers a line whose usage object holds a key its format does not declare ---------------

UNDECLARED = [  # (line, body path of the made-up key, tokens); line 5 is clean and stays in the lane
    (1, "usage.hologram_tokens", 40,
     {"id": "c1", "object": "chat.completion", "created": 1795169000, "model": "gpt-4o",
      "usage": {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520, "hologram_tokens": 40}}),
    (2, "usage.prompt_tokens_details.hologram_tokens", 30,
     {"id": "c2", "object": "chat.completion", "created": 1795169000, "model": "gpt-4o",
      "usage": {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520,
                "prompt_tokens_details": {"cached_tokens": 100, "hologram_tokens": 30}}}),
    (3, "usage.cache_creation.ephemeral_30m_input_tokens", 20,
     {"id": "m3", "type": "message", "model": "claude-sonnet-4-5-20250929",
      "usage": {"input_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 9,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0,
                                   "ephemeral_30m_input_tokens": 20}}}),
    (4, "usageMetadata.promptTokensDetails[*].hologramCount", 7,
     {"responseId": "g4", "modelVersion": "gemini-2.5-flash",
      "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110,
                        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 100, "hologramCount": 7}]}}),
]
CLEAN = {"id": "c5", "object": "chat.completion", "created": 1795169000, "model": "gpt-4o",
         "usage": {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520,
                   "prompt_tokens_details": {"cached_tokens": 100, "audio_tokens": 0}}}


def test_an_undeclared_usage_key_leaves_the_fast_lane_and_is_reported(tmp_path):
    import json

    from pipelines.ingest import stage as ingest
    from pipelines.ingest.discover import discover
    from pipelines.lib import warehouse
    from tests.sql.test_fast_lane import lane_deferred
    logs = tmp_path / "logs"
    logs.mkdir()
    bodies = [body for *_, body in UNDECLARED] + [CLEAN]
    (logs / "undeclared.jsonl").write_text("".join(
        json.dumps({"ts": "2026-11-20T10:00:00Z", "request_id": f"ud-{n}", "response": body}) + "\n"
        for n, body in enumerate(bodies, 1)), encoding="utf-8")
    # the lane takes the clean line only
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    log = discover(logs)[0]
    assert lane_deferred(conn, log) == [1, 2, 3, 4]
    conn.close()
    # lane on (the pipeline) and off stage the same rows, each key kept on its row
    db = run_pipeline(tmp_path, logs)
    columns = "source_line, source_format, uncached_input_tokens, cache_read_tokens, output_tokens, usage_issue, unmapped_usage::varchar"
    on = query(db, f"select {columns} from core.usage order by source_line")
    conn = warehouse.connect(tmp_path / "off.duckdb")
    ingest.stage_logs(conn, logs, fast_lane=False)
    off = conn.execute(f"select {columns} from core.usage order by source_line").fetchall()
    conn.close()
    assert on == off and len(on) == 5
    for line, key, tokens, _ in UNDECLARED:
        assert on[line - 1][6] == f'{{"{key}":{tokens}}}', line
        assert f"{key} = {tokens}" in on[line - 1][5]
    assert on[4][6] is None
    # and the day's data_quality finding names each key
    findings = [m for (m,) in query(db, "select message from marts.cache_alerts where rule = 'data_quality'")]
    for _, key, tokens, _ in UNDECLARED:
        assert any(f"usage key {key} carried {tokens:,} tokens on 1 row(s) on 2026-11-20" in m for m in findings), key


def test_the_lane_lists_usage_keys_only_where_the_text_is_longer_than_its_declared_keys_make_it(tmp_path):
    """The undeclared-key check lists a usage object's keys (json_keys) only where its text is not as long as its
    declared keys present and their values make it, or holds a '[': a made-up key (beside an explicit null, nested,
    or holding a colon) or an informational leaf holding an object defers the line; a colon, a bracket or a
    non-ASCII letter inside a string, with every key declared, stays in the lane, as does a clean usage object."""
    import json

    from pipelines.ingest import stage as ingest
    from pipelines.ingest.discover import discover
    from pipelines.lib import warehouse
    from tests.sql.test_fast_lane import lane_deferred

    def anthropic(usage: dict) -> dict:
        return {"id": "m", "type": "message", "model": "claude-sonnet-4-5-20250929",
                "usage": {"input_tokens": 50, "cache_read_input_tokens": 0, "output_tokens": 9, **usage}}
    bodies = [
        anthropic({}),  # 1: clean
        anthropic({"service_tier": "standard:x"}),  # 2: a colon in a string, no undeclared key: stays
        anthropic({"cache_creation_input_tokens": None, "hologram_tokens": 4}),  # 3: null beside a made-up key
        anthropic({"cache_creation": {"ephemeral_5m_input_tokens": 0, "hologram_tokens": 4}}),  # 4: nested made-up key
        anthropic({"hologram_tokens": "a:b"}),  # 5: a made-up key holding a colon
        anthropic({"service_tier": "st[and\u00e1rd"}),  # 6: a bracket and a non-ASCII letter in a string: stays
        {"id": "c", "object": "chat.completion", "model": "gpt-4o-2024-08-06",  # 7: total_tokens holding an object
         "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": {}}},
        {"id": "c", "object": "chat.completion", "model": "gpt-4o-2024-08-06",  # 8: clean, every key declared
         "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59,
                   "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}},
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "keys.jsonl").write_text("".join(
        json.dumps({"ts": "2026-11-20T10:00:00Z", "request_id": f"k-{n}", "response": body}) + "\n"
        for n, body in enumerate(bodies, 1)), encoding="utf-8")
    conn = warehouse.connect(tmp_path / "lane.duckdb")
    log = discover(logs)[0]
    assert lane_deferred(conn, log) == [3, 4, 5, 7]
    conn.close()
