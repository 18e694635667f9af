"""Start the app: ``python -m ui.serve [streamlit options]`` (what ``make run`` does).


Streamlit treats a folder named pages/ beside app.py as an old-style multipage app until
st.navigation runs once in the process; until then a deep link such as /bahdanau?step=3 opened
first after a start is answered "page not found". Our pages/ holds scripts that st.navigation
lists itself, so we say so before the server starts.

Streamlit binds its listening socket itself, with protocol number 0; asyncio switches Nagle's
algorithm off (TCP_NODELAY) only on connections whose socket says IPPROTO_TCP, so every browser's
websocket kept it on. A rerun's last small messages (script_finished) then waited for the browser's
delayed acknowledgement of the figures before them: 40 ms on Linux, on about half the edits of
lesson 4 (docs/PERFORMANCE.md). :func:`no_delay` gives the listening socket its real protocol, so
every connection accepted from it is sent without delay.

Streamlit's loop that sends each session's queued messages pauses 5 ms after every pass
(``MESSAGE_FLUSH_INTERVAL_SECS``), so a rerun's last message (script_finished) waited for the pause to
end: 4.6 ms median, 7 ms p90 after the script had finished, on every edit (docs/PERFORMANCE.md).
:func:`flush_without_pause` makes the pause a bare yield to the event loop; the loop still sleeps on
its event between passes, so an idle server does not spin.

A lesson's sections rerun as one fragment (ui.lesson), so the browser names that fragment when a
student edits the sentence. A session that does not hold it (a new session after the browser
reconnected to another replica, or to a restarted server) drops such a request, and the page stayed
as the lost session drew it. :func:`full_rerun_for_unknown_fragments` runs the whole page instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

APP = Path(__file__).resolve().parent.parent / "app.py"


def no_delay() -> None:
    """Make the sockets Streamlit's server listens on report IPPROTO_TCP (see the module's text)."""
    import socket

    from streamlit.web.server.starlette import starlette_server

    bind = starlette_server._bind_socket
    if getattr(bind, "no_delay", False):
        return

    def bind_socket(address: str, port: int, backlog: int) -> socket.socket:
        sock = bind(address, port, backlog)
        if sock.proto == socket.IPPROTO_TCP:
            return sock
        # the same descriptor, re-read: the kernel reports its protocol (IPPROTO_TCP)
        tcp = socket.socket(fileno=sock.detach())
        tcp.setblocking(False)
        return tcp

    bind_socket.no_delay = True
    starlette_server._bind_socket = bind_socket


def flush_without_pause() -> None:
    """Send queued messages without Streamlit's 5 ms pause after each pass (see the module's text)."""
    from streamlit.runtime import runtime

    loop = runtime.Runtime._loop_coroutine.__code__
    if not hasattr(runtime, "MESSAGE_FLUSH_INTERVAL_SECS") or "MESSAGE_FLUSH_INTERVAL_SECS" not in loop.co_names:
        raise RuntimeError("Streamlit's send loop no longer reads MESSAGE_FLUSH_INTERVAL_SECS: see ui/serve.py")
    runtime.MESSAGE_FLUSH_INTERVAL_SECS = 0.0


def full_rerun_for_unknown_fragments() -> None:
    """A rerun request for a fragment this session does not hold becomes a rerun of the whole page
    (with the same widget values) instead of being dropped (see the module's text)."""
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.app_session import AppSession

    request = AppSession.request_rerun
    if getattr(request, "full_for_unknown", False):
        return

    def request_rerun(self, client_state: ClientState | None) -> None:
        if (
            client_state is not None
            and client_state.fragment_id
            and not client_state.is_auto_rerun  # a timer's tick for a fragment gone: nothing to do
            and not self.has_fragment(client_state.fragment_id)
        ):
            whole = ClientState()
            whole.CopyFrom(client_state)
            whole.ClearField("fragment_id")
            client_state = whole
        request(self, client_state)

    request_rerun.full_for_unknown = True
    AppSession.request_rerun = request_rerun


def server_fixes() -> None:
    """Everything this module changes in Streamlit's server (see the module's text); bench/bench_floor.py
    serves its page with the same."""
    no_delay()
    flush_without_pause()
    full_rerun_for_unknown_fragments()


def main(argv: list[str]) -> int:
    PagesManager.uses_pages_directory = False
    server_fixes()
    # One intra-op thread per computation: the server runs one script thread per browser session,
    # and on a small CPU two torch threads per session fight each other (measured: a 12 ms decode
    # took ~400 ms under load). Set OMP_NUM_THREADS yourself to override; it must precede torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(APP.parent))
    if os.environ.get("ATTENTION_LAB_PROFILE"):  # where the server's time goes (bench/sampler.py)
        from bench import sampler

        sampler.start(os.environ["ATTENTION_LAB_PROFILE"])
    if os.environ.get("ATTENTION_LAB_FORWARD_LOG"):  # the model's forward pass of each run (bench/forward_log.py)
        from bench import forward_log

        forward_log.start(os.environ["ATTENTION_LAB_FORWARD_LOG"])
    from ui import warmup

    warmup.start()  # torch, the default BERT and the first sentences, while the server comes up
    sys.argv = ["streamlit", "run", str(APP), *argv]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
