"""Log folders in object storage: ``--logs s3://bucket/prefix`` (also ``gs://`` / ``gcs://``, ``az://`` / ``abfs://``).

A bucket prefix is read like a local logs folder: the same names (``LOG_SUFFIXES``, rotated JSONL
names), the same ``source.yaml`` defaults (nearest "folder" wins), the same manifest and change
detection (``generations``) and the same quarantine. The storage is reached through ``pyarrow.fs``
(already a dependency; one library for S3, GCS and Azure), whose clients take credentials from the
provider's standard chain (S3: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` and ``~/.aws``, instance or container roles; GCS: application default credentials; Azure:
``AZURE_STORAGE_ACCOUNT_KEY`` or the default Azure credential chain, ``_azure``);
cachemeter never stores or prints them. ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` points S3 at
another server (MinIO, a local moto server), ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` names the region.

An object's status stands in for a file's: size and last-modified time (ns), "device" a hash of the
bucket, "inode" a hash of the key (an overwritten object is a file replaced at its name: grown, or a
new generation). The listing is compared with the manifest first, and only the objects a run reads
(new or changed ones, and unchanged ones whose content another entry's may have moved to) are
downloaded, each once, into a temporary folder that is removed when staging ends; the file readers
and DuckDB's JSON reader then read them as local files. An object that cannot be read (access denied,
archived to Glacier) is quarantined as one record with the reason, as an unreadable file is. A prefix
that cannot be listed (unknown bucket, refused credentials) raises ``ObjectStoreError`` with one line.
An object rewritten within the same second with the same size is not noticed until it changes again
(listing gives no content hash through ``pyarrow.fs``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pipelines.ingest.discover import LogFile, SourceConfigError, defaults_sha, discover, is_log_name, load_source_yaml, safe_name

if TYPE_CHECKING:  # generations reads files (pyarrow): imported where it is used, not by ``is_remote``'s callers
    from pipelines.ingest import generations

SCHEMES = ("s3://", "gs://", "gcs://", "az://", "abfs://", "abfss://")
DOWNLOAD_THREADS = 8  # objects fetched at once (pyarrow releases the GIL while it waits)
COPY_BYTES = 8 * 1024 * 1024
SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AZURE_STORAGE_ACCOUNT_KEY",
              "AZURE_STORAGE_SAS_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS")


class ObjectStoreError(OSError):
    """A bucket prefix that cannot be listed: the message names the URL and the reason (``reason``), never a credential."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message

    def __str__(self) -> str:
        return self.args[0]


def is_remote(root: str | os.PathLike) -> bool:
    """Whether ``root`` (a ``--logs`` value) is an object-storage URL rather than a local folder."""
    return str(root).lower().startswith(SCHEMES)


def redacted(text: str) -> str:
    """``text`` with the value of every credential variable in the environment replaced by ``***``."""
    for name in SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def _reason(exc: BaseException) -> str:
    return redacted(" ".join(str(exc).split()) or type(exc).__name__)


def filesystem(url: str):
    """``(pyarrow.fs.FileSystem, "bucket/prefix")`` for ``url``; S3 honours ``AWS_ENDPOINT_URL[_S3]`` and ``AWS_REGION``.

    Raises ``ObjectStoreError`` when the URL cannot be opened (a malformed URL, no such bucket's region).
    """
    from pyarrow import fs as pafs

    try:
        if url.lower().startswith("s3://"):
            bucket_and_key = url[len("s3://"):].strip("/")
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
            options = {"region": region}
            if endpoint:
                scheme, _, host = endpoint.rpartition("://")
                options.update(endpoint_override=host.rstrip("/"), scheme=scheme or "https")
            return pafs.S3FileSystem(**options), bucket_and_key
        if url.lower().startswith(("az://", "abfs://", "abfss://")):
            return _azure(url)
        found, path = pafs.FileSystem.from_uri(url)
        return found, path.strip("/")
    except (OSError, ValueError, TypeError) as exc:
        raise ObjectStoreError(f"cannot open logs location {url}: {_reason(exc)}", _reason(exc)) from None


def _azure(url: str):
    """Azure Blob Storage: ``az://container/prefix`` (account ``AZURE_STORAGE_ACCOUNT_NAME``) or
    ``abfs[s]://container@account.dfs.core.windows.net/prefix``; key ``AZURE_STORAGE_ACCOUNT_KEY``, else the
    default Azure credential chain (environment, workload or managed identity, CLI login)."""
    from pyarrow import fs as pafs

    scheme, rest = url.split("://", 1)
    container, _, prefix = rest.partition("/")
    if "@" in container:
        container, _, host = container.partition("@")
        account = host.split(".", 1)[0]
    else:
        account = os.environ.get("AZURE_STORAGE_ACCOUNT_NAME", "")
    if not account or not container:
        raise ValueError(f"{scheme}:// names no storage account: set AZURE_STORAGE_ACCOUNT_NAME or use "
                         "abfs://container@account.dfs.core.windows.net/prefix")
    key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY") or None
    return pafs.AzureFileSystem(account_name=account, account_key=key), f"{container}/{prefix}".strip("/")


def reachable(url: str) -> None:
    """Ask for the bucket of ``url`` (one request); raises ``ObjectStoreError`` when it is missing or the
    credentials are refused."""
    from pyarrow import fs as pafs

    found, base = filesystem(url)
    bucket = base.split("/", 1)[0]
    try:
        missing = found.get_file_info(bucket).type == pafs.FileType.NotFound
    except (OSError, ValueError) as exc:
        raise ObjectStoreError(f"cannot reach {url}: {_reason(exc)}", _reason(exc)) from None
    if missing:
        raise ObjectStoreError(f"cannot reach {url}: the bucket {bucket} does not exist", f"the bucket {bucket} does not exist")


def _identity(text: str) -> int:
    """A stable positive int64 standing for a bucket ("device") or key ("inode")."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


class Bucket:
    """A logs prefix in object storage, mirrored on demand into a temporary folder (``close`` removes it)."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.fs, self.base = filesystem(self.url)
        self.mirror = Path(tempfile.mkdtemp(prefix="cachemeter-objects-"))
        self._keys: dict[str, str] = {}  # relative name -> the object's key (fs path)

    def close(self) -> None:
        shutil.rmtree(self.mirror, ignore_errors=True)

    def listing(self) -> list[LogFile]:
        """Every log object under the prefix, sorted by relative name, with its merged ``source.yaml`` defaults
        (each ``source.yaml`` is downloaded; the logs are not). Raises ``ObjectStoreError`` when the prefix
        cannot be listed; the objects under a folder whose ``source.yaml`` cannot be used come with ``error`` set (its
        reason, naming the file by its URL)."""
        from pyarrow import fs as pafs

        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.base, recursive=True))
        except (OSError, ValueError) as exc:
            raise ObjectStoreError(f"cannot list logs location {self.url}: {_reason(exc)}", _reason(exc)) from None
        prefix = self.base + "/"
        files = {info.path[len(prefix):]: info for info in infos
                 if info.type == pafs.FileType.File and info.path.startswith(prefix)}
        folder_defaults: dict[str, dict | SourceConfigError] = {}

        def defaults_for(folder: str) -> dict:
            if folder not in folder_defaults:
                try:
                    parent = {} if folder == "" else defaults_for(folder.rpartition("/")[0])
                    own_name = f"{folder}/source.yaml" if folder else "source.yaml"
                    own = self._source_yaml(own_name) if own_name in files else {}
                    folder_defaults[folder] = {**parent, **own}
                except SourceConfigError as exc:
                    folder_defaults[folder] = exc
            if isinstance(folder_defaults[folder], SourceConfigError):
                raise folder_defaults[folder]
            return folder_defaults[folder]

        device = _identity(self.url.split("://", 1)[0] + "://" + self.base.split("/", 1)[0])
        found = []
        for number, (relative, info) in enumerate(sorted(files.items())):
            name = PurePosixPath(relative).name
            if not is_log_name(name):
                continue
            try:
                defaults = defaults_for(relative.rpartition("/")[0])
            except SourceConfigError as exc:  # this folder's objects only, as discover does for a local folder
                found.append(LogFile(path=self.mirror / str(number) / name, relative=safe_name(relative), local=False,
                                     error=f"bad source.yaml, so not read until it is fixed: {exc}"))
                continue
            self._keys[safe_name(relative)] = info.path
            found.append(LogFile(path=self.mirror / str(number) / name, relative=safe_name(relative), defaults=defaults,
                                 defaults_sha=defaults_sha(defaults), device=device, inode=_identity(info.path),
                                 size_bytes=info.size or 0, mtime_ns=info.mtime_ns or 0, local=False))
        return found

    def _source_yaml(self, relative: str) -> dict:
        local = self.mirror / "source-yaml" / relative
        error = self._download(f"{self.base}/{relative}", local)
        if error:
            raise SourceConfigError(f"{self.url}/{relative}: {error}")
        try:
            return load_source_yaml(local)
        except SourceConfigError as exc:
            raise SourceConfigError(str(exc).replace(str(local), f"{self.url}/{relative}")) from None

    def _download(self, key: str, local: Path) -> str | None:
        """Copy object ``key`` to ``local`` byte for byte (no decompression); the reason it failed, or None."""
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.fs.open_input_stream(key, compression=None) as source, open(local, "wb") as target:
                while block := source.read(COPY_BYTES):
                    target.write(block)
        except OSError as exc:
            local.unlink(missing_ok=True)
            return f"cannot read object: {_reason(exc)}"
        return None

    def fetch(self, logs: Iterable[LogFile]) -> dict[str, LogFile]:
        """Download ``logs``; returns them by relative name, with ``error`` set on those that could not be read."""
        logs = list(logs)
        with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
            errors = list(pool.map(lambda log: self._download(self._keys[log.relative], log.path), logs))
        return {log.relative: replace(log, error=error) if error else log for log, error in zip(logs, errors)}

    def needed(self, logs: list[LogFile], entries: dict[str, generations.Entry]) -> dict[str, LogFile]:
        """The listed objects ``generations.plan`` may read, downloaded: new or changed ones, and unchanged
        ones whose head equals that of an entry without an unchanged object (its content may have moved)."""
        from pipelines.ingest import generations

        unchanged = {log.relative for log in logs if log.relative in entries and not entries[log.relative].read_error
                     and generations.unchanged(log, entries[log.relative])}
        open_heads = {(e.head_bytes, e.head_sha) for name, e in entries.items() if name not in unchanged and e.head_sha}
        wanted = [log for log in logs if log.relative not in unchanged
                  or (entries[log.relative].head_bytes, entries[log.relative].head_sha) in open_heads]
        return self.fetch(wanted)


@contextlib.contextmanager
def found_logs(root: str | os.PathLike, follow_symlinks: bool,
               entries: dict[str, generations.Entry]) -> Iterator[list[LogFile]]:
    """The log files under ``root`` (``logfiles.discover`` for a folder; a bucket prefix listed and the
    objects a run reads downloaded), readable until the block ends."""
    if not is_remote(root):
        yield discover(Path(root), follow_symlinks=follow_symlinks)
        return
    bucket = Bucket(str(root))
    try:
        logs = bucket.listing()
        fetched = bucket.needed(logs, entries)
        yield [fetched.get(log.relative, log) for log in logs]
    finally:
        bucket.close()


def status(root: str | os.PathLike, follow_symlinks: bool = False) -> list[LogFile]:
    """The log files under ``root`` with their status only (nothing downloaded but ``source.yaml``)."""
    if not is_remote(root):
        return discover(Path(root), follow_symlinks=follow_symlinks)
    bucket = Bucket(str(root))
    try:
        return bucket.listing()
    finally:
        bucket.close()
