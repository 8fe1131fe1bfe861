"""Script entry: `python ikario_rag/server.py [options]` (how a client spawns it over stdio).

Nothing imports this file; it only makes the package importable from any working directory
and hands over to `ikario_rag.cli.main`, like `python -m ikario_rag`. The script's own
directory is taken off sys.path: its modules (text.py, tools.py...) must not shadow others.
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from ikario_rag.cli import main

    sys.exit(main())
