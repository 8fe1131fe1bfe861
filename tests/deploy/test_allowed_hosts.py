"""Production refuses ALLOWED_HOSTS='*' (issue 24): `check --deploy` fails, the app does not
start."""

import subprocess
import sys

from tests.deploy.conftest import ROOT, documented_production_env, manage
from tests.deploy.test_production import _fresh_env


def test_check_deploy_refuses_any_host_in_production():
    env = _fresh_env(**{**documented_production_env(), "ALLOWED_HOSTS": "*"})

    result = manage(env, "check", "--deploy")

    assert result.returncode != 0
    assert "ikario.E001" in result.stderr + result.stdout


def test_the_app_does_not_start_on_any_host_in_production():
    env = _fresh_env(**{**documented_production_env(), "ALLOWED_HOSTS": "*"})
    code = "import ikario_clone.asgi"

    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode != 0
    assert "ALLOWED_HOSTS contains '*' in production" in result.stderr


def test_development_may_serve_any_host():
    env = _fresh_env(DEBUG="true", ALLOWED_HOSTS="*")

    result = manage(env, "check")

    assert result.returncode == 0, result.stderr
