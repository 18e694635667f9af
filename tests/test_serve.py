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


def test_the_send_loop_does_not_pause_between_passes(monkeypatch):
    """Streamlit's send loop reads its pause from the module's global on every pass, so setting it
    reaches the running server; ui.serve sets it to 0 (script_finished waited up to 5 ms for it)."""
    from streamlit.runtime import runtime

    from ui import serve

    monkeypatch.setattr(runtime, "MESSAGE_FLUSH_INTERVAL_SECS", runtime.MESSAGE_FLUSH_INTERVAL_SECS)  # undone after
    assert runtime.MESSAGE_FLUSH_INTERVAL_SECS > 0  # Streamlit's own pause, before
    serve.flush_without_pause()
    assert runtime.MESSAGE_FLUSH_INTERVAL_SECS == 0
    # the loop looks the name up at run time (a global), not a copy bound when it was defined
    assert "MESSAGE_FLUSH_INTERVAL_SECS" in runtime.Runtime._loop_coroutine.__code__.co_names


def test_the_forward_log_has_one_line_per_forward_pass_the_server_ran(tmp_path, monkeypatch):
    """bench/forward_log.py (ATTENTION_LAB_FORWARD_LOG): each encoding the server computes adds its own
    forward pass, as timed in that run; a cached sentence adds nothing; a reader sees only new lines."""
    from bench import forward_log
    from core.attention import encoding
    from core.bert import load

    monkeypatch.setattr(encoding, "_encode_uncached", encoding._encode_uncached)  # undone after the test
    path = tmp_path / "forward.jsonl"
    reader = forward_log.Reader(path)  # made before the file exists
    forward_log.start(str(path))
    forward_log.start(str(path))  # twice is once
    bundle = load()
    text = f"The forward log test sentence {tmp_path.name}."
    enc = encoding.encode(bundle, text)
    assert encoding.encode(bundle, text) is enc  # the second is a cache hit: no forward pass
    lines = reader.new()
    assert lines == [{"tokens": len(enc.tokens), "forward_s": round(enc.forward_seconds, 6)}]
    assert lines[0]["forward_s"] > 0
    assert reader.new() == []
    with path.open("a", encoding="utf-8") as f:
        f.write('{"tokens": 3, "forward_s"')  # a line still being written is left for the next read
    assert reader.new() == []
    with path.open("a", encoding="utf-8") as f:
        f.write(": 0.5}\n")
    assert reader.new() == [{"tokens": 3, "forward_s": 0.5}]
