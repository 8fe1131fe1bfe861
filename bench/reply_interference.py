"""What slows a reply: each kind of background work alone beside a streamed turn.

bench/background_work.py measures the whole auto-save beside replies; this isolates its
parts. Each round runs a streamed 60-word turn through the WebSocket consumer (memory off,
then on), once per case, interleaved:

- idle: nothing else runs;
- index: the memory server was just given 16 long conversation turns, which its
  write-behind indexer embeds while the reply streams (the app tells the server when a reply
  starts and ends: memory/foreground.py);
- index-frozen: the same, with the memory server stopped (SIGSTOP) for a memory-off reply:
  what the reply costs with no indexer at all;
- python: a thread of the app's process runs Python without a pause (what the in-process
  worker does between its waits), at the process's switch interval.

Usage: .venv/bin/python bench/reply_interference.py [rounds] [cases,...]
       SWITCH=0.001 ... sets sys.setswitchinterval first (the in-process worker sets 1 ms).
"""

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

from _setup import summary, wait_indexed
from background_work import chat_with_memory, turn

from ikario_rag.lock import holder_pid

CASES = ("idle", "index", "index-frozen", "python")
# Conversation turns, as an auto-save writes them: a search does not embed them itself.
CONVERSATION = {"kind": "conversation"}
LONG = "How should I plan the hike near Grenoble? Start early, carry water, check the sky. " * 18


def busy_python(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(2000))


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    cases = sys.argv[2].split(",") if len(sys.argv) > 2 else list(CASES)
    if unknown := set(cases) - set(CASES):
        sys.exit(f"unknown cases {sorted(unknown)}; choose among {CASES}")
    if os.environ.get("SWITCH"):
        sys.setswitchinterval(float(os.environ["SWITCH"]))
    with chat_with_memory() as (user, index):
        from memory import services

        samples = {(case, memory): [] for case in cases for memory in (False, True)}
        for step in range(rounds + 1):
            for case, memory in samples:
                wait_indexed()
                frozen, stop = None, None
                if case.startswith("index"):
                    items = [
                        {"content": f"{step}{case}{memory} {k} {LONG}", "context": CONVERSATION}
                        for k in range(16)
                    ]
                    services.add_thoughts(user=user, items=items)
                    time.sleep(0.03)  # past the indexer's debounce: it is embedding now
                    if case == "index-frozen" and not memory:
                        frozen = holder_pid(Path(index))
                        os.kill(frozen, signal.SIGSTOP)
                elif case == "python":
                    stop = threading.Event()
                    threading.Thread(target=busy_python, args=(stop,), daemon=True).start()
                try:
                    elapsed = asyncio.run(turn(user, memory=memory))
                finally:
                    if stop is not None:
                        stop.set()
                    if frozen:
                        os.kill(frozen, signal.SIGCONT)
                if step:  # the first round warms up imports, pools and templates
                    samples[(case, memory)].append(elapsed)
    print(
        f"reply latency (streamed 60-word turn), {rounds} rounds, switch interval "
        f"{sys.getswitchinterval() * 1000:g} ms; ratio to idle at the median"
    )
    for memory in (False, True):
        base = summary(samples[("idle", memory)])["median"] if "idle" in cases else None
        for case in cases:
            if case == "index-frozen" and memory:
                continue  # a frozen server cannot answer the recall search
            got = summary(samples[(case, memory)])
            ratio = f" | {got['median'] / base:.2f}x idle" if base else ""
            print(
                f"  memory {'on ' if memory else 'off'} {case:13}: median {got['median']:.1f} ms "
                f"(p95 {got['p95']:.1f}){ratio}"
            )


if __name__ == "__main__":
    main()
