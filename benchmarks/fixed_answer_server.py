"""A server that answers every HTTP request with the same few bytes: the machine's floor for ``api_load.py``.

Same event loop (uvloop) and HTTP parser (httptools) as ``iosets serve``, and no work: whatever latency
its answers show under a load is the machine's (its wake-ups, its other tasks, the load generator), not a
service's. ``api_load.py --stored N`` sends it the posts and answers it sends the service, just after.

Usage: python benchmarks/fixed_answer_server.py PORT (prints ``ready`` once it listens; SIGTERM stops it)
"""

import asyncio
import sys
from typing import Any

import httptools
import uvloop

ANSWER = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{"status":"ok"}'


class FixedAnswer(asyncio.Protocol):
    """One connection: each complete request (body read to its end) is answered with :data:`ANSWER`."""

    def connection_made(self, transport: Any) -> None:  # uvloop's, not an asyncio.Transport subclass
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_complete(self) -> None:
        self.transport.write(ANSWER)


async def serve(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(FixedAnswer, "127.0.0.1", port)
    print("ready", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    uvloop.run(serve(int(sys.argv[1])))
