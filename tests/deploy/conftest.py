"""The production environment docs/DEPLOY.md documents, and the app served with it by Daphne."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.fixtures.browser import AppServer

ROOT = Path(__file__).resolve().parents[2]


def documented_production_env() -> dict[str, str]:
    """The variables of docs/DEPLOY.md's Production block, with a fresh random SECRET_KEY."""
    readme = (ROOT / "docs" / "DEPLOY.md").read_text()
    section = readme.split("\n## Production\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    env = dict(re.findall(r"^([A-Z_]+)=(.*)$", block, flags=re.MULTILINE))
    assert env.get("DEBUG") == "false" and "SECRET_KEY" in env, block
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """manage.py in a fresh interpreter, so settings are read from `env` alone."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


class ProductionServer(AppServer):
    """Daphne with docs/DEPLOY.md's production environment, static files collected."""

    HOST = "127.0.0.1"

    def __init__(self):
        env = documented_production_env()
        super().__init__(
            {
                **env,
                "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
                "ALLOWED_HOSTS": f"{env['ALLOWED_HOSTS']},{self.HOST}",
            }
        )
        self.env["STATIC_ROOT"] = str(self.dir / "static")

    def start(self) -> ProductionServer:
        self.manage("migrate", "--noinput")
        self.manage("collectstatic", "--noinput")
        self.serve("--proxy-headers", host=self.HOST)
        return self

    def https(self) -> httpx.Client:
        """A client that reaches the app as the TLS proxy would forward an HTTPS request."""
        return httpx.Client(base_url=self.url, headers={"X-Forwarded-Proto": "https"}, timeout=30)


@pytest.fixture(scope="module")
def production_server():
    server = ProductionServer().start()
    yield server
    server.stop()
