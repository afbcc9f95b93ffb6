"""Results kept on disk per version of what makes them (lib/disk_cache.py), and the price book's use of it."""

import sys

import pyarrow as pa

from pipelines.lib import disk_cache, prices


def test_a_table_is_built_once_per_key_and_a_damaged_or_unwritable_cache_is_rebuilt_or_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", str(tmp_path / "cache"))
    built = []

    def build(value):
        def make():
            built.append(value)
            return pa.table({"x": [value]})
        return make

    assert disk_cache.arrow_table("t", ["a"], build(1))["x"].to_pylist() == [1]
    assert disk_cache.arrow_table("t", ["a"], build(2))["x"].to_pylist() == [1]  # read, not built
    assert disk_cache.arrow_table("t", ["b"], build(3))["x"].to_pylist() == [3]  # another key: built
    assert built == [1, 3]
    for cached in (tmp_path / "cache").glob("t-*.arrow"):
        cached.write_bytes(b"not arrow")
    assert disk_cache.arrow_table("t", ["a"], build(4))["x"].to_pylist() == [4]  # damaged: built again
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", str(tmp_path / "file" / "cache"))  # cannot be made
    assert disk_cache.arrow_table("t", ["a"], build(5))["x"].to_pylist() == [5]


def test_the_price_book_and_known_models_come_from_the_cache_without_importing_the_catalogue(tmp_path, monkeypatch):
    # importing genai-prices and flattening it cost 0.3 CPU s of a run on a one-line log (bench/README.md): a run that
    # finds both kept on disk does neither; a model not seen before still resolves, and is kept too
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", str(tmp_path))
    first = prices.catalogue_table()
    pairs = [("openai", "gpt-4o-2024-08-06"), ("anthropic", "claude-sonnet-4-5-20250929")]
    assert prices.model_map_table(pairs)["price_model"].to_pylist() == ["gpt-4o", "claude-sonnet-4-5"]
    from pipelines.lib import catalogue

    monkeypatch.setattr(catalogue, "table", lambda: (_ for _ in ()).throw(AssertionError("rebuilt")))
    resolved = []
    real = catalogue.resolve_price_model
    monkeypatch.setattr(catalogue, "resolve_price_model", lambda *pair: resolved.append(pair) or real(*pair))
    assert prices.catalogue_table().equals(first)
    assert prices.model_map_table(pairs + [("openai", "gpt-4.1-mini-2025-04-14")])["price_model"].to_pylist() == [
        "gpt-4o", "claude-sonnet-4-5", "gpt-4.1-mini"]
    assert resolved == [("openai", "gpt-4.1-mini-2025-04-14")]  # only the new pair
    assert prices.model_map_table(pairs[:1])["price_model"].to_pylist() == ["gpt-4o"] and len(resolved) == 1
    # a process of its own with the cache warm: genai-prices is not imported at all
    import os
    import subprocess

    probe = ("import sys; from pipelines.lib import prices; prices.catalogue_table(); "
             "prices.model_map_table([('openai', 'gpt-4o-2024-08-06')]); print('genai_prices' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CACHEMETER_CACHE_DIR": str(tmp_path)})
    assert done.stdout.strip() == "False", done.stderr[-2000:]
