"""`make run`'s set-up of this checkout's .env: the memory server's URL and a token of its own.

    python -m ikario_clone.local_env [.env [RUN_ENV]]

Every process `make run` starts (Procfile: web, worker, memory) and every manage.py command
run beside them reads .env, so they all reach the one memory server the same way: its URL,
with the bearer token it requires. The token is generated here, once, on this machine
(never a fixed token in the repository): a variable already given a value is left as it is
(but the local memory server's URL, which follows IKARIO_PORT), an empty one is replaced.
.env is made readable by its owner only (it holds the token).

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

MEMORY_URL = "http://127.0.0.1:{port}/mcp"  # the Procfile's `memory`, on IKARIO_PORT
# A URL of that shape follows IKARIO_PORT; any other (a server elsewhere) is left as set.
_LOCAL_URL = re.compile(r"^http://127\.0\.0\.1:\d+/mcp$")


_ASSIGNED = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def _assigned(text: str) -> dict[str, str]:
    """{name: value} of the assignments in `text` (the last one of a name wins)."""
    return {m[1]: m[2] for m in map(_ASSIGNED.match, text.splitlines()) if m}


def wanted(text: str) -> dict[str, str]:
    port = re.search(r"^\s*IKARIO_PORT\s*=\s*(\d+)\s*$", text, flags=re.MULTILINE)
    url = MEMORY_URL.format(port=port.group(1) if port else "8765")
    return {"MCP_IKARIO_SERVER_URL": url, "IKARIO_TOKEN": secrets.token_urlsafe(32)}


def ensure(path: Path) -> list[str]:
    """Give `path` every variable of `wanted` it lacks, and the local memory server's URL
    on IKARIO_PORT when the port was changed; returns the names written."""
    text = path.read_text() if path.exists() else ""
    lines = text.splitlines()
    added = []
    for name, value in wanted(text).items():
        set_here = re.compile(rf"^\s*(export\s+)?{name}\s*=\s*(\S.*)?$")
        found = [m.group(2).strip() for m in map(set_here.match, lines) if m and m.group(2)]
        if found and not (_LOCAL_URL.match(found[-1]) and found[-1] != value):
            continue
        # An empty assignment would win over one appended below: it goes.
        lines = [line for line in lines if not set_here.match(line)]
        lines.append(f"{name}={value}")
        added.append(name)
    if added or not path.exists():
        path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return added


def for_processes(path: Path, out: Path, shell=os.environ) -> None:
    """Write to `out` what honcho adds to the shell's environment: .env's lines but those
    of a variable the shell sets, and the local memory server's URL on the shell's port."""
    text = path.read_text()
    kept = [line for line in text.splitlines() if _name(line) not in shell]
    written = _assigned(text)
    port = shell.get("IKARIO_PORT")
    follows = _LOCAL_URL.match(written.get("MCP_IKARIO_SERVER_URL", ""))
    if port and follows and "MCP_IKARIO_SERVER_URL" not in shell:
        kept = [line for line in kept if _name(line) != "MCP_IKARIO_SERVER_URL"]
        kept.append(f"MCP_IKARIO_SERVER_URL={MEMORY_URL.format(port=port)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.touch(mode=0o600)
    os.chmod(out, 0o600)  # it holds the token too
    out.write_text("\n".join(kept) + "\n")


def _name(line: str) -> str:
    match = _ASSIGNED.match(line)
    return match[1] if match else ""


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else ".env")
    for name in ensure(path):
        print(f"{path}: {name} set", file=sys.stderr)
    if len(argv) > 1:
        for_processes(path, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
