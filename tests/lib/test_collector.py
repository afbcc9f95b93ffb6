"""lib/collector.py: the cyclic garbage collector paused while libraries load, frozen only in our own processes."""

import gc

import pytest

from pipelines.lib import collector


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(collector, "_freezes", False)
    monkeypatch.setattr(collector, "_depth", 0)
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()  # back to the generations, where the test session's collections see them again
    (gc.enable if was else gc.disable)()


def test_paused_turns_the_collector_off_until_the_outermost_block_ends_and_a_host_process_is_not_frozen(fresh):
    frozen = gc.get_freeze_count()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still loading
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # a host's process (this test session): paused only


def test_in_a_process_of_our_own_the_end_of_a_pause_freezes_what_was_loaded(fresh):
    collector.own_process()
    loaded = [[i] for i in range(1000)]  # tracked objects that exist at the end of the pause
    with collector.paused():
        pass
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(loaded)
    walked = {id(x) for x in gc.get_objects()}  # what a collection walks: the frozen objects are not among them
    assert gc.is_tracked(loaded[0]) and id(loaded[0]) not in walked


def test_a_collector_turned_off_before_stays_off(fresh):
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_a_pause_ends_when_its_block_raises(fresh):
    with pytest.raises(ValueError), collector.paused():
        raise ValueError("a failed import")
    assert gc.isenabled()
