"""The YAML loader for settings files (lib/safe_yaml.py), as cachemeter.yaml loading uses it."""

import pytest

from pipelines.defs.settings import load_config
from pipelines.lib import safe_yaml


def test_config_loading_refuses_aliases_before_expanding_them(tmp_path):
    path = tmp_path / "cachemeter.yaml"
    path.write_text("alerts:\n  min_requests: &n 50\n  baseline_days: *n\n")
    with pytest.raises(ValueError, match=r"cachemeter.yaml: line 2: anchors and aliases \(&, \*, <<\) are not allowed"):
        load_config(path)


def test_config_loading_reads_a_plain_file_and_names_the_file_for_bad_yaml(tmp_path):
    path = tmp_path / "cachemeter.yaml"
    path.write_text("alerts:\n  min_requests: 50\nwebhook:\n  url_env: HOOK\n")
    assert load_config(path) == {"alerts": {"min_requests": 50}, "webhook": {"url_env": "HOOK"}}
    path.write_text("alerts: [\n")
    with pytest.raises(safe_yaml.YamlFileError, match=f"^{path}: not valid YAML"):
        load_config(path)
