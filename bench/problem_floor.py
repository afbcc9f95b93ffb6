"""The floor of the problem, not of this design: ``python bench/problem_floor.py --requests N [--workdir DIR] [--repeat R]
[--compare WAREHOUSE]``, one JSON line.

What any tool must do to answer "what did caching cost and save" for one day of ``generate.py``'s logs (its five
formats, 5M requests at most on this machine), done the cheapest way DuckDB allows, alternating with the bare parse
that ``bench/run.py`` compares against:

* ``read_price_write_seconds``: one statement reads each record's fields typed and projected (``read_json`` with
  ``columns``: the envelope's six fields and the usage counts of the five formats, nothing else), turns them into
  the canonical token classes (uncached input, cache read, cache write 5m, output, reasoning), prices each request
  exactly (DECIMAL(38, 15) USD, ``sql/macros/usd.sql``) at the catalogue rates of its model, and writes one row per
  request with its usage and its list cost, no-cache cost and savings to a table of a new DuckDB file, checkpointed;
* ``aggregate_seconds``: the daily savings by (day, provider, model, tenant, app) from that table.

What it leaves out, and a real run cannot: every check that a value is what it claims to be (DuckDB's typed
read turns ``1.5`` into 2, ``"12"`` into 12 and ``true`` into 1, where cachemeter defers such a line to the general
normaliser, which rejects or explains it), format detection over 30 formats, quarantine and the accounting
identity rows in = accepted + quarantined, duplicate ids, file identity for re-runs, prefix families, the
accounting and Great Expectations checks, alert rules, what-ifs, the snapshot, the report, and the start of
Dagster and Great Expectations. So this is a floor under any design: a run cannot be cheaper than it.

``--compare WAREHOUSE`` (a warehouse ``cachemeter run`` built from the same logs) adds ``agrees``: whether this
floor's row count and its total list cost, no-cache cost and savings equal that warehouse's ``core.usage_costs``
to the last digit (the floor did the pricing work the run does, not less). Not part of the test run
(``tests/test_bench_smoke.py`` runs it on a tiny input).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import generate  # noqa: E402
from run import bare_parse_seconds  # noqa: E402

from pipelines.lib import prices  # noqa: E402
from pipelines.lib.sql import statement  # noqa: E402

# the fields the five formats' usage rows need (generate.body), typed as DuckDB reads them
COLUMNS = """{
    ts: 'TIMESTAMPTZ', provider: 'VARCHAR', model: 'VARCHAR', tenant: 'VARCHAR', app: 'VARCHAR', request_id: 'VARCHAR',
    response: 'STRUCT(
        usage STRUCT(
            prompt_tokens BIGINT, completion_tokens BIGINT, prompt_tokens_details STRUCT(cached_tokens BIGINT),
            input_tokens BIGINT, input_tokens_details STRUCT(cached_tokens BIGINT), output_tokens BIGINT,
            output_tokens_details STRUCT(reasoning_tokens BIGINT), cache_read_input_tokens BIGINT,
            cache_creation_input_tokens BIGINT, cache_creation STRUCT(ephemeral_5m_input_tokens BIGINT),
            inputTokens BIGINT, outputTokens BIGINT, cacheReadInputTokens BIGINT, cacheWriteInputTokens BIGINT),
        usageMetadata STRUCT(promptTokenCount BIGINT, cachedContentTokenCount BIGINT, candidatesTokenCount BIGINT))'
}"""

# One pass: read, canonical token classes, price, write. Formats by shape, as generate.body writes them.
READ_PRICE_WRITE = f"""
create table usage as
with rows as (
    select
        r.request_id, r.ts, (r.ts at time zone 'UTC')::date as day, r.provider, r.model, r.tenant, r.app,
        case
            when r.response.usageMetadata is not null then 'gemini'
            when r.response.usage.inputTokens is not null then 'bedrock'
            when r.response.usage.prompt_tokens is not null then 'chat'
            when r.response.usage.input_tokens_details is not null then 'responses'
            else 'anthropic'
        end as shape,
        r.response.usage as u, r.response.usageMetadata as g
    from read_json($path, format = 'newline_delimited', columns = {COLUMNS}) r
),
classes as (
    select
        request_id, ts, day, provider, model, tenant, app,
        case shape
            when 'gemini' then g.promptTokenCount - coalesce(g.cachedContentTokenCount, 0)
            when 'bedrock' then u.inputTokens
            when 'chat' then u.prompt_tokens - coalesce(u.prompt_tokens_details.cached_tokens, 0)
            when 'responses' then u.input_tokens - coalesce(u.input_tokens_details.cached_tokens, 0)
            else u.input_tokens
        end as uncached_input_tokens,
        case shape
            when 'gemini' then coalesce(g.cachedContentTokenCount, 0)
            when 'bedrock' then coalesce(u.cacheReadInputTokens, 0)
            when 'chat' then coalesce(u.prompt_tokens_details.cached_tokens, 0)
            when 'responses' then coalesce(u.input_tokens_details.cached_tokens, 0)
            else coalesce(u.cache_read_input_tokens, 0)
        end as cache_read_tokens,
        case shape
            when 'bedrock' then coalesce(u.cacheWriteInputTokens, 0)
            when 'anthropic' then coalesce(u.cache_creation.ephemeral_5m_input_tokens, u.cache_creation_input_tokens, 0)
            else 0
        end as cache_write_5m_tokens,
        case shape
            when 'gemini' then g.candidatesTokenCount
            when 'bedrock' then u.outputTokens
            when 'chat' then u.completion_tokens
            else u.output_tokens
        end as output_tokens,
        u.output_tokens_details.reasoning_tokens as reasoning_tokens
    from rows
),
priced as (
    select
        c.*,
        usd(c.uncached_input_tokens, p.input_per_mtok) + usd(c.cache_read_tokens, p.cache_read_per_mtok)
            + usd(c.cache_write_5m_tokens, p.cache_write_5m_per_mtok) + usd(c.output_tokens, p.output_per_mtok) as list_cost_usd,
        usd(c.uncached_input_tokens + c.cache_read_tokens + c.cache_write_5m_tokens, p.input_per_mtok)
            + usd(c.output_tokens, p.output_per_mtok) as no_cache_cost_usd
    from classes c
    left join rates p on p.provider = c.provider and p.model = c.model
)
select *, no_cache_cost_usd - list_cost_usd as savings_usd from priced
"""

AGGREGATE = """
create table daily_savings as
select day, provider, model, tenant, app, count(*) as requests,
       sum(uncached_input_tokens + cache_read_tokens + cache_write_5m_tokens) as prompt_tokens,
       sum(cache_read_tokens) as cache_read_tokens, sum(cache_read_tokens) / sum(uncached_input_tokens + cache_read_tokens
       + cache_write_5m_tokens) as token_hit_rate, sum(list_cost_usd) as cost_usd, sum(savings_usd) as savings_usd
from usage
group by all
"""


def rates(day: date) -> pa.Table:
    """The catalogue's standard, untiered rates (USD per million tokens) of ``generate.MODELS`` on ``day``, by the
    provider and model the logs report (``prices.resolve_price_model``, as a run resolves them)."""
    catalogue = prices.catalogue_table()
    with duckdb.connect() as conn:
        conn.execute("create table models (provider varchar, model varchar, price_model varchar)")
        conn.executemany("insert into models values (?, ?, ?)",
                         [(p, m, prices.resolve_price_model(p, m)) for p, m in generate.MODELS.values()])
        return conn.execute("""
            select m.provider, m.model, arg_max(c.input_per_mtok, c.effective_from) as input_per_mtok,
                   arg_max(c.cache_read_per_mtok, c.effective_from) as cache_read_per_mtok,
                   arg_max(c.cache_write_5m_per_mtok, c.effective_from) as cache_write_5m_per_mtok,
                   arg_max(c.output_per_mtok, c.effective_from) as output_per_mtok
            from models m join catalogue c on c.provider = m.provider and c.price_model = m.price_model
            where c.price_variant = 'standard' and c.tier_start_tokens = 0 and c.utc_time_from is null
              and c.effective_from <= $day
            group by all""", {"day": day}).to_arrow_table()


def floor_once(logs: Path, db: Path, rate_table: pa.Table) -> dict:
    """Wall seconds of the one-pass statement (with its checkpoint) and of the aggregate, into a new file ``db``."""
    for stale in db.parent.glob(db.name + "*"):
        stale.unlink()
    files = sorted(logs.glob("*.jsonl"))
    with duckdb.connect(str(db)) as conn:
        conn.execute("set enable_progress_bar = false")
        conn.execute(statement("macros/usd"))
        conn.register("rates", rate_table)
        start = time.perf_counter()
        conn.execute(READ_PRICE_WRITE, {"path": [str(f) for f in files]})
        conn.execute("checkpoint")
        written = time.perf_counter() - start
        start = time.perf_counter()
        conn.execute(AGGREGATE)
        conn.execute("checkpoint")
        aggregated = time.perf_counter() - start
        totals = conn.execute("select count(*), count(list_cost_usd), sum(list_cost_usd), sum(no_cache_cost_usd), "
                              "sum(savings_usd) from usage").fetchone()
    return {"write": written, "aggregate": aggregated, "totals": totals}


def compare(totals: tuple, warehouse: Path) -> bool:
    """Whether the floor's row count and totals equal the run's ``core.usage_costs`` (every digit)."""
    with duckdb.connect(str(warehouse), read_only=True) as conn:
        theirs = conn.execute("select count(*), count(list_cost_usd), sum(list_cost_usd), sum(no_cache_cost_usd), "
                              "sum(savings_usd) from core.usage_costs").fetchone()
    return tuple(totals) == tuple(theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--workdir", type=Path, default=Path("bench-work"))
    parser.add_argument("--repeat", type=int, default=1, help="alternate the bare parse and the floor this many times")
    parser.add_argument("--compare", type=Path, help="a warehouse cachemeter built from the same logs")
    args = parser.parse_args()
    logs = args.workdir / f"logs-{args.requests}-1"
    if not logs.exists():
        generate.generate(args.requests, 1, logs)
    rate_table = rates(generate.FIRST_DAY.date())
    parses, rounds = [], []
    for _ in range(max(args.repeat, 1)):
        parses.append(bare_parse_seconds(logs))
        rounds.append(floor_once(logs, args.workdir / "problem-floor.duckdb", rate_table))
    parse = statistics.median(parses)
    write = statistics.median(r["write"] for r in rounds)
    aggregate = statistics.median(r["aggregate"] for r in rounds)
    totals = rounds[-1]["totals"]
    line = {"requests": args.requests, "parse_seconds": round(parse, 2), "read_price_write_seconds": round(write, 2),
            "aggregate_seconds": round(aggregate, 2), "floor_seconds": round(write + aggregate, 2),
            "floor_ratio_to_parse": round((write + aggregate) / parse, 2), "rows": totals[0], "priced_rows": totals[1],
            "list_cost_usd": str(totals[2]), "savings_usd": str(totals[4])}
    if args.repeat > 1:
        line.update(runs=len(rounds), parse_seconds_each=[round(p, 2) for p in parses],
                    floor_seconds_each=[round(r["write"] + r["aggregate"], 2) for r in rounds])
    if args.compare:
        line["agrees"] = compare(totals, args.compare)
    print(json.dumps(line))


if __name__ == "__main__":
    main()
