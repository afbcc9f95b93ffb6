"""``cachemeter whatif``: what routing by prefix or a given KV-cache size would change.

Examples::

    cachemeter whatif routing --logs mooncake-demo/logs --cards 4 --policy all
    cachemeter whatif routing --db warehouse/mine.duckdb --cards 8 --policy prefix_hash --format json
    cachemeter whatif routing --logs traces/ --cards 4 --policy round_robin --cache-gb 8 --model-config llama-3.1-70b
    cachemeter whatif kv --model-config llama-3.1-70b --tokens 1200 --cache-gb 8
    cachemeter whatif ttft --db warehouse/mine.duckdb --model-config llama-3.1-70b --card-tflops 989
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from pipelines.db_option import db_option
from pipelines.lib.terminal import Console, visible
from pipelines.lib.whatif import kv_memory, prefill, routing, routing_inputs, ttft_estimate

app = typer.Typer(help="What-if analysis: routing by prefix, KV-cache size, time to first token.", no_args_is_help=True,
                  add_completion=False, rich_markup_mode="markdown")
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, soft_wrap=True)
# cards a routing replay takes at most: each holds a prefix cache of its own, so --cards 100000000 took memory until
# the machine had none (a break test); a thousand is beyond any single deployment's replica count worth replaying
MAX_CARDS = 1000


class Policy(str, Enum):
    round_robin = "round_robin"
    prefix_hash = "prefix_hash"
    prefix_hash_split_hot = "prefix_hash_split_hot"
    all = "all"


class Format(str, Enum):
    table = "table"
    json = "json"


def _fail(message: str) -> None:
    err_console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(1)


@app.command("routing")
def routing_command(
    logs: Path = typer.Option(None, "--logs", help="Folder of block-hash traces (Mooncake format), or of any usage "
                              "logs (staged in memory; families from core.usage)."),
    db: str = db_option(None, help="A cachemeter warehouse: replay its core.usage rows (its snapshot when present).", envvar=None),
    cards: int = typer.Option(..., "--cards", min=1, max=MAX_CARDS,
                              help="Number of cards (replicas), each with its own prefix cache."),
    policy: Policy = typer.Option(Policy.all, "--policy", help="round_robin, prefix_hash, prefix_hash_split_hot or all."),
    capacity_tokens: int = typer.Option(None, "--capacity-tokens", min=1, help="Each card's LRU cache size in tokens "
                                        "(default: infinite)."),
    cache_gb: float = typer.Option(None, "--cache-gb", help="Each card's KV-cache size in GB (10^9 bytes); needs --model-config."),
    model_config: str = typer.Option(None, "--model-config", help="Model config: a shipped name "
                                     f"({', '.join(kv_memory.shipped_models())}) or a Hugging Face config.json."),
    block_tokens: int = typer.Option(None, "--block-tokens", min=1, help="Tokens per trace block (default: "
                                     "source.yaml block_size_tokens, else 512)."),
    output: Format = typer.Option(Format.table, "--format", help="table or json."),
) -> None:
    """Replay the requests in arrival order over `--cards` cards under a routing policy; print hit rate and load.

    Round robin sends request i to card i mod n; prefix hashing sends a family (the first two block ids
    of a trace, else the prefix family) to one card; splitting the hot family alternates it over two.

    With `--db`, every day of the warehouse is one stream (`marts.whatif_routing` replays each day alone).

    Example: `cachemeter whatif routing --logs mooncake-demo/logs --cards 4 --policy all --format json` (one trace per
    folder: two traces' block ids would collide; the README's Mooncake demo prepares this folder)
    """
    if (logs is None) == (db is None):
        _fail("give exactly one of --logs DIR and --db PATH")
    capacity = _capacity(capacity_tokens, cache_gb, model_config)
    try:
        requests = _requests(logs, db, block_tokens)
        if not requests:  # 0 requests and 0.0% hit rates read like an answer (a break test)
            raise ValueError(f"no requests to replay in {logs if logs is not None else db}: "
                             + ("no block-hash trace lines and no accepted usage records there" if logs is not None
                                else "the warehouse holds no usage yet (`cachemeter run` stages it)"))
        policies = routing.POLICIES if policy is Policy.all else (policy.value,)
        results = {name: routing.replay(requests, cards, name, capacity).as_dict() for name in policies}
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    if output is Format.json:
        print(json.dumps(results if policy is Policy.all else results[policy.value], indent=1))
        return
    table = Table("policy", *routing.RESULT_KEYS,
                  title=f"{len(requests):,} requests over {cards} card(s), "
                        f"{'infinite cache' if capacity is None else f'{capacity:,}-token LRU cache'} per card")
    for name, result in results.items():
        table.add_row(name, f"{result['token_hit_rate']:.1%}", f"{result['prefill_tokens']:,}",
                      f"{result['busiest_card_request_share']:.1%}", f"{result['busiest_card_prefill_share']:.1%}",
                      str(result["resident_copies_max"]), f"{result['evicted_tokens']:,}")
    console.print(table)


def _capacity(capacity_tokens: int | None, cache_gb: float | None, model_config: str | None) -> int | None:
    if capacity_tokens is not None and cache_gb is not None:
        _fail("give --capacity-tokens or --cache-gb, not both")
    if cache_gb is None:
        return capacity_tokens
    if model_config is None:
        _fail("--cache-gb needs --model-config (KV bytes per token come from the model)")
    try:
        return kv_memory.capacity_tokens(kv_memory.load_model_config(model_config), cache_gb)
    except ValueError as exc:
        _fail(str(exc))


def _requests(logs: Path | None, db: str | None, block_tokens: int | None) -> list[routing.Request]:
    if logs is not None:
        found = routing_inputs.read_trace_folder(logs, block_tokens)
        for line in found.skipped[:5]:
            err_console.print(f"[yellow]skipped[/yellow] {escape(line)}")
        if len(found.skipped) > 5:
            err_console.print(f"[yellow]... and {len(found.skipped) - 5:,} more skipped lines[/yellow]")
        if found.requests:
            if found.other_files:
                err_console.print(f"[dim]{len(found.other_files)} file(s) that are not block-hash traces were not "
                                  "replayed (use --db on their warehouse)[/dim]")
            return found.requests
        quarantined: list = []
        requests = _flatten(routing_inputs.staged_usage_requests(logs, quarantined=quarantined))
        for source_file, source_line, reason in quarantined[:5]:
            err_console.print(f"[yellow]quarantined[/yellow] {escape(f'{source_file}:{source_line}: {reason}')}")
        if len(quarantined) > 5:
            err_console.print(f"[yellow]... and {len(quarantined) - 5:,} more quarantined records[/yellow]")
        if quarantined:
            err_console.print(f"[dim]{len(requests):,} request(s) replayed; {len(quarantined):,} record(s) quarantined "
                              "and left out (`cachemeter run` keeps them in core.quarantine)[/dim]")
        return requests
    with _read_warehouse(db) as conn:
        return _flatten(routing_inputs.usage_requests(conn))


def _read_warehouse(db: str):
    """A read-only connection to the warehouse's snapshot when there is one, else to the warehouse."""
    import duckdb

    from pipelines.lib import warehouse

    try:
        return warehouse.open_for_reading(db)  # NotAWarehouseError is a ValueError: the commands print it as one line
    except duckdb.Error as exc:  # a lock held by the first run (no snapshot yet), a lake's missing files: one line
        raise ValueError(warehouse.reader_error(exc, db)) from exc


def _flatten(by_day: dict) -> list[routing.Request]:
    return [request for day in sorted(by_day) for request in by_day[day]]


@app.command("kv")
def kv_command(
    model_config: str = typer.Option(..., "--model-config", help="A shipped name "
                                     f"({', '.join(kv_memory.shipped_models())}) or a Hugging Face config.json."),
    tokens: int = typer.Option(..., "--tokens", min=1, help="Tokens of one cached prefix (e.g. a preamble)."),
    cache_gb: float = typer.Option(..., "--cache-gb", help="KV-cache memory in GB (10^9 bytes): a card's free memory."),
    context_tokens: int = typer.Option(None, "--context-tokens", min=1, help="Context length for seats "
                                       "(default: the model's max_position_embeddings)."),
    card_tflops: float = typer.Option(None, "--card-tflops", help="The card's peak dense TFLOP/s at the model's dtype "
                                      "(e.g. 989 for an H100 SXM in BF16): adds prefill seconds per copy."),
    utilization: float = typer.Option(prefill.DEFAULT_UTILIZATION, "--utilization",
                                      help="Fraction of peak TFLOP/s prefill achieves."),
    output: Format = typer.Option(Format.table, "--format", help="table or json."),
) -> None:
    """KV bytes per token, bytes per copy of a `--tokens` prefix, copies that fit and seats at a context length.

    KV bytes per token = layers x KV heads x head dim x 2 (K and V) x bytes per value; with
    `--card-tflops`, the seconds prefilling one copy costs (2 FLOPs per parameter per token), i.e. what
    each cache hit on it saves in time to first token.

    Example: `cachemeter whatif kv --model-config llama-3.1-70b --tokens 1200 --cache-gb 8`
    """
    try:
        model = kv_memory.load_model_config(model_config)
        result = kv_memory.kv_summary(model, tokens, cache_gb, context_tokens)
        if model.num_parameters is not None:
            result["prefill_flops_per_copy"] = prefill.prefill_flops(model.num_parameters, tokens)
            if card_tflops is not None:
                result["prefill_seconds_per_copy"] = prefill.prefill_seconds(model.num_parameters, tokens,
                                                                             card_tflops, utilization)
        elif card_tflops is not None:
            raise ValueError(f"{model_config}: the prefill estimate needs num_parameters in the model config")
    except ValueError as exc:
        _fail(str(exc))
    if output is Format.json:
        print(json.dumps(result, indent=1))
        return
    table = Table("quantity", "value", title=f"KV memory: {escape(model.name)}")
    for key, value in result.items():
        table.add_row(key, f"{value:,.4f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else escape(str(value)))
    console.print(table)


@app.command("ttft")
def ttft_command(
    db: str = db_option(..., help="A cachemeter warehouse (its snapshot when present).", envvar=None),
    model_config: str = typer.Option(..., "--model-config", help="A shipped name "
                                     f"({', '.join(kv_memory.shipped_models())}) or a Hugging Face config.json "
                                     "with num_parameters."),
    card_tflops: float = typer.Option(..., "--card-tflops", help="The card's peak dense TFLOP/s at the model's dtype "
                                      "(e.g. 989 for an H100 SXM in BF16)."),
    utilization: float = typer.Option(prefill.DEFAULT_UTILIZATION, "--utilization",
                                      help="Fraction of peak TFLOP/s prefill achieves."),
    top: int = typer.Option(20, "--top", min=1, help="Families shown in the table (JSON lists every family)."),
    output: Format = typer.Option(Format.table, "--format", help="table or json."),
) -> None:
    """Time to first token caching saved per prefix family: measured where the logs carry it, else estimated.

    For requests that logged no time to first token, the prefill seconds their cache reads saved:
    2 FLOPs per parameter per cached token / (`--card-tflops` x 10^12 x `--utilization`). Where TTFT
    was logged, the measured difference (median TTFT of misses - of hits, ms; `marts.ttft_by_family` per day).

    Example: `cachemeter whatif ttft --db warehouse/mine.duckdb --model-config llama-3.1-70b --card-tflops 989`
    """
    try:
        model = kv_memory.load_model_config(model_config)
        if model.num_parameters is None:
            raise ValueError(f"{model_config}: the prefill estimate needs num_parameters in the model config")
        with _read_warehouse(db) as conn:
            rows = ttft_estimate.family_rows(conn)
        families = ttft_estimate.estimate(rows, model.num_parameters, card_tflops, utilization)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    for family in families:
        saved = family["measured_median_ttft_saved_ms"]
        family["measured_median_ttft_saved_ms"] = None if saved is None else float(saved)
    if output is Format.json:
        print(json.dumps({"model": model.name, "num_parameters": model.num_parameters, "card_tflops": card_tflops,
                          "utilization": utilization, "flop_per_second": card_tflops * 1e12 * utilization,
                          "families": families}, indent=1))
        return
    table = Table("family", "model", "app", "requests", "unmeasured hits", "cache read tokens",
                  "est. prefill s saved", "est. s per hit", "measured", "measured median saved (ms)",
                  title=f"Time to first token: {escape(model.name)} ({model.num_parameters:,} parameters) on "
                        f"{card_tflops:g} TFLOP/s x {utilization:g}")
    for f in families[:top]:
        per_hit = f["prefill_seconds_saved_per_hit"]
        saved = f["measured_median_ttft_saved_ms"]
        table.add_row(escape(visible(f["prefix_family"])), escape(visible(f["model"] or "")), escape(visible(f["app"])), f"{f['requests']:,}", f"{f['unmeasured_hit_requests']:,}",
                      f"{f['unmeasured_cache_read_tokens']:,}", f"{f['prefill_seconds_saved']:,.3f}",
                      "" if per_hit is None else f"{per_hit:.4f}", f"{f['measured_requests']:,}",
                      "" if saved is None else f"{saved:,.1f}")
    console.print(table)
