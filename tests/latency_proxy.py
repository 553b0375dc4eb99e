"""A TCP proxy on loopback that delays every chunk each way, as a network
between machines does: for cluster workers whose Redis is "elsewhere".

:class:`LatencyProxy` listens on ``127.0.0.1`` (an ephemeral port) and
forwards each connection to a Unix socket (the test's ``redis-server``); every
chunk read on either side is written to the other ``delay_ms`` later (drawn
per chunk, uniformly between the two bounds), in order. It runs an asyncio
loop in a thread of its own; :meth:`stop` closes the listener and every
connection.
"""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any

START_DEADLINE_S = 30.0


class LatencyProxy:
    def __init__(self, unix_socket: str, delay_ms: tuple[float, float] = (2.0, 5.0)) -> None:
        self.unix_socket = unix_socket
        self.delay_s = (delay_ms[0] / 1000, delay_ms[1] / 1000)
        #: connections accepted, chunks received to pass on (both ways)
        self.connections = 0
        self.chunks = 0
        self._random = random.Random(0)  # noqa: S311 - delays, not secrets
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._accept, "127.0.0.1", 0), self._loop
        ).result(timeout=START_DEADLINE_S)
        self.port: int = self._server.sockets[0].getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.unix_socket)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        self.connections += 1
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass  # one side went away: the connection ends
        finally:
            for side in (writer, up_writer):
                side.close()
            self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Forward ``reader`` to ``writer``, each chunk after its delay, in order."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await chunks.get()
                await asyncio.sleep(max(0.0, due - loop.time()))  # the latency itself
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        delivery = asyncio.ensure_future(deliver())
        due = 0.0
        try:
            while True:
                data = await reader.read(65536)
                if data:
                    self.chunks += 1  # counted before it is passed on
                # never before the chunk ahead of it: order is kept
                due = max(due, loop.time() + self._random.uniform(*self.delay_s))
                chunks.put_nowait((due, data))
                if not data:
                    break
            await delivery
        finally:
            delivery.cancel()

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=START_DEADLINE_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=START_DEADLINE_S)
        self._loop.close()
