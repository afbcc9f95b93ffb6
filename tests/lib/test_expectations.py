"""Validation in the side process (lib/expectations.py, lib/side_process.py): results, refusals, a stopped process."""

import os
import signal

import duckdb
import pytest

from pipelines.lib import expectations, side_process
from pipelines.lib.expectations import gx
from pipelines.lib.side_process import SideProcessError

ROWS = "select * from (values (1, 'openai'), (5, 'anthropic'), (12, 'mystery')) as t(tokens, provider)"
SUITE = [gx.ExpectColumnValuesToBeBetween(column="tokens", min_value=0, max_value=10),
         gx.ExpectColumnValuesToBeInSet(column="provider", value_set=["openai", "anthropic"])]


@pytest.fixture
def conn():
    with duckdb.connect() as connection:
        yield connection
    side_process.stop()


def test_each_expectation_gets_its_counts_and_examples_from_the_gx_process(conn):
    between, in_set = expectations.validate(conn, ROWS, {}, SUITE)
    assert (between.expectation, between.column, between.success) == ("ExpectColumnValuesToBeBetween", "tokens", False)
    assert (between.element_count, between.unexpected_count, between.examples) == (3, 1, ["12"])
    assert (in_set.success, in_set.unexpected_count, in_set.examples) == (False, 1, ["mystery"])
    assert side_process._running.process.pid != os.getpid()


def test_an_unknown_expectation_is_refused_by_name_and_the_process_serves_on(conn):
    with pytest.raises(SideProcessError, match="ExpectNoSuchThing is not a Great Expectations expectation"):
        expectations.validate(conn, ROWS, {}, [gx.ExpectNoSuchThing(column="tokens")])
    with pytest.raises(SideProcessError, match="max_value"):  # GX's own refusal of a bad option, by its name
        expectations.validate(conn, ROWS, {}, [gx.ExpectColumnValuesToBeBetween(column="tokens", max_value="ten")])
    worker = side_process._running.process.pid
    assert [o.success for o in expectations.validate(conn, ROWS, {}, SUITE[:1])] == [False]
    assert side_process._running.process.pid == worker


def test_a_stopped_process_is_named_and_the_next_validation_starts_another(conn):
    expectations.validate(conn, ROWS, {}, SUITE)
    stopped = side_process._running
    os.kill(stopped.process.pid, signal.SIGKILL)
    stopped.process.wait(10)
    with pytest.raises(SideProcessError, match=r"process \(Great Expectations, report\) stopped \(killed by SIGKILL"):
        stopped.ask("validate", [("ExpectColumnValuesToBeBetween", {"column": "tokens"})], b"")
    assert [o.unexpected_count for o in expectations.validate(conn, ROWS, {}, SUITE)] == [1, 1]
    assert side_process._running is not stopped and side_process._running.process.pid != stopped.process.pid


def test_an_empty_window_is_valid_without_starting_the_process(conn):
    outcomes = expectations.validate(conn, ROWS + " where tokens > 100", {}, SUITE)
    assert [(o.success, o.element_count, o.rows_in_window) for o in outcomes] == [(True, 0, 0), (True, 0, 0)]
    assert side_process._running is None


def test_a_request_left_without_its_answer_ends_the_process_so_no_late_answer_is_taken(conn, monkeypatch):
    # an interrupted wait (Ctrl-C in a notebook) left the answer on the socket, and the next request took it
    expectations.validate(conn, ROWS, {}, SUITE)
    first = side_process._running
    real_recv = first.conn.recv

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(first.conn, "recv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        expectations.validate(conn, ROWS, {}, SUITE[1:])
    monkeypatch.setattr(first.conn, "recv", real_recv)
    assert first.process.wait(10) == -signal.SIGKILL
    # the next request goes to a new process and gets its own answer (one outcome, the set's), not the stale one
    assert [(o.expectation, o.unexpected_count) for o in expectations.validate(conn, ROWS, {}, SUITE[1:])] == [
        ("ExpectColumnValuesToBeInSet", 1)]
    assert side_process._running is not first


def test_a_process_that_gives_no_answer_in_time_is_stopped_with_a_clear_error(conn, monkeypatch):
    expectations.validate(conn, ROWS, {}, SUITE)
    stuck = side_process._running
    monkeypatch.setattr(side_process, "ANSWER_SECONDS", 0.5)
    os.kill(stuck.process.pid, signal.SIGSTOP)
    with pytest.raises(SideProcessError, match="gave no answer to a validate request in 0.5 s; it was stopped"):
        expectations.validate(conn, ROWS, {}, SUITE)
    assert stuck.process.wait(10) == -signal.SIGKILL
    monkeypatch.setattr(side_process, "ANSWER_SECONDS", 900.0)
    assert [o.unexpected_count for o in expectations.validate(conn, ROWS, {}, SUITE)] == [1, 1]


def test_a_folder_named_pipelines_where_the_run_starts_does_not_shadow_the_package(conn, tmp_path, monkeypatch):
    # python -m puts the working directory first on sys.path; a user's own pipelines package there (a common
    # folder name in data projects) broke every run's side process
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert [o.success for o in expectations.validate(conn, ROWS, {}, SUITE)] == [False, False]
