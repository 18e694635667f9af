"""A Streamlit client without a browser: the websocket and protobufs the browser itself speaks.

    sess = ProtocolSession("http://127.0.0.1:8501", "self-attention", lang="en")
    first = await sess.open()                 # connect, run the page once; a Run
    run = await sess.set_text("The cat sat.") # what Enter in the sentence box sends
    await sess.close()

The browser's exchange, which this module repeats:
1. GET the page (a load balancer may set its sticky-session cookie here; the cookie is kept);
2. open ``/_stcore/stream`` with subprotocol ``streamlit`` (the second and third entries of that
   header carry an XSRF token and, on reconnect, the previous session id);
3. send ``BackMsg.rerun_script`` (a ``ClientState``: query string, page url path or page script
   hash, the widget values, and the fragment of the widget that changed, if it is drawn in one, so
   that only that fragment reruns); the server streams ``ForwardMsg``s back: ``new_session``, deltas with
   elements, ``script_finished``.
A run is timed from the send to ``script_finished``; its Plotly figure specs, exceptions and text
boxes are collected so a caller can check that an edit really reached the figures.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from urllib.parse import urlparse

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

MAIN, SIDEBAR = 0, 1  # the root containers a delta path starts with
DONE = {
    ForwardMsg.FINISHED_SUCCESSFULLY,
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR,
}


class ProtocolError(RuntimeError):
    """The server closed the stream or never finished a run."""


@dataclass
class Run:
    """What one script run sent back."""

    seconds: float  # send to script_finished
    status: int = -1
    figures: list[str] = field(default_factory=list)  # Plotly JSON specs, in page order
    exceptions: list[str] = field(default_factory=list)  # st.exception / error cards' messages
    text_boxes: dict[str, str] = field(default_factory=dict)  # widget id -> element type, main area
    elements: list[str] = field(default_factory=list)  # every element's type, in the order sent
    bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.status in DONE and not self.exceptions

    def figures_contain(self, needle: str) -> bool:
        return any(needle in spec for spec in self.figures)


def _cookie_header(jar: CookieJar) -> str:
    return "; ".join(f"{c.name}={c.value}" for c in jar)


class ProtocolSession:
    def __init__(
        self,
        base_url: str,
        page: str,
        *,
        lang: str | None = "en",
        query: str = "",
        text_key: str | None = None,
        timeout: float = 120.0,
    ):
        self.base = base_url.rstrip("/")
        self.page = page.strip("/")
        params = [f"lang={lang}"] if lang else []
        self.query = "&".join(params + ([query] if query else []))
        self.text_key = text_key or f"{self.page}.text"  # the lessons' sentence box key
        self.timeout = timeout
        self.jar = CookieJar()
        self.ws = None
        self.session_id = ""
        self.replica: str | None = None
        self.page_hash = ""
        self.text_id: str | None = None
        self.fragments: dict[str, str] = {}  # widget id -> the fragment it is drawn in, if any
        self.widget_values: dict[str, str] = {}
        self._queue: asyncio.Queue = asyncio.Queue()
        self._reader: asyncio.Task | None = None

    # -- connection -------------------------------------------------------------------------
    def _http_get(self) -> None:
        """The page's HTML, as the browser fetches it first; keeps any cookie the server sets."""
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        with opener.open(f"{self.base}/{self.page}?{self.query}", timeout=30) as r:
            r.read()
            self.replica = r.headers.get("X-Attention-Lab-Replica")  # set by ui.cluster's nginx

    async def connect(self, *, reconnect: bool = False) -> None:
        await asyncio.to_thread(self._http_get)
        parsed = urlparse(self.base)
        scheme = "wss" if parsed.scheme == "https" else "ws"
        # entries: subprotocol, XSRF token (only checked before reading an auth cookie, which we do
        # not send), previous session id (the browser's reconnect)
        protocols = ["streamlit"] + (["noxsrf", self.session_id] if reconnect and self.session_id else [])
        headers = {"Cookie": _cookie_header(self.jar)} if len(self.jar) else {}
        self.ws = await websockets.connect(
            f"{scheme}://{parsed.netloc}{parsed.path}/_stcore/stream",
            subprotocols=protocols,
            additional_headers=headers,
            max_size=None,
            open_timeout=30,
            ping_interval=None,
        )
        self._queue = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(frame)
                await self._queue.put((msg, len(frame)))
        except websockets.ConnectionClosed:
            pass
        finally:
            await self._queue.put((None, 0))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self.ws = None

    # -- runs -------------------------------------------------------------------------------
    def _client_state(self, back: BackMsg, fragment_id: str = "") -> None:
        cs = back.rerun_script
        cs.query_string = self.query
        if fragment_id:
            cs.fragment_id = fragment_id  # as the browser does for a widget drawn in a fragment
        if self.page_hash:
            cs.page_script_hash = self.page_hash
        else:
            cs.page_name = self.page  # the url path, as on a first load of /<page>
        cs.context_info.locale = "zh-TW" if "zh" in self.query else "en-US"
        cs.context_info.timezone = "UTC"
        cs.context_info.url = f"{self.base}/{self.page}?{self.query}"
        for wid, value in self.widget_values.items():
            w = cs.widget_states.widgets.add()
            w.id = wid
            w.string_value = value

    async def rerun(self, fragment_id: str = "") -> Run:
        back = BackMsg()
        self._client_state(back, fragment_id)
        t0 = time.perf_counter()
        if self.ws is None:
            raise ProtocolError("not connected")
        try:
            await self.ws.send(back.SerializeToString())
        except websockets.ConnectionClosed as e:
            raise ProtocolError(f"the server closed the connection ({e})") from None
        return await self._collect(t0)

    async def _collect(self, t0: float) -> Run:
        run = Run(seconds=float("nan"))
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError(f"no script_finished within {self.timeout:.0f} s")
            try:
                msg, size = await asyncio.wait_for(self._queue.get(), left)
            except asyncio.TimeoutError:
                raise ProtocolError(f"no script_finished within {self.timeout:.0f} s") from None
            if msg is None:
                raise ProtocolError("the server closed the connection")
            run.bytes += size
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.session_id = msg.new_session.initialize.session_id or self.session_id
                if msg.new_session.page_script_hash:
                    self.page_hash = msg.new_session.page_script_hash
            elif kind == "navigation" and msg.navigation.page_script_hash:
                self.page_hash = msg.navigation.page_script_hash
            elif kind == "page_not_found":
                run.exceptions.append(f"page not found: {self.page}")
            elif kind == "delta":
                self._element(msg, run)
            elif kind == "script_finished":
                if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue  # a newer run replaced this one; its own finish follows
                run.status = msg.script_finished
                run.seconds = time.perf_counter() - t0
                return run

    def _element(self, msg: ForwardMsg, run: Run) -> None:
        delta = msg.delta
        if delta.WhichOneof("type") != "new_element":
            return
        el = delta.new_element
        kind = el.WhichOneof("type")
        run.elements.append(kind)
        path = list(msg.metadata.delta_path)
        if kind == "plotly_chart":
            run.figures.append(el.plotly_chart.spec)
        elif kind == "exception":
            run.exceptions.append(f"{el.exception.type}: {el.exception.message}")
        elif kind in ("text_area", "text_input") and path and path[0] == MAIN:
            wid = getattr(el, kind).id
            run.text_boxes[wid] = kind
            if delta.fragment_id:
                self.fragments[wid] = delta.fragment_id
            if self.text_id is None and wid.endswith(f"-{self.text_key}"):
                self.text_id = wid

    async def open(self) -> Run:
        """Connect and run the page once, as a first page load does; returns that run."""
        await self.connect()
        run = await self.rerun()
        if self.text_id is None and run.text_boxes:
            self.text_id = next(iter(run.text_boxes))  # the page's first text box in the main area
        return run

    async def set_text(self, text: str) -> Run:
        """Replace the sentence and rerun: the BackMsg the browser sends on Enter (Ctrl+Enter)."""
        if self.text_id is None:
            raise ProtocolError(f"/{self.page} has no text box in its main area")
        self.widget_values[self.text_id] = text
        return await self.rerun(self.fragments.get(self.text_id, ""))

    async def reconnect(self) -> Run:
        """Drop the websocket and come back with the previous session id, as the browser does."""
        await self.close()
        await self.connect(reconnect=True)
        return await self.rerun()
