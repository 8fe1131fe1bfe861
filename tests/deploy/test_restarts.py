"""`make run` keeps its processes up: a Procfile process that dies is started again
(ikario_clone/restart.py) while the others keep running, where honcho alone stopped all
three. A real honcho on a two-line Procfile in a temporary folder; then the app's own
Procfile runs each line the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.deploy.conftest import ROOT

WAIT = 60.0  # seconds: bound on each step on a busy machine
# Writes its pid to NAME.pids, then waits to be stopped.
SLEEPER = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(600)"


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _until(what: str, check, honcho: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert honcho.poll() is None, f"honcho exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: {log.read_text()[-3000:]}"
        time.sleep(0.05)


def test_a_killed_process_is_started_again_and_the_others_keep_running(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        "".join(
            f'{name}: python -m ikario_clone.restart python -c "{SLEEPER}" {name}.pids\n'
            for name in ("memory", "web")
        )
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    log = tmp_path / "honcho.log"
    honcho = subprocess.Popen(
        [str(Path(sys.executable).with_name("honcho")), "start", "-f", str(procfile)],
        cwd=tmp_path,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    memory, web = tmp_path / "memory.pids", tmp_path / "web.pids"
    try:
        _until("both started", lambda: _pids(memory) and _pids(web), honcho, log)
        (killed,), (other,) = _pids(memory), _pids(web)

        os.kill(killed, signal.SIGKILL)

        _until("memory started again", lambda: len(_pids(memory)) == 2, honcho, log)
        assert _alive(_pids(memory)[1])
        assert _pids(web) == [other] and _alive(other)
        assert honcho.poll() is None
        said = log.read_text()
        assert "was killed (SIGKILL): starting it again" in said, said
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        honcho.wait(WAIT)
    # Stopping honcho stops everything, for good: nothing started again, nothing left.
    assert not [pid for pid in _pids(memory) + _pids(web) if _alive(pid)]
    assert len(_pids(memory)) == 2 and len(_pids(web)) == 1


def test_each_line_of_the_app_procfile_is_started_again_when_it_stops():
    lines = [
        line
        for line in (ROOT / "Procfile").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    names = [line.split(":", 1)[0] for line in lines]
    assert names == ["web", "worker", "memory"]
    for line in lines:
        assert line.split(":", 1)[1].split()[:3] == ["python", "-m", "ikario_clone.restart"], line


def test_a_stop_signal_to_the_wrapper_alone_stops_its_command_for_good(tmp_path):
    pids = tmp_path / "alone.pids"
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "ikario_clone.restart", sys.executable, "-c", SLEEPER, str(pids)],
        cwd=ROOT,
    )
    deadline = time.monotonic() + WAIT
    while not _pids(pids):
        assert wrapper.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)

    wrapper.send_signal(signal.SIGTERM)  # not to its process group: the command must hear it

    assert wrapper.wait(WAIT) == 128 + signal.SIGTERM  # its command's end, as a shell says
    assert not _alive(_pids(pids)[0]) and len(_pids(pids)) == 1
