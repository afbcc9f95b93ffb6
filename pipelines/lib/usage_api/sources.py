"""What cachemeter asks of each usage API for one UTC day, and what a documented page looks like.

OpenAI, organisation Usage API, completions
(https://platform.openai.com/docs/api-reference/usage/completions, with the Python SDK's
``admin.organization.usage.completions`` at
https://developers.openai.com/api/reference/python/resources/admin/subresources/organization/subresources/usage/methods/completions
and the cookbook https://cookbook.openai.com/examples/completions_usage_api):
``GET {base}/organization/usage/completions`` with ``Authorization: Bearer <admin key>``;
``start_time`` (unix s, inclusive), ``end_time`` (exclusive), ``bucket_width`` 1m/1h/1d, ``group_by``
(project_id, user_id, api_key_id, model, batch, service_tier; repeated as the cookbook sends it),
``limit`` (buckets per page: 1d max 31, 1h max 168), ``page`` (the previous ``next_page``). A page is
``{"object": "page", "data": [{"object": "bucket", "start_time", "end_time", "results": [...]}],
"has_more", "next_page"}``.

Anthropic Admin API, Usage and Cost API
(https://docs.anthropic.com/en/api/usage-cost-api,
https://platform.claude.com/docs/en/api/admin-api/usage-cost/get-messages-usage-report,
https://platform.claude.com/docs/en/api/admin-api/usage-cost/get-cost-report): headers ``x-api-key``
(an Admin key, ``sk-ant-admin...``) and ``anthropic-version: 2023-06-01``.
``GET {base}/organizations/usage_report/messages``: ``starting_at`` / ``ending_at`` (RFC 3339),
``bucket_width`` 1m/1h/1d, ``group_by[]`` (model, service_tier, context_window, workspace_id, ...),
``limit``, ``page``; ``GET {base}/organizations/cost_report``: ``bucket_width`` 1d only,
``group_by[]`` workspace_id / description, ``amount`` in the lowest currency unit (cents) as a decimal
string. Both answer ``{"data": [{"starting_at", "ending_at", "results": [...]}], "has_more", "next_page"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal, InvalidOperation

from pipelines.lib.usage_api.client import PageFailure

ANTHROPIC_VERSION = "2023-06-01"
BUCKETS_PER_DAY = {"1d": 1, "1h": 24}
OPENAI_GROUP_BY = ("project_id", "model", "batch", "service_tier")  # what the openai_usage_bucket adapter reads
# context_window: the long-context tier; inference_geo and speed: US-only inference and fast mode, each billed at a
# multiple of the list price (lib/price_rules.GEO_MULTIPLIERS, SPEED_MULTIPLIERS)
ANTHROPIC_GROUP_BY = ("model", "service_tier", "context_window", "inference_geo", "speed", "workspace_id")
COST_GROUP_BY = ("workspace_id", "description")  # description: model, service_tier, context_window, token_type


@dataclass(frozen=True)
class Source:
    """One API report: its folder ``name``, ``provider`` (whose key it needs), ``path`` under the base
    URL, the query of a day (``params``), the page check (``next_page``: the cursor of the next page, None
    on the last; raises ``PageFailure`` for a body that is not the documented shape) and whether the
    ingest reads its pages as usage (``usage``; the cost report is kept raw as billed cost)."""

    name: str
    provider: str
    path: str
    params: Callable[[date, str], list[tuple[str, str]]]
    next_page: Callable[[object], str | None]
    usage: bool = True


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=timezone.utc)
    return start, start + timedelta(days=1)


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def openai_params(day: date, bucket_width: str) -> list[tuple[str, str]]:
    start, end = _day_bounds(day)
    return [("start_time", str(int(start.timestamp()))), ("end_time", str(int(end.timestamp()))),
            ("bucket_width", bucket_width), ("limit", str(BUCKETS_PER_DAY[bucket_width])),
            *[("group_by", key) for key in OPENAI_GROUP_BY]]


def anthropic_params(group_by: tuple[str, ...], fixed_width: str | None = None) -> Callable[[date, str], list[tuple[str, str]]]:
    def params(day: date, bucket_width: str) -> list[tuple[str, str]]:
        start, end = _day_bounds(day)
        width = fixed_width or bucket_width
        return [("starting_at", _rfc3339(start)), ("ending_at", _rfc3339(end)), ("bucket_width", width),
                ("limit", str(BUCKETS_PER_DAY[width])), *[("group_by[]", key) for key in group_by]]
    return params


def _cursor(page: dict) -> str | None:
    """``next_page`` when ``has_more`` (a non-empty string), else None; PageFailure when they disagree."""
    has_more, cursor = page.get("has_more"), page.get("next_page")
    if not isinstance(has_more, bool):
        raise PageFailure("not a documented page: has_more is missing or not true/false")
    if has_more and not (isinstance(cursor, str) and cursor):
        raise PageFailure("not a documented page: has_more is true but next_page is not a cursor")
    return cursor if has_more else None


def _buckets(page: object, time_keys: tuple[str, str], kind: str) -> list[dict]:
    if not isinstance(page, dict) or not isinstance(page.get("data"), list):
        keys = ", ".join(list(page)[:6]) if isinstance(page, dict) else type(page).__name__
        raise PageFailure(f"not a documented {kind} page: no data list (got {keys})")
    for bucket in page["data"]:
        if not isinstance(bucket, dict) or not isinstance(bucket.get("results"), list) \
                or any(key not in bucket for key in time_keys):
            raise PageFailure(f"not a documented {kind} page: a bucket without {' / '.join(time_keys)} and results")
    return page["data"]


def openai_next_page(page: object) -> str | None:
    buckets = _buckets(page, ("start_time", "end_time"), "OpenAI usage")
    if page.get("object") != "page" or any(b.get("object") != "bucket" for b in buckets):
        raise PageFailure("not a documented OpenAI usage page: object is not page / bucket")
    return _cursor(page)


def anthropic_next_page(page: object) -> str | None:
    _buckets(page, ("starting_at", "ending_at"), "Anthropic report")
    return _cursor(page)


def cost_next_page(page: object) -> str | None:
    for bucket in _buckets(page, ("starting_at", "ending_at"), "Anthropic cost report"):
        for row in bucket["results"]:
            if not isinstance(row, dict) or billed_usd(row) is None:
                raise PageFailure("not a documented cost report page: a result without a decimal amount in USD")
    return _cursor(page)


MAX_CENTS_DIGITS = 25  # cents below 10^25 (10^23 USD): within DECIMAL(38, 15)'s 23 integer digits
# (compared by its exponent, Decimal.adjusted: abs() of such a value overflows the context too)


def billed_usd(row: dict) -> Decimal | None:
    """A cost-report result's billed amount in USD (exact): ``amount`` is cents as a decimal string
    ("123.45" is $1.2345); None when it is not a finite decimal or the currency is not USD."""
    if row.get("currency", "USD") != "USD" or not isinstance(row.get("amount"), str):
        return None
    try:
        cents = Decimal(row["amount"])
    except InvalidOperation:
        return None
    # an amount the warehouse's DECIMAL(38, 15) USD cannot hold is no documented amount ("1E+999999999" raised
    # decimal.Overflow and lost every page of the day, a break test): the page fails, stored and quarantined
    return cents / 100 if cents.is_finite() and cents.adjusted() < MAX_CENTS_DIGITS else None


SOURCES: tuple[Source, ...] = (
    Source("openai_completions", "openai", "organization/usage/completions", openai_params, openai_next_page),
    Source("anthropic_messages", "anthropic", "organizations/usage_report/messages",
           anthropic_params(ANTHROPIC_GROUP_BY), anthropic_next_page),
    Source("anthropic_cost_report", "anthropic", "organizations/cost_report",
           anthropic_params(COST_GROUP_BY, fixed_width="1d"), cost_next_page, usage=False),
)


def headers(provider: str, key: str) -> dict[str, str]:
    """The request headers of ``provider`` with its admin ``key`` (the only place a key goes)."""
    if provider == "openai":
        return {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION, "Accept": "application/json"}
