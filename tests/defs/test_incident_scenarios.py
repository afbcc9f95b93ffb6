"""The alert scenario suite (fixtures/alert_scenarios.py): 30 generated days of eleven scenarios with
known incidents, built in one go and as 30 nightly runs, scored against the ground truth."""

from datetime import timedelta
from decimal import Decimal

import dagster as dg
import pytest

from fixtures import alert_scenarios as sc
from pipelines import runner
from tests.conftest import query

INCIDENTS = ("select tenant, app, rule, severity, opened_day, last_day, resolved_day, status, incident_key, "
             "baseline_token_hit_rate, lost_savings_usd, divergence_offset_chars, divergence_offset_tokens, message "
             "from marts.cache_incidents order by tenant, app, opened_day")


@pytest.fixture(scope="module")
def one_go(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("one_go")
    sc.write_all(tmp / "logs")
    runner.configure(tmp / "logs", tmp / "w.duckdb", None)
    runner.run_pipeline(instance=dg.DagsterInstance.ephemeral())
    return tmp / "w.duckdb"


@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nightly")
    instance = dg.DagsterInstance.ephemeral()
    held_partial_days = []
    for n in range(1, sc.DAYS + 1):
        sc.write_day(tmp / "logs", n)
        runner.configure(tmp / "logs", tmp / "w.duckdb", None)
        runner.run_pipeline(instance=instance)
        # local_midnight's newest UTC day is a third logged: held, never judged on partial data
        held_partial_days += query(tmp / "w.duckdb", "select day, status from marts.series_evaluations "
                                                    "where tenant = 'local_midnight' and day = $d", {"d": sc.day_of(n + 1)})
    return tmp / "w.duckdb", held_partial_days


def incidents(db):
    columns = ["tenant", "app", "rule", "severity", "opened", "last", "resolved", "status", "key", "baseline", "lost",
               "offset_chars", "offset_tokens", "message"]
    return [dict(zip(columns, row)) for row in query(db, INCIDENTS)]


def score(found: list[dict]) -> dict:
    """Precision (incidents that were real) and recall (real incidents found) against TRUTH."""
    matched, real = set(), 0
    for tenant, truths in sc.TRUTH.items():
        for truth in truths:
            hits = [i for i in found if i["tenant"] == tenant and i["app"] == truth["app"] and i["rule"] == truth["rule"]
                    and truth["opened"][0] <= i["opened"] <= truth["opened"][1]]
            if len(hits) == 1:
                matched.add(hits[0]["key"])
        real += len(truths)
    return {"precision": len(matched) / len(found) if found else 1.0, "recall": len(matched) / real}


@pytest.mark.parametrize("mode", ["one_go", "nightly"])
def test_every_true_incident_is_one_incident_opened_on_its_first_complete_day(mode, request):
    db = request.getfixturevalue(mode)
    db = db[0] if mode == "nightly" else db
    found = incidents(db)
    for tenant, truths in sc.TRUTH.items():
        mine = [i for i in found if i["tenant"] == tenant]
        assert len(mine) == len(truths), (tenant, mine)
        for truth, incident in zip(truths, mine):
            assert incident["rule"] == truth["rule"] and incident["app"] == truth["app"], incident
            assert truth["opened"][0] <= incident["opened"] <= truth["opened"][1], incident
            assert incident["resolved"] == truth["resolved"], incident
            assert incident["status"] == ("open" if truth["resolved"] is None else "resolved")
            # a resolved incident's message says so (a rule's message spoke of its last alert day only: "now ...")
            assert (f"resolved {truth['resolved']}" in incident["message"]) == (truth["resolved"] is not None)
            if "offset_chars" in truth:
                assert abs(incident["offset_chars"] - truth["offset_chars"]) <= 50
                assert "looks like a timestamp" in incident["message"]
            if "offset_tokens" in truth:
                assert incident["offset_tokens"] == truth["offset_tokens"]
                assert "cache reads now stop at 1,024 tokens" in incident["message"]
    assert score(found) == {"precision": 1.0, "recall": 1.0}
    print(f"\n{mode}: {len(found)} incidents, {score(found)}")


def test_nightly_runs_and_a_one_go_build_give_identical_incidents(one_go, nightly):
    assert incidents(nightly[0]) == incidents(one_go)
    evaluations = "select * from marts.series_evaluations order by all"
    assert query(nightly[0], evaluations) == query(one_go, evaluations)


def test_partial_days_are_held_and_the_last_complete_day_follows_the_logs(one_go, nightly):
    _, held = nightly
    assert len(held) == sc.DAYS and {status for _, status in held} == {"held"}
    # the last files reach 08:00 UTC of 2026-12-01: every November day is complete, December 1 held
    assert query(one_go, "select max(day) filter (where status <> 'held'), min(day) filter (where status = 'held') "
                         "from marts.series_evaluations") == [(sc.day_of(30), sc.day_of(31))]


def test_frozen_baseline_keeps_severity_and_lost_savings_honest(one_go):
    deploy = next(i for i in incidents(one_go) if i["tenant"] == "deploy")
    assert deploy["severity"] == "critical" and deploy["baseline"] == pytest.approx(0.80, abs=0.01)
    # the truth: every dropped day against the 80% level, at gpt-4.1's $2.00 - $0.50 per MTok of missed reads
    truth = sum(Decimal(round(0.80 * r["response"]["usage"]["prompt_tokens"]) - r["response"]["usage"]["prompt_tokens_details"]["cached_tokens"])
                for n in range(15, 20) for r in sc.utc_day_rows("deploy", n)) * Decimal("1.5") / 10**6
    assert abs(deploy["lost"] - truth) / truth < Decimal("0.03")
    # resolved on the first recovered day plus the confirmation (recovery_days = 2): 11-20 and 11-21
    truth_deploy = sc.TRUTH["deploy"][0]
    assert deploy["resolved"] == truth_deploy["first_recovered"] + timedelta(days=1)
    events = query(one_go, "select day, event from marts.cache_incident_events where incident_key = $k order by day",
                   {"k": deploy["key"]})
    assert events[0] == (sc.day_of(15), "opened") and events[-1] == (sc.day_of(21), "resolved")
    assert [e for _, e in events].count("opened") == 1 and len(events) == 7


def test_low_volume_series_are_pooled_and_unjudged_days_say_why(one_go):
    pooled = query(one_go, "select min(pooled_days), max(pooled_days) from marts.series_evaluations "
                           "where tenant = 'low_volume' and status = 'evaluated'")
    assert pooled == [(3, 3)]  # 20 requests a day: three days reach min_requests (50)
    reasons = query(one_go, "select distinct reason from marts.series_evaluations "
                            "where tenant = 'low_volume' and status = 'not_evaluated' order by 1")
    assert reasons and all(r.startswith(("fewer than 50 requests", "history too short")) for (r,) in reasons)
