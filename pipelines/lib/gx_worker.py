"""Great Expectations in a process of its own: ``python -m pipelines.lib.gx_worker FD``.

The run's process sends requests over the connected socket ``FD`` (``multiprocessing.connection``
messages) and this process answers each one in turn, until the socket closes:

* request: ``(specs, ipc)``; ``specs`` a list of ``(kind, options)``, ``kind`` the name of a class
  in ``great_expectations.expectations`` (e.g. ``"ExpectColumnValuesToBeBetween"``), ``options`` its
  keyword arguments; ``ipc`` the rows as an Arrow IPC stream (validated as one pandas frame);
* answer: ``("ok", [result, ...])``, one dict per spec in order, with ``success`` (bool),
  ``element_count`` and ``unexpected_count`` (rows), ``examples`` (up to 5 unexpected values, as text);
  or ``("error", message)`` naming what failed (an unknown expectation, a bad option, GX not importable).

Why a process: importing GX is about 4 s of pure Python (its expectation classes, SQLAlchemy, pandas,
scipy); in the run's process that import held the GIL against the run's own work on a 2-core machine,
and it stood on the critical path of every run that builds a day. Here it runs on the other core while
the run stages and prices (``lib/expectations.py`` starts this process early). GX cannot validate
DuckDB through SQLAlchemy (GX issues #10738 and #11579), so rows arrive as Arrow and are validated
as pandas frames in an ephemeral context (nothing written to disk).
"""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection

EXAMPLES = 5  # unexpected values kept per expectation and chunk


def batch_definition():
    """GX's whole-dataframe batch definition in an ephemeral context (imports GX: seconds)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("cachemeter")
    return source.add_dataframe_asset("warehouse_rows").add_batch_definition_whole_dataframe("chunk")


def validate(batches, specs: list[tuple[str, dict]], ipc: bytes) -> list[dict]:
    """Validate the Arrow IPC stream ``ipc`` against ``specs``; one result dict per spec (module docstring).

    Raises ``ValueError`` for a ``kind`` that is not a GX expectation; GX's own errors for bad options.
    """
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


def serve(conn: Connection) -> None:
    """Answer requests on ``conn`` until it closes (module docstring)."""
    try:
        batches, failure = batch_definition(), None
    except Exception as exc:  # answered to every request: the run names it in the check's failure
        batches, failure = None, f"Great Expectations could not be loaded: {type(exc).__name__}: {exc}"
    while True:
        try:
            specs, ipc = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("error", failure) if failure else ("ok", validate(batches, specs, ipc))
        except Exception as exc:
            reply = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(reply)


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
