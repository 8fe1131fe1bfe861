"""The production steps as written (docs/DEPLOY.md): the SECRET_KEY its recipe makes can be sourced
by the shell line that follows (`set -a; . /etc/ikario/ikario.env; set +a`) with every
variable of deploy/ikario.env.example set; the service user is made, with a home for the
model cache, before anything runs as it.

The recipe used to be Django's get_random_secret_key(), whose `( ) $ &` broke the sourcing:
every variable after SECRET_KEY was left unset (or the shell stopped on a syntax error).
"""

from __future__ import annotations

import re
import subprocess
import sys

from tests.deploy.conftest import ROOT

README = (ROOT / "docs" / "DEPLOY.md").read_text()  # the production steps
ENV_FILE = (ROOT / "deploy" / "ikario.env.example").read_text()
KEYS = 30  # Django's recipe broke the shell for nearly every key: 30 make its failure certain


def production_steps() -> str:
    """The shell block of the README's steps on a Debian host (the one that sources the env)."""
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.DOTALL)
    return next(block for block in blocks if "/etc/ikario/ikario.env; set +a" in block)


def secret_key_recipe() -> str:
    """The Python code of the README's SECRET_KEY recipe."""
    line = re.search(r"^SECRET_KEY=<.*$", README, flags=re.MULTILINE).group(0)
    return re.search(r"python3? -c (['\"])(.+?)\1", line).group(2)


def sourced(env_file) -> dict[str, str]:
    """The environment after the README's own sourcing line, run by bash on `env_file`."""
    line = next(step for step in production_steps().splitlines() if step.startswith("set -a; . "))
    script = line.replace("/etc/ikario/ikario.env", str(env_file)) + "\nenv -0"
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, env={}
    )
    assert done.returncode == 0, done.stderr
    return dict(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)


def test_every_variable_is_set_after_sourcing_with_keys_from_the_recipe(tmp_path):
    written = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", ENV_FILE, flags=re.MULTILINE))
    recipe = secret_key_recipe()
    for n in range(KEYS):
        key = subprocess.run(
            [sys.executable, "-c", recipe], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert len(key) >= 50
        env_file = tmp_path / f"ikario-{n}.env"
        env_file.write_text(
            ENV_FILE.replace("SECRET_KEY=change-me-50-random-characters", f"SECRET_KEY={key}")
        )

        environment = sourced(env_file)

        assert environment.get("SECRET_KEY") == key
        assert {name: environment.get(name) for name in written} == {**written, "SECRET_KEY": key}


def test_the_service_user_is_made_with_a_home_before_anything_runs_as_it():
    steps = production_steps().splitlines()
    made = next(n for n, step in enumerate(steps) if step.startswith("useradd "))
    runs_as_it = [n for n, step in enumerate(steps) if "-u ikario" in step or "-o ikario" in step]
    assert runs_as_it and made < min(runs_as_it)
    assert "--create-home" in steps[made] and steps[made].split()[-1] == "ikario"
    assert "useradd --system --create-home" in ENV_FILE  # said where the units' env file is


def test_the_production_error_gives_the_same_shell_safe_recipe():
    settings = (ROOT / "ikario_clone" / "settings.py").read_text()
    assert secret_key_recipe() in settings and "get_random_secret_key" not in settings
