"""Price book building (lib/prices.py): catalogue flattening, overrides, model normalisation."""

from datetime import date
from decimal import Decimal

import polars as pl
import pytest

from pipelines.lib import prices
from tests.conftest import write_prices


@pytest.fixture(scope="module")
def catalogue() -> pl.DataFrame:
    return pl.from_arrow(prices.catalogue_table())


def test_catalogue_has_cache_read_and_1h_write_tiers_for_claude_sonnet_4_5(catalogue):
    # Anthropic pricing page, Claude Sonnet 4.5: $3 input, $0.30 read, $3.75 5m write, $6 1h write, $15 output
    rows = catalogue.filter((pl.col("provider") == "anthropic") & (pl.col("price_model") == "claude-sonnet-4-5")
                            & (pl.col("price_variant") == "standard")).sort("tier_start_tokens")
    base, long = rows.row(0, named=True), rows.row(1, named=True)
    assert (base["input_per_mtok"], base["cache_read_per_mtok"], base["cache_write_5m_per_mtok"],
            base["cache_write_1h_per_mtok"], base["output_per_mtok"]) == tuple(
        Decimal(x) for x in ("3", "0.3", "3.75", "6", "15"))
    assert long["tier_start_tokens"] == 200_000 and long["input_per_mtok"] == Decimal("6")


def test_missing_cache_prices_inherit_the_parent_rate_like_genai_prices(catalogue):
    # gpt-4o has no cache-write price in the catalogue: writes bill at the input rate (genai-prices inheritance)
    row = catalogue.filter((pl.col("provider") == "openai") & (pl.col("price_model") == "gpt-4o")
                           & (pl.col("price_variant") == "standard")).row(0, named=True)
    assert row["cache_write_5m_per_mtok"] == row["input_per_mtok"] == Decimal("2.5")
    assert row["cache_read_per_mtok"] == Decimal("1.25")


def test_time_of_day_prices_keep_their_utc_window(catalogue):
    windows = catalogue.filter((pl.col("provider") == "deepseek") & (pl.col("price_model") == "deepseek-chat")
                               & pl.col("utc_time_from").is_not_null())
    assert windows.height >= 1


@pytest.mark.parametrize("provider, model, expected", [
    ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
    ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "regional.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("gemini", "gemini-2.5-flash", "gemini-2.5-flash"),
    ("self_hosted", "Kimi-K2", "kimi-k2"),
    ("openai", "my-private-finetune", "my-private-finetune"),
])
def test_reported_models_resolve_to_catalogue_ids(provider, model, expected):
    assert prices.resolve_price_model(provider, model) == expected


def test_override_file_parses_exact_decimals_and_empty_cells(tmp_path):
    path = write_prices(tmp_path / "p.csv", [{"provider": "google", "model": "gemini-2.5-flash", "effective_from": "2026-01-01",
                                              "input_per_mtok": "0.30", "cache_read_per_mtok": "0.075", "output_per_mtok": "2.5"}])
    row = pl.from_arrow(prices.read_overrides(path)).row(0, named=True)
    assert row["provider"] == "gemini" and row["price_model"] == "gemini-2.5-flash"
    assert row["effective_from"] == date(2026, 1, 1) and row["priority"] == 1
    assert row["cache_read_per_mtok"] == Decimal("0.075") and row["cache_write_5m_per_mtok"] is None


@pytest.mark.parametrize("content, message", [
    ("provider,model\nopenai,gpt-4o\n", "header must be exactly"),
    ("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,cache_write_1h_per_mtok,"
     "output_per_mtok\nopenai,gpt-4o,2026-01-01,abc,,,,\n", r"p.csv:2: input_per_mtok 'abc' is not a number"),
    ("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,cache_write_1h_per_mtok,"
     "output_per_mtok\nopenai,gpt-4o,yesterday,1,,,,\n", "is not a YYYY-MM-DD date"),
    ("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,cache_write_1h_per_mtok,"
     "output_per_mtok\nopenai,gpt-4o,2026-01-01,-1,,,,\n", "non-negative"),
])
def test_bad_override_files_name_the_file_line_and_fix(tmp_path, content, message):
    path = tmp_path / "p.csv"
    path.write_text(content)
    with pytest.raises(prices.PriceOverrideError, match=message):
        prices.read_overrides(path)


def model_id_table() -> list[tuple[str, str, str]]:
    """(provider, reported model, catalogue id) rows of the 'Model ids' table in docs/formats.md."""
    from tests.conftest import REPO

    page = (REPO / "docs" / "formats.md").read_text()
    table = page[page.index("| Provider | Reported model | Catalogue id |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        provider, reported, catalogue = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append((provider, reported.split("`")[1], catalogue.strip("`")))
    return rows


@pytest.mark.parametrize("provider, reported, catalogue_id", [r for r in model_id_table() if r[0] != "azure"])
def test_model_id_normalisation_maps_what_the_docs_table_says(provider, reported, catalogue_id):
    assert prices.resolve_price_model(provider, reported) == catalogue_id


def test_the_docs_table_covers_the_routing_shapes():
    reported = [r[1] for r in model_id_table()]
    assert any(r.startswith("projects/") for r in reported) and any(r.startswith("arn:aws:bedrock") for r in reported)
    assert any(r.startswith(("us.", "eu.")) for r in reported) and any(r.startswith("global.") for r in reported)
    assert any(r.startswith("anthropic/") for r in reported) and ("azure", "prod-chat", "gpt-4o") in model_id_table()


def test_conflicting_override_rows_for_one_model_and_date_name_both_lines(tmp_path):
    path = write_prices(tmp_path / "p.csv", [
        {"provider": "openai", "model": "gpt-4o", "effective_from": "2026-01-01", "input_per_mtok": "2.5", "output_per_mtok": "10"},
        {"provider": "openai", "model": "gpt-4.1", "effective_from": "2026-01-01", "input_per_mtok": "2", "output_per_mtok": "8"},
        {"provider": "openai", "model": "gpt-4o-2024-08-06", "effective_from": "2026-01-01", "input_per_mtok": "9",
         "output_per_mtok": "10"}])
    with pytest.raises(prices.PriceOverrideError) as raised:
        prices.read_overrides(path)
    assert str(raised.value) == (f"{path}:2 and {path}:4: conflicting prices for openai gpt-4o from 2026-01-01; "
                                 "keep one row per provider, model and effective_from")


def test_an_identical_repeated_override_row_is_kept_once(tmp_path):
    row = {"provider": "openai", "model": "gpt-4o", "effective_from": "2026-01-01", "input_per_mtok": "2.5",
           "output_per_mtok": "10"}
    path = write_prices(tmp_path / "p.csv", [row, {**row, "effective_from": "2026-02-01"}, row])
    table = pl.from_arrow(prices.read_overrides(path)).filter(pl.col("price_variant") == "standard")
    assert table.select("effective_from", "price_source").rows() == [(date(2026, 1, 1), "override p.csv:2"),
                                                                      (date(2026, 2, 1), "override p.csv:3")]


def _rows(catalogue, provider, model, variant):
    return catalogue.filter((pl.col("provider") == provider) & (pl.col("price_model") == model)
                            & (pl.col("price_variant") == variant)).sort("precedence", "tier_start_tokens").select(
        "effective_from", "tier_start_tokens", *prices.PRICE_COLUMNS, "precedence").rows()


def test_a_model_without_a_catalogue_batch_price_gets_its_providers_batch_discount(catalogue):
    # a break test: genai-prices 0.2.3 has no batch price for Claude Opus 4.1 (and lists the others' from 2026-10-14
    # only), so batch requests were billed at the standard rate. Anthropic: "Message Batches API, 50 % on everything
    # including cache writes and reads" (providers.md 3.3); Opus 4.1: $15 / $1.50 / $18.75 / $30 / $75
    (standard,) = _rows(catalogue, "anthropic", "claude-opus-4-1", "standard")
    (batch,) = _rows(catalogue, "anthropic", "claude-opus-4-1", "batch")
    assert batch[2:7] == tuple(Decimal(x) for x in ("7.5", "0.75", "9.375", "15", "37.5"))
    assert batch[0] == standard[0] and batch[-1] < standard[-1]


def test_a_catalogue_batch_price_wins_from_its_first_day_and_the_discount_fills_the_days_before(catalogue):
    # claude-sonnet-4-5's catalogue batch variant starts 2026-10-14: the derived rows (both long-context tiers) rank
    # below it (precedence), so a batch request before that date takes the 50 % rows and one after the catalogue's
    derived, derived_long, listed, listed_long = _rows(catalogue, "anthropic", "claude-sonnet-4-5", "batch")
    assert (derived[0], listed[0]) == (prices.EPOCH, date(2026, 10, 14)) and derived[-1] < listed[-1]
    assert derived[2:7] == listed[2:7] == tuple(Decimal(x) for x in ("1.5", "0.15", "1.875", "3", "7.5"))
    assert derived_long[1] == 200_000 and derived_long[2] == Decimal("3")  # half the $6 long-context input
    # OpenAI halves input and output only (providers.md 1.5), as the catalogue's own variants do: gpt-4o's cache
    # read keeps its standard $1.25
    (gpt4o, *_) = _rows(catalogue, "openai", "gpt-4o", "batch")
    assert (gpt4o[0], gpt4o[2], gpt4o[3], gpt4o[6]) == (prices.EPOCH, Decimal("1.25"), Decimal("1.25"), Decimal("5"))


def test_a_provider_without_a_documented_batch_discount_gets_no_derived_batch_rows(catalogue):
    assert _rows(catalogue, "deepseek", "deepseek-chat", "batch") == []


def test_a_claude_models_missing_1_hour_write_is_twice_its_input(catalogue):
    # a break test: Vertex lists no 1-hour write for Claude Sonnet 4, and genai-prices' inheritance billed it at the
    # 5-minute rate ($3.75); Anthropic's 1-hour write is 2x input (providers.md 3.3; Bedrock 5.3): $6
    ((_, _, inp, _, write_5m, write_1h, _, _),) = _rows(catalogue, "gemini", "claude-4-sonnet", "standard")
    assert (inp, write_5m, write_1h) == (Decimal("3"), Decimal("3.75"), Decimal("6"))
    # a model that is not Claude keeps genai-prices' inheritance (its 5-minute write price, here the input rate)
    (gpt4o, *_) = _rows(catalogue, "openai", "gpt-4o", "standard")
    assert gpt4o[5] == gpt4o[4] == gpt4o[2] == Decimal("2.5")


def test_an_override_gets_a_batch_row_at_its_providers_discount(tmp_path):
    path = write_prices(tmp_path / "p.csv", [
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "effective_from": "2026-11-01", "input_per_mtok": "3",
         "cache_read_per_mtok": "0.3", "cache_write_5m_per_mtok": "3.75", "cache_write_1h_per_mtok": "6",
         "output_per_mtok": "15"},
        {"provider": "self_hosted", "model": "kimi-k2", "input_per_mtok": "1", "output_per_mtok": "2"}])
    table = pl.from_arrow(prices.read_overrides(path)).sort("provider", "price_variant")
    assert table.select("provider", "price_variant", *prices.PRICE_COLUMNS, "priority").rows() == [
        ("anthropic", "batch", *(Decimal(x) for x in ("1.5", "0.15", "1.875", "3", "7.5")), 1),
        ("anthropic", "standard", *(Decimal(x) for x in ("3", "0.3", "3.75", "6", "15")), 1),
        ("self_hosted", "standard", Decimal(1), None, None, None, Decimal(2), 1)]


def test_an_override_may_state_its_batch_rates_in_an_optional_price_variant_column(tmp_path):
    # negotiated batch rates (or a bill's, as cost case C12 states Anthropic's): a stated batch row replaces the derived one
    base = {"provider": "anthropic", "model": "claude-sonnet-4-5", "effective_from": "2026-06-01"}
    path = write_prices(tmp_path / "p.csv", [{**base, "input_per_mtok": "3", "output_per_mtok": "15"},
                                            {**base, "input_per_mtok": "1.2", "output_per_mtok": "6", "price_variant": "batch"}])
    table = pl.from_arrow(prices.read_overrides(path)).sort("price_variant")
    assert table.select("price_variant", "input_per_mtok", "output_per_mtok", "price_source").rows() == [
        ("batch", Decimal("1.2"), Decimal("6"), "override p.csv:3"), ("standard", Decimal("3"), Decimal("15"), "override p.csv:2")]
    bad = write_prices(tmp_path / "bad.csv", [{**base, "input_per_mtok": "3", "price_variant": "Batch"}])
    with pytest.raises(prices.PriceOverrideError, match=r"bad.csv:2: price_variant 'Batch' must be one of standard, batch, "
                                                        r"priority, flex \(empty: standard\)"):
        prices.read_overrides(bad)


def test_deepseeks_peak_windows_apply_on_weekdays_only_and_its_older_window_every_day(catalogue):
    # providers.md 6: v4 peak hours 01:00-04:00 and 06:00-10:00 UTC on weekdays; deepseek-chat's 00:30-16:30 window (the
    # catalogue's older scheme) carries no weekday rule
    windows = catalogue.filter((pl.col("provider") == "deepseek") & pl.col("utc_time_from").is_not_null()).select(
        "price_model", "utc_time_from", "weekdays_only").unique().sort("price_model", "utc_time_from").rows()
    by_model = {}
    for model, start, weekdays in windows:
        by_model.setdefault(model, []).append((start.strftime("%H:%M"), weekdays))
    assert by_model["deepseek-v4-pro"] == [("01:00", True), ("06:00", True)]
    assert by_model["deepseek-chat"] == [("00:30", False)]
