"""Release the Dagster runs of ``cachemeter run`` processes that died (``kill -9``, out of memory, a reboot).

A CLI run executes its jobs in its own process (``pipelines/runner.py``). Killed mid-step, it leaves its
Dagster run ``STARTED`` holding the ``duckdb`` pool slot its step claimed (``dagster.yaml``: pool limit 1),
and the next ``cachemeter run`` on that ``DAGSTER_HOME`` waits for the slot forever. Dagster's run
monitoring frees such slots, but only in its daemon (``dagster dev`` / ``dagster-daemon``), which a CLI run
does not start. So every CLI run is tagged with the process that runs it (``PROCESS_TAG``: process id and
start time, so a reused process id is not mistaken for it, and ``HOST_TAG``), and the next run, before it
claims anything, marks the runs of dead processes on this host failed and frees their slots: what run
monitoring does for the daemon's runs (``instance.report_run_failed``, ``free_concurrency_slots_for_run``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dagster as dg

PROCESS_TAG = "cachemeter/process"  # "<pid>:<start time in clock ticks since boot>" (Linux), else "<pid>:"
HOST_TAG = "cachemeter/host"
LIVE_STATUSES = (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)


def process_token(pid: int | None = None) -> str:
    """``"<pid>:<start>"`` for process ``pid`` (default this one); start is field 22 of ``/proc/<pid>/stat``
    (clock ticks after boot), empty where there is no ``/proc`` or the process is gone."""
    pid = os.getpid() if pid is None else pid
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        start = stat[stat.rindex(")") + 2:].split()[19]  # fields after the command name, which may hold spaces
    except (OSError, IndexError, ValueError):
        start = ""
    return f"{pid}:{start}"


# Dagster's run tag for the runs its daemon may re-execute after a failure (dagster.yaml's run_retries): a CLI run is
# never re-executed by a daemon sharing its DAGSTER_HOME, since the next cachemeter run rebuilds what it left pending
NO_DAEMON_RETRIES = {"dagster/max_retries": "0"}


def run_tags() -> dict[str, str]:
    """The tags that name this process on every run it executes (and keep a daemon from re-executing them)."""
    return {PROCESS_TAG: process_token(), HOST_TAG: socket.gethostname(), **NO_DAEMON_RETRIES}


def is_alive(token: str) -> bool:
    """Whether the process a ``process_token`` names still runs (the same process: same id and start time)."""
    pid_text, _, start = token.partition(":")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process with that id: alive, compare its start time
    except (ValueError, OSError):
        return True  # not a token of ours: never release what cannot be judged
    return not start or process_token(pid) == token


def release_dead_runs(instance: dg.DagsterInstance, by: str = "the next cachemeter run") -> list[str]:
    """Mark failed the unfinished runs tagged by a ``cachemeter run`` process of this host that is gone, and free
    their pool slots; returns their run ids (empty when none). Runs of other hosts and of live processes, and
    runs without the tags (the daemon's, whose monitoring handles them), are left alone. ``by`` names the releaser
    in the failure message (the next CLI run, or the daemon's pending-days sensor)."""
    host = socket.gethostname()
    released = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=list(LIVE_STATUSES), tags={HOST_TAG: host})):
        token = run.tags.get(PROCESS_TAG)
        if token is None or is_alive(token):
            continue
        instance.report_run_failed(run, message=f"the cachemeter run process ({token.partition(':')[0]}) died "
                                                f"before the run ended; released by {by}")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    return released
