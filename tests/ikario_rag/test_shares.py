"""Fair shares (ikario_rag/shares.py): one namespace's load never holds up another's recall.

The real server object over its real Memory: alice's writes are held inside the server (the
test holds the store's write lock, as a long import does), and bob's search must still be
answered. Then the gates' order: waiting calls are let in namespace by namespace.
"""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread

from ikario_rag.app import build_server
from ikario_rag.shares import FairGate
from tests.ikario_rag.conftest import READY_WAIT, InMemoryClient, call

ALICE_CALLS = 45  # more than anyio's 40 worker threads


async def test_a_search_is_answered_while_another_namespace_fills_the_server(host, memory):
    server = build_server(host)
    client = InMemoryClient(server)
    error, _ = await call(client, "add_thought", content="Bob plays the cello", namespace="bob")
    assert not error
    memory.flush()

    taken, done = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with memory.write_lock:
            taken.set()
            done.wait(READY_WAIT)

    holder = threading.Thread(target=hold_the_write_lock, daemon=True)
    holder.start()
    taken.wait(READY_WAIT)
    answers: list[bool] = []

    async def alice_adds(n: int) -> None:
        error, _ = await call(client, "add_thought", content=f"alice's {n}", namespace="alice")
        answers.append(error)

    found: dict = {}
    answered = anyio.Event()

    async def bob_searches() -> None:
        _, result = await call(
            client, "search_memories", query="cello", mode="text", namespace="bob"
        )
        found.update(result)
        answered.set()

    def in_the_server() -> int:
        # Every add of alice's is in: on a thread, waiting for one, or waiting for its turn.
        pool = anyio.to_thread.current_default_thread_limiter().statistics()
        gate = getattr(server, "shares", None)
        turns = gate.writes.queued() + gate.writes.total if gate is not None else 0
        return turns or pool.borrowed_tokens + pool.tasks_waiting

    try:
        async with anyio.create_task_group() as tasks:
            for n in range(ALICE_CALLS):
                tasks.start_soon(alice_adds, n)
            with anyio.fail_after(READY_WAIT):
                while in_the_server() < ALICE_CALLS:
                    await anyio.sleep(0.01)
            tasks.start_soon(bob_searches)
            with anyio.move_on_after(30):  # a bound, not a speed: it answers in milliseconds
                await answered.wait()
            in_time = answered.is_set()
            done.set()  # alice's adds go on (their threads end only once the lock is free)
    finally:
        done.set()
        holder.join(READY_WAIT)
    # Before: every worker thread waited for the lock with alice's adds; bob's search
    # waited for a thread until they were done.
    assert in_time, "bob's search was not answered beside alice's load"
    assert found["results"][0]["content"] == "Bob plays the cello"
    assert answers == [False] * ALICE_CALLS  # alice's adds all went through, after


async def test_waiting_calls_are_let_in_namespace_by_namespace():
    gate = FairGate(slots=1)
    order: list[str] = []
    release = anyio.Event()

    async def one(namespace: str) -> None:
        async with gate.turn(namespace):
            order.append(namespace)
            await release.wait()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(one, "alice")
        await anyio.sleep(0)
        for _ in range(3):
            tasks.start_soon(one, "alice")
        await anyio.sleep(0)
        tasks.start_soon(one, "bob")
        with anyio.fail_after(10):
            while gate.queued() < 4:
                await anyio.sleep(0)
        release.set()
    # Bob came after three of alice's waiting, and waits for one of them only.
    assert order == ["alice", "alice", "bob", "alice", "alice"]


async def test_one_namespace_never_takes_every_read_slot():
    gate = FairGate(slots=3, per_namespace=2)
    inside: list[str] = []
    release = anyio.Event()

    async def one(namespace: str) -> None:
        async with gate.turn(namespace):
            inside.append(namespace)
            await release.wait()

    async with anyio.create_task_group() as tasks:
        for _ in range(10):
            tasks.start_soon(one, "alice")
        with anyio.fail_after(10):
            while gate.queued() < 8:
                await anyio.sleep(0)
        tasks.start_soon(one, "bob")
        with anyio.fail_after(10):
            while "bob" not in inside:
                await anyio.sleep(0)
        assert inside == ["alice", "alice", "bob"]
        release.set()
