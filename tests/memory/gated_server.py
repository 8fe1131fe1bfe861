"""The real ikario_rag, started only once a test opens the gate: a memory server "starting".

Point MCP_IKARIO_SERVER_PATH here and GATED_SERVER_DIR at a directory. The script writes
`spawned` there at once (the app did start it), waits until the test creates `open` (at
most GATED_SERVER_WAIT seconds, default 600), then becomes `ikario_rag/server.py` with the
same arguments and environment (exec: same pid, same pipes).
"""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    gate = Path(os.environ["GATED_SERVER_DIR"])
    (gate / "spawned").write_text(str(os.getpid()))
    deadline = time.monotonic() + float(os.environ.get("GATED_SERVER_WAIT", "600"))
    while not (gate / "open").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    server = str(ROOT / "ikario_rag" / "server.py")
    os.execv(sys.executable, [sys.executable, server, *sys.argv[1:]])  # noqa: S606
