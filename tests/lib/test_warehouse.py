"""pipelines/lib/warehouse.py: preparing a warehouse, including one from before a table was folded away."""

import duckdb

from tests.conftest import run_pipeline, snapshot, write_jsonl


def dated_model_logs(folder):
    """Two UTC days of a dated OpenAI model id, whose catalogue id (genai-prices) is the undated one."""
    write_jsonl(folder / "usage.jsonl", [
        {"ts": f"2026-11-0{d}T{n:02d}:00:00Z", "provider": "openai", "model": "gpt-4o-2024-08-06",
         "request_id": f"d{d}-{n}", "response": {"usage": {"prompt_tokens": 2000 + n, "completion_tokens": 10,
                                                            "prompt_tokens_details": {"cached_tokens": 1024}}}}
        for d in (1, 2) for n in range(12)])
    return folder


def test_staging_stores_each_row_once_with_its_catalogue_id(tmp_path):
    db = run_pipeline(tmp_path, dated_model_logs(tmp_path / "logs"))
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("select count(*) from duckdb_tables() where table_name = 'usage_rows'").fetchall() == [(0,)]
        # genai-prices matches the dated snapshot id to its catalogue entry
        assert conn.execute("select price_model, count(*) from core.usage group by 1").fetchall() == [("gpt-4o", 24)]
        assert conn.execute("select count(*) from stage.pending_days").fetchall() == [(0,)]


def test_a_warehouse_with_staged_rows_in_their_own_table_moves_them_into_core_usage(tmp_path):
    logs = dated_model_logs(tmp_path / "logs")
    db = run_pipeline(tmp_path, logs)
    clean = snapshot(db)
    # the layout before core.usage held the staged rows: stage.usage_rows held every accepted record
    # (no price_model); core.usage held copies of the days built so far, here one day short and one stale row
    with duckdb.connect(str(db)) as conn:
        conn.execute("create table stage.usage_rows as select * exclude (price_model) from core.usage")
        conn.execute("delete from core.usage where day = date '2026-11-02'")
        conn.execute("insert into core.usage select * replace ('gone' as request_id) from core.usage limit 1")
        conn.execute("delete from stage.definitions_version")  # files from an older release

    run_pipeline(tmp_path, logs)  # the logs are unchanged: no file is staged again

    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("select count(*) from duckdb_tables() where table_name = 'usage_rows'").fetchall() == [(0,)]
        assert conn.execute("select count(*) from stage.pending_days").fetchall() == [(0,)]
    assert snapshot(db) == clean  # catalogue ids resolved again, both days rebuilt, the stale row gone
