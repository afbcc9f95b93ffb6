"""The run's side process: Great Expectations' validation and the report's rendering, off the run's critical path.

Both need libraries that are seconds of pure-Python import (Great Expectations about 3.5 s; Altair, which the
report renders with, and the report's script about 1 s). Imported in the run's process, that time held the GIL
against the run's own work and stood on the critical path of every run that builds a day. This process imports
them on the other core while the run stages and prices: ``preload()`` starts it warm (the CLI does, as a run
starts): it loads what a report needs (rendering an empty one, so that no module is first imported later),
then starts loading GX in a thread of its own and answers requests; a validation waits for that thread, a
report does not (a run that builds no day does not wait for GX). A process that asks first (a scheduled run's
step) starts it cold, importing only what it is asked for.

Requests travel over a socket pair as ``multiprocessing.connection`` messages, one at a time, each answered
``("ok", value)`` or ``("error", message)``:

* ``("validate", specs, ipc)``: rows (an Arrow IPC stream, validated as one pandas frame in an ephemeral GX
  context: GX cannot validate DuckDB through SQLAlchemy, GX issues #10738 and #11579) against ``specs``, a
  list of ``(kind, options)`` (``kind`` a class name of ``great_expectations.expectations``, ``options`` its
  keyword arguments); answers one dict per spec: ``success``, ``element_count`` and ``unexpected_count``
  (rows), ``examples`` (up to ``EXAMPLES`` unexpected values, as text);
* ``("report", snapshot, out, days, pngs)``: the report of the last ``days`` days of the read-only
  snapshot file ``snapshot`` written to ``out`` (``lib/report.py``); answers the charts as ``(title, PNG
  bytes)`` pairs when ``pngs``, else ``[]``. A snapshot is a file of its own, which no process writes while
  a run reports.

The process ends when the socket closes (its parent ended) or on ``stop()``. ``python -m
pipelines.lib.side_process FD [WARM ...]`` is how ``SideProcess`` starts it; nothing else should.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path

from pipelines.lib import collector

EXAMPLES = 5  # unexpected values kept per expectation and chunk
# the longest wait for one answer: a validation chunk takes seconds and a report with PNG charts a few more, even
# on a machine loaded many times over; a stopped (SIGSTOP) or stuck process must not hold the run for ever
ANSWER_SECONDS = 900.0
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # holds pipelines/: the process imports it from there


class SideProcessError(RuntimeError):
    """The side process stopped, or refused a request (an unknown expectation, a bad option, a failed report)."""


# ---- the side process itself ----

def defer_scipy_stats() -> None:
    """Make ``scipy.stats`` load on first use instead of at ``import great_expectations``.

    GX imports every core expectation at its own import, and three of them (the KL-divergence and the two
    Kolmogorov-Smirnov ones) run ``from scipy import stats`` at module level: 1.5-1.8 s of a 4.8 s import on
    this machine (``python -X importtime``; bench/README.md, "Great Expectations without scipy.stats"), for
    expectations cachemeter never asks for. The stdlib's own recipe (``importlib.util.LazyLoader``, "Implementing
    lazy imports" in the importlib docs) binds a module object that runs the real module on its first attribute
    access, so an expectation that does use it still works. It is set as ``scipy``'s attribute too: ``from scipy
    import stats`` asks ``scipy`` first, and scipy's own lazy ``__getattr__`` would reach ``importlib.import_module``,
    which reads the module's ``__spec__`` and so runs it. Does nothing once ``scipy.stats`` is imported, or
    without SciPy."""
    import importlib.util

    if "scipy.stats" in sys.modules:
        return
    try:
        import scipy
        spec = importlib.util.find_spec("scipy.stats")
    except ImportError:
        return
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["scipy.stats"] = module
    spec.loader.exec_module(module)
    scipy.stats = module


# Great Expectations' optional integrations that validating pandas frames never uses. GX imports each one that is
# installed, at its own import, and falls back to a placeholder when it is not (``great_expectations.compatibility``:
# ``try: import sqlalchemy / except ImportError``); SQLAlchemy (Dagster's) and boto3 (object-store logs) are
# installed here, so they cost 0.25-0.35 s of GX's 1.1 s import after the report's libraries (measured
# 2026-12-05, ``python -X importtime``), which the first validation of a run waits for.
GX_UNUSED_INTEGRATIONS = frozenset({"sqlalchemy", "boto3", "botocore", "psycopg2"})


class _Hidden:
    """A ``sys.meta_path`` finder that answers "not installed" for the packages in ``names``."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@contextmanager
def hidden(names: frozenset[str]) -> Iterator[None]:
    """Imports of ``names`` (top-level packages) fail as if not installed within the block; nothing is hidden
    when one of them is imported already (a package half hidden would leave its importer half set up)."""
    if any(name in sys.modules for name in names):
        yield
        return
    finder = _Hidden(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


@cache
def _batch_definition():
    """GX's whole-dataframe batch definition in an ephemeral context (imports GX: seconds)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    defer_scipy_stats()
    with collector.paused(), hidden(GX_UNUSED_INTEGRATIONS):
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("cachemeter")
    return source.add_dataframe_asset("warehouse_rows").add_batch_definition_whole_dataframe("chunk")


def validate(specs: list[tuple[str, dict]], ipc: bytes) -> list[dict]:
    """Validate the Arrow IPC stream ``ipc`` against ``specs`` (the module docstring's ``validate``).

    Raises ``ValueError`` for a ``kind`` that is not a GX expectation; GX's own errors for bad options.
    """
    batches = _batch_definition()
    import great_expectations as gx
    import pyarrow as pa

    suite = gx.ExpectationSuite(name="cachemeter_checks", expectations=[_expectation(gx, k, o) for k, o in specs])
    frame = pa.ipc.open_stream(ipc).read_all().to_pandas()
    result = batches.get_batch(batch_parameters={"dataframe": frame}).validate(suite)
    return [{"success": bool(item.success),
             "element_count": int(item.result.get("element_count", len(frame))),
             "unexpected_count": int(item.result.get("unexpected_count", 0) or 0),
             "examples": [str(v) for v in list(item.result.get("partial_unexpected_list", []) or [])[:EXAMPLES]]}
            for item in result.results]


def _expectation(gx, kind: str, options: dict):
    cls = getattr(gx.expectations, kind, None)
    if not isinstance(cls, type):
        raise ValueError(f"{kind} is not a Great Expectations expectation")
    return cls(**options)


def report(snapshot: str, out: str, days: int, pngs: bool) -> list[tuple[str, bytes]]:
    """Write the report of ``snapshot``'s last ``days`` days to ``out``; its charts as (title, PNG) when ``pngs``."""
    with collector.paused():
        from pipelines.lib import report as cache_report
        from pipelines.lib import warehouse

    with warehouse.connect(snapshot, read_only=True) as conn:
        data = cache_report.load(conn, days=days)
    cache_report.save(Path(out), cache_report.render_html(data))
    return list(zip(cache_report.CHART_TITLES, cache_report.chart_pngs(data))) if pngs else []


def _report_libraries() -> None:
    """Import what a report needs, and render an empty one: its first rendering imports 30 more modules (Altair's
    dataframe layer), which must not be imported while GX's thread imports its own (two threads importing one
    package graph failed half-way once: "partially initialized module 'sqlalchemy.orm.exc'")."""
    import pandas as pd

    from pipelines.lib import report as cache_report
    from pipelines.lib import warehouse  # noqa: F401  the report request opens the snapshot with it

    cache_report.preload()  # its JavaScript bundle, read (or built) in a thread of its own
    cache_report.render_html(cache_report.ReportData(*(pd.DataFrame() for _ in range(5))))


def _quietly(load) -> None:
    try:
        load()
    except Exception:  # noqa: BLE001  the first request of its kind raises it again, with its message
        pass


REQUESTS = {"validate": validate, "report": report}
WARM_UPS = {"report": _report_libraries, "validate": _batch_definition}  # what a request of each kind loads first


def serve(conn: Connection, warm: tuple[str, ...]) -> None:
    """Answer requests on ``conn`` until it closes. What ``warm`` names (``WARM_UPS`` keys) is loaded first: the
    first one before any answer, the others in one thread, in order, beside the answers; a request of a kind
    that thread has yet to load waits for it."""
    collector.pause()  # the libraries warmed up live as long as the process: frozen once all are loaded

    def load_later() -> None:
        try:
            for kind in warm[1:]:
                _quietly(WARM_UPS[kind])
        finally:
            collector.resume()

    if warm:
        _quietly(WARM_UPS[warm[0]])
    later = threading.Thread(target=load_later, daemon=True)
    later.start()
    while True:
        try:
            kind, args = conn.recv()
        except (EOFError, OSError):
            return
        if kind in warm[1:]:
            later.join()
        try:
            reply = ("ok", REQUESTS[kind](*args))
        except Exception as exc:  # noqa: BLE001  answered: the run names it where the request was made
            reply = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(reply)


# ---- the run's end ----

class SideProcess:
    """The side process and this process's end of its socket; one request at a time."""

    def __init__(self, warm: tuple[str, ...] = ()) -> None:
        ours, theirs = socket.socketpair()
        self.stderr = tempfile.TemporaryFile()
        env = {**os.environ, "GX_ANALYTICS_ENABLED": "False",
               "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
        # -P: without it, -m puts the working directory first on sys.path, where a user's own folder or module
        # named pipelines would shadow this package (PYTHONPATH above names ours)
        command = [sys.executable, "-P", "-m", "pipelines.lib.side_process", str(theirs.fileno()), *warm]
        self.warm = warm
        with theirs:
            self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=self.stderr, env=env)
        self.conn = Connection(ours.detach())
        self.owner = os.getpid()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def ask(self, kind: str, *args):
        """The answer to one request (module docstring); raises ``SideProcessError`` with its reason.

        A request left without its answer (no answer in ``ANSWER_SECONDS``, or this process interrupted while
        waiting, e.g. Ctrl-C in a notebook) ends the side process: its late answer must not be taken for the
        next request's, so the next request starts a new one."""
        with self.lock:
            try:
                self.conn.send((kind, args))
                if not self.conn.poll(ANSWER_SECONDS):
                    raise SideProcessError(f"the side process (Great Expectations, report) gave no answer to a "
                                           f"{kind} request in {ANSWER_SECONDS:g} s; it was stopped")
                status, answer = self.conn.recv()
            except (EOFError, OSError) as exc:
                raise SideProcessError(f"the side process (Great Expectations, report) stopped "
                                       f"({self._last_words()})") from exc
            except BaseException:  # no answer in time, or interrupted: ended (and reaped, so alive() is false at once)
                self.process.kill()
                self.process.wait(5)
                raise
        if status != "ok":
            raise SideProcessError(answer)
        return answer

    def _last_words(self) -> str:
        code = self.process.wait(5)
        self.stderr.seek(0)
        lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        ended = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return ended + (f": {lines[-1]}" if lines else "")

    def stop(self) -> None:
        """Close the socket and end the process (it holds nothing worth a graceful end)."""
        self.conn.close()
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(5)
        self.stderr.close()


_running: SideProcess | None = None
_lock = threading.Lock()


def running(warm: tuple[str, ...] = ()) -> SideProcess:
    """This process's side process, started (again) when there is none, it stopped, or it is a forked parent's;
    a new one loads what ``warm`` names first (``WARM_UPS`` keys, in order)."""
    global _running
    with _lock:
        if _running is None or not _running.alive():
            if _running is not None and _running.owner == os.getpid():
                _running.stop()
            _running = SideProcess(warm)
        return _running


def preload(warm: tuple[str, ...] = ("report", "validate")) -> None:
    """Start the side process now (if none runs), loading what ``warm`` names (the report's libraries and
    script, then GX) while this process works on."""
    running(warm)


def stop() -> None:
    """End the side process if one runs (also at exit)."""
    global _running
    with _lock:
        if _running is not None and _running.owner == os.getpid():
            _running.stop()
        _running = None


atexit.register(stop)


if __name__ == "__main__":
    collector.own_process()
    serve(Connection(int(sys.argv[1])), tuple(sys.argv[2:]))
