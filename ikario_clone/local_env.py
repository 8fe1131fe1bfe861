"""`make run`'s set-up of this checkout's .env: the memory server's URL and a token of its own.

    python -m ikario_clone.local_env [.env [RUN_ENV]]

Every process `make run` starts (Procfile: web, worker, memory) and every manage.py command
run beside them reads .env, so they all reach the one memory server the same way: its URL,
with the bearer token it requires. The token is generated here, once, on this machine
(never a fixed token in the repository): a variable already given a value is left as it is
(but the local memory server's URL, which follows IKARIO_PORT), an empty one is replaced.
.env is made readable by its owner only (it holds the token). python-dotenv reads and writes
it, as django-environ and honcho read it.

With RUN_ENV, it also writes the file honcho gives the processes (`honcho start -e`):
honcho lets its file win over the shell, so that file is .env without the variables the
shell sets (`IKARIO_PORT=8102 make run` starts the memory server on 8102 whatever .env
says), and the local memory server's URL follows the port the processes use.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

from dotenv import dotenv_values, set_key

MEMORY_URL = "http://127.0.0.1:{port}/mcp"  # the Procfile's `memory`, on IKARIO_PORT
# A URL of that shape follows IKARIO_PORT; any other (a server elsewhere) is left as set.
_LOCAL_URL = re.compile(r"^http://127\.0\.0\.1:\d+/mcp$")
URL = "MCP_IKARIO_SERVER_URL"


def _read(path: Path) -> dict[str, str | None]:
    # As written: `$NAME` is left for the reader (django-environ, honcho) to make sense of.
    return dotenv_values(path, interpolate=False)


def wanted(written: dict[str, str | None]) -> dict[str, str]:
    port = written.get("IKARIO_PORT") or ""
    url = MEMORY_URL.format(port=port if port.isdigit() else "8765")
    return {URL: url, "IKARIO_TOKEN": secrets.token_urlsafe(32)}


def ensure(path: Path) -> list[str]:
    """Give `path` every variable of `wanted` it lacks, and the local memory server's URL
    on IKARIO_PORT when the port was changed; returns the names written."""
    path.touch(mode=0o600)
    os.chmod(path, 0o600)
    written = _read(path)
    added = []
    for name, value in wanted(written).items():
        found = written.get(name)
        if found and not (_LOCAL_URL.match(found) and found != value):
            continue
        set_key(path, name, value, quote_mode="never")  # an empty assignment is replaced
        added.append(name)
    return added


def for_processes(path: Path, out: Path, shell=os.environ) -> None:
    """Write to `out` what honcho adds to the shell's environment: .env's variables but
    those the shell sets, and the local memory server's URL on the shell's port."""
    written = _read(path)
    # An empty value is left out, as honcho leaves out `NAME=` (the app reads .env for it).
    kept = {name: value for name, value in written.items() if name not in shell and value}
    port = shell.get("IKARIO_PORT")
    if port and _LOCAL_URL.match(written.get(URL) or "") and URL not in shell:
        kept[URL] = MEMORY_URL.format(port=port)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    out.touch(mode=0o600)  # it holds the token too
    os.chmod(out, 0o600)
    for name, value in kept.items():
        set_key(out, name, value, quote_mode="auto")


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else ".env")
    for name in ensure(path):
        print(f"{path}: {name} set", file=sys.stderr)
    if len(argv) > 1:
        for_processes(path, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
