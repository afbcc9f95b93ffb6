"""Which staged file each log file in the folder is: by what it is, not only by its name.

A manifest entry (``stage.files``) records the file it staged: name, device and inode, size, and a
sha256 of its first ``readers.HEAD_BYTES`` bytes (decompressed for gzip). A file in the folder
*continues* an entry when it is no smaller (sizes compared when both or neither are gzip) and its
start still hashes to the entry's head: the same file, grown by appends, perhaps renamed or rotated
away. A file under another name must also still hold the bytes that ended the staged content
(``tail_sha``, the last ``HEAD_BYTES`` before the entry's size; plain files) before it takes the
entry's rows over: a file that shares only its first 4 KB with a deleted one is another file. ``plan`` matches the folder to the manifest:

* a file at an entry's name that continues it is that file: skipped when its device, inode, size,
  mtime and defaults are unchanged, else staged again (its rows replaced);
* a file that shrank or was replaced at its name is a new generation: the previous generation's rows
  stay, under the history name ``<name>#<n>`` (``retire``), unless its content is still in the folder
  under another name (a copy made by ``copytruncate``), which then holds them;
* an entry whose name is gone keeps its rows under its name (the warehouse keeps history the logs no
  longer hold) until a file that continues it turns up under another name (a rename, a rotated copy):
  that file takes its rows over (``takes_over``), so nothing counts twice;
* except a usage-API page (``usage_api.managed``): it is the API's current answer for its day, so a
  replaced page's rows are replaced and a removed page's rows dropped (a re-fetched day counts once).

Pure Python over what ``discover`` and the manifest say; reads a file's head only when its status
changed or a generation went missing. Content that matches only in a file unchanged since it was
staged is recognised when their heads are equal (the same bytes), not when the entry's content is a
shorter prefix of it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from pipelines.ingest.discover import LogFile
from pipelines.ingest.readers import HEAD_BYTES, read_head, read_tail
from pipelines.lib.usage_api import managed


# What staging makes of a file's bytes, as a version: bump it with a change that alters the rows staged from the same
# file (a count read, a record accepted or quarantined), and the next run reads every file staged by an older version
# again (``unchanged`` is False for it; stage.files.staged_version). 2 (2026-12-07): the thinking a Gemini total holds
# beyond its OpenAI-compatible output count, cut-short Anthropic streams quarantined, NaN and decimals inside Parquet
# structs, JSON lines named .json, a CSV quote left open or a CSV row that is not UTF-8, Gemini streams, a byte-order
# mark opening a later line. 3 (2026-12-07, evening): a text in UTF-16 or UTF-32 read as its UTF-8 text. 4 (2026-12-07,
# night): Anthropic's usage.inference_geo and usage.speed read (US-only inference and fast mode are billed at a
# multiple of the list price: core.usage.inference_geo, speed); a
# Gemini breakdown's AUDIO tokens flagged as unmapped usage (priced apart by Gemini, as text here).
STAGED_ROWS_VERSION = 4


@dataclass(frozen=True)
class Entry:
    """One manifest row: what was staged under ``name`` (identity columns None before they existed)."""

    name: str
    size_bytes: int
    mtime_ns: int
    defaults_sha: str | None
    device: int | None
    inode: int | None
    head_bytes: int | None
    head_sha: str | None
    read_error: str | None
    rows_in: int
    rows_accepted: int
    rows_quarantined: int
    tail_sha: str | None = None  # sha256 of the staged bytes' last HEAD_BYTES (plain files; None for gzip)
    staged_version: int = STAGED_ROWS_VERSION  # STAGED_ROWS_VERSION of the run that staged it
    lines_staged: int | None = None  # newlines of the staged content, where known (appends.py)

    @property
    def is_gzip(self) -> bool:
        return self.name.lower().endswith(".gz")


MANIFEST_COLUMNS = ("source_file, size_bytes, mtime_ns, defaults_sha, device, inode, head_bytes, head_sha, read_error, "
                    "rows_in, rows_accepted, rows_quarantined, tail_sha, coalesce(staged_version, 1), lines_staged")



@dataclass
class Plan:
    """What a run does with each file: ``stage`` (with identities), ``skip``, and the entries' fates."""

    stage: list[LogFile] = field(default_factory=list)
    skip: list[tuple[LogFile, Entry]] = field(default_factory=list)
    kept_unreadable: list[tuple[LogFile, Entry]] = field(default_factory=list)  # staged once, unreadable now: rows kept
    retire: dict[str, str] = field(default_factory=dict)  # name being staged -> history name for its previous generation
    takes_over: dict[str, list[str]] = field(default_factory=dict)  # name being staged -> entries it replaces
    drop: list[str] = field(default_factory=list)  # entries whose content a skipped file holds: rows removed
    refresh_identity: list[tuple[LogFile, int, str]] = field(default_factory=list)  # unchanged, identity not yet recorded
    heads: dict[str, bytes | None] = field(default_factory=dict)  # name -> the head read so far (None: unreadable)


def head_sha(head: bytes) -> str:
    return hashlib.sha256(head).hexdigest()


def plan(logs: list[LogFile], entries: dict[str, Entry]) -> Plan:
    """Match the files ``discover`` found to the manifest ``entries``; see the module docstring.

    A file whose head cannot be read comes back in ``stage`` with ``error`` set (it is quarantined as
    one record) unless it was staged before, when its rows are kept (``kept_unreadable``).
    """
    out = Plan()
    heads = out.heads
    present = {log.relative: log for log in logs}

    def head(log: LogFile) -> bytes | None:
        if log.relative not in heads:
            try:
                heads[log.relative] = read_head(log.path)
            except OSError as exc:
                heads[log.relative] = None
                present[log.relative] = replace(log, error=f"cannot read file: {exc.strerror or exc}")
        return heads[log.relative]

    claimed: dict[str, str] = {}  # present name -> the entry it continues
    for name, log in list(present.items()):
        entry = entries.get(name)
        if log.error or entry is None or entry.read_error:
            continue
        if unchanged(log, entry):
            claimed[name] = name
            if entry.head_sha is None and (found := head(log)) is not None:
                out.refresh_identity.append((log, len(found), head_sha(found)))
            continue
        if (found := head(log)) is not None and _continues(log, found, entry):
            claimed[name] = name
    for name, log in present.items():  # unreadable now: a file staged before keeps its rows
        entry = entries.get(name)
        if log.error and entry is not None and not entry.read_error:
            claimed[name] = name
    history_counts: dict[str, int] = {}
    for entry_name in entries:
        base, sep, number = entry_name.rpartition("#")
        if sep and number.isdigit():
            history_counts[base] = max(history_counts.get(base, 0), int(number))
    holders = _Holders(present, entries, claimed, head)
    claimed_entries = set(claimed.values())
    for entry in sorted(entries.values(), key=lambda e: e.name):
        if entry.name in claimed_entries:
            continue
        if entry.read_error:
            if entry.name not in present:
                out.drop.append(entry.name)  # the unreadable folder or file is gone: so is its report
            continue
        here = present.get(entry.name)
        if entry.rows_in == 0:  # nothing to keep: a new file under its name replaces it, else it goes
            if here is None:
                out.drop.append(entry.name)
            continue
        holder = holders.find(entry)
        if holder is not None:
            if here is not None:
                continue  # staging the new file under this name replaces these rows; the holder has them
            if holder not in claimed:
                claimed[holder] = entry.name
                claimed_entries.add(entry.name)
            if claimed[holder] == holder and unchanged(present[holder], entries[holder]):
                out.drop.append(entry.name)  # an unchanged file already holds these rows
            else:
                out.takes_over.setdefault(holder, []).append(entry.name)
        elif managed(entry.name):  # a usage-API page: the API's current answer replaces its rows, or it is gone
            if here is None:
                out.drop.append(entry.name)
        elif here is not None:
            history_counts[entry.name] = history_counts.get(entry.name, 0) + 1
            out.retire[entry.name] = f"{entry.name}#{history_counts[entry.name]}"
    for name, log in present.items():
        entry = entries.get(name)
        if claimed.get(name) == name and log.error and entry is not None and not entry.read_error:
            out.kept_unreadable.append((log, entry))
        elif claimed.get(name) == name and entry is not None and unchanged(log, entry):
            out.skip.append((log, entry))
        else:
            out.stage.append(present[name])  # its head is read with its content (ingest records the identity)
    return out


def unchanged(log: LogFile, entry: Entry) -> bool:
    """The file is the one ``entry`` staged, untouched since (same device and inode, size, mtime, defaults), and staged
    by this version of staging (``STAGED_ROWS_VERSION``)."""
    same_file = entry.device is None or (entry.device, entry.inode) == (log.device, log.inode)
    return same_file and entry.staged_version >= STAGED_ROWS_VERSION and \
        (entry.size_bytes, entry.mtime_ns, entry.defaults_sha) == (log.size_bytes, log.mtime_ns, log.defaults_sha)


def _continues(log: LogFile, head: bytes, entry: Entry, check_tail: bool = False) -> bool:
    """``log`` (whose first bytes are ``head``) is the file ``entry`` staged, perhaps grown; with
    ``check_tail`` (a file under another name) it must also still hold the staged content's last bytes."""
    if entry.head_sha is None:  # staged before identities were recorded: the old rule (no smaller)
        return log.size_bytes >= entry.size_bytes
    if log.is_gzip == entry.is_gzip and log.size_bytes < entry.size_bytes:
        return False
    return len(head) >= entry.head_bytes and head_sha(head[:entry.head_bytes]) == entry.head_sha \
        and (not check_tail or _same_tail(log, entry))


def _same_tail(log: LogFile, entry: Entry) -> bool:
    """``log`` holds the bytes that ended ``entry``'s staged content at the same place (checked for plain
    files; a gzip file, or an entry staged before tails were recorded, passes on its head alone)."""
    if entry.tail_sha is None or log.is_gzip or entry.is_gzip:
        return True
    try:
        return head_sha(read_tail(log.path, entry.size_bytes)) == entry.tail_sha
    except OSError:
        return False


class _Holders:
    """Find, for an entry that lost its file, a file in the folder (under another name) that continues it.

    The same device and inode first, then files whose head is read anyway (new or changed), then
    unchanged files whose own entry has the very same head: looked up in dictionaries, so many
    deleted files' entries cost no more than a scan of the new files each.
    """

    def __init__(self, present: dict[str, LogFile], entries: dict[str, Entry], claimed: dict[str, str], head):
        self.head = head
        self.by_inode: dict[tuple[int, int], list[LogFile]] = {}
        self.by_head: dict[tuple[int, str], list[LogFile]] = {}
        self.changed: list[LogFile] = []
        for name, log in present.items():
            if log.error:
                continue
            self.by_inode.setdefault((log.device, log.inode), []).append(log)
            own = entries.get(name)
            if own is not None and claimed.get(name) == name and unchanged(log, own) and own.head_sha is not None:
                self.by_head.setdefault((own.head_bytes, own.head_sha), []).append(log)
            else:
                self.changed.append(log)

    def find(self, entry: Entry) -> str | None:
        if entry.head_sha is None:
            return None
        for log in self.by_inode.get((entry.device, entry.inode), []) + self.changed:
            if log.relative != entry.name and (found := self.head(log)) is not None \
                    and _continues(log, found, entry, check_tail=True):
                return log.relative
        for log in self.by_head.get((entry.head_bytes, entry.head_sha), []):
            if log.relative != entry.name and (log.is_gzip != entry.is_gzip or log.size_bytes >= entry.size_bytes) \
                    and _same_tail(log, entry):
                return log.relative
        return None


__all__ = ["Entry", "HEAD_BYTES", "MANIFEST_COLUMNS", "Plan", "STAGED_ROWS_VERSION", "plan", "unchanged"]
