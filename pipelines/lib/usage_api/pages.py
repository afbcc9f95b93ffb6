"""Fetch a UTC day of every configured usage API and store its pages raw under the logs folder.

Layout (relative to the logs folder; ``MANAGED_DIR`` is cachemeter's own, written by nothing else)::

    _cachemeter/usage_api/<source>/<YYYY-MM-DD>/page-0001.json       usage pages, read by the ingest
    _cachemeter/usage_api/anthropic_cost_report/<day>/page-0001.json.raw   cost pages, kept raw (not usage)

Each page is the API's body byte for byte, written atomically (a temporary file in the same folder,
then ``os.replace``), so the ingest sees a whole page or none. A day is fetched whole and replaces that
day's pages: a page whose bytes are unchanged is not touched (same file, same mtime: the ingest skips
it), a changed one is replaced, pages beyond the new last one are removed; the ingest replaces or drops
the rows of managed pages instead of keeping old generations (``generations.plan``), so re-fetching a
day never counts it twice. A page that fails (non-retryable 4xx, retries exhausted, no answer, a body
that is not the documented shape) is stored as a one-object file ``{"usage_api_fetch_failed": reason,
...}`` at its place: the ingest quarantines it with that reason (rows in = accepted + quarantined), and
the pages after it, whose cursor is unknown, are not fetched. Keys are read from the environment
(``OPENAI_ADMIN_KEY``, ``ANTHROPIC_ADMIN_KEY``) and go only into request headers.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.lib import options
from pipelines.lib.usage_api import MANAGED_DIR, client, sources

if TYPE_CHECKING:
    import requests

MAX_PAGES = 1000  # a day of 1-hour buckets is a few pages; more means a cursor that never ends
_PAGE_NAME = re.compile(r"page-(\d{4,})\.json(\.raw)?")
PROVIDERS = ("openai", "anthropic")


@dataclass(frozen=True)
class Config:
    """Keys and base URLs by provider, the bucket width (1d or 1h) and the retry options."""

    keys: Mapping[str, str]
    bases: Mapping[str, str]
    bucket_width: str = "1d"
    retry: client.RetryOptions = client.RetryOptions()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Config":
        """From the declared options (``pipelines/lib/options.py``); ValueError naming a bad setting."""
        value = lambda name: options.env_value(name, environ)  # noqa: E731
        width = str(value("usage_api_bucket_width"))
        if width not in sources.BUCKETS_PER_DAY:
            raise ValueError(f"setting CACHEMETER_USAGE_API_BUCKET_WIDTH: {width!r} is not 1d or 1h")
        keys = {p: str(value(f"{p}_admin_key")) for p in PROVIDERS}
        bases = {p: str(value(f"{p}_api_base")) for p in PROVIDERS}
        for provider, base in bases.items():  # "notaurl" failed every page with "(MissingSchema)", a break test
            parts = urllib.parse.urlsplit(base)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"setting {options.BY_NAME[f'{provider}_api_base'].env}: {base!r} is not an http(s) URL")
        return cls(keys={p: k for p, k in keys.items() if k}, bases=bases,
                   bucket_width=width,
                   retry=client.RetryOptions(int(value("usage_api_retries")), float(value("usage_api_backoff_seconds")),
                                             float(value("usage_api_timeout_seconds"))))


@dataclass
class SourceDay:
    """What fetching one source's day did: ``pages`` fetched (the failed one included), files ``written``
    (new or changed), ``unchanged`` and ``removed``; ``failure`` the one-line reason of a failed page;
    ``billed_usd`` the cost report's total (exact USD; cost report only, None when a page failed)."""

    source: str
    day: date
    pages: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    failure: str | None = None
    billed_usd: Decimal | None = None
    folder: Path | None = field(default=None, repr=False)


def day_folder(logs: Path, source: str, day: date) -> Path:
    return Path(logs) / MANAGED_DIR / source / day.isoformat()


def configured(config: Config, only: str = "all") -> list[sources.Source]:
    """The sources to fetch: those of ``only`` (openai, anthropic or all) whose provider has a key."""
    return [s for s in sources.SOURCES if (only in ("all", s.provider)) and s.provider in config.keys]


def fetch_day(logs: Path, day: date, config: Config, only: str = "all",
              http: requests.Session | None = None) -> list[SourceDay]:
    """Fetch ``day`` (UTC) of every configured source (``configured``) and store its pages.

    One source's failure does not stop the others. Raises ``FileNotFoundError`` when ``logs`` is not a
    folder; a page that cannot be fetched is a ``SourceDay.failure``, never an exception.
    """
    if not Path(logs).is_dir():
        raise FileNotFoundError(f"logs folder {logs} does not exist or is not a folder")
    http = http or client.session(config.retry)
    return [_fetch_source(Path(logs), day, source, config, http) for source in configured(config, only)]


def _fetch_source(logs: Path, day: date, source: sources.Source, config: Config, http: requests.Session) -> SourceDay:
    result = SourceDay(source.name, day, folder=day_folder(logs, source.name, day))
    key = config.keys[source.provider]
    url = config.bases[source.provider].rstrip("/") + "/" + source.path
    bodies: list[bytes] = []
    seen: set[str] = set()
    cursor: str | None = None
    billed = Decimal(0)
    while True:
        params = source.params(day, config.bucket_width) + ([("page", cursor)] if cursor else [])
        try:
            body, page = client.get_json(http, url, params, sources.headers(source.provider, key), config.retry)
            cursor = source.next_page(page)
            if cursor is not None and (cursor in seen or len(bodies) + 1 >= MAX_PAGES):
                raise client.PageFailure(f"next_page {'repeats a cursor' if cursor in seen else f'beyond {MAX_PAGES} pages'}")
        except client.PageFailure as failure:
            result.failure = f"{source.name} {day} page {len(bodies) + 1}: {failure}"
            bodies.append(_failure_record(source, day, len(bodies) + 1, result.failure))
            break
        bodies.append(body)
        if not source.usage:
            billed += sum((sources.billed_usd(row) for bucket in page["data"] for row in bucket["results"]), Decimal(0))
        if cursor is None:
            break
        seen.add(cursor)
    result.pages = len(bodies)
    result.billed_usd = None if source.usage or result.failure else billed
    _replace_day(result, bodies, suffix=".json" if source.usage else ".json.raw")
    return result


def _failure_record(source: sources.Source, day: date, page: int, reason: str) -> bytes:
    """The file standing for a failed page: one JSON object the ingest quarantines with ``reason``."""
    return json.dumps({"usage_api_fetch_failed": reason, "source": source.name, "day": day.isoformat(),
                       "page": page}, sort_keys=True).encode() + b"\n"


def _replace_day(result: SourceDay, bodies: list[bytes], suffix: str) -> None:
    folder = result.folder
    folder.mkdir(parents=True, exist_ok=True)
    keep = set()
    for number, body in enumerate(bodies, start=1):
        path = folder / f"page-{number:04d}{suffix}"
        keep.add(path.name)
        try:
            if path.read_bytes() == body:
                result.unchanged += 1
                continue
        except FileNotFoundError:
            pass
        _write_atomically(path, body)
        result.written += 1
    for stale in sorted(folder.iterdir()):
        if _PAGE_NAME.fullmatch(stale.name) and stale.name not in keep:
            stale.unlink()
            result.removed += 1


def _write_atomically(path: Path, body: bytes) -> None:
    """Write ``body`` to ``path`` so a reader sees the old file or the whole new one (the temporary
    name ends in ``.tmp``, which the ingest does not read)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
