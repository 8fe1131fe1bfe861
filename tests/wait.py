"""Waiting on a condition with a deadline: what a test does instead of sleeping, so it
passes on a busy machine as on a quiet one and fails, naming what never happened, when
the condition never comes."""

from __future__ import annotations

import time


def wait_until(predicate, what: str, timeout: float = 60.0, every: float = 0.1):
    """Call `predicate` every `every` s until it returns something true, and return that;
    AssertionError naming `what` when `timeout` s pass first."""
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"never happened within {timeout:g} s: {what}"
        time.sleep(every)
    return found
