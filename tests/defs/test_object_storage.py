"""Logs and DuckLake data files in object storage (``--logs s3://...``, ``--data-path s3://...``), against a
local moto S3 server: the same tables as a local folder and a DuckDB file, late objects picked up,
unreadable objects quarantined, one clear line for a bad bucket or refused credentials, no secret kept."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from pipelines.defs.ingest.sensors import changed_files
from pipelines.defs.settings import CachemeterSettings
from pipelines.ingest import objectstore
from pipelines.ingest import stage as ingest
from pipelines.lib import lake, warehouse
from tests.conftest import REPO, TABLES, query, run_pipeline, snapshot, write_jsonl
from tests.defs.test_late_data import late_rows
from tests.defs.test_pipeline import hit_rate_logs
from tests.deploy.processes import free_port

SECRET = "s3cr3t-Never-Stored-0a9f"  # the secret access key the tests use: it must appear nowhere
KEY_ID = "AKIACACHEMETERTEST"
IDENTITY = ("device", "inode", "mtime_ns")  # a file's status; an object's stands in for it (objectstore)


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on a free localhost port, with the standard AWS variables pointing at it; a boto3 client."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}.items():
            env.setenv(name, value)
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
            env.delenv(name, raising=False)
        try:
            yield boto3.client("s3")
        finally:
            server.stop()


def upload(client, folder: Path, bucket: str, prefix: str) -> None:
    """Every file under ``folder`` to ``s3://bucket/prefix/<relative name>`` (the bucket created if missing)."""
    if bucket not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
        client.create_bucket(Bucket=bucket)
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())


def comparable(tables: dict[str, list[tuple]], db) -> dict[str, list[tuple]]:
    """``tables`` with stage.files' status columns (device, inode, mtime) left out: a local file's and an object's differ."""
    with warehouse.connect(db, read_only=True) as conn:
        columns = [c[0] for c in conn.execute("describe stage.files").fetchall() if c[0] != "staged_at"]
    keep = [i for i, name in enumerate(columns) if name not in IDENTITY]
    return {**tables, "stage.files": sorted(tuple(row[i] for i in keep) for row in tables["stage.files"])}


def test_a_postgres_catalog_with_its_data_and_logs_in_a_bucket_builds_the_tables_of_the_duckdb_file(
        s3, demo_warehouse, tmp_path, monkeypatch):
    from tests.deploy.test_postgres_instance import PASSWORD, postgres_server

    upload(s3, REPO / "fixtures" / "demo_logs", "team-logs", "gateway/demo")
    s3.create_bucket(Bucket="team-lake")
    monkeypatch.chdir(tmp_path)  # a PostgreSQL catalog has no file to write its report beside: the working directory
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    with postgres_server() as server:
        target = f"ducklake:postgres:host=127.0.0.1 port={server.port} user=dagster dbname=dagster"
        run_pipeline(tmp_path, "s3://team-logs/gateway/demo", db=target, data_path="s3://team-lake/cachemeter")
        in_lake = comparable(snapshot(target), target)
        import psycopg2

        with psycopg2.connect(host="127.0.0.1", port=server.port, user="dagster", password=PASSWORD,
                              dbname="dagster") as pg, pg.cursor() as cursor:
            cursor.execute("select table_name from information_schema.tables where table_schema = 'public'")
            catalog_tables = [row[0] for row in cursor.fetchall()]
            catalog_text = ""
            for table in catalog_tables:
                cursor.execute(f'select t::text from public."{table}" t')
                catalog_text += "\n".join(row[0] for row in cursor.fetchall())
    in_file = comparable(snapshot(demo_warehouse), demo_warehouse)
    assert len(in_file["core.usage"]) > 500 and in_file["core.quarantine"]
    for table in TABLES:
        assert in_lake[table] == in_file[table], table
    data_files = [o["Key"] for o in s3.list_objects_v2(Bucket="team-lake", Prefix="cachemeter/")["Contents"]]
    assert any(key.startswith("cachemeter/core/usage/") and key.endswith(".parquet") for key in data_files)
    assert "s3://team-lake/cachemeter" in catalog_text  # the catalog records where its data is ...
    assert SECRET not in catalog_text and KEY_ID not in catalog_text  # ... and no credential
    assert SECRET not in repr(in_lake)


def bucket_logs(folder: Path) -> None:
    """Small logs of every kind of case: two days of usage, a folder default, a malformed line, a gzip file."""
    hit_rate_logs(folder, broken_from=date(2026, 11, 3), days=4, per_day=6)
    (folder / "team-b").mkdir()
    (folder / "team-b" / "source.yaml").write_text("tenant: beta\napp: search\n")
    write_jsonl(folder / "team-b" / "calls.jsonl.gz", [{k: v for k, v in r.items() if k not in ("tenant", "app")}
                                                        | {"request_id": f"b-{i}"} for i, r in enumerate(late_rows(3))], gz=True)
    write_jsonl(folder / "broken.jsonl", [late_rows(1)[0] | {"request_id": "ok-1"}, '{"ts": "2026-11-02T01:00:00Z", oops'])


def test_logs_in_a_bucket_stage_like_a_local_folder_and_late_objects_are_picked_up(s3, tmp_path, capfd):
    local = tmp_path / "logs"
    bucket_logs(local)
    upload(s3, local, "logs-a", "raw")
    url = "s3://logs-a/raw"
    from_bucket = run_pipeline(tmp_path / "bucket", url)
    from_folder = run_pipeline(tmp_path / "folder", local)
    in_bucket, in_folder = snapshot(from_bucket), snapshot(from_folder)
    assert len(in_folder["core.usage"]) == 24 + 3 + 1 and len(in_folder["core.quarantine"]) == 1
    assert query(from_bucket, "select distinct tenant, app from core.usage where source_file like 'team-b/%'") == [("beta", "search")]
    assert comparable(in_bucket, from_bucket) == comparable(in_folder, from_folder)

    # an unchanged bucket is not read again; a grown object and a new (late) one are, like local files
    staged_at = query(from_bucket, "select source_file, staged_at from stage.files order by 1")
    run_pipeline(tmp_path / "bucket", url)
    assert query(from_bucket, "select source_file, staged_at from stage.files order by 1") == staged_at
    with (local / "usage.jsonl").open("a") as grown:
        grown.write(json.dumps(late_rows(2)[1] | {"request_id": "grown-1"}) + "\n")
    write_jsonl(local / "late" / "2026-11-03-replay.jsonl", late_rows(12))
    for name in ("usage.jsonl", "late/2026-11-03-replay.jsonl"):  # the object overwritten, the late one added
        s3.put_object(Bucket="logs-a", Key=f"raw/{name}", Body=(local / name).read_bytes())
    with warehouse.connect(from_bucket, read_only=True) as conn:  # what the late-logs sensor sees in the bucket
        settings = CachemeterSettings.from_env(logs_dir=url)
        assert sorted(log.relative for log in changed_files(conn, settings)) == ["late/2026-11-03-replay.jsonl", "usage.jsonl"]
    run_pipeline(tmp_path / "bucket", url)
    run_pipeline(tmp_path / "folder", local)
    after_bucket, after_folder = snapshot(from_bucket), snapshot(from_folder)
    assert len(after_folder["core.usage"]) == 28 + 1 + 12
    assert comparable(after_bucket, from_bucket) == comparable(after_folder, from_folder)
    day = "select sum(requests) from marts.daily_savings where day = '2026-11-03'"
    assert query(from_bucket, day) == query(from_folder, day) == [(6 + 3 + 1 + 1 + 12,)]

    printed = capfd.readouterr()
    for text in (printed.out, printed.err, Path(from_bucket).read_bytes().decode("latin-1")):
        assert SECRET not in text


def test_an_unreadable_object_is_quarantined_with_its_reason_and_the_rest_staged(s3, tmp_path):
    local = tmp_path / "logs"
    write_jsonl(local / "today.jsonl", late_rows(4))
    upload(s3, local, "logs-b", "p")
    s3.put_object(Bucket="logs-b", Key="p/archived.jsonl", Body=gzip.compress(b"{}"), StorageClass="GLACIER")
    db = tmp_path / "w.duckdb"
    with warehouse.connect(db) as conn:
        results = {r.source_file: r for r in ingest.stage_logs(conn, "s3://logs-b/p")}
        quarantined = conn.execute("select source_file, source_line, reason from core.quarantine").fetchall()
        usage = conn.execute("select count(*) from core.usage").fetchone()[0]
    assert usage == 4 and (results["today.jsonl"].rows_accepted, results["today.jsonl"].rows_quarantined) == (4, 0)
    archived = results["archived.jsonl"]
    assert (archived.rows_in, archived.rows_accepted, archived.rows_quarantined) == (1, 0, 1)
    (name, line, reason), = quarantined
    assert (name, line) == ("archived.jsonl", 0) and reason.startswith("cannot read object: ") and "GetObject" in reason
    assert archived.error == reason and SECRET not in reason

    # an object replaced by shorter content is a new generation, as a truncated file is: the old rows stay
    s3.put_object(Bucket="logs-b", Key="p/today.jsonl", Body=(json.dumps(late_rows(7)[6]) + "\n").encode())
    with warehouse.connect(db) as conn:
        again = {r.source_file: r for r in ingest.stage_logs(conn, "s3://logs-b/p")}
        files = conn.execute("select source_file, rows_accepted from stage.files order by 1").fetchall()
    assert files == [("archived.jsonl", 0), ("today.jsonl", 1), ("today.jsonl#1", 4)]
    assert again["archived.jsonl"].skipped is False and again["today.jsonl"].rows_in == 1


def cachemeter(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=os.environ)


def test_a_missing_bucket_or_refused_credentials_stop_with_one_line(s3, tmp_path, monkeypatch):
    import moto.settings

    missing = cachemeter("run", "--logs", "s3://no-such-bucket/logs", "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path)
    assert missing.returncode == 1, missing.stderr
    assert missing.stderr.strip().splitlines() == [missing.stderr.strip()] and "Traceback" not in missing.stderr
    assert "s3://no-such-bucket/logs" in missing.stderr and "bucket does not exist" in missing.stderr

    s3.create_bucket(Bucket="logs-c")
    monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # the server now checks every key
    refused = cachemeter("run", "--logs", "s3://logs-c/x", "--db", str(tmp_path / "w.duckdb"), cwd=tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()] and "Traceback" not in refused.stderr
    assert "cannot list logs location s3://logs-c/x" in refused.stderr and SECRET not in refused.stderr + refused.stdout
    assert "INVALID_ACCESS_KEY_ID" in refused.stderr

    # a DuckLake data path in a bucket that is refused or missing: one line before anything is written
    for data_path, why in (("s3://logs-c/lake", "ACCESS_DENIED"), ("s3://no-such-lake/data", "the bucket no-such-lake does not exist")):
        if why == "ACCESS_DENIED":
            monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)
        else:
            monkeypatch.setattr(moto.settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))
        catalog = tmp_path / f"{why[:6]}.sqlite"
        monkeypatch.setenv(lake.DATA_PATH_ENV, data_path)
        with pytest.raises(lake.LakeError) as refused_lake:
            warehouse.connect(f"ducklake:sqlite:{catalog}")
        message = str(refused_lake.value)
        assert message.startswith(f"the DuckLake data path {data_path} cannot be reached: ") and why in message
        assert "\n" not in message and SECRET not in message and not catalog.exists()


def test_gcs_and_azure_prefixes_open_through_the_same_library(monkeypatch):
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "teamlogs")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY", raising=False)
    for url, kind, base in (("gs://team-logs/gateway/", "GcsFileSystem", "team-logs/gateway"),
                            ("az://logs/gateway", "AzureFileSystem", "logs/gateway"),
                            ("abfss://logs@other.dfs.core.windows.net/gw", "AzureFileSystem", "logs/gw")):
        found, path = objectstore.filesystem(url)
        assert (type(found).__name__, path) == (kind, base) and objectstore.is_remote(url)
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME")
    with pytest.raises(objectstore.ObjectStoreError, match="set AZURE_STORAGE_ACCOUNT_NAME"):
        objectstore.filesystem("az://logs/gateway")
    assert not objectstore.is_remote("logs/s3:/not-a-url") and not objectstore.is_remote(Path("/srv/logs"))


def test_the_s3_secret_comes_from_the_environment_and_is_never_persisted(s3, tmp_path):
    environ = {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": "tok'en",
               "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}
    import duckdb

    conn = duckdb.connect(config=lake.NO_AUTOLOAD)
    conn.execute(f"LOAD '{lake.extension_path('httpfs')}'")
    assert lake.create_s3_secret(conn, environ)
    (persistent, storage, text), = conn.execute("select persistent, storage, secret_string from duckdb_secrets()").fetchall()
    assert (persistent, storage) == (False, "memory") and SECRET not in text and "endpoint=127.0.0.1:9000" in text
    assert "use_ssl=false" in text and "url_style=path" in text
    assert not lake.create_s3_secret(duckdb.connect(), {})  # no AWS variable: no secret (anonymous or other chains)
    assert objectstore.redacted(f"failed with {SECRET}") == "failed with ***"
