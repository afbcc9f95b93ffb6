"""Where the catalogue has no price for what a request used: a provider's documented batch discount, a Claude
model's 1-hour cache write, an override's batch and priority requests, and Anthropic's US-only inference
(lib/price_rules.py; sql/costs/price_choices__create.sql). Each case is a break test's record, priced end to end."""

from decimal import Decimal

import pytest

from tests.conftest import query, run_pipeline, write_jsonl, write_prices

M = Decimal(1_000_000)


def anthropic(request_id: str, ts: str, model: str, tier: str | None = None, write_1h: int = 0,
              geo: str | None = None, speed: str | None = None) -> dict:
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 2000 + write_1h,
             "cache_creation": {"ephemeral_5m_input_tokens": 2000, "ephemeral_1h_input_tokens": write_1h},
             "cache_read_input_tokens": 10000, "output_tokens": 1000}
    if tier:
        usage["service_tier"] = tier
    if geo:
        usage["inference_geo"] = geo
    if speed:
        usage["speed"] = speed
    return {"ts": ts, "provider": "anthropic", "model": model, "request_id": request_id,
            "response": {"type": "message", "model": model, "usage": usage}}


def gpt5(request_id: str, tier: str) -> dict:
    return {"ts": "2026-11-27T09:00:00Z", "provider": "openai", "model": "gpt-5", "request_id": request_id,
            "response": {"object": "chat.completion", "model": "gpt-5", "service_tier": tier,
                         "usage": {"prompt_tokens": 10000, "completion_tokens": 1000,
                                   "prompt_tokens_details": {"cached_tokens": 5000}}}}


def deepseek(request_id: str, ts: str) -> dict:
    # providers.md 6's worked example: 400 cache misses, 9,600 hits, 600 output tokens of deepseek-v4-pro
    return {"ts": ts, "provider": "deepseek", "model": "deepseek-v4-pro", "request_id": request_id,
            "response": {"model": "deepseek-v4-pro", "usage": {
                "prompt_tokens": 10000, "prompt_cache_hit_tokens": 9600, "prompt_cache_miss_tokens": 400,
                "completion_tokens": 600, "total_tokens": 10600}}}


@pytest.fixture(scope="module")
def costs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("price_gaps")
    logs = tmp / "logs"
    write_jsonl(logs / "a.jsonl", [
        anthropic("opus-batch", "2026-11-27T09:00:00Z", "claude-opus-4-1-20250805", "batch"),
        anthropic("sonnet-batch-sep", "2026-09-27T09:00:00Z", "claude-sonnet-4-5", "batch"),
        anthropic("sonnet-batch-nov", "2026-11-27T09:00:00Z", "claude-sonnet-4-5", "batch"),
        {"ts": "2026-11-27T09:00:00Z", "provider": "gemini", "model": "claude-sonnet-4@20250514", "request_id": "vertex-1h",
         "response": {"type": "message", "model": "claude-sonnet-4@20250514", "usage": {
             "input_tokens": 100, "cache_creation_input_tokens": 10000, "cache_read_input_tokens": 0, "output_tokens": 100,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 10000}}}},
        {"ts": "2026-11-27T09:00:00Z", "provider": "bedrock", "model": "us.anthropic.claude-sonnet-4-20250514-v1:0",
         "request_id": "bedrock-1h", "response": {"output": {"message": {"role": "assistant", "content": [{"text": "x"}]}},
                                                  "usage": {"inputTokens": 20, "outputTokens": 300, "cacheReadInputTokens": 4000,
                                                            "cacheWriteInputTokens": 2000,
                                                            "cacheDetails": [{"ttl": "1h", "inputTokens": 2000}]}}},
        gpt5("gpt5-priority", "priority"),
        gpt5("gpt5-batch", "batch"),
        {**anthropic("vertex-claude-batch", "2026-09-27T09:00:00Z", "claude-sonnet-4-5", "batch"), "provider": "vertex"},
        {**anthropic("bedrock-claude-batch", "2026-09-27T09:00:00Z", "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
                     "batch"), "provider": "bedrock"},
        gpt5("gpt5-flex", "flex"),
        deepseek("deepseek-friday", "2026-11-27T02:00:00Z"),
        deepseek("deepseek-before-peaks", "2026-08-03T02:00:00Z"),
        deepseek("deepseek-saturday", "2026-11-28T02:00:00Z"),
        anthropic("opus-us", "2026-11-27T09:00:00Z", "claude-opus-4-6", write_1h=500, geo="us"),
        anthropic("opus-global", "2026-11-27T09:00:00Z", "claude-opus-4-6", write_1h=500, geo="global"),
        anthropic("opus-unsaid", "2026-11-27T09:00:00Z", "claude-opus-4-6", write_1h=500),
        anthropic("opus-us-batch", "2026-11-27T09:00:00Z", "claude-opus-4-6", tier="batch", geo="us"),
        anthropic("opus48-fast", "2026-11-27T09:00:00Z", "claude-opus-4-8", write_1h=500, speed="fast"),
        anthropic("opus48-standard", "2026-11-27T09:00:00Z", "claude-opus-4-8", write_1h=500, speed="standard"),
        anthropic("opus46-fast", "2026-11-27T09:00:00Z", "claude-opus-4-6", write_1h=500, speed="fast"),
        anthropic("opus46-fast-us", "2026-11-27T09:00:00Z", "claude-opus-4-6", write_1h=500, speed="fast", geo="us"),
        anthropic("sonnet-fast", "2026-11-27T09:00:00Z", "claude-sonnet-4-5", speed="fast"),
        # a Claude Code transcript's assistant line after /fast (its message is the API's Message, usage.speed included)
        {"parentUuid": "p", "isSidechain": False, "type": "assistant", "uuid": "u1", "sessionId": "s1",
         "timestamp": "2026-11-27T09:00:00.000Z", "requestId": "req_fast",
         "message": {"model": "claude-opus-4-8", "id": "msg_fast", "type": "message", "role": "assistant",
                     "usage": {"input_tokens": 100, "cache_creation_input_tokens": 2500, "cache_read_input_tokens": 10000,
                               "cache_creation": {"ephemeral_5m_input_tokens": 2000, "ephemeral_1h_input_tokens": 500},
                               "output_tokens": 1000, "service_tier": "standard", "speed": "fast"}}},
        # an Anthropic usage report grouped by inference_geo (its one bucket: request id "bucket-<hash>")
        {"data": [{"starting_at": "2026-11-27T00:00:00Z", "ending_at": "2026-11-28T00:00:00Z", "results": [
            {"model": "claude-opus-4-6", "service_tier": "standard", "context_window": "0-200k", "inference_geo": "us",
             "uncached_input_tokens": 1000000, "cache_read_input_tokens": 0, "output_tokens": 100000,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}}]}]},
    ])
    # lowers gpt-5's catalogue standard rates ($1.25 / $0.125 / $10) from 2026-11-01 (the break test's override)
    prices = write_prices(tmp / "prices.csv", [{"provider": "openai", "model": "gpt-5", "effective_from": "2026-11-01",
                                                "input_per_mtok": "0.5", "cache_read_per_mtok": "0.05", "output_per_mtok": "4"}])
    db = run_pipeline(tmp, logs, prices)
    return {r[0]: r[1:] for r in query(db, "select c.request_id, c.price_variant, c.cost_usd, c.price_source, u.usage_issue, "
                                           "c.unpriced_reason from core.usage_costs c join core.usage u using (request_id)")}


def test_batch_requests_without_a_catalogue_batch_price_cost_half(costs):
    # Anthropic Message Batches: 50 % on everything including cache writes and reads (providers.md 3.3). Opus 4.1 has
    # no batch price in genai-prices 0.2.3; Sonnet 4.5's starts 2026-10-14. 100 input, 2,000 5m writes, 10,000 reads,
    # 1,000 output: Opus 4.1 at $7.50 / $9.375 / $0.75 / $37.50, Sonnet 4.5 at $1.50 / $1.875 / $0.15 / $7.50
    assert costs["opus-batch"][:2] == ("batch", (100 * Decimal("7.5") + 2000 * Decimal("9.375") + 10000 * Decimal("0.75")
                                                 + 1000 * Decimal("37.5")) / M) == ("batch", Decimal("0.0645"))
    sonnet = (100 * Decimal("1.5") + 2000 * Decimal("1.875") + 10000 * Decimal("0.15") + 1000 * Decimal("7.5")) / M
    assert costs["sonnet-batch-sep"][:2] == costs["sonnet-batch-nov"][:2] == ("batch", sonnet) == ("batch", Decimal("0.0129"))
    # before 2026-10-14 the catalogue's own batch price of the model, as a ratio to its standard price (the catalogue
    # dates the listing, not the price); Opus 4.1, which has none, takes Anthropic's documented 50 %
    assert costs["sonnet-batch-sep"][2].endswith("batch: the catalogue's batch / standard ratio of claude-sonnet-4-5")
    assert costs["opus-batch"][2].endswith("batch: providers.md 3.3: Message Batches API, 50 % on everything including "
                                           "cache writes and reads (11: Bedrock Claude as Anthropic)")
    assert "batch:" not in costs["sonnet-batch-nov"][2]  # the catalogue's own batch price from 2026-10-14
    # Claude's batch price is Anthropic's wherever it is served (a break test: on Vertex, folded into the gemini
    # provider, only input and output were halved, and on Bedrock nothing): the same tokens cost the same
    assert costs["vertex-claude-batch"][1] == costs["bedrock-claude-batch"][1] == sonnet


def test_claude_1_hour_writes_without_a_catalogue_price_cost_twice_input(costs):
    # Anthropic's 1-hour write is 2x input (providers.md 3.3; Bedrock uses Anthropic's multipliers, 5.3): Claude
    # Sonnet 4 at $3 input, $0.30 read, $15 output, so $6, not the 5-minute $3.75 genai-prices' inheritance gives
    assert costs["vertex-1h"][1] == (100 * 3 + 10000 * 6 + 100 * 15) / M == Decimal("0.0618")
    assert costs["bedrock-1h"][1] == (20 * 3 + 4000 * Decimal("0.3") + 2000 * 6 + 300 * 15) / M == Decimal("0.01776")
    assert costs["bedrock-1h"][3] is None  # cacheDetails is priced, not flagged "not mapped to a token class"


def test_an_override_prices_its_models_variants_at_the_catalogues_ratios(costs):
    # the override ($0.50 / $0.05 / $4, below the catalogue's $1.25 / $0.125 / $10) states standard rates; its batch,
    # flex and priority rows keep the catalogue's ratios to standard: gpt-5 batch and flex at half of every class, priority
    # at twice (a break test: under an override a priority request took the override's standard rates, half the bill,
    # and a flex request the catalogue's absolute flex price, above the overridden standard). 5,000 uncached, 5,000
    # read, 1,000 output
    tokens = lambda inp, read, out: (5000 * Decimal(inp) + 5000 * Decimal(read) + 1000 * Decimal(out)) / M  # noqa: E731
    assert costs["gpt5-priority"][:2] == ("priority", tokens("1", "0.1", "8"))
    assert costs["gpt5-flex"][:2] == ("flex", tokens("0.25", "0.025", "2"))
    assert costs["gpt5-batch"][:2] == ("batch", tokens("0.25", "0.025", "2"))
    assert costs["gpt5-batch"][2] == "override prices.csv:2; batch: the catalogue's batch / standard ratio of gpt-5"


def test_deepseek_peak_hours_are_billed_on_weekdays_only(costs):
    # providers.md 6: "peak = 01:00-04:00 and 06:00-10:00 UTC on weekdays"; v4-pro peak 0.044 / 1.32 / 3.96 (hit, miss,
    # output), off-peak half. 02:00 UTC on Friday 2026-11-27 is peak ($0.0033264, the worked example), on Saturday
    # 2026-11-28 off-peak ($0.0016632); the Saturday request was billed at peak (a break test)
    assert costs["deepseek-friday"][1] == (400 * Decimal("1.32") + 9600 * Decimal("0.044") + 600 * Decimal("3.96")) / M
    assert costs["deepseek-friday"][1] == Decimal("0.0033264")
    assert costs["deepseek-saturday"][1] == Decimal("0.0016632")
    # and from 2026-08-16 on: before, v4-pro cost 0.003625 / 0.435 / 0.87 at any hour (providers.md 6; a break test:
    # the peak windows applied from 1970, 4.55x the bill)
    assert costs["deepseek-before-peaks"][1] == (400 * Decimal("0.435") + 9600 * Decimal("0.003625")
                                                 + 600 * Decimal("0.87")) / M == Decimal("0.0007308")


def test_us_only_inference_is_billed_at_1_1x_every_token_price(costs):
    # Anthropic: inference_geo "us" (US-only inference, Claude Opus 4.6 and later) is 1.1x input, output, cache writes
    # and reads (providers.md 3.3 "Data residency"; platform.claude.com data residency). claude-opus-4-6 in genai-prices
    # 0.2.3: $5 input, $6.25 5m write, $10 1h write, $0.50 read, $25 output. 100 input, 2,000 5m and 500 1h writes,
    # 10,000 reads, 1,000 output: $0.04 at list price, $0.044 US-only (a break test: it was billed at list)
    listed = (100 * 5 + 2000 * Decimal("6.25") + 500 * 10 + 10000 * Decimal("0.5") + 1000 * 25) / M
    assert listed == Decimal("0.048")
    assert costs["opus-global"][1] == costs["opus-unsaid"][1] == listed
    assert costs["opus-us"][1] == listed * Decimal("1.1") == Decimal("0.0528")
    assert costs["opus-us"][2] == "genai-prices 0.2.3 (bundled snapshot), x1.1 for inference_geo us"
    # a US-only batch request: the batch half of every class (3.3), then 1.1x
    assert costs["opus-us-batch"][:2] == ("batch", (100 * Decimal("2.5") + 2000 * Decimal("3.125") + 10000 * Decimal("0.25")
                                                    + 1000 * Decimal("12.5")) / M * Decimal("1.1"))
    # an Anthropic usage report grouped by inference_geo: 1M uncached input and 100k output US-only, (5 + 2.5) x 1.1
    (bucket,) = [v for k, v in costs.items() if k.startswith("bucket-")]
    assert bucket[1] == Decimal("8.25")


def test_fast_mode_is_billed_at_the_models_multiple_of_every_token_price(costs):
    # Anthropic fast mode (usage.speed "fast"): Opus 4.8 at $10 / $50 against $5 / $25 (genai-prices 0.2.3's
    # price_comments), the prompt-caching multipliers on top, so every class doubles; Opus 4.6 at $30 / $150, 6x
    # (platform.claude.com fast mode). Both models list $5 input, $6.25 / $10 writes, $0.50 reads, $25 output (a break
    # test: a fast request was billed at the standard price, a sixth of the bill on Opus 4.6)
    listed = (100 * 5 + 2000 * Decimal("6.25") + 500 * 10 + 10000 * Decimal("0.5") + 1000 * 25) / M
    assert costs["opus48-standard"][1] == listed
    assert costs["opus48-fast"][1] == 2 * listed == Decimal("0.096")
    assert costs["opus48-fast"][2] == "genai-prices 0.2.3 (bundled snapshot), x2 for speed fast"
    assert costs["opus46-fast"][1] == 6 * listed
    # fast mode stacks with data residency (platform.claude.com: "Fast mode pricing stacks with other pricing modifiers")
    assert costs["opus46-fast-us"][1] == listed * 6 * Decimal("1.1")
    assert costs["opus46-fast-us"][2].endswith("x1.1 for inference_geo us, x6 for speed fast")
    # a fast request of a model whose fast-mode multiple is not known stays unpriced and says why, never at list price
    assert costs["sonnet-fast"][1] is None
    assert costs["sonnet-fast"][4] == ("no fast-mode price for anthropic model claude-sonnet-4-5 (usage.speed fast): "
                                      "its multiple of the list price is not known")
    # the same request logged by Claude Code after /fast (the transcript's message is the API's): 2x
    (transcript,) = [v for k, v in costs.items() if k.startswith("msg_fast")]
    assert transcript[1] == 2 * listed
