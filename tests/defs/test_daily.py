"""pipelines/defs/daily.py: a window's rewrite compacts the warehouse only when it replaced rows."""

from tests.conftest import run_pipeline, write_jsonl


def day_logs(folder, day: int, tokens: int):
    write_jsonl(folder / f"day-{day}.jsonl", [
        {"ts": f"2026-11-0{day}T{n:02d}:00:00Z", "provider": "openai", "model": "gpt-4o", "request_id": f"d{day}-{n}",
         "response": {"usage": {"prompt_tokens": tokens + n, "completion_tokens": 10,
                                "prompt_tokens_details": {"cached_tokens": 1024}}}}
        for n in range(6)])


def test_a_new_day_appends_without_compacting_and_a_replaced_day_compacts(tmp_path, monkeypatch):
    from pipelines.defs import daily

    calls, current = [], []  # (delete statement, compacted) per window rewrite
    real_settle, real_replace = daily.settle, daily.replace_window

    def replace(conn, delete_sql, *args, **kwargs):
        current[:] = [delete_sql]
        return real_replace(conn, delete_sql, *args, **kwargs)

    monkeypatch.setattr(daily, "replace_window", replace)
    monkeypatch.setattr(daily, "settle", lambda conn, compact=False: (calls.append((current[0], compact)),
                                                                      real_settle(conn, compact))[1])
    logs = tmp_path / "logs"
    day_logs(logs, 1, 2000)
    run_pipeline(tmp_path, logs)
    cost_rewrite = "costs/usage_costs__delete_window"
    assert (cost_rewrite, False) in calls
    assert not any(compact for _, compact in calls)  # every window was empty before: nothing replaced, nothing merged
    calls.clear()
    day_logs(logs, 2, 2000)  # a new day: its windows are empty too
    run_pipeline(tmp_path, logs)
    assert (cost_rewrite, False) in calls and not any(compact for _, compact in calls)
    calls.clear()
    day_logs(logs, 2, 3000)  # the same day's file edited: its cost rows are replaced, and the checkpoint merges
    run_pipeline(tmp_path, logs)
    assert (cost_rewrite, True) in calls and (cost_rewrite, False) not in calls
