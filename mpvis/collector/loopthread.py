"""An asyncio event loop in a background thread, for the collector and central process.

The socket servers of the live path are thin asyncio shells around the sans-IO
decoder of :mod:`mpvis.protocol.framing`.  Each runs its loop in one daemon
thread, so ``mpvis run`` and the window can host them in-process: callers talk
to the loop only through :meth:`LoopThread.call` and :meth:`LoopThread.submit`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["Connections", "LoopThread"]

T = TypeVar("T")
Main = Callable[[asyncio.Event], Awaitable[None]]


class LoopThread:
    """Runs ``main(stop_event)`` on a fresh event loop in a daemon thread.

    :meth:`start` returns once ``main`` has called :meth:`ready` (or failed:
    then it re-raises the failure, e.g. an address already in use).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    def start(
        self, main: Callable[[asyncio.Event], Awaitable[None]], timeout: float = 10.0
    ) -> None:
        """Start the thread and wait until ``main`` is ready to serve."""
        if self._thread is not None:
            raise RuntimeError(f"{self._name} already started")
        self._thread = threading.Thread(
            target=self._run, args=(main,), name=self._name, daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"{self._name} did not start within {timeout} s")
        if self._failure is not None:
            raise self._failure

    def ready(self) -> None:
        """Called by ``main`` (on the loop) once it serves."""
        self._ready.set()

    def _run(self, main: Main) -> None:
        async def wrapper() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await main(self._stop)

        try:
            asyncio.run(wrapper())
        except BaseException as exc:  # reported to start() or kept for join()
            self._failure = exc
        finally:
            self._ready.set()

    @property
    def running(self) -> bool:
        """Whether the loop thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop (from any thread)."""
        if self._loop is not None and self.running:
            self._loop.call_soon_threadsafe(fn, *args)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run a coroutine on the loop; its result arrives in the returned future."""
        if self._loop is None or not self.running:
            coro.close()
            raise RuntimeError(f"{self._name} is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask ``main`` to return (its stop event is set) and join the thread."""
        if self._stop is not None:
            self.call(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)


class Connections:
    """The open connections of a server, so that stopping lets each handler end cleanly.

    Handlers run their body inside ``with connections.track(writer):``;
    :meth:`close_all` closes every writer and waits for the handlers to return
    (cancelling them instead would make asyncio log spurious errors).
    """

    def __init__(self) -> None:
        self._open: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}

    @contextlib.contextmanager
    def track(self, writer: asyncio.StreamWriter) -> Iterator[None]:
        """Register the current handler task while its body runs."""
        task = asyncio.current_task()
        assert task is not None
        self._open[task] = writer
        try:
            yield
        finally:
            self._open.pop(task, None)

    async def close_all(self, timeout: float = 2.0) -> None:
        """Close every connection and wait (up to ``timeout`` s) for its handler."""
        for writer in list(self._open.values()):
            writer.close()
        tasks = list(self._open)
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
