"""How ui.serve starts Streamlit's server: what it changes there, checked on real sockets."""

from __future__ import annotations

import asyncio
import socket

from tests.e2e.conftest import run_coroutine


def test_connections_to_the_server_are_sent_without_delay():
    """Every accepted connection has Nagle's algorithm off, as asyncio gives a TCP socket: without it a
    rerun's last small message waited for the browser's delayed ACK (40 ms, docs/PERFORMANCE.md)."""
    from streamlit.web.server.starlette import starlette_server

    from ui import serve

    serve.no_delay()
    serve.no_delay()  # twice is once
    listener = starlette_server._bind_socket("127.0.0.1", 0, 8)  # what Streamlit's server binds
    assert listener.proto == socket.IPPROTO_TCP and listener.getblocking() is False

    async def accept_one() -> int:
        accepted = asyncio.get_running_loop().create_future()

        def on_connect(reader, writer):
            accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=listener)
        try:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            nodelay = await asyncio.wait_for(accepted, 10)
            writer.close()
            return nodelay
        finally:
            server.close()
            await server.wait_closed()

    assert run_coroutine(accept_one()) != 0
