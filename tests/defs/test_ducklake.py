"""The DuckLake backend (``--db ducklake:<catalog>``): the same pipeline, the same tables, earlier snapshots."""

import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from pipelines.lib import lake, warehouse
from tests.conftest import REPO, TABLES, run_pipeline, snapshot, write_jsonl
from tests.defs.test_late_data import late_rows
from tests.defs.test_pipeline import hit_rate_logs


def cachemeter(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_the_demo_on_a_local_ducklake_builds_the_tables_of_the_duckdb_file(tmp_path):
    demo = REPO / "fixtures" / "demo_logs"
    started = time.monotonic()
    file_db = run_pipeline(tmp_path / "file", demo)
    file_seconds = time.monotonic() - started
    target = f"ducklake:{tmp_path / 'lake' / 'cachemeter.ducklake'}"
    started = time.monotonic()
    assert run_pipeline(tmp_path / "lake", demo, db=target) == target
    lake_seconds = time.monotonic() - started
    print(f"demo run: DuckDB file {file_seconds:.1f} s, DuckLake {lake_seconds:.1f} s")

    in_file, in_lake = snapshot(file_db), snapshot(target)
    assert sum(len(rows) for rows in in_file.values()) > 1000 and len(in_file["core.usage"]) > 500
    for table in TABLES:
        assert in_lake[table] == in_file[table], table
    # the rows sit in Parquet files under the data path (default: beside the catalog), nothing is copied
    assert list((tmp_path / "lake" / "cachemeter.ducklake.files" / "core" / "usage").glob("*.parquet"))
    assert not list((tmp_path / "lake").glob("*.snapshot.duckdb"))
    # report, whatif and export open it as a warehouse: its views (core.usage_priced) count as the file's do
    from pipelines.lib import warehouse
    with warehouse.open_for_reading(target) as conn:
        assert conn.execute("select count(*) from core.usage_priced").fetchone()[0] == len(in_file["core.usage"])
    # a day staged but not built is in the lake's last commit: doctor names it (it said "ok", a break test), and no
    # file is written beside the catalog
    from pipelines.lib import doctor
    assert doctor._snapshot(target).status == "ok"
    with warehouse.connect(target) as conn:
        conn.execute("insert into stage.pending_days (day, staged_at) values ('2026-11-27', now())")
        assert warehouse.record_unbuilt_days(conn, target) == []
    checked = doctor._snapshot(target)
    assert checked.status == "warn" and "2026-11-27 staged but not built yet" in checked.detail
    assert not list((tmp_path / "lake").glob("*.unbuilt.json"))


def test_sql_as_of_an_earlier_snapshot_answers_what_the_numbers_were_before_a_late_file(tmp_path):
    # an SQLite catalog with the data path given, read by other processes
    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 12, 1), days=6, per_day=20)
    catalog = tmp_path / "lake" / "cachemeter.sqlite"
    target = f"ducklake:sqlite:{catalog}"
    data = tmp_path / "parquet"
    run_pipeline(tmp_path, logs, db=target, data_path=str(data))
    day = "select sum(requests), sum(prompt_tokens) from marts.daily_savings where day = '2026-11-03'"
    before = cachemeter("sql", day, "--db", target, "--format", "json", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    with warehouse.connect(target, read_only=True) as conn:
        (earlier, _), = lake.snapshots(conn)[-1:]

    write_jsonl(logs / "late" / "2026-11-03-replay.jsonl", late_rows(12))  # 12 late requests of 4,000 tokens
    run_pipeline(tmp_path, logs, db=target, data_path=str(data))
    rows = lambda done: [tuple(r.values()) for r in json.loads(done.stdout)]  # noqa: E731
    now = cachemeter("sql", day, "--db", target, "--format", "json", cwd=tmp_path)
    then = cachemeter("sql", day, "--db", target, "--format", "json", "--as-of", str(earlier), cwd=tmp_path)
    assert now.returncode == 0 and then.returncode == 0, (now.stderr, then.stderr)
    (requests, prompt), = rows(before)
    assert rows(then) == [(requests, prompt)]
    assert rows(now) == [(requests + 12, prompt + 12 * 4000)]
    assert list(data.rglob("*.parquet"))  # the data path given on the command line holds the rows

    # a reader in another process while a writer holds uncommitted changes reads the last committed snapshot
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pipelines.lib import warehouse; c = warehouse.connect(sys.argv[1]); c.execute('begin'); "
        "c.execute('delete from marts.daily_savings'); print('deleted', flush=True); time.sleep(120)"), target],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "deleted\n"
        during = cachemeter("sql", day, "--db", target, "--format", "json", cwd=tmp_path)
    finally:
        writer.kill()
        writer.wait()
    assert during.returncode == 0 and rows(during) == rows(now), during.stderr

    # snapshots that hold no answer say so (break tests: DuckDB's "schema marts does not exist", DuckLake's "No snapshot
    # found at version", a timestamp cast error)
    first = cachemeter("sql", day, "--db", target, "--as-of", "0", cwd=tmp_path)
    assert first.returncode == 1 and first.stderr.startswith("error: --as-of 0: Catalog Error")
    assert "older than the run that built the table" in first.stderr
    for as_of, said in [(str(earlier + 10_000), "the lake has no snapshot of that id"),
                        ("2001-01-01 00:00:00+00", "the lake has no snapshot at or before that time"),
                        ("-1", "not a snapshot id or time")]:
        wrong = cachemeter("sql", day, "--db", target, "--as-of", as_of, cwd=tmp_path)
        assert wrong.returncode == 1 and wrong.stderr.startswith(f"error: --as-of {as_of}: {said}"), wrong.stderr
    refused = cachemeter("sql", "select 1", "--db", str(tmp_path / "w.duckdb"), "--as-of", "1", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith("error: --as-of reads an earlier DuckLake snapshot")


def test_a_postgres_catalog_builds_the_tables_of_the_duckdb_file(tmp_path, monkeypatch):
    from tests.deploy.test_postgres_instance import PASSWORD, postgres_server

    logs = tmp_path / "logs"
    hit_rate_logs(logs, broken_from=date(2026, 11, 4), days=6, per_day=20)
    file_db = run_pipeline(tmp_path / "file", logs)
    monkeypatch.chdir(tmp_path)  # a PostgreSQL catalog has no file to write report.html beside: the working directory
    monkeypatch.setenv("PGPASSWORD", PASSWORD)  # libpq reads it: the target names no secret
    with postgres_server() as server:
        target = f"ducklake:postgres:host=127.0.0.1 port={server.port} user=dagster dbname=dagster"
        # before the first run (break tests: DuckLake's own words named no option of cachemeter's)
        read = cachemeter("sql", "select 1", "--db", target, cwd=tmp_path)
        assert read.returncode == 1 and f"{target} holds no lake yet: `cachemeter run --db ...` creates it" in read.stderr
        made = cachemeter("run", "--logs", str(logs), "--db", target, cwd=tmp_path)
        assert made.returncode == 1 and "is a new catalog: give --data-path" in made.stderr, made.stderr
        run_pipeline(tmp_path / "pg", logs, db=target, data_path=str(tmp_path / "parquet"))
        assert (tmp_path / "dagster.report.html").is_file()  # named for its database: lakes in one folder keep theirs
        in_lake = snapshot(target)
    in_file = snapshot(file_db)
    assert len(in_file["core.usage"]) == 120 and len(in_file["marts.daily_savings"]) == 6
    for table in TABLES:
        assert in_lake[table] == in_file[table], table
    assert list((tmp_path / "parquet" / "core" / "usage").glob("*.parquet"))


def test_a_small_insert_into_the_lake_keeps_every_bit_of_a_double(tmp_path):
    import duckdb

    # DuckLake 1.0 inlines inserts of up to 10 rows into its catalog by default, where a DOUBLE read back
    # one ulp off (measured: 134/145 came back as 0.9241379310344828); lake.attach turns inlining off
    conn = lake.attach(duckdb.connect(), f"ducklake:{tmp_path / 'c.ducklake'}", data_path=str(tmp_path / "files"))
    conn.execute("create table rates as select 134::hugeint / 145::hugeint as rate")
    assert conn.execute("select rate from rates").fetchone()[0] == 134 / 145 == 0.9241379310344827
    assert list((tmp_path / "files").rglob("*.parquet"))  # written to Parquet, not the catalog


def test_a_data_path_the_catalog_does_not_record_says_which_it_records(tmp_path):
    # a break test: a lake moved with its files, or created with a mistaken --data-path, stopped on DuckLake's
    # "DATA_PATH parameter ... does not match existing data path in the catalog", with no way forward
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", logs / "m.jsonl")
    target = f"ducklake:sqlite:{tmp_path / 'lake' / 'c.sqlite'}"
    assert cachemeter("run", "--logs", str(logs), "--db", target, cwd=tmp_path).returncode == 0
    done = cachemeter("run", "--logs", str(logs), "--db", target, "--data-path", str(tmp_path / "elsewhere"), cwd=tmp_path)
    recorded = f"{tmp_path / 'lake' / 'c.sqlite.files'}/"
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"its catalog records its data files at {recorded}, not at {tmp_path / 'elsewhere'}: give --data-path "
            f"{recorded}") in " ".join(done.stderr.split())


def test_a_first_run_given_a_file_as_data_path_creates_no_catalog_bound_to_it(tmp_path):
    # a break test: `--data-path <a file>` on a first run failed on DuckDB's "Failed to create directory ... Not a
    # directory" after creating the catalog, bound to the file: every later run was refused until it was deleted
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", logs / "m.jsonl")
    (tmp_path / "afile").write_text("x")
    catalog = tmp_path / "c.ducklake"
    for given, said in ((tmp_path / "afile", f"{tmp_path / 'afile'} is a file, not a folder"),
                        (tmp_path / "afile" / "sub", f"{tmp_path / 'afile'} is a file, not a folder"),
                        (Path("/proc/no/such"), "the folder cannot be made")):
        done = cachemeter("run", "--logs", str(logs), "--db", f"ducklake:{catalog}", "--data-path", str(given),
                          cwd=tmp_path)
        assert done.returncode == 1 and f"error: --data-path {given}: {said}" in " ".join(done.stderr.split())
        assert not catalog.exists() and "Traceback" not in done.stderr
    done = cachemeter("run", "--logs", str(logs), "--db", f"ducklake:{catalog}", "--data-path",
                      str(tmp_path / "files"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "files").rglob("*.parquet"))


def test_a_lake_moved_away_from_its_files_says_where_its_catalog_records_them(tmp_path):
    # a break test: a lake moved with its files (or its folder unmounted) failed every run and reader with DuckLake's
    # "Cannot open file ....parquet: No such file or directory", and doctor said only "warn"
    import shutil

    from pipelines.lib import doctor

    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "fixtures" / "formats" / "anthropic_messages" / "messages.jsonl", logs / "m.jsonl")
    assert cachemeter("run", "--logs", str(logs), "--db", f"ducklake:{tmp_path / 'a' / 'c.ducklake'}",
                      cwd=tmp_path).returncode == 0
    (tmp_path / "a").rename(tmp_path / "b")
    moved = f"ducklake:{tmp_path / 'b' / 'c.ducklake'}"
    hint = "(the lake's data files are not where its catalog records them: moved, unmounted or deleted?"
    for command in (["run", "--logs", str(logs), "--all-days"], ["report", "--out", str(tmp_path / "r.html")]):
        done = cachemeter(*command, "--db", moved, cwd=tmp_path)
        assert done.returncode == 1 and hint in done.stderr and "Traceback" not in done.stderr, done.stderr
    checked = {r.name: r for r in doctor.run_checks(moved)}["warehouse"]
    assert checked.status == "fail" and checked.detail.endswith(
        f"its catalog records its data files at {tmp_path / 'a' / 'c.ducklake.files'}/")
    shutil.move(str(tmp_path / "b"), str(tmp_path / "a"))  # moved back: whole again
    assert {r.name: r for r in doctor.run_checks(f"ducklake:{tmp_path / 'a' / 'c.ducklake'}")}["warehouse"].status == "ok"
