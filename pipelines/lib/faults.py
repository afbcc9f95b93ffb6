"""Crash points for the crash-safety tests: ``CACHEMETER_KILL_AT=<point>`` makes the process
SIGKILL itself when it reaches that point, so a test controls exactly where a run dies.

Unset (always, outside those tests) it costs one dictionary lookup per call. Points:
``stage:mid_file`` (inside a file's publishing transaction), ``stage:after_file`` (after the first
file is committed), ``window:<sql name>`` (inside a partition window's transaction, after the delete),
``report:mid_write`` (half of the report page written to its temporary file).
"""

import os
import signal

from pipelines.lib import options


def maybe_die(point: str) -> None:
    """SIGKILL this process if ``CACHEMETER_KILL_AT`` names ``point``."""
    if options.env_value("kill_at") == point:
        os.kill(os.getpid(), signal.SIGKILL)
