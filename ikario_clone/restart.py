"""`python -m ikario_clone.restart COMMAND [ARGS...]`: run COMMAND, and start it again
whenever it stops (a crash, a kill, an error it exits on), saying so on standard error.

`make run` runs each line of the Procfile through it, because honcho stops every process as
soon as one exits: without it, the memory server killed, or the worker exiting, took the web
app down too. honcho has no restart of its own, and a process manager that has one
(supervisord, circus) would replace the Procfile with a configuration of its own; this keeps
the Procfile the one list of what runs.

A command that keeps failing at once is started again after a pause that doubles up to
MAX_PAUSE; one that ran for a while is started again after MIN_PAUSE. SIGTERM or SIGINT
(honcho's Ctrl+C) stops it for good: honcho signals the whole process group, the command
included, which then ends as it does on its own; a signal sent to this process alone is
passed on to the command after STOP_GRACE seconds.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

MIN_PAUSE = 1.0  # seconds before starting again a command that ran for a while
MAX_PAUSE = 30.0  # the longest pause, for a command that keeps failing at once
RAN_A_WHILE = 30.0  # seconds of running after which the pause starts over from MIN_PAUSE
STOP_GRACE = 3.0  # seconds for the command to end on the group's signal before passing it on


def _say(text: str) -> None:
    print(f"restart: {text}", file=sys.stderr, flush=True)


def _how(code: int) -> str:
    if code < 0:
        return f"was killed ({signal.Signals(-code).name})"
    return f"exited with code {code}"


def supervise(command: list[str]) -> int:
    """Run `command` until this process is told to stop; returns the command's last code."""
    stopping: list[int] = []

    def stop(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pause = MIN_PAUSE
    while True:
        started = time.monotonic()
        try:
            child = subprocess.Popen(command)
        except OSError as exc:  # not found, not executable: no restart will mend it
            _say(f"cannot start {command[0]}: {exc}")
            return 127
        while child.poll() is None:  # in short waits: a stop signal is noticed between them
            try:
                child.wait(timeout=STOP_GRACE if stopping else 0.5)
            except subprocess.TimeoutExpired:
                if stopping:  # the signal was ours alone: the command gets it now
                    child.send_signal(stopping[0])
                    return child.wait()
        if stopping:
            return child.returncode
        pause = MIN_PAUSE if time.monotonic() - started > RAN_A_WHILE else pause
        _say(f"{command[0]} {_how(child.returncode)}: starting it again in {pause:.0f} s")
        deadline = time.monotonic() + pause
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.1)
        if stopping:
            return child.returncode
        pause = min(pause * 2, MAX_PAUSE)


def main(argv: list[str]) -> int:
    if not argv:
        _say("usage: python -m ikario_clone.restart COMMAND [ARGS...]")
        return 2
    code = supervise(argv)
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
