"""`make run`'s set-up of this checkout's .env: the memory server's URL and a token of its own.

    python -m ikario_clone.local_env [.env]

Every process `make run` starts (Procfile: web, worker, memory) and every manage.py command
run beside them reads .env, so they all reach the one memory server the same way: its URL,
with the bearer token it requires. The token is generated here, once, on this machine
(never a fixed token in the repository): a variable already given a value is left as it is,
an empty one is replaced. .env is made readable by its owner only (it holds the token).
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

MEMORY_URL = "http://127.0.0.1:{port}/mcp"  # the Procfile's `memory`, on IKARIO_PORT


def wanted(text: str) -> dict[str, str]:
    port = re.search(r"^\s*IKARIO_PORT\s*=\s*(\d+)\s*$", text, flags=re.MULTILINE)
    url = MEMORY_URL.format(port=port.group(1) if port else "8765")
    return {"MCP_IKARIO_SERVER_URL": url, "IKARIO_TOKEN": secrets.token_urlsafe(32)}


def ensure(path: Path) -> list[str]:
    """Give `path` every variable of `wanted` it lacks; returns the names added."""
    text = path.read_text() if path.exists() else ""
    lines = text.splitlines()
    added = []
    for name, value in wanted(text).items():
        set_here = re.compile(rf"^\s*(export\s+)?{name}\s*=\s*(\S.*)?$")
        found = [m for m in map(set_here.match, lines) if m]
        if any(m.group(2) for m in found):
            continue
        # An empty assignment would win over one appended below: it goes.
        lines = [line for line in lines if not set_here.match(line)]
        lines.append(f"{name}={value}")
        added.append(name)
    if added or not path.exists():
        path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return added


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else ".env")
    for name in ensure(path):
        print(f"{path}: {name} set", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
