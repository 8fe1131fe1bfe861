"""Shared by the chat benches: Django on a throwaway SQLite file, quiet logs."""

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def shared_memory_server(index: str | Path, code: Path = ROOT):
    """`code`'s ikario_rag over streamable HTTP with a token of its own on `index`, this
    process's settings and environment pointed at it, as `make run`'s processes are (call
    it after Django's set-up): yields its URL."""
    import secrets

    from django.conf import settings

    from tests.net import serve_on_a_free_port, stop

    token = secrets.token_urlsafe(24)
    log = Path(tempfile.mkdtemp(prefix="ikario-bench-server-")) / "server.log"

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http"]
            + ["--port", str(port), "--index-dir", str(index)],
            cwd=code,
            env={**os.environ, "IKARIO_TOKEN": token, "IKARIO_LOG_LEVEL": "WARNING"},
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )

    process, port = serve_on_a_free_port(start, timeout=300)
    values = {"MCP_IKARIO_SERVER_URL": f"http://127.0.0.1:{port}/mcp", "IKARIO_TOKEN": token}
    os.environ.update(values)
    for name, value in values.items():
        setattr(settings, name, value)
    try:
        yield values["MCP_IKARIO_SERVER_URL"]
    finally:
        from memory.client import mcp

        mcp.close_client()  # its session ends before the server does
        stop(process)


def memory_on(index: str | Path) -> str:
    """`shared_memory_server(index)` for the rest of this process (stopped at its exit): the
    app reaches memory over HTTP only, as `make run`'s processes do. Returns its URL."""
    import atexit

    stack = contextlib.ExitStack()
    url = stack.enter_context(shared_memory_server(index))
    atexit.register(stack.close)
    return url


@contextlib.contextmanager
def db_worker_process(code: Path = ROOT):
    """`manage.py db_worker --nice 10` as `make run`'s Procfile runs it, on this process's
    database and memory server (its environment)."""
    from tests.net import stop

    process = subprocess.Popen(
        [sys.executable, str(code / "manage.py"), "db_worker", "--nice", "10"]
        + ["--no-reload", "--no-startup-delay"],
        cwd=code,
        env=dict(os.environ),
    )
    try:
        yield process
    finally:
        stop(process)


def django_on_temp_db(**env):
    """Point Django at a fresh migrated SQLite file (never the developer's db.sqlite3)."""
    sys.path.insert(0, str(ROOT))
    tmp = tempfile.mkdtemp(prefix="ikario-bench-")
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
    os.environ["MCP_MEMORY_ENABLED"] = "false"
    os.environ["LOG_LEVEL"] = "WARNING"
    # Development settings (DEBUG off would mean production: HTTPS redirect, a real
    # SECRET_KEY); a bench that asks for DEBUG="false" gets it after set-up, as tests do.
    debug = env.pop("DEBUG", "true")
    os.environ["DEBUG"] = "true"
    os.environ.update(env)
    import django

    django.setup()
    if debug == "false":
        from django.conf import settings

        settings.DEBUG = False  # no query log, as in production
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return tmp


def summary(samples_ms: list[float]) -> dict:
    ordered = sorted(samples_ms)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[max(0, int(len(ordered) * 0.95) - 1)],
        "n": len(ordered),
    }


def median_ratio(
    rounds: list[tuple[list[float], list[float]]], resamples: int = 4000, seed: int = 0
) -> tuple[float, float, float]:
    """median(a) / median(b) and its 95 % bootstrap interval, for samples taken in rounds
    (each round's (a samples, b samples) taken side by side): the rounds are resampled
    whole, so what a round's load did to both stays paired."""
    import numpy as np

    def ratio(chosen) -> float:
        a = [x for r in chosen for x in rounds[r][0]]
        b = [x for r in chosen for x in rounds[r][1]]
        return statistics.median(a) / statistics.median(b)

    picks = np.random.default_rng(seed).integers(0, len(rounds), (resamples, len(rounds)))
    spread = sorted(ratio(p) for p in picks)
    low, high = spread[int(0.025 * resamples)], spread[int(0.975 * resamples) - 1]
    return ratio(range(len(rounds))), low, high


def wait_indexed(timeout: float = 3600.0) -> float:
    """Seconds until the app's memory server has written every vector (they are written
    behind the add): before measuring what searches find."""
    import time

    from memory.client import services

    started = time.perf_counter()
    while (services.server_stats().get("health") or {}).get("unindexed"):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"vectors still pending after {timeout:.0f} s")
        time.sleep(0.2)
    return time.perf_counter() - started
