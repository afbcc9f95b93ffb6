"""``cachemeter doctor``: checks of the install and setup, each with what to fix."""

from __future__ import annotations

import importlib.metadata as metadata
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.lib import lake, options, warehouse

PACKAGES = ("dagster", "dagster-duckdb", "duckdb", "polars", "pyarrow", "great-expectations", "genai-prices",
            "altair", "vl-convert-python")


@dataclass(frozen=True)
class Result:
    """One check: ``status`` is ok, warn or fail; ``detail`` says what was found or how to fix it."""

    name: str
    status: str
    detail: str


def run_checks(db: Path) -> list[Result]:
    """Every check, in order; never raises."""
    return [_packages(), _catalogue(), _settings(), _warehouse(db), _snapshot(db), _dagster_home(), _webhook(db)]


def _settings() -> Result:
    """The settings file and variables as a run reads them (a bad file or value stopped doctor itself with "an
    unexpected error", a break test: the one problem it should name)."""
    from pipelines.defs.settings import CachemeterSettings

    named = os.environ.get("CACHEMETER_CONFIG", "").strip()
    try:
        CachemeterSettings.from_env()
        options.check_environment()
    except ValueError as exc:
        return Result("settings", "fail", str(exc))
    source = named or "the bundled cachemeter.yaml (defaults)"
    return Result("settings", "ok", f"{source}; variables CACHEMETER_<NAME> override single settings")


def _packages() -> Result:
    missing, found = [], []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return Result("install", "fail", f"missing {', '.join(missing)}: run `make install`")
    return Result("install", "ok", "; ".join(found))


def _catalogue() -> Result:
    from pipelines.lib import prices

    table = prices.catalogue_table()
    latest = max(d for d in table.column("effective_from").to_pylist() if d is not None)
    return Result("price catalogue", "ok" if table.num_rows else "fail",
                  f"{prices.catalogue_source()}: {table.num_rows:,} price rows, newest dated price {latest}; no network "
                  "used. Newer prices: upgrade genai-prices in pyproject.toml, or add rows with --prices")


def _warehouse(db: Path) -> Result:
    if not warehouse.exists(db):
        return Result("warehouse", "warn", f"{db} does not exist yet: {warehouse.run_that_builds(db)} builds it")
    try:
        with warehouse.connect(db, read_only=True) as conn:
            days, last = conn.execute("select count(distinct day), max(day) from core.usage").fetchall()[0]
            current = warehouse.up_to_date(conn)
    except Exception as exc:  # a lock held by a run, or a damaged file
        holder = warehouse.lock_holder(exc) if isinstance(exc, duckdb.IOException) else None
        if holder is not None:  # DuckDB's own words were "IO Error: Could not set lock on file ..."
            return Result("warehouse", "warn", f"{db}: a run is writing it now ({holder}); readers read its snapshot "
                          "meanwhile: run `cachemeter doctor` again when the run ends to check the warehouse itself")
        if isinstance(exc, duckdb.CatalogException):  # a DuckDB file no run has prepared
            return Result("warehouse", "warn", f"{db} holds no cachemeter tables yet: the first `cachemeter run` creates them")
        # a damaged or foreign file: every run and reader fails on it
        recorded = f"; its catalog records its data files at {found}" if (found := _lake_files(db)) else ""
        return Result("warehouse", "fail", f"{db} cannot be read: {lake.with_files_hint(str(exc).splitlines()[0])}"
                                           f"{recorded}")
    files = f"; data files at {recorded}" if (recorded := _lake_files(db)) else ""
    if not current:  # (a break test: "ok" on a warehouse of an older release, which report and whatif refused)
        return Result("warehouse", "warn", f"{db}: {days} day(s) of usage, last {last}{files}; written by another "
                      "version of cachemeter: the next `cachemeter run` brings it up to date (until then `report` and "
                      "`whatif` may refuse it)")
    if not days:
        return Result("warehouse", "ok", f"{db}: no usage yet (a run has staged no accepted record){files}")
    return Result("warehouse", "ok", f"{db}: {days} day(s) of usage, last {last}{files}")


def _lake_files(db) -> str | None:
    """Where a lake's catalog records its Parquet files (None for a DuckDB file, or when it cannot be read)."""
    if not lake.is_lake(db):
        return None
    try:
        with warehouse.connect(db, read_only=True) as conn:
            return lake.recorded_data_path(conn)
    except (duckdb.Error, ValueError):
        return None


def _snapshot(db: Path) -> Result:
    """What readers read, and the days staged but not built yet that its numbers lack (``unbuilt_days_note``)."""
    if lake.is_lake(db):
        try:  # a lake's readers read its last commit, staging's pending days among them
            with warehouse.open_for_reading(db) as conn:
                note = warehouse.unbuilt_days_note(conn, db)
        except (duckdb.Error, OSError, ValueError) as exc:
            return Result("snapshot", "warn", f"{db} cannot be read: {str(exc).splitlines()[0]}")
        if note:
            return Result("snapshot", "warn", f"{db}: {note}")
        return Result("snapshot", "ok", "a DuckLake: readers read its committed snapshots, no copy is published")
    path = warehouse.snapshot_path(db)
    if not path.exists():
        unbuilt = warehouse.unbuilt_days_note(None, db)  # the first run died after staging
        return Result("snapshot", "warn", f"{path} missing: a successful `cachemeter run` publishes it"
                      + (f"; {unbuilt}" if unbuilt else ""))
    if warehouse.unbuilt_days_path(db).exists():  # staged since this snapshot: a run died, or one is under way
        try:
            with warehouse.connect(path, read_only=True) as conn:
                note = warehouse.unbuilt_days_note(conn, db)
        except (duckdb.Error, ValueError) as exc:
            note = f"cannot be read ({str(exc).splitlines()[0]})"
        return Result("snapshot", "warn", f"{path}: {note}")
    try:  # a damaged copy (a truncated file was "ok", a break test): readers fail on it until a run publishes anew
        with warehouse.connect(path, read_only=True) as conn:
            conn.execute("select count(*) from core.usage").fetchall()
    except (duckdb.Error, OSError) as exc:
        return Result("snapshot", "fail", f"{path} cannot be read ({str(exc).splitlines()[0]}): the next successful "
                      "`cachemeter run` publishes it again; meanwhile `cachemeter sql --live` reads the warehouse")
    return Result("snapshot", "ok", f"{path} ({path.stat().st_size / 1e6:.1f} MB): `cachemeter sql` reads it during runs")


def _dagster_home() -> Result:
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        made = Path(".dagster_home").resolve()  # the Makefile's DAGSTER_HOME, set for its own commands only
        if (made / "dagster.yaml").is_file():
            return Result("DAGSTER_HOME", "warn", f"not set in this shell: runs are not recorded; `make demo` and "
                                                  f"`make dagster-dev` record theirs in {made}: "
                                                  f"export DAGSTER_HOME={made}")
        return Result("DAGSTER_HOME", "warn", "not set: runs are not recorded; `make dagster-dev` sets ./.dagster_home")
    if Path(home).exists() and not Path(home).is_dir():
        return Result("DAGSTER_HOME", "fail", f"{home} is not a folder: Dagster keeps its runs in one")
    if not Path(home).exists():  # (it was "has no dagster.yaml", a break test)
        return Result("DAGSTER_HOME", "warn", f"{home} does not exist yet: a run creates it, with Dagster's default "
                      "settings unless the repository's dagster.yaml is copied there (make dagster-dev does)")
    config = Path(home) / "dagster.yaml"
    if not config.is_file():
        return Result("DAGSTER_HOME", "warn", f"{home} has no dagster.yaml: copy the repository's (make dagster-dev does)")
    try:  # a run opens the instance from it: a file that does not parse stopped every run (a break test)
        import yaml

        parsed = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        return Result("DAGSTER_HOME", "fail", f"{config} cannot be read: {str(exc).splitlines()[0]}")
    if parsed is not None and not isinstance(parsed, dict):
        return Result("DAGSTER_HOME", "fail", f"{config}: expected a mapping of Dagster's instance settings")
    return Result("DAGSTER_HOME", "ok", home)


def _webhook(db: Path) -> Result:
    """The webhook's settings as a run would use them (a malformed URL, an unknown format, PagerDuty without its
    routing key: every post fails, and a break test found doctor saying "ok" to each), then the notices not delivered
    yet and those given up lately (``_undelivered_notices``)."""
    from pipelines.defs.settings import CachemeterSettings
    from pipelines.lib import webhook

    try:
        settings = CachemeterSettings.from_env()
    except ValueError:
        return Result("alert webhook", "warn", "not checked: the settings cannot be read (the settings check says why)")
    name = settings.webhook_url_env
    url = os.environ.get(name)
    if not url:
        return Result("alert webhook", "warn", f"{name} is not set: alerts and failed-night notices stay in "
                                               "the warehouse and the Dagster UI (set it to have them posted)")
    try:
        webhook.check_url(url)
    except webhook.DeliveryError as exc:
        return Result("alert webhook", "fail", f"{name}: {exc}")
    problem = webhook.setup_problem(webhook.DeliveryOptions(
        format=settings.webhook_format, routing_key=os.environ.get(settings.webhook_routing_key_env)))
    if problem:
        return Result("alert webhook", "fail", problem)
    waiting = _undelivered_notices(db, settings.webhook_window_days)
    if waiting:
        return Result("alert webhook", "warn", f"{name} is set (value hidden), format {settings.webhook_format}; {waiting}")
    return Result("alert webhook", "ok", f"{name} is set (value hidden), format {settings.webhook_format}")


def _undelivered_notices(db: Path, window_days: int) -> str | None:
    """"N incident notice(s) tried and not delivered yet (last error: ...)" and "M given up (dead_letter) in the last 7
    days", from the warehouse itself (the attempts reach the snapshot a run late), or from its snapshot while a run
    holds it; None when there are none or nothing can be read. "Not delivered yet" is what the next run posts
    (``alerts/alert_deliveries__pending.sql``), not every failed row: a break test saw doctor count attempts of
    notices no longer due, and call a dead-lettered notice one the next run would post."""
    from pipelines.lib import webhook
    from pipelines.lib.sql import statement

    try:
        try:
            conn = warehouse.connect(db, read_only=True) if not lake.is_lake(db) else warehouse.open_for_reading(db)
        except duckdb.IOException:  # a run holds it: what its snapshot says
            conn = warehouse.open_for_reading(db)
        with conn:
            cursor = conn.execute(statement("alerts/alert_deliveries__pending"), webhook.pending_params(window_days))
            attempts = [d[0] for d in cursor.description].index("attempts")
            tried = [row for row in cursor.fetchall() if row[attempts] > 0]
            error = conn.execute(
                "select arg_max(error, attempted_at) from marts.alert_deliveries where status = 'failed'").fetchall()[0][0]
            given_up = conn.execute("select count(*) from marts.alert_deliveries where status = 'dead_letter' "
                                    "and attempted_at >= now() - interval 7 day").fetchall()[0][0]
    except (duckdb.Error, OSError, ValueError):  # no warehouse yet: the settings were checked, enough here
        return None
    said = []
    if tried:
        said.append(f"{len(tried)} incident notice(s) tried and not delivered yet (last error: {error}); the next run "
                    "posts them again")
    if given_up:
        said.append(f"{given_up} notice(s) given up (dead_letter: the webhook refused the request "
                    "webhook.max_attempts times) in the last 7 days: see marts.alert_deliveries")
    return "; ".join(said) or None
