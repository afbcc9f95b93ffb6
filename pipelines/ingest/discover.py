"""Find usage-log files under a folder and read their folder defaults (``source.yaml``).

Files, found recursively: ``*.jsonl``, ``*.jsonl.gz``, ``*.ndjson``, ``*.ndjson.gz`` (one JSON record per line), ``*.json`` (an
array of records, or one object), ``*.sse`` (server-sent-event transcripts of streamed responses,
one record per transcript), ``*.csv`` and ``*.parquet`` (one record per row, columns as keys), and
rotated JSONL names. A folder may hold ``source.yaml`` with defaults for the files
beneath it (nearest folder wins, key by key)::

    provider: self_hosted          # openai, azure, anthropic, gemini, bedrock, deepseek, self_hosted
    model: kimi-k2                 # used when a record names no model (Bedrock bodies, traces)
    tenant: acme
    app: chat
    trace_start: 2026-11-27T00:00:00Z   # ISO-8601 UTC; block-hash traces carry ms offsets from it
    block_size_tokens: 512              # tokens per trace block (Mooncake: 512)
    cache: infinite                     # cache model for trace replay: infinite, ttl or lru
    cache_ttl_seconds: 300              # ttl: blocks expire this long after their last use
    cache_capacity_tokens: 3000000      # lru: KV-cache size in tokens
    ts: 2026-11-27T10:00:00Z            # time of records that carry none (e.g. captured stream transcripts)
    deployments:                        # Azure deployment name -> model it serves (for pricing)
      prod-chat: gpt-4o-2024-11-20
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipelines.lib import progress, safe_yaml

LOG_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".sse", ".csv", ".parquet")
# compressed names of logs cachemeter does not read: said when found (a break test: skipped without a word)
UNREAD_COMPRESSED = re.compile(r"\.(json|csv|sse|parquet|log|txt)\.(gz|zst|bz2|xz)$|\.jsonl\.(zst|bz2|xz)$|\.zip$")
SOURCE_KEYS = {"provider", "model", "tenant", "app", "trace_start", "block_size_tokens", "cache",
               "cache_ttl_seconds", "cache_capacity_tokens", "ts", "deployments"}
TEXT_KEYS = {"provider", "model", "tenant", "app"}  # kept as text whatever YAML type they parse as


class SourceConfigError(ValueError):
    """A ``source.yaml`` that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class LogFile:
    """One log file: absolute ``path``, ``relative`` name under the logs root, merged folder defaults.

    ``relative`` is always valid UTF-8 (a name that is not is shown with ``\\xNN`` escapes for its
    undecodable bytes); ``path`` is the name on disk. ``device``, ``inode``, ``size_bytes`` and
    ``mtime_ns`` are the file's (a symlink's target's) status when it was found (an object's: its key's and listing's,
    ``local`` False). ``error`` is set for
    an entry that cannot be read at all (a folder that cannot be listed, a file that cannot be
    opened): the reason, quarantined as one record of that entry.
    """

    path: Path
    relative: str
    defaults: dict = field(default_factory=dict)
    device: int = 0
    inode: int = 0
    size_bytes: int = 0
    mtime_ns: int = 0
    error: str | None = None
    local: bool = True  # False for an object's copy (objectstore.Bucket): this run's own file, which cannot change

    defaults_sha: str | None = None  # hash of the folder defaults that apply (an edited source.yaml re-stages the file)

    def __post_init__(self) -> None:
        if self.defaults_sha is None:
            object.__setattr__(self, "defaults_sha", defaults_sha(self.defaults))

    @property
    def is_jsonl(self) -> bool:
        """One JSON record per line (``*.jsonl``, ``*.jsonl.gz``, ``*.ndjson``, ``*.ndjson.gz`` and their rotated names)."""
        return is_jsonl_name(self.path.name)

    @property
    def is_gzip(self) -> bool:
        return self.path.name.lower().endswith(".gz")


def defaults_sha(defaults: dict) -> str:
    """Hash (16 hex digits) of a merged ``source.yaml`` defaults mapping."""
    return hashlib.sha256(json.dumps(defaults, sort_keys=True, default=str).encode()).hexdigest()[:16]


def load_source_yaml(path: Path) -> dict:
    """Parse one ``source.yaml``; raises ``SourceConfigError`` (naming the file, and the key where
    one is at fault) for bad YAML, anchors or aliases, huge values (``lib/safe_yaml``), unknown
    keys, keys without a value, text keys given a list, mapping or YAML boolean, or bad values."""
    try:
        data = safe_yaml.load_file(path) or {}
    except safe_yaml.YamlFileError as exc:
        raise SourceConfigError(str(exc)) from None
    if not isinstance(data, dict):
        raise SourceConfigError(f"{path}: expected a mapping of defaults, got {type(data).__name__}")
    unknown = set(data) - SOURCE_KEYS
    if unknown:
        raise SourceConfigError(f"{path}: unknown keys {sorted(unknown, key=str)}; allowed: {sorted(SOURCE_KEYS)}")
    for key, value in data.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            raise SourceConfigError(f"{path}: {key} has no value; give it one or remove the line")
        if key in TEXT_KEYS and isinstance(value, bool):
            raise SourceConfigError(f"{path}: {key} reads as the boolean {value} (YAML takes yes, no, on, off, "
                                    f"true and false so); quote it: {key}: \"...\"")
        if key in TEXT_KEYS and isinstance(value, (dict, list)):
            raise SourceConfigError(f"{path}: {key} must be text, not a {type(value).__name__}")
    for key in ("trace_start", "ts"):
        if key in data:
            data[key] = _iso_utc(data[key], path, key)
    deployments = data.get("deployments", {})
    if not isinstance(deployments, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in deployments.items()):
        raise SourceConfigError(f"{path}: deployments must map deployment names to model ids (text: text)")
    block = data.get("block_size_tokens", 1)
    if isinstance(block, bool) or not isinstance(block, int) or block <= 0:
        raise SourceConfigError(f"{path}: block_size_tokens must be a positive integer")
    model = data.get("cache", "infinite")
    if model not in ("infinite", "ttl", "lru"):
        raise SourceConfigError(f"{path}: cache model {model!r} is unknown; use infinite, ttl or lru")
    if model == "ttl" and not (isinstance(data.get("cache_ttl_seconds"), (int, float)) and data["cache_ttl_seconds"] > 0):
        raise SourceConfigError(f"{path}: cache: ttl needs a positive cache_ttl_seconds")
    if model == "lru" and not (isinstance(data.get("cache_capacity_tokens"), int) and data["cache_capacity_tokens"] > 0):
        raise SourceConfigError(f"{path}: cache: lru needs a positive integer cache_capacity_tokens")
    return {k: str(v) if k in TEXT_KEYS else v for k, v in data.items()}


def _iso_utc(value, path: Path, key: str) -> str:
    from datetime import datetime, timezone

    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError as exc:
            raise SourceConfigError(f"{path}: {key} {value!r} is not ISO-8601") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).isoformat()


def discover(root: Path, follow_symlinks: bool = False) -> list[LogFile]:
    """Every log file under ``root`` (sorted by relative name) with its merged ``source.yaml`` defaults.

    Each file is listed once, under one name, whatever links lead to it: a symlink or hard link to a
    file found under another name (same device and inode) is dropped in favour of the file itself (a
    plain name before a symlink, then the first in name order). Symlinks that resolve outside ``root``
    are skipped unless ``follow_symlinks``; dangling ones are skipped. Rotated JSONL names count
    (``app.jsonl.1``, ``app.jsonl.2.gz``, ``app.jsonl-20261128``). A folder that cannot be listed
    becomes an entry named ``<folder>/`` with ``error`` set, so it is reported rather than skipped.

    Raises ``FileNotFoundError`` when ``root`` does not exist. A ``source.yaml`` that cannot be used makes each log
    file under its folder an entry with ``error`` set (quarantined as one record with the reason; a file staged
    before keeps its rows), and the other folders are read as usual.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"logs folder {safe_name(str(root))} does not exist or is not a folder")
    root_resolved = root.resolve()
    defaults_cache: dict[Path, dict] = {}

    sha_cache: dict[Path, str] = {}

    refused: dict[Path, SourceConfigError] = {}  # folders whose source.yaml (or a parent's) cannot be used

    def defaults_for(folder: Path) -> dict:
        if folder in defaults_cache:
            return defaults_cache[folder]
        if folder in refused:
            raise refused[folder]
        try:
            parent = {} if folder == root else defaults_for(folder.parent)
            own = load_source_yaml(folder / "source.yaml") if (folder / "source.yaml").is_file() else {}
        except SourceConfigError as exc:
            refused[folder] = exc
            raise
        defaults_cache[folder] = {**parent, **own}
        sha_cache[folder] = defaults_sha(defaults_cache[folder])
        return defaults_cache[folder]

    prefix = os.path.join(str(root), "")

    def relative(path: Path) -> str:
        text = str(path)
        return safe_name(text[len(prefix):] if text.startswith(prefix) else path.relative_to(root).as_posix())

    problems: list[LogFile] = []

    def unlistable(exc: OSError) -> None:
        folder = Path(exc.filename) if exc.filename else root
        problems.append(LogFile(path=folder, relative=(relative(folder) + "/").removeprefix("./"),
                                error=f"cannot list folder: {exc.strerror or exc}"))

    by_identity: dict[tuple[int, int], LogFile] = {}
    seen_folders: set[tuple[int, int]] = set()
    unread: list[str] = []  # compressed files of a kind not read (UNREAD_COMPRESSED)
    for folder, subfolders, names in os.walk(root, onerror=unlistable, followlinks=True):
        try:
            folder_stat = os.stat(folder)
        except OSError as exc:
            unlistable(exc)
            subfolders.clear()
            continue
        if (folder_stat.st_dev, folder_stat.st_ino) in seen_folders:  # a symlink loop, or a folder reached twice
            subfolders.clear()
            continue
        seen_folders.add((folder_stat.st_dev, folder_stat.st_ino))
        # a symlink to a folder inside the logs folder is not walked: the folder is, under its own name and with its
        # own source.yaml defaults (through the link its files took the link's name and the link's folder's defaults)
        subfolders[:] = sorted(name for name in subfolders if not _links_inside(os.path.join(folder, name), root_resolved))
        folder_inside = Path(os.path.realpath(folder)).is_relative_to(root_resolved)
        folder_path = Path(folder)
        if not folder_inside and not follow_symlinks:  # a symlinked folder leading out: none of its files is read
            progress.warn(f"{relative(folder_path)}/: a symlink out of the logs folder (to {safe_name(os.path.realpath(folder))}): "
                          "skipped; --follow-symlinks reads it")
            subfolders.clear()
            continue
        for name in sorted(names):
            if not is_log_name(name):
                if UNREAD_COMPRESSED.search(name.lower()):
                    unread.append(relative(folder_path / name))
                continue
            full = os.path.join(folder, name)
            try:
                status = os.stat(full)
                linked = os.path.islink(full)
            except FileNotFoundError:  # a dangling symlink, or a file removed while we looked
                if os.path.islink(full):  # skipped without a word, it looked like a log folder that lost rows (a break test)
                    progress.warn(f"{relative(Path(full))}: a symlink to {safe_name(os.readlink(full))}, which does not "
                                  "exist: skipped")
                continue
            except OSError as exc:
                problems.append(LogFile(path=Path(full), relative=relative(Path(full)),
                                        error=f"cannot read file: {exc.strerror or exc}"))
                continue
            if not stat.S_ISREG(status.st_mode):
                if not stat.S_ISDIR(status.st_mode):  # a FIFO, socket or device under a log's name: never read (a
                    # FIFO would block the run), but said (a break test)
                    progress.warn(f"{relative(Path(full))}: not a regular file ({_kind(status.st_mode)}): skipped")
                continue
            path = folder_path / name
            inside = folder_inside and (not linked or path.resolve().is_relative_to(root_resolved))
            if not follow_symlinks and not inside:  # skipped without a word, its rows looked lost (a break test)
                progress.warn(f"{relative(path)}: a symlink out of the logs folder (to {safe_name(str(path.resolve()))}): "
                              "skipped; --follow-symlinks reads it")
                continue
            try:
                defaults = defaults_for(folder_path)
            except SourceConfigError as exc:  # this folder's files only: quarantined with the reason, the rest staged
                problems.append(LogFile(path=path, relative=relative(path),
                                        error=f"bad source.yaml, so not read until it is fixed: {safe_name(str(exc))}"))
                continue
            found = LogFile(path=path, relative=relative(path), defaults=defaults, defaults_sha=sha_cache[folder_path],
                            device=status.st_dev, inode=status.st_ino, size_bytes=status.st_size,
                            mtime_ns=stored_mtime_ns(status))
            key = (status.st_dev, status.st_ino)
            if key not in by_identity or _preferred(found, by_identity[key]):
                by_identity[key] = found
    if unread:
        shown = ", ".join(unread[:5]) + (f" and {len(unread) - 5:,} more" if len(unread) > 5 else "")
        progress.warn(f"{len(unread):,} compressed file(s) of a kind not read, skipped: {shown} (read: *.jsonl.gz and "
                      "*.ndjson.gz; decompress the others)")
    return sorted(_distinct_names([*by_identity.values(), *problems]), key=lambda log: log.relative)


def _kind(mode: int) -> str:
    """What a file that is no regular file or folder is: ``a FIFO``, ``a socket``, ``a device``."""
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def _distinct_names(found: list[LogFile]) -> list[LogFile]:
    """``found`` with every stored name distinct. A name that is not UTF-8 is stored with ``\\xNN`` escapes, so it
    can read as the literal name of another file (``x<0xFF>.jsonl`` and a file named ``x\\xff.jsonl``), and one
    file's rows took the other's place. The file whose name is text keeps it; the other is stored as
    ``<escaped name> (name not UTF-8, <12 hex digits of the SHA-256 of its name's bytes>)``."""
    counts = Counter(log.relative for log in found)
    if all(count == 1 for count in counts.values()):
        return found
    distinct = []
    for log in found:
        if counts[log.relative] > 1 and not _is_text(str(log.path)):
            raw = os.fsencode(str(log.path))
            log = replace(log, relative=f"{log.relative} (name not UTF-8, {hashlib.sha256(raw).hexdigest()[:12]})")
        distinct.append(log)
    return distinct


def _is_text(name: str) -> bool:
    """The name decoded as UTF-8 (no byte was surrogate-escaped by the OS layer)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _links_inside(path: str, root_resolved: Path) -> bool:
    """``path`` is a symlink whose target is inside ``root_resolved`` (so the walk reaches the target itself)."""
    try:
        return os.path.islink(path) and Path(os.path.realpath(path)).is_relative_to(root_resolved)
    except OSError:
        return False


def _preferred(candidate: LogFile, current: LogFile) -> bool:
    """Which of two names of one file to keep: a plain name before a symlink, then the first by name."""
    return (candidate.path.is_symlink(), candidate.relative) < (current.path.is_symlink(), current.relative)


# A JSONL file under a rotated name, read like the file it was (optionally gzip-compressed):
#   logrotate: app.jsonl.1, app.jsonl.2.gz; dateext: app.jsonl-20261128, app.jsonl-2026112810 (dateformat -%Y%m%d%H),
#   app.jsonl-20261128-1764288000 (-%Y%m%d-%s), app.jsonl-2026-11-28 (-%Y-%m-%d);
#   Python's TimedRotatingFileHandler: app.jsonl.2026-11-28, .2026-11-28_10, .2026-11-28_10-00, .2026-11-28_10-00-00.
# Any other suffix is not read: a file renamed to it leaves the folder as a deleted file does (its staged rows stay).
_ROTATED_JSONL = re.compile(r"\.(?:jsonl|ndjson)(\.\d{1,4}|-\d{8,10}(-\d{9,11})?"
                            r"|[.-]\d{4}-\d{2}-\d{2}(_\d{2}(-\d{2}(-\d{2})?)?)?)(\.gz)?$")


def is_log_name(name: str) -> bool:
    """A file name cachemeter reads: one of ``LOG_SUFFIXES`` or a rotated JSONL name."""
    lowered = name.lower()
    return lowered.endswith(LOG_SUFFIXES) or bool(_ROTATED_JSONL.search(lowered))


def is_jsonl_name(name: str) -> bool:
    """One JSON record per line: ``*.jsonl``, ``*.jsonl.gz``, ``*.ndjson``, ``*.ndjson.gz`` or a rotated JSONL name."""
    lowered = name.lower()
    return lowered.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")) or bool(_ROTATED_JSONL.search(lowered))


def safe_name(name: str) -> str:
    """``name`` as valid UTF-8 text: bytes that do not decode (surrogate-escaped by the OS layer) as ``\\xNN``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def duckdb_literal_path(path: Path) -> str | None:
    """``path`` for a DuckDB file reader, its glob characters escaped so it names exactly that file.

    DuckDB reads ``[``, ``]``, ``*``, ``?``, ``{`` and ``}`` in a reader's path as a glob pattern; each is
    wrapped in a one-character class (``[[]``). Returns None for a name that is not valid UTF-8
    (DuckDB takes text only): the caller reads such a file with Python instead.
    """
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _GLOB_CHARACTER.sub(lambda m: f"[{m.group(0)}]", text)


_GLOB_CHARACTER = re.compile(r"[\[\]*?{}]")


# stage.files.mtime_ns is a BIGINT: nanoseconds since 1970 fit until 2262-04-11
_MTIME_NS_RANGE = (-2**63, 2**63 - 1)


def stored_mtime_ns(status: os.stat_result) -> int:
    """``status.st_mtime_ns`` within a BIGINT: a file stamped after 2262 (``touch -d 2300-01-01``, a clock gone
    wrong) stopped the whole run ("Python int too large to convert to C long"); it is staged, stamped 2262-04-11."""
    return min(max(status.st_mtime_ns, _MTIME_NS_RANGE[0]), _MTIME_NS_RANGE[1])
