"""pipelines/lib/lake.py: what is printed of a DuckLake target."""

import pytest

from pipelines.lib import lake


@pytest.mark.parametrize("text, shown", [
    ("ducklake:postgres:host=a password=hunter2 dbname=x", "ducklake:postgres:host=a password=*** dbname=x"),
    ("host=a password='hunter 2' dbname=x", "host=a password=*** dbname=x"),  # libpq's quoting
    # break tests: a value holding a double quote, or written in double quotes, was printed once the value stopped
    # at a quote; a quote left open printed what followed its first word
    ("host=a password=s3cr\"et99 dbname=x", "host=a password=*** dbname=x"),
    ('host=a password="hunter2": cannot reach', "host=a password=*** cannot reach"),
    ("host=a password='hunter 2", "host=a password=***"),
    # DuckDB's error quotes the connection string and goes on unspaced: the rest of that word goes with it
    ('at path + "postgres:host=a password=hunter2"Unable to connect', 'at path + "postgres:host=a password=*** to connect'),
    ("postgresql://u:hunter2@host:5432/db", "postgresql://u:***@host:5432/db"),
    ("/work/postgresql:/u:hunter2@host:1/db", "/work/postgresql:/u:***@host:1/db"),  # a URI taken for a path
])
def test_a_password_in_a_target_or_a_message_is_never_printed(text, shown):
    assert lake.redacted(text) == shown
