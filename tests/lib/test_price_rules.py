"""The documented pricing rules of lib/price_rules.py held to their sources: fast-mode multiples to the catalogue's own
statements of them, and the SQL macros generated from them."""

import re
from decimal import Decimal

import duckdb
from genai_prices import data

from pipelines.lib import price_rules


def catalogue_model(model_id: str):
    (model,) = [m for p in data.providers if p.id == "anthropic" for m in p.models if m.id == model_id]
    return model


def base(value) -> Decimal:
    return value.base if hasattr(value, "base") else value


def test_fast_mode_multiples_are_the_catalogues_stated_fast_prices_over_its_list_prices():
    # genai-prices 0.2.3 states fast mode in price_comments only ("Fast mode (`speed: fast`...) is $X input / $Y
    # output"); every model whose comment states one is declared, at exactly X / input = Y / output
    stated = {}
    for provider in data.providers:
        for model in provider.models:
            found = re.search(r"Fast mode \(`speed: fast`[^)]*\) is \$([\d.]+) input / \$([\d.]+) output",
                              model.price_comments or "")
            if provider.id == "anthropic" and found:
                prices = model.prices[-1].prices if isinstance(model.prices, list) else model.prices
                stated[model.id] = (Decimal(found[1]) / base(prices.input_mtok), Decimal(found[2]) / base(prices.output_mtok))
    declared = price_rules.SPEED_MULTIPLIERS[("anthropic", "fast")]
    assert set(stated) == {"claude-opus-4-8", "claude-opus-5", "claude-opus-5-5", "claude-fable-5-2", "claude-mythos-5-2"}
    assert {m: (declared[m], declared[m]) for m in stated} == stated
    # Opus 4.6 and 4.7: $30 / $150 against the catalogue's $5 / $25 (platform.claude.com fast mode), 6x
    for model_id in ("claude-opus-4-6", "claude-opus-4-7"):
        prices = catalogue_model(model_id).prices
        prices = prices[-1].prices if isinstance(prices, list) else prices
        assert (Decimal(30) / base(prices.input_mtok), Decimal(150) / base(prices.output_mtok)) == (declared[model_id],) * 2


def test_the_generated_macros_give_each_declared_multiple_and_nothing_else():
    conn = duckdb.connect()
    conn.execute(price_rules.request_price_macros_sql())
    ask = lambda sql: conn.execute(f"select {sql}").fetchall()[0][0]  # noqa: E731
    assert ask("geo_price_factor('anthropic', 'us')") == Decimal("1.1")
    assert ask("geo_price_factor('anthropic', 'global')") is None
    assert ask("geo_price_factor('bedrock', 'us')") is None  # Bedrock's region is its profile, priced by the catalogue
    assert ask("speed_price_factor('anthropic', 'claude-opus-4-6', 'fast')") == 6
    assert ask("speed_price_factor('anthropic', 'claude-opus-5', 'fast')") == 2
    assert ask("speed_price_factor('anthropic', 'claude-opus-5', 'standard')") is None
    assert ask("speed_price_factor('anthropic', 'claude-sonnet-4-5', 'fast')") is None
    assert ask("speed_priced_apart('anthropic', 'fast')") is True
    assert ask("speed_priced_apart('anthropic', 'standard')") is False
    assert ask("speed_priced_apart(null, null)") is False
