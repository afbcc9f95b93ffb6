"""Publishing a batch joins by hash, never row against row (sql/ingest/*, stage.PUBLISH and PUBLISH_NEW).

A join whose condition DuckDB cannot hash (an equality plus a test on one side alone, for example) is
planned as a nested loop: every staged row against every row of the other side. On small batches it
is invisible; at 100,000 records with request bodies it was 40.5 s of one statement
(usage__insert_batch, joining the body fingerprints), and it grows with the square of the batch
(bench/README.md, "Request bodies at volume"). This test stages the two-week preamble logs (request
bodies, so the fingerprint table is not empty) and reads the plan of every publishing statement at the
moment it runs.
"""

from fixtures import preamble_logs
from pipelines.ingest import stage
from pipelines.lib import warehouse

NESTED_LOOPS = ("NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN", "CROSS_PRODUCT")


def test_every_publishing_statement_joins_by_hash_or_merge(tmp_path, monkeypatch):
    preamble_logs.write(tmp_path / "logs")
    plans: dict[str, str] = {}
    with warehouse.connect(tmp_path / "w.duckdb") as conn:
        real = stage.statement

        def explained(name, *args, **kwargs):
            text = real(name, *args, **kwargs)
            if name in stage.PUBLISH + stage.PUBLISH_NEW:
                plans[name] = conn.execute("explain " + text).fetchall()[0][1]
            return text

        monkeypatch.setattr(stage, "statement", explained)
        results = stage.stage_logs(conn, tmp_path / "logs")
        with_bodies = conn.execute("select count(*) from core.usage where opening_hashes is not null").fetchall()[0][0]
    assert sum(r.rows_accepted for r in results) == with_bodies > 0  # every record logged its request
    assert set(plans) == set(stage.PUBLISH + stage.PUBLISH_NEW)  # every one was planned and read
    looped = {name: [op for op in NESTED_LOOPS if op in plan] for name, plan in plans.items()}
    assert {name: ops for name, ops in looped.items() if ops} == {}
