"""The health endpoints a proxy polls: /health/live touches nothing; /health/ready answers
200 when the database, Redis and each memory server answer, else 503 naming what failed."""

import pytest

from tests.net import free_port

pytestmark = pytest.mark.django_db


def closed_port_url(path="") -> str:
    return f"http://127.0.0.1:{free_port()}{path}"


def test_it_says_live_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/health/live")
    assert (response.status_code, response.json()) == (200, {"status": "live"})


def test_it_is_ready_without_a_login_when_the_database_answers(client, settings):
    settings.MCP_MEMORY_ENABLED = False
    response = client.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok"}}
    assert "no-cache" in response["Cache-Control"]


def test_it_checks_redis_when_the_app_uses_it(client, settings, redis_server):
    settings.MCP_MEMORY_ENABLED = False
    settings.REDIS_URL = redis_server.url
    assert client.get("/health/ready").json()["checks"]["redis"] == "ok"

    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["failed"] == ["redis"]
    assert response.json()["checks"]["redis"] == "failed: ConnectionError"


def test_a_memory_server_down_is_a_503_naming_it(client, settings):
    settings.MCP_MEMORY_ENABLED = True
    down = closed_port_url("/mcp")
    settings.MCP_IKARIO_SERVER_URLS = [down]
    response = client.get("/health/ready")

    assert response.status_code == 503
    body = response.json()
    name = f"memory server {down.split('/')[2]}"
    assert body["status"] == "unavailable" and body["failed"] == [name]
    assert body["checks"] == {"database": "ok", name: "failed: ConnectError"}


def test_it_is_ready_with_its_memory_server_up_and_shows_no_secret(client, memory_server):
    response = client.get("/health/ready")
    host_port = memory_server.url.split("/")[2]

    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", f"memory server {host_port}": "ok"}
    assert memory_server.token not in response.text and "/mcp" not in response.text


def test_it_does_not_check_a_memory_server_each_process_starts_itself(client, settings):
    settings.MCP_MEMORY_ENABLED = True
    settings.MCP_IKARIO_SERVER_URLS = []
    settings.MCP_IKARIO_SERVER_URL = ""
    assert client.get("/health/ready").json()["checks"] == {"database": "ok"}


def test_only_get_is_answered(client):
    assert client.post("/health/ready").status_code == 405
