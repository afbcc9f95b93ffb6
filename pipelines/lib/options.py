"""Every cachemeter setting, declared once: name, default, unit and meaning.

One ``Option`` per setting. From this table come

* the fields and defaults of the Dagster resource ``CachemeterSettings`` (``pipelines/defs/settings.py``),
* the bundled ``cachemeter.yaml`` (``render_config``; a test keeps the committed file equal to it),
* the environment override of every setting, ``CACHEMETER_<NAME>`` (``values``),
* the SQL parameters of the alert and mart statements: ``$<name>`` (``sql_params``),
* the settings table of the README (``render_table``; drift-tested like ``docs/tables.md``).

An option with a ``key`` lives in the configuration file at that dotted path; one without is read from
the environment only (where the warehouse is, what the process may use). Units: ``share`` is a
fraction 0..1, ``USD`` is money, ``days`` / ``hours`` / ``seconds`` / ``requests`` / ``records`` count
what they say.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date
from typing import Callable, Mapping, MutableMapping


# the spellings a boolean setting takes (YAML 1.1's, which a cachemeter.yaml writer may use, and 1/0)
TRUE = frozenset({"1", "true", "yes", "y", "on"})
FALSE = frozenset({"0", "false", "no", "n", "off"})
# the range a number in each unit takes (inclusive), unless its option says otherwise: a setting out of it was
# accepted and failed deep in a run ("Out of Range Error: Invalid RANGE PRECEDING value" for baseline_days -3) or did
# nothing (a min_drop of 5 on a hit rate, a share of 0..1). The upper ends are far beyond any use and below what the
# statements and clocks hold: report_days 1,000,000 stopped every run at "date value out of range", alert_baseline_days
# 3,000,000,000 at a cast to INT32, complete_lag_hours 10^20 at "Python int too large to convert to C int" and
# webhook_timeout_seconds 10^20 at "timestamp out of range for platform time_t" (break tests).
YEARS_100_DAYS = 36_500
INT32_MAX = 2**31 - 1
UNIT_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "share": (0, 1), "days": (1, YEARS_100_DAYS), "requests": (0, INT32_MAX), "records": (0, INT32_MAX),
    "rows": (0, INT32_MAX), "attempts": (1, 1000), "retries": (0, 1000), "hours": (0, 24 * YEARS_100_DAYS),
    "seconds": (0, 10**9), "USD": (0, 10**12), "standard errors": (0, 1000), "processes": (1, 1024),
    "hour (UTC)": (0, 23),
}
SHARE_ABOVE_ONE = (0, 1000)  # a share of a reported amount that may exceed it (a bill 10x the list price is 9.0)


def _is_date(text: str) -> bool:
    """A calendar date written YYYY-MM-DD."""
    try:
        return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text.strip())) and date.fromisoformat(text.strip()) is not None
    except ValueError:
        return False


def _is_cron(text: str) -> bool:
    """A cron schedule Dagster takes (five fields, no 30th of February): Dagster's own test, so a schedule it would
    refuse when loading the definitions is refused where it is set."""
    from dagster._utils.schedules import is_valid_cron_string

    return is_valid_cron_string(text)


def _is_positive_size(text: str) -> bool:
    """A size DuckDB takes: a number above 0 and its unit (DuckDB refuses a number without one)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(b|bytes|kb|mb|gb|tb|kib|mib|gib|tib)\s*", text, re.IGNORECASE)
    return found is not None and float(found.group(1)) > 0


def _number(bound: float) -> str:
    """A range's end as a person reads it: ``36,500``, ``2,147,483,647``, ``0.1`` (not ``2.14748e+09``)."""
    return f"{int(bound):,}" if bound == int(bound) else f"{bound:g}"


@dataclass(frozen=True)
class Option:
    """One setting. ``name`` is its Python attribute and SQL parameter; its environment variable is
    ``CACHEMETER_<NAME>``; ``key`` its dotted path in ``cachemeter.yaml`` (None: environment only)."""

    name: str
    default: object
    unit: str
    meaning: str
    key: str | None = None
    variable: str | None = None  # the environment variable when it is not CACHEMETER_<NAME> (a provider's own name)
    bounds: tuple[float | None, float | None] | None = None  # the value's range, when not its unit's (UNIT_BOUNDS)
    choices: tuple[str, ...] | None = None  # the values a name takes
    pattern: str | None = None  # a regular expression a text must match whole (case-insensitive)
    check: Callable[[str], bool] | None = None  # whether a text is a value in its unit (a date, a cron schedule, a size)

    @property
    def where(self) -> str:
        """How a message names the setting: its file key and variable, or its variable."""
        return f"{self.key} / {self.env}" if self.key else self.env

    @property
    def env(self) -> str:
        """The environment variable that overrides this setting (``variable``, else ``CACHEMETER_<NAME>``)."""
        return self.variable or f"CACHEMETER_{self.name.upper()}"

    def parse(self, raw: object) -> object:
        """``raw`` (a YAML value or an environment string) as this option's type (that of its default).

        Raises ``ValueError`` naming the option when it does not parse, is out of its range (``bounds``, else its
        unit's ``UNIT_BOUNDS``) or is not one of its ``choices``.
        """
        value = self._typed(raw)
        unit_low, unit_high = UNIT_BOUNDS.get(self.unit, (None, None))
        low, high = self.bounds or (None, None)  # a side an option leaves open is its unit's
        low, high = unit_low if low is None else low, unit_high if high is None else high
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                value != value or (low is not None and value < low) or (high is not None and value > high)):
            span = (f"from {_number(low)} to {_number(high)}" if high is not None else f"at least {_number(low)}") \
                if low is not None else f"at most {_number(high)}"
            raise ValueError(f"setting {self.where}: {raw!r} is out of range ({self.unit}: {span})")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"setting {self.where}: {raw!r} is not one of {', '.join(self.choices)}")
        if (self.pattern is not None and not re.fullmatch(self.pattern, str(value), re.IGNORECASE)) or (
                self.check is not None and not self.check(str(value))):
            raise ValueError(f"setting {self.where}: {raw!r} is not a value in {self.unit}, e.g. {self.default}")
        return value

    def _typed(self, raw: object) -> object:
        kind = type(self.default)
        try:
            if kind is bool:
                if isinstance(raw, bool):
                    return raw
                text = str(raw).strip().lower()
                if text not in TRUE | FALSE:
                    raise ValueError(raw)
                return text in TRUE
            if kind is list:
                items = raw if isinstance(raw, list) else [t for t in str(raw).split(",") if t.strip()]
                return [str(t).strip() for t in items]
            if kind is int:
                if isinstance(raw, float) or (isinstance(raw, str) and not raw.strip().lstrip("-").isdigit()):
                    raise ValueError(raw)
                return int(raw)
            if kind is float:
                return float(raw)
            return str(raw)
        except (TypeError, ValueError):
            raise ValueError(f"setting {self.where}: {raw!r} is not a {kind.__name__}") from None


# The file settings, in the order cachemeter.yaml lists them.
FILE_OPTIONS: tuple[Option, ...] = (
    Option("alert_baseline_days", 7, "days", "trailing window every baseline is computed over; late data rebuilds 3x this many days after it",
           "alerts.baseline_days"),
    Option("alert_min_requests", 50, "requests", "a series needs this many requests on the day and in its baseline",
           "alerts.min_requests"),
    Option("alert_min_drop", 0.20, "share", "token hit rate this far below the baseline raises a warning",
           "alerts.hit_rate_drop.min_drop"),
    Option("alert_critical_drop", 0.40, "share", "... and this far, a critical alert", "alerts.hit_rate_drop.critical_drop"),
    Option("incident_recovery_drop", 0.10, "share",
           "a series has recovered when its hit rate is within this of the frozen baseline (< min_drop: hysteresis)",
           "alerts.incidents.recovery_drop"),
    Option("incident_recovery_days", 2, "days",
           "... on this many complete days in a row; other rules: this many days without their alert",
           "alerts.incidents.recovery_days"),
    Option("incident_reference_days", 28, "days", "the baseline level: pre-incident days of the last this many (catches gradual drift)",
           "alerts.incidents.reference_days"),
    Option("incident_min_reference_days", 7, "days", "days of history a series needs before it is judged",
           "alerts.incidents.min_reference_days"),
    Option("incident_pool_max_days", 7, "days", "a low-volume series pools its last days (up to this many) to reach min_requests",
           "alerts.incidents.pool_max_days"),
    Option("incident_confidence_z", 2.0, "standard errors", "the drop must also exceed this many standard errors of the day-to-day noise",
           "alerts.incidents.confidence_z"),
    Option("incident_quiet_days", 7, "days",
           "a series incident resolves when its series sends no traffic for this many complete days (the app retired or renamed)",
           "alerts.incidents.quiet_days"),
    Option("complete_lag_hours", 1.0, "hours", "a UTC day is judged once the logs reach this far past its end",
           "alerts.incidents.complete_lag_hours"),
    Option("roi_window_days", 7, "days", "cache-write premiums vs read savings summed over this many days",
           "alerts.negative_cache_roi.window_days"),
    Option("roi_min_write_premium_usd", 1.00, "USD", "ignore families whose premiums are smaller than this",
           "alerts.negative_cache_roi.min_write_premium_usd"),
    Option("below_minimum_margin", 0.80, "share", "prompts between this share and 100% of the model's minimum cacheable length",
           "alerts.below_cache_minimum.margin"),
    Option("below_minimum_min_share", 0.50, "share", "... make up at least this share of the family's requests that day",
           "alerts.below_cache_minimum.min_share"),
    Option("isolated_tenants", [], "tenant names", "tenants that must never share a prefix family with another tenant",
           "alerts.cross_tenant_prefix.isolated_tenants"),
    Option("unpriced_min_requests", 1, "requests", "unpriced requests of one model on a day before it alerts",
           "alerts.unpriced_usage.min_requests"),
    Option("mismatch_share", 0.01, "share", "reported (billed) and computed cost differ by more than this share of the reported",
           "alerts.cost_mismatch.share", bounds=SHARE_ABOVE_ONE),
    Option("mismatch_min_usd", 0.01, "USD", "... and by more than this on the day (provider, model)",
           "alerts.cost_mismatch.min_usd"),
    Option("mismatch_critical_share", 0.10, "share", "a critical alert from this share on", "alerts.cost_mismatch.critical_share",
           bounds=SHARE_ABOVE_ONE),
    Option("price_share", 0.05, "share",
           "billed and list cost differ by at least this share of the billed on the day (provider, model), however few USD",
           "alerts.price_mismatch.share", bounds=SHARE_ABOVE_ONE),
    Option("price_min_rows", 2, "rows", "... and on at least this many billed rows, each by this share in the same direction",
           "alerts.price_mismatch.min_rows"),
    Option("price_critical_share", 0.20, "share", "a critical alert from this share on", "alerts.price_mismatch.critical_share",
           bounds=SHARE_ABOVE_ONE),
    Option("quality_max_quarantine_share", 0.01, "share",
           "quarantined / records of the day (a quarantined line counts on the day of the accepted line before it in its file)",
           "alerts.data_quality.max_quarantine_share"),
    Option("quality_min_records", 100, "records", "only judge days with at least this many records",
           "alerts.data_quality.min_records"),
    Option("webhook_url_env", "CACHEMETER_WEBHOOK_URL", "variable name",
           "environment variable holding the webhook URL (never logged)", "webhook.url_env"),
    Option("webhook_format", "generic", "name",
           "generic (JSON), slack, pagerduty (Events v2: https://events.pagerduty.com/v2/enqueue) or alertmanager",
           "webhook.format", choices=("generic", "slack", "pagerduty", "alertmanager")),
    Option("webhook_routing_key_env", "CACHEMETER_PAGERDUTY_ROUTING_KEY", "variable name",
           "pagerduty: environment variable holding the routing key (never logged)", "webhook.routing_key_env"),
    Option("webhook_max_attempts", 5, "attempts",
           "a notice whose request the webhook refused (HTTP 400, 409, 413, 415, 422) this many times is "
           "dead-lettered (marts.alert_deliveries) and the run warns; any other failure keeps it due",
           "webhook.max_attempts"),
    # at least 0.1 s: 0 passed, then every post failed on "BlockingIOError: Operation now in progress" (a socket
    # timeout of 0 is non-blocking), and a budget of 0 posted nothing, every run green (a break test)
    Option("webhook_timeout_seconds", 10.0, "seconds", "per post", "webhook.timeout_seconds", bounds=(0.1, None)),
    Option("webhook_time_budget_seconds", 120.0, "seconds",
           "a delivery pass stops posting after this long; the rest go out with the next pass", "webhook.time_budget_seconds",
           bounds=(0.1, None)),
    Option("webhook_window_days", 3, "days",
           "announce only incidents opened, or still open and firing, within this many days of the newest usage day",
           "webhook.first_enable_window_days"),
)

# Settings read from the environment only (where things are, what the process may use).
ENV_OPTIONS: tuple[Option, ...] = (
    Option("db", "", "path", "DuckDB warehouse file, absolute path (embedded, no server), or ducklake:<catalog> (lib/lake.py); CLI: --db (else this variable), default warehouse/cachemeter.duckdb"),
    Option("data_path", "", "path", "a DuckLake's Parquet folder or s3://bucket/prefix, needed when its catalog is created; CLI: --data-path, default <catalog file>.files"),
    Option("parallel", 1, "processes", "processes that build the pending days at once on a DuckLake with a PostgreSQL "
           "catalog (pipelines/parallel_days.py, docs/scaling.md); elsewhere one after another; CLI: --parallel"),
    Option("logs", "", "path", "folder, or bucket prefix (s3://, gs://, az://), scanned recursively for usage logs; CLI: --logs, default the bundled demo"),
    # a date, a schedule and a size checked where they are set: "garbage", "not a cron" and a memory limit of 0 each
    # passed and stopped every run deep inside with "an unexpected error", `doctor` saying "settings ok" (a break test)
    Option("partitions_start", "2020-01-01", "UTC date", "first daily partition; earlier records are quarantined, and "
           "days staged before it was raised keep what was built (a warning says so)",
           check=_is_date),
    Option("nightly_cron", "30 2 * * *", "cron (UTC)", "when the nightly schedule stages the logs", check=_is_cron),
    Option("nightly_deadline_hour", 6, "hour (UTC)", "hour by which yesterday must be built, else a notice"),
    Option("prices", "", "path", "price override CSV (USD per million tokens); CLI: --prices"),
    Option("follow_symlinks", False, "0 / 1", "follow symlinks that leave the logs folder"),
    Option("config", "cachemeter.yaml", "path", "the settings file (default: the repository's cachemeter.yaml)"),
    Option("webhook_url", "", "URL", "where incident notices are posted (a secret; the variable's name is webhook.url_env)"),
    Option("pagerduty_routing_key", "", "secret", "PagerDuty Events v2 routing key (webhook.format: pagerduty; name: webhook.routing_key_env)"),
    Option("memory_limit", "1GB", "bytes (DuckDB size)", "DuckDB buffer pool limit; larger intermediates spill to disk",
           check=_is_positive_size),
    Option("sql_timeout", 300, "seconds", "time an ad-hoc `cachemeter sql` query may run (0 = no limit)"),
    Option("debug", False, "flag", "1/true/yes/on: an error no command expected shows its traceback (to report it), not "
           "one line; 0/false/no/off: the line"),
    Option("report_days", 30, "days", "UTC days of data report.html shows, counting back from the last (the run's report; "
           "CLI: cachemeter report --days)"),
    Option("gx_sample_rows", 200000, "rows", "rows Great Expectations validates per check at most (0 = all)"),
    Option("cache_dir", "", "path", "where the report's offline JavaScript bundle is kept (default $XDG_CACHE_HOME/cachemeter, else ~/.cache/cachemeter)"),
    Option("shared_dir", "", "path", "folder of the shared data and handed cases the tests read (default ../shared beside the repository)"),
    Option("kill_at", "", "crash point", "testing only: SIGKILL the process at this crash point (pipelines/lib/faults.py)"),
    Option("openai_admin_key", "", "secret", "OpenAI organisation Admin key for the Usage API (`cachemeter fetch usage-api`; "
           "never logged or stored); unset: OpenAI is not fetched", variable="OPENAI_ADMIN_KEY"),
    Option("anthropic_admin_key", "", "secret", "Anthropic Admin API key for the usage and cost reports (never logged or "
           "stored); unset: Anthropic is not fetched", variable="ANTHROPIC_ADMIN_KEY"),
    Option("openai_api_base", "https://api.openai.com/v1", "URL", "base URL of the OpenAI organisation API (a proxy, or a test server)"),
    Option("anthropic_api_base", "https://api.anthropic.com/v1", "URL", "base URL of the Anthropic Admin API (a proxy, or a test server)"),
    Option("usage_api_cron", "0 2 * * *", "cron (UTC)", "when usage_api_schedule fetches yesterday from the usage APIs "
           "(before the nightly staging; on only when a key is set)", check=_is_cron),
    Option("usage_api_bucket_width", "1d", "1d / 1h", "bucket width of the fetched usage pages (the cost report is always 1d)",
           choices=("1d", "1h")),
    Option("usage_api_retries", 5, "retries", "a page answered 429 or 5xx (or not at all) is asked again this many times, "
           "waiting Retry-After or an exponential backoff"),
    Option("usage_api_backoff_seconds", 1.0, "seconds", "first backoff between retries (doubled each time, at most 60 s)"),
    Option("usage_api_timeout_seconds", 30.0, "seconds", "per page asked: its whole answer", bounds=(0.1, None)),
)

OPTIONS: tuple[Option, ...] = FILE_OPTIONS + ENV_OPTIONS
BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}


def env_value(name: str, environ: Mapping[str, str] | None = None) -> object:
    """Environment-only option ``name``: ``CACHEMETER_<NAME>`` parsed, else its declared default.

    Raises ``KeyError`` for an undeclared name, ``ValueError`` when the variable does not parse.
    """
    option = BY_NAME[name]
    raw = (os.environ if environ is None else environ).get(option.env)
    return option.default if raw is None or not raw.strip() else option.parse(raw)


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Parse every environment-only variable that is set; raises ``ValueError`` naming the first bad one (a run and
    ``cachemeter doctor`` check them up front, before any of them is first read deep in a run)."""
    for option in ENV_OPTIONS:
        env_value(option.name, environ)


def unset_blank_variables(environ: MutableMapping[str, str]) -> list[str]:
    """Remove from ``environ`` every declared variable (``CACHEMETER_*`` and the providers' own) whose value is blank
    (``CACHEMETER_DB=" "`` left by a template), so it counts as unset everywhere, as ``values`` and ``env_value``
    already count it, and typer's ``envvar=`` options take their defaults instead of refusing ``" "`` (``--days``,
    ``--parallel``, ``--timeout``) or naming a file ``" "`` (``--db``). Returns the names removed."""
    declared = {o.env for o in OPTIONS}
    blank = [name for name, value in environ.items()
             if (name in declared or name.startswith("CACHEMETER_")) and not value.strip()]
    for name in blank:
        del environ[name]
    return blank


def values(config: Mapping, environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Every file option's value: ``CACHEMETER_<NAME>`` if set, else the file's ``key``, else the default.

    ``config`` is the parsed ``cachemeter.yaml`` (a mapping, possibly empty). Raises ``ValueError``
    naming the option for a value of the wrong type.
    """
    environ = os.environ if environ is None else environ
    out: dict[str, object] = {}
    for option in FILE_OPTIONS:
        raw = environ.get(option.env)
        if raw is None or not str(raw).strip():  # a blank variable (CACHEMETER_X=" ") is unset
            raw = _lookup(config, option.key)
        out[option.name] = option.default if raw is None else option.parse(raw)
    return out


def unknown_keys(config: Mapping) -> list[str]:
    """The dotted keys of a parsed ``cachemeter.yaml`` that name no setting (a typo, ``alertz:`` or
    ``webhook.formatt``, was ignored and the default used without a word), each with the closest declared key
    when one is near (``alerts.baseline_dayz (alerts.baseline_days?)``), in the file's order."""
    import difflib

    declared = {o.key for o in FILE_OPTIONS}
    sections = {".".join(o.key.split(".")[:depth]) for o in FILE_OPTIONS for depth in range(1, o.key.count(".") + 1)}
    found: list[str] = []

    def walk(node: Mapping, prefix: str) -> None:
        for name, value in node.items():
            key = f"{prefix}{name}"
            if key in sections and isinstance(value, Mapping):
                walk(value, key + ".")
            elif key in sections and value is not None:  # (an empty section, `alerts:`, is the defaults)
                found.append(f"{key} (a section: its settings go under it)")
            elif key not in declared and key not in sections:
                near = difflib.get_close_matches(key, sorted(declared | sections), n=1)
                found.append(f"{key} ({near[0]}?)" if near else key)
    walk(config, "")
    return found


def _lookup(config: Mapping, key: str) -> object:
    node: object = config
    for part in key.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:g}"
    return str(value)


CONFIG_HEADER = """\
# cachemeter settings: alert thresholds, minimum volumes and webhook delivery. The values here are the
# defaults; copy this file and point CACHEMETER_CONFIG at it to change them, or override one setting
# with its variable (CACHEMETER_<NAME>, listed in the README's settings table).
# Generated from pipelines/lib/options.py (python -m pipelines.lib.options); rates are fractions (0..1), money is USD.
"""


def render_config() -> str:
    """The bundled ``cachemeter.yaml``: every file option at its default, commented with its meaning."""
    lines = [CONFIG_HEADER.rstrip("\n")]
    opened: list[str] = []
    for option in FILE_OPTIONS:
        *parents, leaf = option.key.split(".")
        common = 0
        while common < min(len(opened), len(parents)) and opened[common] == parents[common]:
            common += 1
        for depth in range(common, len(parents)):
            lines.append("  " * depth + parents[depth] + ":")
        opened = parents
        entry = "  " * len(parents) + f"{leaf}: {_yaml_scalar(option.default)}"
        lines.append(f"{entry:<38} # [{option.unit}] {option.meaning}")
    return "\n".join(lines) + "\n"


def render_table() -> str:
    """The README's settings table (markdown): file key, variable, default, unit, meaning."""
    rows = ["| setting (`cachemeter.yaml`) | variable | default | unit | meaning |", "|---|---|---|---|---|"]
    for option in OPTIONS:
        key = f"`{option.key}`" if option.key else "(variable only)"
        if isinstance(option.default, bool):
            default = "1" if option.default else "0"
        else:
            default = _yaml_scalar(option.default) if option.default not in ("", []) else "(none)"
        rows.append(f"| {key} | `{option.env}` | {default} | {option.unit} | {option.meaning.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def readme_sections() -> dict[str, str]:
    """The README's generated tables by marker name: the settings and the alert rules (``alert_rules``)."""
    from pipelines.lib import alert_rules  # it reads the options' defaults: imported here, not at the top

    return {"settings table": render_table(), "alert rules table": alert_rules.render_table()}


def readme_with_tables(readme: str) -> str:
    """``readme`` with the text between each generated table's markers
    (``<!-- NAME: generated by python -m pipelines.lib.options -->`` ... ``<!-- end of NAME -->``) regenerated.

    Raises ``ValueError`` naming the markers that are missing.
    """
    for name, body in readme_sections().items():
        start_marker, end_marker = f"<!-- {name}: generated by python -m pipelines.lib.options -->", f"<!-- end of {name} -->"
        start, end = readme.find(start_marker), readme.find(end_marker)
        if start < 0 or end < start:
            raise ValueError(f"README.md: markers {start_marker!r} ... {end_marker!r} not found")
        readme = readme[:start + len(start_marker)] + "\n" + body + readme[end:]
    return readme


if __name__ == "__main__":  # regenerate cachemeter.yaml and the README's generated tables in place
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    (root / "cachemeter.yaml").write_text(render_config())
    readme = root / "README.md"
    readme.write_text(readme_with_tables(readme.read_text()))
