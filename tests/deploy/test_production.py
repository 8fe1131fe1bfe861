"""Production settings, as docs/DEPLOY.md documents them, in fresh processes and a live Daphne."""

import os
import re
from pathlib import Path

import httpx
import pytest

from tests.deploy.conftest import ROOT, documented_production_env, manage
from tests.fixtures.users import PASSWORD


def _fresh_env(**overrides: str | None) -> dict[str, str]:
    """This process's environment with the app's settings module and `overrides` (None = unset)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ikario_clone.settings"}
    for name in ("DEBUG", "SECRET_KEY"):  # the suite's own development choice, not the shell's
        env.pop(name, None)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _dotenv_sets(name: str) -> bool:
    dotenv = Path(ROOT / ".env")
    return dotenv.exists() and re.search(rf"^\s*{name}\s*=", dotenv.read_text(), re.M) is not None


def test_it_passes_check_deploy_with_the_documented_environment():
    result = manage(
        _fresh_env(**documented_production_env()), "check", "--deploy", "--fail-level", "DEBUG"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.parametrize("secret_key", [None, "", "ikario-dev-only-insecure-key-change-me"])
def test_it_refuses_to_start_in_production_on_the_development_key(secret_key):
    if secret_key is None and _dotenv_sets("SECRET_KEY"):
        pytest.skip("this checkout's .env sets SECRET_KEY")
    result = manage(_fresh_env(DEBUG="false", SECRET_KEY=secret_key), "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured: DEBUG is off (production) and SECRET_KEY is not set" in (
        result.stderr
    )
    assert "or set DEBUG=true on your own machine" in result.stderr


def test_it_is_in_production_unless_debug_is_set():
    if _dotenv_sets("DEBUG"):
        pytest.skip("this checkout's .env sets DEBUG")
    code = "from django.conf import settings as s; print(s.DEBUG, s.SECURE_SSL_REDIRECT)"
    unset = manage(_fresh_env(SECRET_KEY="k" * 60), "shell", "-v", "0", "-c", code)
    assert unset.stdout.split() == ["False", "True"], unset.stderr
    # ...and `make run` asks for development explicitly.
    assert "run: export DEBUG := true" in (ROOT / "Makefile").read_text()
    development = manage(_fresh_env(DEBUG="true"), "shell", "-v", "0", "-c", code)
    assert development.stdout.split() == ["True", "False"], development.stderr


def test_it_refuses_a_malformed_proxy_ssl_header():
    env = _fresh_env(DEBUG="true", SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    result = manage(env, "check")
    assert result.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER takes two comma-separated values" in result.stderr


@pytest.mark.parametrize(
    ("name", "value"), [("LOGIN_FAILURE_LIMIT", "0"), ("LOGIN_COOLOFF_MINUTES", "0")]
)
def test_it_refuses_a_login_throttle_that_could_not_work(name, value):
    result = manage(_fresh_env(DEBUG="true", **{name: value}), "check")
    assert result.returncode != 0
    assert "LOGIN_FAILURE_LIMIT must be at least 1 and LOGIN_COOLOFF_MINUTES more than 0" in (
        result.stderr
    )


# --- The app served by Daphne with that environment --------------------------------------


def test_it_redirects_plain_http_to_https(production_server):
    response = httpx.get(f"{production_server.url}/accounts/login/", timeout=30)
    assert response.status_code == 301
    assert response.headers["location"] == (
        f"https://127.0.0.1:{production_server.port}/accounts/login/"
    )


def test_it_sends_hsts_and_browser_protections_over_https(production_server):
    with production_server.https() as client:
        response = client.get("/accounts/login/")
    assert response.status_code == 200
    headers = response.headers
    assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    csrf_cookie = next(c for c in headers.get_list("set-cookie") if c.startswith("csrftoken="))
    assert "; Secure" in csrf_cookie


def test_it_logs_in_with_a_secure_http_only_session_cookie(production_server):
    production_server.create_user("prod-user", PASSWORD)
    origin = f"https://127.0.0.1:{production_server.port}"
    with production_server.https() as client:
        token = client.get("/accounts/login/").cookies["csrftoken"]
        client.cookies.clear()  # Secure cookies: sent by hand, the test talks plain HTTP
        response = client.post(
            "/accounts/login/",
            data={"username": "prod-user", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Cookie": f"csrftoken={token}", "Origin": origin, "Referer": origin + "/"},
        )
    assert response.status_code == 302 and response.headers["location"] == "/"
    session = next(c for c in response.headers.get_list("set-cookie") if c.startswith("sessionid="))
    assert "; Secure" in session and "; HttpOnly" in session


def test_it_serves_collected_static_files_with_far_future_caching(production_server):
    with production_server.https() as client:
        page = client.get("/accounts/login/").text
        css = re.search(r'href="(/static/chat/chat\.[0-9a-f]{12}\.css)"', page)
        htmx = re.search(r'src="(/static/django_htmx/htmx-2\.min\.[0-9a-f]{12}\.js)"', page)
        assert css and htmx, page
        response = client.get(css.group(1), headers={"Accept-Encoding": "gzip"})
        script = client.get(htmx.group(1))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert response.headers["content-encoding"] == "gzip"
    assert "max-age=315360000" in response.headers["cache-control"]
    assert "immutable" in response.headers["cache-control"]
    assert ".auth-card" in response.text
    assert script.status_code == 200 and "htmx" in script.text


def test_it_answers_an_unknown_url_with_its_own_page(production_server):
    with production_server.https() as client:
        response = client.get("/no/such/page/")
        api = client.get("/api/no/such/endpoint")
    assert response.status_code == 404
    assert "This page does not exist." in response.text
    assert "URLconf" not in response.text and "api/memory/" not in response.text
    assert api.status_code == 404
    assert api.json() == {"error": {"field": None, "reason": "not found"}}
