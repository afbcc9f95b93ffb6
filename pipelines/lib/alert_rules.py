"""The alert rules, declared once: name (its SQL file ``sql/alerts/cache_alerts__insert_<name>.sql``),
when it fires and what to do, in the order the rules run (a known cause mutes the generic rule).

The texts name their thresholds as ``{option}`` fields of ``pipelines/lib/options.py``, so the README's
rules table (``render_table``, drift-tested) always shows the defaults the code uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.lib import options


@dataclass(frozen=True)
class Rule:
    """One rule: ``name``, ``fires_when`` and ``what_to_do`` (markdown; ``{option}`` fields filled in)."""

    name: str
    fires_when: str
    what_to_do: str


RULES: tuple[Rule, ...] = (
    Rule("rotating_preamble",
         "the series' opening started changing (distinct leading blocks jump, or consecutive requests now diverge "
         "inside what used to be shared, or cache reads pin at one size while prompts vary, or pin at a smaller size "
         "than before: the token offset where reads now stop) **and** its hit rate dropped by {alert_min_drop:.2f}+; "
         "once, on the first day (a previous traffic day more than {previous_day_days} days back does not continue "
         "an incident); names the offset and the shape of the changing value",
         "move the changing value (time, id, name) after the shared opening"),
    Rule("hit_rate_drop",
         "daily evidence: a series' token hit rate is {alert_min_drop:.2f}+ below its trailing {alert_baseline_days}-day "
         "baseline (critical from {alert_critical_drop:.2f}), {alert_min_requests}+ requests; the incident comes from the "
         "lifecycle below (frozen {incident_reference_days}-day / same-weekday baseline, noise bound, pooling)",
         "look for a deploy that changed the opening or the traffic mix"),
    Rule("negative_cache_roi",
         "a family's cache-write premiums over {roi_window_days} days exceed what its reads saved (premiums of "
         "${roi_min_write_premium_usd:.2f}+); every such day, one incident while it lasts",
         "cache less, or keep the prefix warm within its TTL"),
    Rule("below_cache_minimum",
         "at least {below_minimum_min_share:.0%} of a family's prompts sit between {below_minimum_margin:.0%} and 100% of the "
         "model's minimum cacheable length",
         "pad or reorder so the stable part passes the minimum"),
    Rule("cross_tenant_prefix",
         "a family is shared by several tenants, one of them listed as isolated (`isolated_tenants`)",
         "separate the openings (or cache keys) per tenant"),
    Rule("unpriced_usage",
         "a model has {unpriced_min_requests}+ requests on a day that no price covers",
         "add it with `--prices`"),
    Rule("cost_mismatch",
         "the cost a source reports as billed (OpenRouter, LiteLLM, Langfuse, `reported_cost_usd`) differs from the "
         "list cost of the same rows by more than {mismatch_share:.0%} and ${mismatch_min_usd:.2f} on a day "
         "(critical from {mismatch_critical_share:.0%})",
         "check the price (`--prices`) or the source's token counts"),
    Rule("price_mismatch",
         "a model's bills differ from its list price by {price_share:.0%}+ on the day and on {price_min_rows}+ billed rows "
         "each, in the same direction, however few dollars (critical from {price_critical_share:.0%}); names the rates "
         "the bills imply",
         "add the `--prices` line the message gives"),
    Rule("data_quality",
         "more than {quality_max_quarantine_share:.0%} of a day's records were quarantined (a bad line counts on the "
         "day of the accepted line before it in its file; a file with none, on the newest usage day by its last "
         "write; days of {quality_min_records}+ records); or a usage key no "
         "token class maps carried "
         "tokens on a day (one finding per format and key, naming its tokens: `core.usage.unmapped_usage`)",
         "read `core.quarantine` for the reasons; map the key or declare it informational in "
         "`pipelines/ingest/formats.yaml`"),
)

NAMES: tuple[str, ...] = tuple(r.name for r in RULES)


def render_table() -> str:
    """The README's rules table (markdown), thresholds at their declared defaults."""
    defaults = {o.name: o.default for o in options.FILE_OPTIONS}
    # a rotating preamble continues across a gap of at most baseline + 1 days (sql/alerts/..._rotating_preamble.sql)
    defaults["previous_day_days"] = defaults["alert_baseline_days"] + 1
    rows = ["| rule | fires when | what to do |", "|---|---|---|"]
    rows += [f"| `{r.name}` | {r.fires_when.format(**defaults)} | {r.what_to_do} |" for r in RULES]
    return "\n".join(rows) + "\n"
