"""Provider spellings are declared once (lib/providers.py) and read the same by Python and by SQL."""

from datetime import date
from decimal import Decimal

import duckdb

from tests.conftest import query, run_pipeline, write_jsonl, write_prices


def test_the_sql_macro_and_python_map_every_spelling_alike():
    from pipelines.lib import prices, providers, warehouse

    with duckdb.connect() as conn:
        warehouse.prepare(conn)
        for alias, provider in providers.PROVIDER_ALIASES.items():
            assert conn.execute("select provider_alias($a)", {"a": alias}).fetchall() == [(provider,)], alias
            assert prices.normalise_provider(alias.upper()) == provider
        assert conn.execute("select provider_alias('no-such-provider')").fetchall() == [(None,)]


def test_a_price_override_naming_mistralai_prices_usage_normalised_to_mistral(tmp_path):
    # Mistral's own SDK and LiteLLM spell the provider "mistralai"; the logs here say "mistral_ai"
    write_jsonl(tmp_path / "logs" / "m.jsonl", [
        {"ts": "2026-11-20T10:00:00Z", "provider": "mistral_ai", "model": "house-mistral", "request_id": "m1",
         "response": {"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}}])
    prices = write_prices(tmp_path / "prices.csv", [{"provider": "mistralai", "model": "house-mistral",
                                                     "effective_from": "2026-01-01", "input_per_mtok": "0.40",
                                                     "output_per_mtok": "2.00"}])
    db = run_pipeline(tmp_path, tmp_path / "logs", prices)
    assert query(db, "select u.provider, c.priced, c.cost_usd from core.usage u join core.usage_costs c using (request_id)") == [
        ("mistral", True, Decimal("0.4"))]
    assert query(db, "select day from marts.daily_savings") == [(date(2026, 11, 20),)]
