"""Late data: a file for an already-built day is noticed by the sensor and that day is rebuilt once."""

from datetime import date

import dagster as dg

from tests.conftest import query, run_pipeline, write_jsonl
from tests.defs.test_pipeline import hit_rate_logs


def late_rows(n: int) -> list[dict]:
    return [{"ts": f"2026-11-03T23:{i:02d}:00Z", "provider": "openai", "model": "gpt-4.1", "tenant": "acme", "app": "bot",
             "request_id": f"late-{i}", "response": {"usage": {"prompt_tokens": 4000, "completion_tokens": 10,
                                                                "prompt_tokens_details": {"cached_tokens": 3000}}}}
            for i in range(n)]


def evaluate(sensor):
    from pipelines.defs.settings import CachemeterSettings

    result = sensor(dg.build_sensor_context(resources={"settings": CachemeterSettings.from_env()}))
    return result if isinstance(result, list) else []


def test_a_late_file_is_staged_and_only_its_day_is_rebuilt_once(tmp_path):
    from pipelines import runner
    from pipelines.defs.ingest.sensors import late_logs_sensor
    from pipelines.definitions import defs

    hit_rate_logs(tmp_path / "logs", broken_from=date(2026, 11, 8))
    db = run_pipeline(tmp_path, tmp_path / "logs")
    assert evaluate(late_logs_sensor) == []  # nothing new
    before = dict(query(db, "select day, requests from marts.daily_savings"))

    write_jsonl(tmp_path / "logs" / "late" / "2026-11-03-replay.jsonl", late_rows(12))
    (request,) = evaluate(late_logs_sensor)
    assert request.job_name == "cachemeter_ingest" and request.partition_key is None

    loaded = defs()
    assets, resources = list(loaded.assets), dict(loaded.resources)
    keys = lambda ks: dg.AssetSelection.assets(*[dg.AssetKey(k) for k in ks])  # noqa: E731
    assert dg.materialize(assets, resources=resources, selection=keys(runner.INGEST_KEYS),
                          instance=dg.DagsterInstance.ephemeral()).success
    (request,) = evaluate(late_logs_sensor)
    assert (request.job_name, request.partition_key) == ("cachemeter_nightly", "2026-11-03")

    assert dg.materialize(assets, resources=resources, selection=keys(runner.DAILY_KEYS), partition_key="2026-11-03",
                          instance=dg.DagsterInstance.ephemeral()).success
    after = dict(query(db, "select day, requests from marts.daily_savings"))
    assert after[date(2026, 11, 3)] == before[date(2026, 11, 3)] + 12
    assert {d: n for d, n in after.items() if d != date(2026, 11, 3)} == {d: n for d, n in before.items() if d != date(2026, 11, 3)}
    assert query(db, "select count(*), count(distinct request_id) from core.usage where request_id like 'late-%'") == [(12, 12)]
    assert evaluate(late_logs_sensor) == []  # staged and rebuilt: nothing left to do
