"""The health endpoints in production (Daphne, DEBUG off), polled as a proxy does: plain
HTTP on loopback, no login. A database that cannot be reached makes /health/ready a 503
naming it while /health/live stays 200; both come back with the database.

The outage is real: the app's SQLite folder moved away while the app runs.
"""

import httpx

from tests.deploy.conftest import ProductionServer


def test_a_database_outage_is_not_ready_but_live_and_ready_again_once_back():
    app = ProductionServer()
    data = app.dir / "data"
    data.mkdir()
    app.env["DATABASE_URL"] = f"sqlite:///{data / 'db.sqlite3'}"
    app.start()
    try:
        probe = httpx.Client(base_url=app.url, timeout=30)  # no X-Forwarded-Proto: no redirect
        assert probe.get("/health/ready").json() == {
            "status": "ready",
            "checks": {"database": "ok"},
        }

        data.rename(app.dir / "data.away")
        try:
            ready, live = probe.get("/health/ready"), probe.get("/health/live")
        finally:
            (app.dir / "data.away").rename(data)
        back = probe.get("/health/ready")
    finally:
        app.stop()

    assert ready.status_code == 503
    assert ready.json()["failed"] == ["database"]
    assert ready.json()["checks"]["database"] == "failed: OperationalError"
    assert str(app.dir) not in ready.text  # the driver's message names the file: not shown
    assert (live.status_code, back.status_code) == (200, 200)
