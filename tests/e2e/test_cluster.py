"""`python -m ui.cluster`: two replicas behind a real nginx; one dies, the class carries on.

Protocol-level sessions (bench/protocol.py) and one Chromium tab go through the balancer. The
replica under the browser is killed: sessions that were on it reconnect and are served by the
survivor (a new session there), sessions on the survivor keep their own session, new sessions all
land on the survivor, and the browser shows Streamlit's reconnect and then a page that works.
Ctrl+C then stops everything and removes nginx's temporary configuration.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from bench.bench_load import MARKERS
from bench.protocol import ProtocolError, ProtocolSession
from tests.e2e.conftest import _block_remote, free_port, wait_idle

ROOT = Path(__file__).resolve().parents[2]
PAGE = "self-attention"
pytestmark = pytest.mark.slow


class Loop:
    """One event loop in a thread, so sessions stay open between steps and beside sync Playwright."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def __call__(self, coro, timeout=60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def start_cluster(port: int) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ui.cluster", "--replicas", "2", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    ready, _, _ = select.select([proc.stdout], [], [], 75)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        pytest.fail(f"ui.cluster printed nothing: {proc.stderr.read()[-2000:] if proc.poll() is not None else ''}")
    return proc, json.loads(line)


def replica_of(url: str, cookie: str) -> str:
    """Which replica the balancer sends this cookie to (nginx's X-Attention-Lab-Replica)."""
    req = urllib.request.Request(f"{url}/_stcore/health", headers={"Cookie": cookie})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.headers["X-Attention-Lab-Replica"]


async def edit_ok(sess: ProtocolSession, word: str) -> bool:
    run = await sess.set_text(f"The {word} was closed because it was late.")
    return run.ok and run.figures_contain(word)


def test_cluster_survives_a_dead_replica_and_leaves_nothing_behind(browser):
    port = free_port()
    proc, info = start_cluster(port)
    url = f"http://127.0.0.1:{info['balancer']}"
    loop = Loop()
    tmpdir = None
    try:
        assert info["balancer"] == port and len(info["replicas"]) == len(info["pids"]) == 2
        nginx = psutil.Process(info["nginx"])
        tmpdir = Path(nginx.cmdline()[nginx.cmdline().index("-p") + 1])
        assert (tmpdir / "nginx.conf").exists()
        by_port = dict(zip(info["replicas"], info["pids"]))

        # the browser first: its replica is the one that will die
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
        ctx.route("**/*", _block_remote)
        page = ctx.new_page()
        sockets = []
        page.on("websocket", lambda ws: sockets.append(ws))
        page.goto(f"{url}/{PAGE}?lang=en", wait_until="domcontentloaded")
        wait_idle(page, 60_000)
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in ctx.cookies())
        victim = replica_of(url, cookie)
        victim_port = int(victim.rsplit(":", 1)[1])
        survivor_port = next(p for p in info["replicas"] if p != victim_port)

        # protocol sessions until both replicas hold some; stickiness: a session's cookie keeps its replica
        sessions = []
        for _ in range(12):
            s = ProtocolSession(url, PAGE, lang="en")
            assert loop(s.open(), 90).ok
            sessions.append(s)
            if {x.replica for x in sessions} == {f"127.0.0.1:{p}" for p in info["replicas"]}:
                break
        on_victim = [s for s in sessions if s.replica == victim]
        on_survivor = [s for s in sessions if s.replica != victim]
        assert on_victim and on_survivor, [s.replica for s in sessions]
        for s in sessions:
            jar = "; ".join(f"{c.name}={c.value}" for c in s.jar)
            assert {replica_of(url, jar) for _ in range(3)} == {s.replica}
        ids_before = {id(s): s.session_id for s in sessions}

        os.killpg(by_port[victim_port], signal.SIGKILL)
        psutil.Process(by_port[victim_port]).wait(10)

        for s in on_victim:  # the stream is gone; the browser's reconnect lands on the survivor
            with pytest.raises(ProtocolError):
                loop(s.set_text("gone"), 30)
            assert loop(s.reconnect(), 90).ok
            assert s.session_id != ids_before[id(s)]  # a new session: the old one died with its replica
            assert loop(edit_ok(s, "river"), 60)
        for s in on_survivor:  # untouched; a reconnect finds its own session again
            assert loop(edit_ok(s, MARKERS[1]), 60)
            assert loop(s.reconnect(), 60).ok
            assert s.session_id == ids_before[id(s)]
        for _ in range(3):
            s = ProtocolSession(url, PAGE, lang="zh-TW")
            assert loop(s.open(), 90).ok
            assert s.replica == f"127.0.0.1:{survivor_port}"
            sessions.append(s)
            assert loop(edit_ok(s, "winter"), 60)

        # the browser saw its socket close, reconnected (a second websocket), and the page works
        deadline = time.monotonic() + 30
        while len(sockets) < 2 and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        assert len(sockets) >= 2 and sockets[0].is_closed()
        wait_idle(page, 60_000)
        box = page.locator('[data-testid="stMain"] [data-testid="stTextArea"] textarea').first
        # The first Enter reaches a brand-new session on the survivor, which runs the page afresh
        # (the lost session's sentence gives way to the page's default); the next edit is drawn.
        for word in ("island", "valley"):  # both one WordPiece in the shipped models (MARKERS)
            box.fill(f"The {word} was closed because it was late.")
            box.press("Control+Enter")
            page.wait_for_timeout(1000)
            wait_idle(page, 60_000)
        assert box.input_value() == "The valley was closed because it was late."
        page.wait_for_function(
            """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')]
                                  .some(svg => svg.textContent.includes('valley'))""",
            timeout=30_000,
        )
        assert page.locator('[data-testid="stException"]').count() == 0
        ctx.close()
        for s in sessions:
            loop(s.close(), 10)
    finally:
        loop.close()
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    assert rc == 0
    left = [
        p
        for p in info["pids"] + [info["nginx"]]
        if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
    ]
    assert left == [] and tmpdir is not None and not tmpdir.exists()


def test_load_markers_are_single_tokens_in_the_shipped_models():
    """An edit counts only if its marker word is a token in the figures: each marker must be one
    WordPiece under the default model and under all-MiniLM-L6-v2."""
    from transformers import AutoTokenizer

    from core.bert.loader import default_model_dir, embedded_model_dir

    for folder in (default_model_dir(), embedded_model_dir()):
        tok = AutoTokenizer.from_pretrained(str(folder))
        assert [w for w in MARKERS if tok.tokenize(w) != [w]] == [], folder.name
