"""Dagster code location: every definition under ``pipelines/defs/`` is loaded automatically."""

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    """All assets, checks, jobs, schedules and resources of cachemeter."""
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
