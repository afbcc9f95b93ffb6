"""Run settings shared by the assets: the Dagster resource built from ``pipelines/lib/options.py``.

Every setting (file threshold or environment variable) is declared once, with its default, unit and
meaning, in ``pipelines/lib/options.py``; the README's settings table and the bundled
``cachemeter.yaml`` are generated from it. ``CACHEMETER_DB`` and ``CACHEMETER_LOGS`` are resolved when
a run starts (``dg.EnvVar`` in ``resources.py``); the partition start, the nightly cron and the
deadline hour are part of the definitions, read when the code loads.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from pipelines.lib import options, safe_yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LOGS = str(REPO_ROOT / "fixtures" / "demo_logs")
DEFAULT_CONFIG = str(REPO_ROOT / "cachemeter.yaml")


class _SettingsBase(dg.ConfigurableResource):
    """Where the logs and price overrides are; the file options are added as fields below."""

    logs_dir: str = ""  # no default: a deployment names its logs folder (the CLI defaults to the bundled demo)
    prices_file: str | None = None
    follow_symlinks: bool = False
    # why the settings file or a variable could not be used, when the code location loaded with the defaults instead
    # (``deferring_errors``): every run fails on it, naming the file and key, while the sensors keep working
    config_error: str = ""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """A run (not a sensor: ``context.dagster_run`` is set) fails at once on ``config_error``: its run-failure
        notice then names the file and the key, posted by the sensors this does not stop."""
        if self.config_error and context.dagster_run is not None:
            raise ValueError(self.config_error)

    @classmethod
    def deferring_errors(cls, logs_dir: str | dg.EnvVar | None = None) -> "CachemeterSettings":
        """``from_env``; but a settings file or variable that cannot be used gives the defaults with ``config_error``
        set, rather than an error that stops the code location from loading: a typo in ``cachemeter.yaml`` stopped
        the schedule, every sensor, the watchdog and the failure notices with it, the Dagster UI showing only
        "Error loading repository location" (a break test)."""
        try:
            return cls.from_env(logs_dir=logs_dir)
        except ValueError as exc:
            return cls(logs_dir=logs_dir if logs_dir is not None else "", config_error=str(exc),
                       **{o.name: o.default for o in options.FILE_OPTIONS})

    @property
    def dependent_days(self) -> int:
        """Days after a UTC day whose stored results read it, so are rebuilt with it (days; 21 by default).

        With b = ``alert_baseline_days``: the prefix-family and hit-rate baselines read the b days
        before a day; a rotating-preamble incident starts on a day R whose previous traffic day (at
        most b + 1 back) did not meet its condition over its own b-day baseline, so R reads 2b + 1 days
        back, and R's alert mutes hit-rate drops for b - 1 more days: 3b in all. The negative-ROI rule
        compares the ``roi_window_days`` window ending on a day with the one ending the day before:
        ``roi_window_days`` back.
        """
        return max(3 * self.alert_baseline_days, self.roi_window_days)

    @classmethod
    def from_env(cls, logs_dir: str | dg.EnvVar | None = None) -> "CachemeterSettings":
        """Settings from ``cachemeter.yaml`` and the ``CACHEMETER_*`` variables (``options.values``).

        ``logs_dir`` overrides ``CACHEMETER_LOGS`` (the Dagster resource passes ``dg.EnvVar``, resolved
        when a run starts). Raises ``ValueError`` naming the file or the setting when the configuration
        cannot be read.
        """
        named = bool(os.environ.get(options.BY_NAME["config"].env, "").strip())  # CACHEMETER_CONFIG is set
        config = load_config(Path(str(options.env_value("config") or DEFAULT_CONFIG)), named)
        return cls(logs_dir=logs_dir if logs_dir is not None else str(options.env_value("logs")),
                   prices_file=str(options.env_value("prices")) or None,
                   follow_symlinks=bool(options.env_value("follow_symlinks")),
                   **options.values(config))

    def sql_params(self) -> dict[str, object]:
        """Every file option as an SQL parameter ``$<name>`` (``params_for`` keeps those a statement uses)."""
        return {o.name: getattr(self, o.name) for o in options.FILE_OPTIONS}

    def incident_thresholds(self) -> "Thresholds":
        """The hit-rate incident rule's settings (``pipelines/lib/incidents.py``)."""
        from pipelines.lib.incidents import Thresholds

        return Thresholds(min_drop=self.alert_min_drop, critical_drop=self.alert_critical_drop,
                          recovery_drop=self.incident_recovery_drop, recovery_days=self.incident_recovery_days,
                          min_requests=self.alert_min_requests, reference_days=self.incident_reference_days,
                          min_reference_days=self.incident_min_reference_days, pool_max_days=self.incident_pool_max_days,
                          confidence_z=self.incident_confidence_z, quiet_days=self.incident_quiet_days)


# The file options as pydantic fields (name: type = default), so a setting's name and default are
# written once, in pipelines/lib/options.py, rather than again as class attributes here.
CachemeterSettings = type("CachemeterSettings", (_SettingsBase,), {
    "__module__": __name__,
    "__doc__": "cachemeter's run settings (Dagster resource): logs, prices, and every option of "
               "pipelines/lib/options.FILE_OPTIONS (units in the option table).",
    "__annotations__": {o.name: type(o.default) if not isinstance(o.default, list) else list[str]
                        for o in options.FILE_OPTIONS},
    **{o.name: o.default for o in options.FILE_OPTIONS},
})


def load_config(path: Path, named: bool = False) -> dict:
    """The parsed configuration file; ``{}`` when the default file does not exist (an installed package has none).

    ``named``: the file was named (``CACHEMETER_CONFIG``), so its absence is an error: a mistyped path ran on the
    defaults without a word (a break test). Raises ``ValueError`` naming the file: missing when named, not a file,
    bad YAML, not a mapping, or holding keys that name no setting (``options.unknown_keys``: a typo was ignored).
    """
    if not path.exists() and not named:
        return {}
    if not path.is_file():
        raise ValueError(f"CACHEMETER_CONFIG names {path}, which {'is not a file' if path.exists() else 'does not exist'}"
                         " (unset it for the bundled defaults)")
    data = safe_yaml.load_file(path) or {}  # YamlFileError (a ValueError): bad YAML, aliases, huge values
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with 'alerts' and 'webhook'")
    unknown = options.unknown_keys(data)
    if unknown:
        raise ValueError(f"{path}: {'an unknown setting' if len(unknown) == 1 else 'unknown settings'} "
                         f"{', '.join(unknown)} (the settings are the README's settings table and the bundled cachemeter.yaml)")
    return data
