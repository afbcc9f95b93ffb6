"""The price book asset (pipelines/defs/pricing/assets.py): loaded once per version, repriced when it changes."""

from decimal import Decimal

from tests.conftest import query, run_pipeline, write_jsonl, write_prices


def test_the_same_price_book_is_not_loaded_again_and_a_changed_one_reprices_every_day(tmp_path):
    # reading, hashing and rewriting the 3,900 price rows on every run was a twentieth of a run on a one-line log
    # (bench/README.md); stage.price_book keeps the version loaded, and a run with the same catalogue, code, override
    # file and cache minimums loads nothing
    logs = tmp_path / "logs"
    write_jsonl(logs / "a.jsonl", [{"ts": f"2026-11-2{d}T10:00:00Z", "provider": "openai", "model": "house-model",
                                    "request_id": f"r{d}", "response": {"usage": {"prompt_tokens": 1_000_000,
                                                                                  "completion_tokens": 0}}}
                                   for d in (1, 2)])
    prices = write_prices(tmp_path / "prices.csv", [{"provider": "openai", "model": "house-model",
                                                     "input_per_mtok": "2", "output_per_mtok": "8"}])
    db = run_pipeline(tmp_path, logs, prices)
    (version,), = query(db, "select fingerprint from stage.price_book")
    loaded = query(db, "select count(*) from core.prices")
    # the same book: nothing loaded, nothing pending, the version kept
    run_pipeline(tmp_path, logs, prices)
    assert query(db, "select fingerprint from stage.price_book") == [(version,)]
    assert query(db, "select count(*) from core.prices") == loaded
    assert query(db, "select sum(cost_usd) from core.usage_costs") == [(Decimal("4"),)]
    # an edited override file: a new version, every staged day repriced
    write_prices(prices, [{"provider": "openai", "model": "house-model", "input_per_mtok": "3", "output_per_mtok": "8"}])
    run_pipeline(tmp_path, logs, prices)
    assert query(db, "select fingerprint <> $v from stage.price_book", {"v": version}) == [(True,)]
    assert query(db, "select day::varchar, cost_usd from core.usage_costs order by 1") == [
        ("2026-11-21", Decimal("3")), ("2026-11-22", Decimal("3"))]
    # the override dropped: the catalogue alone, the house model unpriced again (never $0)
    run_pipeline(tmp_path, logs)
    assert query(db, "select count(*) filter (where priced), count(*) from core.usage_costs") == [(0, 2)]
