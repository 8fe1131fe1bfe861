"""The web process: Daphne, whose memory client connects as soon as it serves.

Daphne sends no ASGI lifespan events, and importing asgi.py starts nothing, so nothing
would connect to the memory server before a user's first memory call. This command is
Daphne's own command line (same arguments) with one addition: once Daphne is ready to
serve, the memory client connects in the background, so the first message after a start
finds memory there. The Procfile and the systemd unit start the web app with it:

    python -m ikario_clone.web -b 127.0.0.1 -p 8000 ikario_clone.asgi:application
"""

from __future__ import annotations

import sys

from daphne.cli import CommandLineInterface
from daphne.server import Server


def connect_memory() -> None:
    # Imported here: Daphne has loaded the application, so Django is set up.
    from memory.client import services

    services.connect_memory()


class WebServer(Server):
    """Daphne's server, calling connect_memory once it listens (its ready hook)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("ready_callable", connect_memory)
        super().__init__(*args, **kwargs)


class WebCommand(CommandLineInterface):
    server_class = WebServer


def main(argv: list[str] | None = None) -> None:
    WebCommand().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
