"""A database that cannot be reached: a clear 503 with Retry-After, pages and APIs, one log
line per request and no traceback; the app answers again as soon as the database is back.

The outage is real: the production app (Daphne, DEBUG off) on a SQLite file whose folder is
moved away while the app runs, so every new connection fails in the driver itself.
"""

from __future__ import annotations

import pytest

from tests.deploy.conftest import ProductionServer

PASSWORD = "outage-pass-4242"


@pytest.fixture
def server():
    app = ProductionServer()
    data = app.dir / "data"
    data.mkdir()
    app.env["DATABASE_URL"] = f"sqlite:///{data / 'db.sqlite3'}"
    app.start()
    app.create_user("outage-user", PASSWORD)
    yield app
    app.stop()


def logged_in(app: ProductionServer):
    client = app.https()
    origin = f"https://127.0.0.1:{app.port}"
    token = client.get("/accounts/login/").cookies["csrftoken"]
    client.cookies.clear()  # Secure cookies: the test talks plain HTTP and sends them by hand
    response = client.post(
        "/accounts/login/",
        data={"username": "outage-user", "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Cookie": f"csrftoken={token}", "Origin": origin, "Referer": origin + "/"},
    )
    assert response.status_code == 302, response.text
    client.headers["Cookie"] = f"sessionid={response.cookies['sessionid']}"
    return client


def test_a_database_outage_is_a_503_with_retry_after_then_the_app_comes_back(server):
    client = logged_in(server)
    assert client.get("/").status_code == 200
    assert client.get("/api/conversations").status_code == 200

    data = server.dir / "data"
    data.rename(server.dir / "data.away")
    try:
        page = client.get("/")
        api = client.get("/api/conversations")
    finally:
        (server.dir / "data.away").rename(data)

    assert page.status_code == 503 and page.headers["retry-after"] == "5", page.text
    assert "cannot reach its database" in page.text and "Traceback" not in page.text
    assert api.status_code == 503 and api.headers["retry-after"] == "5"
    assert api.json() == {"error": {"field": None, "reason": "database unavailable, retry later"}}

    log = server.log.read_text()
    assert "OperationalError" in log  # the cause, said once per request
    assert "Traceback" not in log

    assert client.get("/").status_code == 200
    assert client.get("/api/conversations").status_code == 200
    client.close()
