"""Signals held while a run sets up (lib/interrupts.py)."""

import os
import signal

import pytest

from pipelines.lib import interrupts


def test_a_held_signal_is_noted_not_raised_and_release_raises_it_once_the_handlers_are_back():
    before = signal.getsignal(signal.SIGINT)
    interrupts.hold()
    try:
        interrupts.check()  # nothing came yet
        os.kill(os.getpid(), signal.SIGINT)  # a KeyboardInterrupt here would fail the test
        with pytest.raises(interrupts.Interrupted, match="interrupted"):
            interrupts.check()
    finally:
        with pytest.raises(interrupts.Interrupted, match=r"^interrupted \(SIGTERM or Ctrl-C\) before it began its work"):
            interrupts.release()
    assert signal.getsignal(signal.SIGINT) is before
    interrupts.check()  # cleared


def test_release_after_an_error_restores_the_handlers_without_raising():
    before = signal.getsignal(signal.SIGTERM)
    interrupts.hold()
    os.kill(os.getpid(), signal.SIGTERM)  # would end the test process if it were not held
    interrupts.release(raise_held=False)
    assert signal.getsignal(signal.SIGTERM) is before
