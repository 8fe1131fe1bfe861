"""The server as a real subprocess over stdio, spoken to in raw newline-delimited JSON-RPC.

`StdioServer` spawns `python ikario_rag/server.py` (as Claude Desktop does) or
`python -m ikario_rag`, reads stdout and stderr on threads (so a silent server fails the
test after a generous wait instead of hanging it), checks that every stdout line is
JSON-RPC, and can send any line at all (`send_line`), hostile ones included.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "ikario_rag" / "server.py"
# A bound on waiting for the server's own work (torch + MiniLM load on a busy 2-core machine);
# never an expectation of speed.
ANSWER_WAIT = 600.0


class StdioServer:
    def __init__(
        self, index_dir: Path, *args: str, module: bool = False, env: dict | None = None
    ) -> None:
        environment = {
            **os.environ,
            "IKARIO_INDEX_DIR": str(index_dir),
            "HF_HUB_OFFLINE": "1",
            **(env or {}),
        }
        command = [sys.executable, "-m", "ikario_rag"] if module else [sys.executable, str(SERVER)]
        self.index_dir = Path(index_dir)
        self.process = subprocess.Popen(
            [*command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            # The script path alone must work from any directory; -m needs the repository.
            cwd=str(ROOT) if module else "/",
            text=True,
            encoding="utf-8",
        )
        self.next_id = 0
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self.not_json_rpc: list[str] = []
        self._answers: queue.Queue[dict | None] = queue.Queue()
        self._stderr_seen = threading.Condition()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- reading --------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.stdout_lines.append(line)
            try:
                message = json.loads(line)
                assert message["jsonrpc"] == "2.0"
            except (ValueError, KeyError, TypeError, AssertionError):
                self.not_json_rpc.append(line)
                continue
            self._answers.put(message)
        self._answers.put(None)

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            with self._stderr_seen:
                self.stderr_lines.append(line)
                self._stderr_seen.notify_all()
        with self._stderr_seen:
            self.stderr_lines.append("")  # end of stream
            self._stderr_seen.notify_all()

    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_log(self, words: str, timeout: float = ANSWER_WAIT) -> str:
        """The first stderr line containing `words` (fails if the stream ends first)."""

        def found() -> str | None:
            hits = [line for line in self.stderr_lines if words in line]
            if hits:
                return hits[0]
            if self.stderr_lines and self.stderr_lines[-1] == "":
                raise AssertionError(f"stderr closed without {words!r}: {self.stderr()[-2000:]}")
            return None

        with self._stderr_seen:
            if not self._stderr_seen.wait_for(lambda: found() is not None, timeout):
                raise AssertionError(f"no {words!r} in the log within {timeout} s")
            return found()

    # -- writing --------------------------------------------------------------------------

    def send_line(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message))

    def request(self, method: str, params: dict, timeout: float = ANSWER_WAIT) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.answer(self.next_id, timeout)

    def answer(self, wanted: int | str, timeout: float = ANSWER_WAIT) -> dict:
        while True:
            message = self._next_message(wanted, timeout)
            if message.get("id") == wanted:
                return message

    def _next_message(self, wanted: object, timeout: float) -> dict:
        try:
            message = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer to request {wanted} within {timeout} s") from None
        if message is None:
            self._answers.put(None)
            raise AssertionError(f"the server closed stdout; stderr: {self.stderr()[-2000:]}")
        return message

    def initialize(self) -> dict:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ikario-tests", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, name: str, **arguments) -> tuple[bool, dict | str]:
        """(is_error, structured result) or (True, error text)."""
        return self._outcome(self.request("tools/call", {"name": name, "arguments": arguments}))

    def calls_at_once(
        self, calls: list[tuple[str, dict]], timeout: float = ANSWER_WAIT
    ) -> list[tuple[bool, dict | str]]:
        """Send every (tool, arguments) call before reading any answer (the server runs them
        side by side), then each one's outcome as `call` gives it, in the order sent."""
        sent = []
        for name, arguments in calls:
            self.next_id += 1
            sent.append(self.next_id)
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": self.next_id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            )
        answers: dict = {}
        while len(answers) < len(sent):
            message = self._next_message(sent, timeout)
            if message.get("id") in sent:
                answers[message["id"]] = message
        return [self._outcome(answers[i]) for i in sent]

    @staticmethod
    def _outcome(answer: dict) -> tuple[bool, dict | str]:
        result = answer["result"]
        text = result["content"][0]["text"] if result.get("content") else ""
        if result.get("isError"):
            return True, text
        assert json.loads(text) == result["structuredContent"]
        return False, result["structuredContent"]

    def tool(self, name: str, **arguments) -> dict:
        error, payload = self.call(name, **arguments)
        assert not error, payload
        return payload

    # -- ending ---------------------------------------------------------------------------

    def wait(self, timeout: float = ANSWER_WAIT) -> int:
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(ANSWER_WAIT)

    def close(self, timeout: float = ANSWER_WAIT) -> int:
        """Close stdin (what the web app does at exit) and wait for a clean exit."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(ANSWER_WAIT)
        return self.process.returncode
