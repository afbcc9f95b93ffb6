"""The ``cachemeter`` command as a user runs it: a subprocess on real data and on the bundled demo."""

import json
import os
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, query, write_jsonl


def cachemeter(*args, cwd, env=None, **run):
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "160", **(env or {})},
                          **{"timeout": 600, **run})


def test_run_on_the_mooncake_conversation_trace_prints_the_days_savings(tmp_path, shared):
    logs = tmp_path / "logs" / "kimi"
    logs.mkdir(parents=True)
    shutil.copy(shared / "data" / "mooncake_fast25" / "conversation_trace.jsonl", logs)
    (logs / "source.yaml").write_text("provider: self_hosted\nmodel: kimi-k2\napp: chat\n"
                                      "trace_start: 2026-11-27T00:00:00Z\nblock_size_tokens: 512\ncache: infinite\n")
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      "cache_write_1h_per_mtok,output_per_mtok\nself_hosted,kimi-k2,2026-01-01,0.60,0.15,,,2.50\n")
    db = tmp_path / "w.duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2026-11-27" in done.stdout and "12,031" in done.stdout and "37.4%" in done.stdout
    # 144,793,823 prompt tokens, 54,098,411 read: 90,695,412 x $0.60 + 54,098,411 x $0.15 + 4,131,253 output x $2.50 (per MTok)
    row = query(db, "select requests, prompt_tokens, cache_read_tokens, output_tokens, cost_usd, no_cache_cost_usd from marts.daily_savings")
    requests, prompt, read, output, cost, no_cache = row[0]
    assert (requests, prompt, read) == (12_031, 144_793_823, 54_098_411)
    assert cost == (Decimal(prompt - read) * Decimal("0.60") + Decimal(read) * Decimal("0.15") + Decimal(output) * Decimal("2.50")) / 10**6
    assert no_cache - cost == Decimal(read) * Decimal("0.45") / 10**6
    # the run wrote its report beside the warehouse and said where; `report --db` writes to the same place
    report = tmp_path / "w.report.html"  # named for its warehouse (w.duckdb)
    assert f"report: {report}" in done.stdout.replace("\n", "") and report.stat().st_size > 10_000
    report.unlink()
    again = cachemeter("report", "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert report.stat().st_size > 10_000 and not (tmp_path / "warehouse").exists()
    # an unchanged re-run rebuilds no day and changes nothing; the override file given as CACHEMETER_PRICES this
    # time (the README's settings table lists it; the CLI ignored it, so the price book changed and every day was repriced)
    rerun = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path,
                       env={"CACHEMETER_PRICES": str(prices)})
    assert rerun.returncode == 0 and "no day was rebuilt" in rerun.stdout
    assert query(db, "select requests, prompt_tokens, cache_read_tokens, output_tokens, cost_usd, no_cache_cost_usd "
                     "from marts.daily_savings") == row


def test_sql_answers_read_only_and_refuses_writes(tmp_path):
    db = tmp_path / "w.duckdb"
    built = cachemeter("run", "--db", str(db), cwd=tmp_path)
    assert built.returncode == 0 and "Warning" not in built.stderr, built.stderr  # no library warning reaches a user
    done = cachemeter("sql", "select count(*) as n, sum(rows_quarantined) as q from stage.files", "--db", str(db),
                      "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 10, "q": 4}]
    refused = cachemeter("sql", "delete from core.usage", "--db", str(db), cwd=tmp_path)
    assert refused.returncode == 1 and "read-only" in refused.stderr.lower()
    for statement in (f"attach '{tmp_path / 'other.duckdb'}' as other", f"copy (select 1) to '{tmp_path / 'out.csv'}'",
                      "set enable_external_access = true"):
        refused = cachemeter("sql", statement, "--db", str(db), cwd=tmp_path)
        assert refused.returncode == 1, statement
    assert not (tmp_path / "other.duckdb").exists() and not (tmp_path / "out.csv").exists()
    assert query(db, "select count(*) from core.usage")[0][0] > 5000
    # the query the run's last line suggests runs as printed, with columns few enough to read in a terminal
    suggested = built.stdout.replace("\n", "").rsplit(' sql "', 1)[1].split('"', 1)[0]
    tried = cachemeter("sql", suggested, "--db", str(db), "--format", "json", cwd=tmp_path)
    assert tried.returncode == 0, tried.stderr
    rows = json.loads(tried.stdout)
    assert len(rows) == 20 and list(rows[0]) == ["day", "app", "token_hit_rate", "savings_usd"]
    assert rows[0]["day"] == "2026-11-27"  # newest first, then the largest savings, rounded to cents for reading
    first_day = [row for row in rows if row["day"] == "2026-11-27"]
    savings = [Decimal(str(row["savings_usd"])) for row in first_day]
    assert savings == sorted(savings, reverse=True) and all(s == s.quantize(Decimal("0.01")) for s in savings)
    # a zero USD amount reads 0.000000000000000 in every format, not Python's 0E-15
    zero = "select 0::decimal(38, 15) as usd, 12.5::decimal(38, 15) as more_usd"
    shown = {form: cachemeter("sql", zero, "--db", str(db), "--format", form, cwd=tmp_path).stdout
             for form in ("csv", "json", "table")}
    assert shown["csv"].splitlines() == ["usd,more_usd", "0.000000000000000,12.500000000000000"]
    assert json.loads(shown["json"]) == [{"usd": "0.000000000000000", "more_usd": "12.500000000000000"}]
    assert "0.000000000000000" in shown["table"] and "E-15" not in shown["table"]
    assert all(len(str(row["token_hit_rate"]).split(".")[-1]) <= 3 for row in rows)


def test_demo_logs_are_deterministic(tmp_path):
    # the bundled demo is what fixtures/make_demo_logs.py writes; regenerating must not change a byte
    generated = subprocess.run([sys.executable, str(REPO / "fixtures" / "make_demo_logs.py")], capture_output=True, text=True)
    assert generated.returncode == 0
    assert subprocess.run(["git", "diff", "--quiet", "--", "fixtures/demo_logs"], cwd=REPO).returncode == 0


def test_a_bad_price_file_is_reported_with_its_file_and_line(tmp_path):
    prices = tmp_path / "rates.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      "cache_write_1h_per_mtok,output_per_mtok\nopenai,gpt-4o,2026-01-01,abc,1,1,1,1\n")
    done = cachemeter("run", "--db", str(tmp_path / "w.duckdb"), "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 1
    assert f"error: ingest and pricing failed: {prices}:2: input_per_mtok 'abc' is not a number" in " ".join(done.stderr.split())


def empty_warehouse(tmp_path):
    from pipelines.lib import warehouse

    db = tmp_path / "w.duckdb"
    warehouse.connect(db).close()
    return db


def at_most_4gb_of_address_space():  # a regression must not take the machine with it
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


def test_sql_stops_a_query_past_its_memory_limit_with_one_line(tmp_path):
    db = empty_warehouse(tmp_path)
    huge = "select len(list(range)) from range(1500000000)"
    for args, env, limit in (([], {}, "1GB"), ([], {"CACHEMETER_MEMORY_LIMIT": "200MB"}, "200MB"),
                            (["--memory-limit", "300MB"], {"CACHEMETER_MEMORY_LIMIT": "200MB"}, "300MB")):
        done = cachemeter("sql", huge, "--db", str(db), *args, cwd=tmp_path, env=env, preexec_fn=at_most_4gb_of_address_space)
        assert done.returncode == 1 and done.stdout == "", done.stderr
        assert done.stderr == (f"error: the query needs more than the {limit} memory limit and was stopped "
                               "(raise --memory-limit or CACHEMETER_MEMORY_LIMIT)\n")


def test_sql_stops_a_query_past_its_time_limit_with_one_line(tmp_path):
    import time

    db = empty_warehouse(tmp_path)
    endless = "select sum(hash(range) % 7) from range(100000000000)"
    for args, env in ((["--timeout", "1"], {}), ([], {"CACHEMETER_SQL_TIMEOUT": "1.5"})):
        started = time.monotonic()
        done = cachemeter("sql", endless, "--db", str(db), *args, cwd=tmp_path, env=env, timeout=120)
        assert done.returncode == 1 and done.stdout == "", done.stderr
        assert done.stderr == (f"error: the query ran longer than {args[1] if args else '1.5'} s and was stopped "
                               "(raise --timeout or CACHEMETER_SQL_TIMEOUT; 0 = no limit)\n")
        assert time.monotonic() - started < 60
    quick = cachemeter("sql", "select 42 as n", "--db", str(db), "--format", "json", "--timeout", "30", cwd=tmp_path)
    assert quick.returncode == 0 and json.loads(quick.stdout) == [{"n": 42}]
    # a blank variable is unset (typer refused " " as a float); inf is no limit (threading.Timer overflowed on it)
    for args, env in (([], {"CACHEMETER_SQL_TIMEOUT": " "}), (["--timeout", "inf"], {})):
        quick = cachemeter("sql", "select 42 as n", "--db", str(db), "--format", "json", *args, cwd=tmp_path, env=env)
        assert quick.returncode == 0 and json.loads(quick.stdout) == [{"n": 42}], quick.stderr
    bad = cachemeter("sql", "select 42 as n", "--db", str(db), cwd=tmp_path, env={"CACHEMETER_SQL_TIMEOUT": "-3"})
    assert bad.returncode == 2 and "CACHEMETER_SQL_TIMEOUT" in bad.stderr and "greater than or equal to 0" in bad.stderr
    # a blank CACHEMETER_DB is unset, not a warehouse file named " " (the default warehouse, which is not there)
    blank_db = cachemeter("sql", "select 42 as n", cwd=tmp_path, env={"CACHEMETER_DB": "  "})
    assert blank_db.returncode == 1 and blank_db.stderr == (
        f"error: warehouse {tmp_path}/warehouse/cachemeter.duckdb does not exist yet: "
        "`cachemeter run --db warehouse/cachemeter.duckdb` builds it\n")  # the run that builds this very warehouse


def test_sql_limits_cannot_be_lifted_from_inside_the_query(tmp_path):
    db = empty_warehouse(tmp_path)
    for statement in ("set memory_limit = '100GB'", "set max_execution_time = 0", "reset max_execution_time",
                      "set enable_external_access = true"):
        refused = cachemeter("sql", statement, "--db", str(db), cwd=tmp_path)
        assert refused.returncode == 1 and "configuration" in refused.stderr.lower(), (statement, refused.stderr)


def test_a_report_killed_while_it_is_written_leaves_the_previous_one_whole(tmp_path):
    db = empty_warehouse(tmp_path)
    out = tmp_path / "w.report.html"
    assert cachemeter("report", "--db", str(db), cwd=tmp_path).returncode == 0
    previous = out.read_bytes()
    assert previous.rstrip().endswith(b"</html>")
    killed = cachemeter("report", "--db", str(db), cwd=tmp_path, env={"CACHEMETER_KILL_AT": "report:mid_write"})
    assert killed.returncode == -9
    assert out.read_bytes() == previous


def test_a_dagster_home_whose_configuration_cannot_be_used_stops_the_run_with_one_line(tmp_path):
    # a break test: `storage: [unclosed` in DAGSTER_HOME's dagster.yaml ended the run in "ParserError ... an
    # unexpected error, please report it"
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("storage: [unclosed\n")
    done = cachemeter("run", "--logs", str(tmp_path), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path,
                      env={"DAGSTER_HOME": str(home)})
    assert done.returncode == 1 and "unexpected" not in done.stderr and "Traceback" not in done.stderr
    assert f"Dagster's instance in DAGSTER_HOME={home} cannot be opened: " in done.stderr
    assert f"(check {home / 'dagster.yaml'};" in done.stderr


def test_sql_takes_one_statement_and_writes_every_value_as_text_a_reader_can_use(tmp_path):
    # break tests: an empty query or a comment alone ended in "AttributeError ... please report it"; of two statements
    # only the last answer was printed; JSON held NaN/Infinity (not JSON) and kept one of two columns named alike; a
    # DECIMAL inside a list printed as Decimal('1.50'); a --timeout above ~9.2e9 s raised in the timer's thread
    db = empty_warehouse(tmp_path)
    for query_text, said in (("", "holds no statement"), ("/* c */", "holds no statement"),
                             ("select 1; select 2", "holds 2 statements: give one")):
        done = cachemeter("sql", query_text, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 1 and said in done.stderr and "unexpected" not in done.stderr, done.stderr
    done = cachemeter("sql", "select 1 as a, 2 as a, 1/0 as b, -1/0 as c, [1.50::decimal(4, 2)] as l", "--format",
                      "json", "--db", str(db), cwd=tmp_path)
    assert json.loads(done.stdout) == [{"a": 1, "a_2": 2, "b": "Infinity", "c": "-Infinity", "l": ["1.50"]}]
    done = cachemeter("sql", "select [0::decimal(38, 15), null] as l, {'x': 1.5::decimal(3, 1)} as s", "--format", "csv",
                      "--db", str(db), cwd=tmp_path)
    assert done.stdout.splitlines() == ["l,s", "\"[0.000000000000000, NULL]\",{'x': 1.5}"]
    done = cachemeter("sql", "select '\\x00ab'::blob as b", "--format", "csv", "--db", str(db), cwd=tmp_path)
    assert done.stdout.splitlines() == ["b", "\\x00ab"]  # as DuckDB prints a BLOB, not Python's b'\x00ab'
    # an INTERVAL as DuckDB writes it, not Python's "3 days, 0:00:00" and "-1 day, 22:30:00"
    done = cachemeter("sql", "select interval 3 day as a, interval '-90 minutes' as b, interval '1 day 2 hours 3.5 "
                      "seconds' as c, [interval '-1 day -2 hours'] as d", "--format", "csv", "--db", str(db), cwd=tmp_path)
    assert done.stdout.splitlines() == ["a,b,c,d", "3 days,-01:30:00,1 day 02:00:03.5,[-1 day -02:00:00]"]
    done = cachemeter("sql", "select interval 3 day as a", "--format", "json", "--db", str(db), cwd=tmp_path)
    assert json.loads(done.stdout) == [{"a": "3 days"}]
    # months too (DuckDB's Python client hands a month over as 30 days: "420 days" was printed for 14 months), whatever
    # ends the query
    done = cachemeter("sql", "select interval 14 month as \"a\"\"b\", interval '-1 month 2 days 03:00:00' as c, "
                      "2 as c; -- months", "--format", "csv", "--db", str(db), cwd=tmp_path)
    assert done.stdout.splitlines() == ['"a""b",c,c', "1 year 2 months,-1 month 2 days 03:00:00,2"]
    done = cachemeter("sql", "select 1 as n", "--timeout", "1e10", "--format", "csv", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines() == ["n", "1"] and "Traceback" not in done.stderr
    done = cachemeter("sql", "select * from range(10005)", "--db", str(db), cwd=tmp_path)
    assert "│ 9999 " in done.stdout and "│ 10000 " not in done.stdout
    assert "the first 10,000 rows are shown; --format csv or json gives them all" in done.stderr
    done = cachemeter("sql", "select repeat('abcdefghij', 30) as long_text, 1 as n", "--db", str(db), cwd=tmp_path)
    assert "abcdefghij" * 30 in done.stdout and "…" not in done.stdout  # whole, not cut at 140 columns


def test_a_full_disk_under_the_output_is_an_error_not_a_truncated_answer(tmp_path):
    # a break test: `sql --format table > file` on a full disk left a truncated file and exit code 0; csv said "an
    # unexpected error ... please report it"
    db = empty_warehouse(tmp_path)
    for output in ("table", "csv", "json"):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "pipelines.cli", "sql", "select * from range(3000)",
                                   "--format", output, "--db", str(db)], cwd=tmp_path, stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=120)
        assert done.returncode == 1 and "No space left on device (writing the output)" in done.stderr, done.stderr
        assert "unexpected" not in done.stderr


def test_a_damaged_snapshot_is_named_as_the_snapshot_with_what_mends_it(tmp_path):
    # a break test: a truncated snapshot was reported as "<warehouse> is not a DuckDB warehouse file" by report, export
    # and whatif, and as DuckDB's bare IO Error by sql, while the warehouse itself was whole
    db = empty_warehouse(tmp_path)
    (tmp_path / "w.snapshot.duckdb").write_bytes(db.read_bytes()[:20000])
    for command in (["sql", "select 1"], ["report"], ["export", "focus", "--out", "f.csv"],
                    ["whatif", "routing", "--cards", "2"]):
        done = cachemeter(*command, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"snapshot {tmp_path / 'w.snapshot.duckdb'}" in done.stderr, (command, done.stderr)
        assert "the next successful `cachemeter run` publishes it again" in done.stderr
        assert "is not a DuckDB warehouse file" not in done.stderr
    live = cachemeter("sql", "select 7 as n", "--live", "--format", "csv", "--db", str(db), cwd=tmp_path)
    assert live.stdout.splitlines() == ["n", "7"]


def test_the_summarys_try_line_runs_as_printed_for_a_path_with_spaces_and_glob_characters(tmp_path):
    # a break test: the try: line printed --db unquoted, so a pasted `--db my dir [x]/w*h?.duckdb` broke in the shell
    (tmp_path / "logs").mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", tmp_path / "logs" / "m.jsonl")
    db = tmp_path / "my dir [x]" / "w*h?.duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = re.search(r"try: (.*)$", done.stdout.replace("\n", " ").strip()).group(1)
    command = printed.replace(printed.split(" sql ")[0], f"{sys.executable} -m pipelines.cli", 1)
    pasted = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert pasted.returncode == 0, (command, pasted.stderr)


def test_report_refuses_to_write_over_anything_but_an_html_page(tmp_path):
    # `report --out <the warehouse>` replaced the warehouse with the page and said "Report written" (a break test)
    db = empty_warehouse(tmp_path)
    before = db.read_bytes()
    for target in (db, tmp_path / "w.snapshot.duckdb", tmp_path / "notes.txt"):
        refused = cachemeter("report", "--db", str(db), "--out", str(target), cwd=tmp_path)
        assert refused.returncode == 2 and "does not end in .html" in refused.stderr, refused.stderr
    assert db.read_bytes() == before and not (tmp_path / "notes.txt").exists()
    assert cachemeter("report", "--db", str(db), "--out", str(tmp_path / "r.HTML"), cwd=tmp_path).returncode == 0
    # a folder that cannot be written: named by --out, not by the temporary file beside it
    done = cachemeter("report", "--db", str(db), "--out", "/proc/r.html", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("error: cannot write /proc/r.html: "), done.stderr


def test_cachemeter_db_names_the_warehouse_when_no_db_option_does(tmp_path):
    # found by a break test: the README (and the Makefile) name CACHEMETER_DB for the CLI's warehouse too, but
    # --db read no variable, so a run wrote ./warehouse/ instead; an explicit --db still wins
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "one.jsonl").write_text((REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl")
                                    .read_text().splitlines()[0] + "\n")
    named = tmp_path / "named" / "w.duckdb"
    done = cachemeter("run", "--logs", str(logs), cwd=tmp_path, env={"CACHEMETER_DB": str(named)})
    assert done.returncode == 0, done.stderr
    assert named.exists() and not (tmp_path / "warehouse").exists()
    asked = cachemeter("sql", "select count(*) as n from core.usage", "--format", "csv", cwd=tmp_path,
                       env={"CACHEMETER_DB": str(named)})
    assert asked.stdout.splitlines() == ["n", "1"]
    other = cachemeter("sql", "select 1", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path,
                       env={"CACHEMETER_DB": str(named)})
    assert other.returncode != 0 and "none" in other.stderr


def test_a_warehouse_that_cannot_be_opened_stops_run_with_one_line_not_a_traceback(tmp_path):
    # found by a break test: a warehouse in a read-only folder showed Python's traceback of DuckDB's IOException;
    # these two fail for root too (a file where the folder should be, a folder where the file should be)
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "a file").write_text("")
    (tmp_path / "a [folder]").mkdir()
    no_folder = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "a file" / "w.duckdb"), cwd=tmp_path)
    assert no_folder.returncode == 1 and no_folder.stdout == ""
    assert no_folder.stderr.strip() == f"error: [Errno 17] File exists: '{tmp_path / 'a file'}'"
    a_folder = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "a [folder]"), cwd=tmp_path)
    assert a_folder.returncode == 2  # refused before the run, as a usage error (it was DuckDB's "Is a directory")
    # the path as it is: "[folder]" is not taken for console markup
    folder = tmp_path / "a [folder]"
    assert a_folder.stderr.strip() == (f"error: --db {folder} is a folder: give the warehouse file to create or use, "
                                       f"e.g. {folder / 'cachemeter.duckdb'}")


def test_a_bad_setting_or_settings_file_stops_run_with_one_line_naming_it(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    db = str(tmp_path / "w.duckdb")
    bad_value = cachemeter("run", "--logs", str(logs), "--db", db, cwd=tmp_path,
                           env={"CACHEMETER_ALERT_MIN_REQUESTS": "many"})
    assert bad_value.returncode == 2 and "Traceback" not in bad_value.stderr
    assert bad_value.stderr.strip() == ("error: setting alerts.min_requests / CACHEMETER_ALERT_MIN_REQUESTS: "
                                        "'many' is not a int")
    config = tmp_path / "settings.yaml"
    config.write_text("alerts: [1\n")
    bad_file = cachemeter("run", "--logs", str(logs), "--db", db, cwd=tmp_path, env={"CACHEMETER_CONFIG": str(config)})
    assert bad_file.returncode == 2 and "Traceback" not in bad_file.stderr
    assert bad_file.stderr.startswith(f"error: {config}: not valid YAML (")  # with PyYAML's line and column
    assert not (tmp_path / "w.duckdb").exists()  # stopped before anything was written
    # a warehouse file named after a schema: DuckDB names the catalog after the file, so core.usage
    # would be ambiguous (catalog core or schema core); refused with the reason, nothing created
    named = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "core.duckdb"), cwd=tmp_path)
    assert named.returncode == 2 and "Traceback" not in named.stderr
    assert named.stderr.strip() == ("error: the warehouse file core.duckdb is named after the warehouse's schema 'core': "
                                    "DuckDB would call every core.<table> ambiguous; name it otherwise, e.g. cachemeter.duckdb")
    assert not (tmp_path / "core.duckdb").exists()


def test_run_exits_without_the_interpreter_teardown_with_its_exit_code_and_exit_handlers(tmp_path):
    # after `run` the process skips freeing its modules one by one (1-1.5 CPU s, bench/one_line.py);
    # the exit code, the error line and the exit handlers (atexit) are as at an orderly exit
    probe = ("import atexit, sys\n"
             "class Teardown:\n"
             "    def __del__(self):\n"
             "        print('teardown ran', file=sys.stderr)\n"
             "kept = Teardown()\n"
             "atexit.register(print, 'exit handlers ran', file=sys.stderr)\n"
             "from pipelines import cli\n"
             "sys.argv = ['cachemeter', *sys.argv[1:]]\n"
             "cli.main()\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    done = subprocess.run([sys.executable, "-c", probe, "run", "--logs", str(logs), "--db", str(tmp_path / "w.duckdb")],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CACHEMETER_ALERT_MIN_REQUESTS": "many"})
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: setting alerts.min_requests / CACHEMETER_ALERT_MIN_REQUESTS: "
                                        "'many' is not a int", "exit handlers ran"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the body fingerprints use worker processes on 2+ cores only")
def test_a_run_whose_bodies_went_over_the_worker_pool_exits(tmp_path):
    """600 logged requests with bodies (chunks past body_chunks.POOL_MIN_LINES go to worker processes): the
    run ends with exit code 0, its workers stopped, where the skipped teardown used to leave
    multiprocessing's exit handler waiting for the idle workers forever."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    generate.generate(600, 1, tmp_path / "logs", bodies=True)
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path,
                      timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True).execute(
        "select count(*), count(divergence_offset_chars) > 500 from core.usage").fetchall()
    assert rows == [(600, True)]


def test_report_days_sets_the_window_of_the_runs_report_and_of_report(tmp_path):
    """One declaration (lib/options.py report_days, default 30) for the run's report and `cachemeter report --days`."""
    line = json.loads((REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()[0])
    logs = tmp_path / "logs"
    logs.mkdir()
    with open(logs / "three_days.jsonl", "w") as out:
        for n, day in enumerate(("2026-11-18", "2026-11-19", "2026-11-20")):
            out.write(json.dumps({**line, "ts": f"{day}T09:15:02Z", "response": {**line["response"], "id": f"msg_{n}"}})
                      + "\n")
    db, html = tmp_path / "w.duckdb", tmp_path / "w.report.html"  # beside it, named for it
    assert cachemeter("run", "--logs", str(logs), "--db", str(db), cwd=tmp_path).returncode == 0
    assert "Last 3 day(s)" in html.read_text()
    rerun = cachemeter("run", "--logs", str(logs), "--db", str(db), cwd=tmp_path, env={"CACHEMETER_REPORT_DAYS": "2"})
    assert rerun.returncode == 0, rerun.stderr
    assert "Last 2 day(s)" in html.read_text()  # the nightly report's window, from the variable
    assert cachemeter("report", "--db", str(db), cwd=tmp_path, env={"CACHEMETER_REPORT_DAYS": "1"}).returncode == 0
    assert "Last 1 day(s)" in html.read_text()
    assert cachemeter("report", "--db", str(db), "--days", "2", cwd=tmp_path,
                      env={"CACHEMETER_REPORT_DAYS": "1"}).returncode == 0
    assert "Last 2 day(s)" in html.read_text()  # the option wins over the variable


def test_the_progress_line_names_the_file_or_days_then_what_the_step_does_and_prints_odd_names_as_they_are():
    import io

    from rich.console import Console
    from rich.progress import Progress, TextColumn

    from pipelines.cli import progress_listener

    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=False, color_system=None)
    bar = Progress(TextColumn("{task.description}"), TextColumn("{task.fields[label]}"), console=console)
    task = bar.add_task("Reading logs", total=None, label="")
    listener = progress_listener(bar, task)

    def shown():
        found = bar.tasks[0]
        return found.description, found.completed, found.total, found.fields["label"]

    listener("ingest", 0, 2, "logs/a.jsonl")
    assert shown() == ("Reading logs", 0, 2, "logs/a.jsonl")
    listener("doing", 0, 0, "publishing to core.usage")  # counts stay; the label says what the step does
    assert shown() == ("Reading logs", 0, 2, "logs/a.jsonl · publishing to core.usage")
    listener("build", 0, 1, "2026-10-01 .. 2026-10-01")  # a counted report forgets the last step's doing
    assert shown() == ("Building UTC days", 0, 1, "2026-10-01 .. 2026-10-01")
    listener("doing", 0, 0, "building core.usage_costs")
    assert shown()[3] == "2026-10-01 .. 2026-10-01 · building core.usage_costs"
    # a file name that reads as rich markup (a closing tag: a MarkupError traceback when rendered unescaped) is
    # shown as it is, on the bar and in a warning
    listener("ingest", 1, 2, "a[/b].jsonl")
    listener("warning", 0, 0, "a[/b].jsonl: changed while it was read")
    console.print(bar.get_renderable())
    assert "a[/b].jsonl" in out.getvalue() and "warning: a[/b].jsonl: changed while it was read" in out.getvalue()


def test_names_and_values_that_read_as_rich_markup_are_printed_as_they_are_not_a_traceback(tmp_path):
    # a folder "a[" holding "b].jsonl" is the file a[/b].jsonl: as rich markup, a closing tag that matches nothing,
    # which stopped the run's summary (and `sql` on such a value) with a MarkupError traceback
    logs = tmp_path / "logs" / "a["
    logs.mkdir(parents=True)
    lines = (REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()
    (logs / "b].jsonl").write_text(lines[0] + "\n" + '{"ts": "[/i]"}\n')
    db = tmp_path / "w[/x].duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "a[/b].jsonl" in done.stdout and str(db) in done.stdout.replace("\n", "")
    assert query(db, "select source_file, rows_in, rows_accepted, rows_quarantined from stage.files") == [("a[/b].jsonl", 2, 1, 1)]
    shown = cachemeter("sql", "select source_file as \"[/f]\", '[bold]x[/bold]' as v from stage.files", "--db", str(db),
                       cwd=tmp_path)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert "[/f]" in shown.stdout and "a[/b].jsonl" in shown.stdout and "[bold]x[/bold]" in shown.stdout
    failed = cachemeter("sql", "select * from [/t]", "--db", str(db), cwd=tmp_path)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr and 'near "["' in failed.stderr, failed.stderr


def test_help_shows_its_placeholders_and_the_whole_price_file_header_at_80_columns(tmp_path):
    # the help is rendered as Markdown, which drops a bare <file> as an HTML tag
    shown = cachemeter("run", "--help", cwd=tmp_path, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    text = " ".join(line.strip("│ ") for line in shown.stdout.splitlines())
    for placeholder in ("ducklake:<file>.ducklake", "ducklake:sqlite:<file>", "ducklake:postgres:<conninfo>",
                        "<catalog file>.files"):
        assert placeholder in text, placeholder
    assert all(column in text for column in ("effective_from,", "cache_write_1h_per_mtok,", "output_per_mtok")), text
    assert "…" not in text
    shown = cachemeter("sql", "--help", cwd=tmp_path, env={"COLUMNS": "80"})
    assert "ducklake:<catalog>" in shown.stdout.replace("\n", "")


def test_sql_while_a_run_holds_a_warehouse_that_has_no_snapshot_yet_says_so(tmp_path):
    db = tmp_path / "w.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(120)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"  # as a first run does until it publishes the snapshot
        done = cachemeter("sql", "select 1", "--db", str(db), cwd=tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "has published no snapshot to read yet" in done.stderr and "--live" not in done.stderr, done.stderr
        # --live said "drop --live to read the snapshot" though there was none (a break test)
        done = cachemeter("sql", "select 1", "--db", str(db), "--live", cwd=tmp_path)
        assert done.returncode == 1 and "has published no snapshot to read yet" in done.stderr, done.stderr
        from pipelines.lib import warehouse

        warehouse.connect(tmp_path / "w.snapshot.duckdb").close()  # published: --live is what stands in the way
        done = cachemeter("sql", "select 1", "--db", str(db), "--live", cwd=tmp_path)
        assert done.returncode == 1 and "drop --live to read the snapshot" in done.stderr, done.stderr
    finally:
        holder.kill()
        holder.wait()


def test_an_unexpected_error_is_one_line_and_the_traceback_only_on_request(monkeypatch, capsys):
    import sys

    from pipelines import cli
    from pipelines.lib import doctor

    def broken(db):
        raise RuntimeError("something no command expected\nsecond line")

    monkeypatch.setattr(doctor, "run_checks", broken)
    monkeypatch.setattr(sys, "argv", ["cachemeter", "doctor"])
    monkeypatch.delenv("CACHEMETER_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli.main()
    err = capsys.readouterr().err
    assert ended.value.code == 1 and "Traceback" not in err
    assert err.splitlines()[0] == "error: RuntimeError: something no command expected"
    assert "CACHEMETER_DEBUG=1" in err
    for off in ("0", "off", "No", " "):  # off, as its documented values say (each showed the traceback)
        monkeypatch.setenv("CACHEMETER_DEBUG", off)
        with pytest.raises(SystemExit):
            cli.main()
        assert "Traceback" not in capsys.readouterr().err
    for on in ("1", "yes", "verbose"):  # an undocumented value is someone asking to see it
        monkeypatch.setenv("CACHEMETER_DEBUG", on)
        with pytest.raises(RuntimeError, match="something no command expected"):
            cli.main()


def test_a_warehouse_with_other_columns_is_named_not_an_unexpected_error(tmp_path, monkeypatch, capsys):
    # a DuckDB file with every table a reader opens but other columns gave "BinderException ... an unexpected error"
    import sys

    import duckdb

    from pipelines import cli
    from pipelines.lib import warehouse

    with duckdb.connect(str(tmp_path / "odd.duckdb")) as conn:
        for name in warehouse.READERS_TABLES:
            schema, table = name.split(".")
            conn.execute(f"create schema if not exists {schema}; create table {name} (x int)")
    monkeypatch.setattr(sys, "argv", ["cachemeter", "report", "--db", str(tmp_path / "odd.duckdb"),
                                      "--out", str(tmp_path / "r.html")])
    monkeypatch.delenv("CACHEMETER_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        cli.main()
    err = capsys.readouterr().err
    assert ended.value.code == 1 and "Traceback" not in err and "unexpected" not in err
    assert err.startswith("error: the warehouse lacks what this command reads (Binder Error:")


def one_request_log(logs):
    return write_jsonl(logs / "usage.jsonl", [{"ts": "2026-11-20T09:00:00Z", "provider": "openai", "model": "gpt-4o",
                                               "request_id": "r1", "response": {"usage": {"prompt_tokens": 10,
                                                                                          "completion_tokens": 1}}}])


def test_a_logs_folder_that_is_suddenly_empty_is_said_not_taken_for_a_quiet_night(tmp_path):
    # what an unmounted share looks like: the folder is there, its files are not
    logs = tmp_path / "logs"
    one_request_log(logs)
    db = tmp_path / "w.duckdb"
    first = cachemeter("run", "--logs", str(logs), "--db", str(db), cwd=tmp_path)
    assert first.returncode == 0 and "holds no log files" not in first.stderr, first.stderr
    (logs / "usage.jsonl").unlink()
    empty = cachemeter("run", "--logs", str(logs), "--db", str(db), cwd=tmp_path)
    assert empty.returncode == 0, empty.stderr
    assert (f"warning: the logs folder {logs} holds no log files, but this warehouse holds 1 file(s) staged before "
            "(their rows are kept)") in empty.stderr
    assert query(db, "select count(*) from core.usage") == [(1,)]


def test_a_changed_price_book_says_that_history_is_repriced_once(tmp_path):
    logs = tmp_path / "logs"
    one_request_log(logs)
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,model,effective_from,input_per_mtok,cache_read_per_mtok,cache_write_5m_per_mtok,"
                      "cache_write_1h_per_mtok,output_per_mtok\nopenai,gpt-4o,2026-01-01,9,,,,9\n")
    db = str(tmp_path / "w.duckdb")
    first = cachemeter("run", "--logs", str(logs), "--db", db, cwd=tmp_path)
    with_prices = cachemeter("run", "--logs", str(logs), "--db", db, "--prices", str(prices), cwd=tmp_path)
    again = cachemeter("run", "--logs", str(logs), "--db", db, "--prices", str(prices), cwd=tmp_path)
    dropped = cachemeter("run", "--logs", str(logs), "--db", db, cwd=tmp_path)
    assert all(done.returncode == 0 for done in (first, with_prices, again, dropped)), with_prices.stderr
    said = "warning: the price book changed since the last run"
    assert [said in done.stderr for done in (first, with_prices, again, dropped)] == [False, True, False, True]
    assert f"(overrides now: {prices};" in with_prices.stderr and "(overrides now: none;" in dropped.stderr
    assert "all 1 staged UTC day(s) are repriced" in dropped.stderr


def test_a_symlink_leaving_the_logs_folder_is_followed_when_the_variable_says_so(tmp_path):
    # README's settings table: CACHEMETER_FOLLOW_SYMLINKS=1 follows symlinks that leave the logs folder; the CLI
    # ignored the variable (only --follow-symlinks counted) and skipped the file without a word (a break test)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", outside / "m.jsonl")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "m.jsonl").symlink_to(outside / "m.jsonl")
    for follow, files in (("0", 0), ("1", 1)):
        db = tmp_path / f"w{follow}.duckdb"
        done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path,
                          env={"CACHEMETER_FOLLOW_SYMLINKS": follow})
        assert done.returncode == 0, done.stderr
        assert query(db, "select count(*) from stage.files") == [(files,)]


def test_a_warehouse_given_through_a_symlink_publishes_and_is_read_beside_its_target(tmp_path):
    # the run wrote the snapshot and report beside the symlink's target but printed a report path beside the
    # symlink, where no file was; `cachemeter sql --db <symlink>` looked for the snapshot there too, so it read
    # the live warehouse, which a running run blocks (a break test)
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    (tmp_path / "logs").mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", tmp_path / "logs" / "m.jsonl")
    link = tmp_path / "links" / "team.duckdb"
    link.symlink_to(tmp_path / "real" / "team.duckdb")
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(link), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = re.search(r"report: (\S+)", done.stdout).group(1)
    assert Path(printed) == tmp_path / "real" / "team.report.html" and Path(printed).is_file()
    assert (tmp_path / "real" / "team.snapshot.duckdb").is_file()
    assert sorted(p.name for p in (tmp_path / "links").iterdir()) == ["team.duckdb"]
    from pipelines.lib import warehouse
    assert warehouse.for_readers(link) == tmp_path / "real" / "team.snapshot.duckdb"
    # a reader while a run holds the warehouse: the snapshot answers
    with warehouse.held_for_run(str(tmp_path / "real" / "team.duckdb"), 0):
        read = cachemeter("sql", "select count(*) as n from core.usage", "--db", str(link), "--format", "csv", cwd=tmp_path)
    assert read.returncode == 0, read.stderr
    assert read.stdout.splitlines()[1] == str(query(tmp_path / "real" / "team.duckdb", "select count(*) from core.usage")[0][0])


@pytest.mark.parametrize("setting, cause", [
    ({"CACHEMETER_WEBHOOK_URL": "htp:/bad"}, "the webhook URL is malformed"),
    ({"CACHEMETER_WEBHOOK_URL": "http://127.0.0.1:9/hook", "CACHEMETER_WEBHOOK_FORMAT": "pagerduty"},
     "webhook.format is pagerduty but its routing key is not set"),
])
def test_a_webhook_that_cannot_take_the_notices_still_gets_the_summary_printed_and_names_its_cause(
        tmp_path, setting, cause):
    """A break test: the run said only "the alert webhook did not take every notice ... the next run posts the ones
    left" (the cause, a setting no retry can fix, was swallowed), and printed no summary: on the night the webhook
    fails, the console is where the operator reads the incidents."""
    logs = tmp_path / "logs"
    one_request_log(logs)
    run = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path, env=setting)
    said = " ".join(run.stderr.split())
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert f"built and published, but the incident notices were not all delivered ({cause}" in said
    assert "2026-11-20" in run.stdout and "Daily savings" in run.stdout, run.stdout  # the summary, before the error
    # a run with no day to build: it said "publishing the snapshot: built and published, but ..." (a break test)
    again = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path, env=setting)
    said = " ".join(again.stderr.split())
    assert again.returncode == 1 and "publishing the snapshot" not in said, said
    assert f"error: alert delivery: no day needed building; the incident notices were not all delivered ({cause}" in said


def test_an_unknown_webhook_format_is_refused_before_the_run_builds_anything(tmp_path):
    # it was accepted, the days built, and every notice failed at delivery (the settings now name its choices)
    logs = tmp_path / "logs"
    one_request_log(logs)
    run = cachemeter("run", "--logs", str(logs), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path,
                     env={"CACHEMETER_WEBHOOK_URL": "http://127.0.0.1:9/hook", "CACHEMETER_WEBHOOK_FORMAT": "teams"})
    assert run.returncode == 2 and not (tmp_path / "w.duckdb").exists()
    assert run.stderr.strip() == ("error: setting webhook.format / CACHEMETER_WEBHOOK_FORMAT: 'teams' is not one of "
                                  "generic, slack, pagerduty, alertmanager")


def test_a_postgresql_uri_in_db_reaches_the_catalog_as_written(tmp_path):
    # a break test: --db was read as a path, which folds "//": postgresql://u@host/x became postgresql:/u@host/x, and
    # libpq said 'missing "=" ... in connection info string'; and a password in it was printed
    done = cachemeter("sql", "select 1", "--db", "ducklake:postgres:postgresql://u@127.0.0.1:9/x", cwd=tmp_path)
    assert done.returncode == 1 and '"postgresql://u@127.0.0.1:9/x"' in done.stderr, done.stderr
    done = cachemeter("run", "--logs", str(tmp_path), "--db", "ducklake:postgres:postgresql://u:pw@127.0.0.1:9/x",
                      cwd=tmp_path)
    assert done.returncode == 1 and "postgresql://u:***@127.0.0.1:9/x: cannot reach the PostgreSQL catalog" in done.stderr
    assert ":pw@" not in done.stderr + done.stdout


def test_parallel_on_a_warehouse_that_takes_one_writer_says_it_is_ignored(tmp_path):
    # a break test: `--parallel 3` on a DuckDB file was ignored without a word (only a PostgreSQL-catalog lake takes it)
    (tmp_path / "logs").mkdir()
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(tmp_path / "w.duckdb"), "--parallel", "3",
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "note: --parallel 3 is ignored: only a DuckLake with a PostgreSQL catalog" in done.stderr
    alone = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path)
    assert alone.returncode == 0 and "--parallel" not in alone.stderr


def test_a_db_that_is_no_warehouse_file_is_one_line_in_every_command(tmp_path):
    # break tests: `--db /dev/null` ended in DuckDB's "Could not fsync file /dev/null", and `report`, `export` and
    # `doctor` given `--db ducklake:` (no catalog) or `/dev/null` said "an unexpected error ... please report it"
    commands = [["run", "--logs", str(tmp_path)], ["sql", "select 1"], ["report"], ["export", "focus", "--out",
                str(tmp_path / "f.csv")], ["whatif", "routing", "--cards", "2"]]
    for db, said in (("/dev/null", "--db /dev/null: not a regular file (a device, FIFO or socket)"),
                     ("ducklake:", "--db ducklake: names no DuckLake catalog")):
        for command in commands:
            done = cachemeter(*command, "--db", db, cwd=tmp_path)
            assert done.returncode in (1, 2) and said in done.stderr, (command, db, done.stderr)
            assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, (command, db, done.stderr)
    assert not (tmp_path / "f.csv").exists()


@pytest.mark.parametrize("variable, value, unit, example", [
    ("CACHEMETER_PARTITIONS_START", "garbage", "UTC date", "2020-01-01"),
    ("CACHEMETER_PARTITIONS_START", "2026-13-01", "UTC date", "2020-01-01"),
    ("CACHEMETER_NIGHTLY_CRON", "not a cron", "cron (UTC)", "30 2 * * *"),
    ("CACHEMETER_MEMORY_LIMIT", "0", "bytes (DuckDB size)", "1GB"),
    ("CACHEMETER_MEMORY_LIMIT", "512", "bytes (DuckDB size)", "1GB"),
])
def test_a_date_schedule_or_size_setting_that_cannot_be_used_stops_run_with_one_line(tmp_path, variable, value, unit,
                                                                                    example):
    # a break test: each passed the settings check and stopped every run deep inside ("ValueError: time data
    # 'garbage' does not match", Dagster's "Found invalid cron schedule", DuckDB's "Unknown unit for memory: ''"),
    # each as "an unexpected error ... please report it", and `cachemeter doctor` said "settings ok"
    (tmp_path / "logs").mkdir()
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path,
                      env={variable: value})
    assert done.returncode == 2 and done.stderr.strip() == (
        f"error: setting {variable}: {value!r} is not a value in {unit}, e.g. {example}")
    assert not (tmp_path / "w.duckdb").exists()


def test_days_staged_before_a_raised_partitions_start_are_left_with_a_warning_not_a_stopped_run(tmp_path):
    # a break test: a warehouse built from 2026-11-18, then CACHEMETER_PARTITIONS_START=2026-11-25 (docs/deploy.md asks
    # deployments to set it): every run that rebuilt the earlier days (a price change, --all-days) stopped on Dagster's
    # "Partition key range start 2026-11-18 is before the partitions definition start time", and the days stayed
    # pending, so every later run stopped the same way
    line = lambda day, rid: json.dumps({"ts": f"{day}T10:00:00Z", "request_id": rid, "response": {  # noqa: E731
        "id": rid, "type": "message", "model": "claude-sonnet-4-5-20250929",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 5}}})
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_text(line("2026-11-18", "a") + "\n" + line("2026-11-26", "b") + "\n")
    db = str(tmp_path / "w.duckdb")
    assert cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", db, cwd=tmp_path).returncode == 0
    raised = {"CACHEMETER_PARTITIONS_START": "2026-11-25"}
    again = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", db, "--all-days", cwd=tmp_path, env=raised)
    assert again.returncode == 0, again.stderr
    assert ("1 staged UTC day(s) before CACHEMETER_PARTITIONS_START=2026-11-25 (2026-11-18 .. 2026-11-18) are not "
            "rebuilt") in " ".join(again.stderr.split())
    assert cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", db, cwd=tmp_path, env=raised).returncode == 0
    assert query(db, "select count(*) from stage.pending_days") == [(0,)]
    assert query(db, "select day::varchar, requests from marts.daily_savings order by day") == [
        ("2026-11-18", 1), ("2026-11-26", 1)]  # the earlier day keeps what the first run built


def test_a_logs_folder_that_is_not_there_stops_run_before_a_warehouse_is_made(tmp_path):
    # a break test: a mistyped --logs (or a file) failed the run but left an empty warehouse behind, which then
    # answered every query with 0 and wrote an empty report without saying no run had finished
    (tmp_path / "a.jsonl").write_text("{}\n")
    for logs in ("nowhere", "a.jsonl"):
        done = cachemeter("run", "--logs", str(tmp_path / logs), "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.strip() == (
            f"error: logs folder {tmp_path / logs} does not exist or is not a folder: give --logs the folder the usage "
            "logs are in")
        assert not (tmp_path / "w.duckdb").exists()


def test_a_nightly_runs_summary_shows_what_it_read_and_rebuilt_not_the_whole_history(tmp_path):
    # a nightly run printed every file and every day ever staged: 10,000 one-request files took 3.7 s of an 8.1 s run
    # with nothing new to print 10,000 table rows; a year of daily files would print 365 days every night
    first = json.loads((REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl").read_text().splitlines()[0])

    def day_file(n: int) -> None:
        day = f"2026-10-{n:02d}" if n <= 31 else f"2026-11-{n - 31:02d}"
        write_jsonl(tmp_path / "logs" / f"usage-{day}.jsonl",
                    [{**first, "ts": f"{day}T09:00:00Z", "response": {**first["response"], "id": f"msg-{n}"}}])

    for n in range(1, 41):
        day_file(n)
    db = tmp_path / "w.duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    listed = re.findall(r"usage-(2026-\d\d-\d\d)\.jsonl", out)
    assert listed == [f"2026-10-{n:02d}" for n in range(1, 21)] and "... and 20 more" in out  # SUMMARY_FILES
    assert "All 40 staged file(s): 40 rows in = 40 accepted + 0 quarantined" in out
    shown_days = re.findall(r"│ (2026-\d\d-\d\d) ", out)
    assert shown_days == ["2026-10-10", *[f"2026-10-{n:02d}" for n in range(11, 32)],
                          *[f"2026-11-{n:02d}" for n in range(1, 10)]][-31:]  # the latest 31 of the 40 days rebuilt
    assert "... 9 earlier" in out and "all 40 days" in out

    day_file(41)  # the next night: one new file, one new day
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert re.findall(r"usage-(2026-\d\d-\d\d)\.jsonl", out) == ["2026-11-10"] and "more" not in out
    assert "All 41 staged file(s): 41 rows in = 41 accepted + 0 quarantined" in out
    assert re.findall(r"│ (2026-\d\d-\d\d) ", out) == ["2026-11-10"] and "all 41 days" in out
    (total,) = [line for line in out.splitlines() if "all 41 days" in line]
    cost, = query(db, "select sum(cost_usd) from marts.daily_savings")[0]
    assert f"${cost:,.2f}" in total  # the total is every day's, not the day shown

    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)  # nothing new
    out = done.stdout
    assert "No new or changed log files." in out and "usage-" not in out
    assert re.findall(r"│ (2026-\d\d-\d\d) ", out) == [f"2026-11-{n:02d}" for n in range(4, 11)]  # the latest week

    # a late file for a day a month before the others (no staged day's baseline reads it) and the next night's file:
    # two ranges rebuilt, not every day between them (a break test: the summary listed the days between, and hid the
    # late day under "... 32 earlier")
    write_jsonl(tmp_path / "logs" / "late.jsonl", [{**first, "ts": "2026-09-01T10:00:00Z",
                                                    "response": {**first["response"], "id": "msg-late"}}])
    day_file(42)
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    shown_days = re.findall(r"│ (2026-\d\d-\d\d) ", done.stdout)
    assert shown_days[0] == "2026-09-01" and shown_days[-1] == "2026-11-11" and len(shown_days) <= 3, shown_days
    assert "earlier" not in done.stdout and "all 43 days" in done.stdout


def test_no_command_prints_a_catalog_password_or_a_control_sequence_from_the_logs(tmp_path):
    # break tests: DuckDB's error quotes the --db target whole, so sql, report, export focus and whatif printed a
    # PostgreSQL catalog's password (run and doctor redacted theirs); a model name holding ESC ] 0 ; ... BEL and
    # ESC [ 2 J retitled and cleared the terminal from the run summary and from sql's table
    target = "ducklake:postgres:host=127.0.0.1 port=1 dbname=cm user=cm password=hunter2"
    for command in (["sql", "select 1"], ["report"], ["export", "focus"], ["whatif", "routing"], ["whatif", "ttft"],
                    ["doctor"]):
        done = cachemeter(*command, "--db", target, cwd=tmp_path)
        assert done.returncode != 0 and "hunter2" not in done.stdout + done.stderr, (command, done.stderr)
        assert "unexpected" not in done.stderr, (command, done.stderr)
    done = cachemeter("sql", "select 1", "--db", "postgresql://u:hunter2@127.0.0.1:1/db", cwd=tmp_path)
    assert "hunter2" not in done.stderr and "u:***@" in done.stderr, done.stderr  # a URI taken for a path

    model = "gpt-\x1b]0;PWNED\x07\x1b[2J\x1b[31mred"
    write_jsonl(tmp_path / "logs" / "a.jsonl", [
        {"ts": f"2026-11-18T12:00:0{i}Z", "provider": "openai", "model": model, "app": "a\nb\u202ec", "request_id": f"r{i}",
         "response": {"id": "x", "object": "chat.completion", "model": model,
                      "usage": {"prompt_tokens": 2000, "completion_tokens": 10}}} for i in range(5)]
        + [{"ts": "2026-11-19T03:00:00Z", "provider": "openai", "model": "gpt-4.1", "request_id": "late",  # (a complete day)
            "response": {"id": "y", "object": "chat.completion", "model": "gpt-4.1",
                         "usage": {"prompt_tokens": 10, "completion_tokens": 1}}}])
    (tmp_path / "logs" / "x\x1b[2Jy.jsonl").write_text('{"bad\n')
    db = tmp_path / "w.duckdb"
    done = cachemeter("run", "--logs", str(tmp_path / "logs"), "--db", str(db), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\u202e" not in done.stdout
    assert "x\\x1b[2Jy.jsonl" in done.stdout and "gpt-\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mred" in done.stdout
    (incident,) = [line for line in done.stdout.splitlines() if "have no price" in line]  # one line, as it says
    shown = cachemeter("sql", "select model, app from core.usage limit 1", "--db", str(db), cwd=tmp_path)
    assert "\x1b" not in shown.stdout and "gpt-\\x1b]0;PWNED" in shown.stdout and "b\\u202ec" in shown.stdout
    exact = cachemeter("sql", "select model from core.usage limit 1", "--format", "json", "--db", str(db), cwd=tmp_path)
    assert json.loads(exact.stdout) == [{"model": model}]  # machine-readable output keeps the value as it is


def test_an_empty_db_is_refused_where_it_is_given_by_every_command(tmp_path):
    # a break test: `--db "$WAREHOUSE"` with the variable unset ended report, sql and doctor in "ValueError:
    # PosixPath('.') has an empty name ... an unexpected error"
    for command in (["run"], ["sql", "select 1"], ["report"], ["doctor"], ["export", "focus", "--out", "x.csv"],
                    ["whatif", "routing", "--cards", "2"], ["whatif", "ttft", "--model-config", "x"]):
        done = cachemeter(*command, "--db", " ", cwd=tmp_path)
        assert done.returncode == 2 and "Invalid value for '--db'" in done.stderr and "is empty" in done.stderr, command
        assert "unexpected" not in done.stderr and not (tmp_path / "x.csv").exists(), command
    # a blank around a path made a warehouse under a folder named " " (a break test)
    done = cachemeter("run", "--db", f" {tmp_path / 'w.duckdb'}", cwd=tmp_path)
    said = " ".join(line.strip("│ ") for line in done.stderr.splitlines())  # (rich's box wraps a long message)
    assert done.returncode == 2 and "begins or ends with a blank" in said and not (tmp_path / " ").exists(), said


def test_a_query_duckdb_refuses_is_one_line_without_its_caret(tmp_path):
    # a new user's check: "select * from nope" printed four lines (the error, its suggestion, the query excerpt and a
    # caret under it) where the README promises one
    db = empty_warehouse(tmp_path)
    for query_text, said in (("select * from marts.daily_saving", 'does not exist! Did you mean "daily_savings"?'),
                             ("select * form marts.daily_savings", "Parser Error: syntax error at or near")):
        done = cachemeter("sql", query_text, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 1 and said in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "LINE 1" not in done.stderr, done.stderr
