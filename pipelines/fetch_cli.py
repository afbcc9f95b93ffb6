"""``cachemeter fetch``: pull usage from the providers' organisation APIs into the logs folder.

Examples::

    OPENAI_ADMIN_KEY=... cachemeter fetch usage-api --logs ~/llm-logs                 # yesterday (UTC), every keyed API
    ANTHROPIC_ADMIN_KEY=... cachemeter fetch usage-api --day 2026-11-20 --source anthropic --logs ~/llm-logs
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from enum import Enum
from pathlib import Path

import typer
from rich.markup import escape

app = typer.Typer(help="Fetch usage from provider APIs into the logs folder.", no_args_is_help=True,
                  add_completion=False, rich_markup_mode="markdown")


class Provider(str, Enum):
    openai = "openai"
    anthropic = "anthropic"
    all = "all"


def yesterday_utc() -> date:
    return datetime.now(timezone.utc).date() - timedelta(days=1)


def _fail(message: str) -> None:
    from pipelines.cli import err_console

    err_console.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(1)


@app.command("usage-api")
def usage_api_command(
    day: datetime = typer.Option(None, "--day", formats=["%Y-%m-%d"], help="UTC day to fetch (default: yesterday, UTC)."),
    source: Provider = typer.Option(Provider.all, "--source", help="openai, anthropic or all (those with a key)."),
    logs: Path = typer.Option(..., "--logs", envvar="CACHEMETER_LOGS", help="Logs folder; pages go to "
                              "LOGS/_cachemeter/usage_api/ and are staged by the next `cachemeter run`."),
) -> None:
    """Fetch one UTC day of the OpenAI Usage API and the Anthropic usage and cost reports; store each page raw.

    Keys come from `OPENAI_ADMIN_KEY` / `ANTHROPIC_ADMIN_KEY` (never logged or stored). Re-fetching a day
    replaces its pages; unchanged pages are left as they are. A page that fails is stored as a record
    the next run quarantines with the reason; the command then exits 1.

    Example: `cachemeter fetch usage-api --day 2026-11-20 --logs ./logs && cachemeter run --logs ./logs`
    """
    from pipelines.cli import console, err_console
    from pipelines.lib.usage_api import pages

    try:
        config = pages.Config.from_env()
    except ValueError as exc:
        _fail(str(exc))
    wanted = [p for p in pages.PROVIDERS if source.value in ("all", p)]
    missing = [p for p in wanted if p not in config.keys]
    if source != Provider.all and missing or not pages.configured(config, source.value):
        names = " or ".join(f"{p.upper()}_ADMIN_KEY" for p in missing)
        _fail(f"no admin key: set {names} (an organisation Admin key) to fetch usage from the provider's API")
    for provider in missing:
        console.print(f"[dim]{provider}: no {provider.upper()}_ADMIN_KEY, skipped[/dim]")
    the_day = day.date() if day else yesterday_utc()
    if the_day > yesterday_utc():  # (9999-12-31 overflowed a day's end: "OverflowError", a break test)
        _fail(f"--day {the_day} has not ended yet (UTC): fetch {yesterday_utc()} or an earlier day")
    try:
        results = pages.fetch_day(logs, the_day, config, source.value)
    except OSError as exc:
        _fail(str(exc))
    for result in results:
        line = (f"{result.source} {result.day}: {result.pages} page(s), {result.written} written, "
                f"{result.unchanged} unchanged, {result.removed} removed")
        if result.billed_usd is not None:
            line += f"; billed ${result.billed_usd:,.4f}"
        console.print(escape(line), soft_wrap=True)
        if result.failure:
            err_console.print(f"[red]failed page:[/red] {escape(result.failure)} (quarantined by the next run)")
    console.print(f"Pages under {escape(str(Path(logs) / pages.MANAGED_DIR))}; stage them with: cachemeter run --logs {escape(str(logs))}",
                  soft_wrap=True)
    if any(r.failure for r in results):
        raise typer.Exit(1)
