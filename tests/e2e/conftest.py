"""Browser tests: a real `streamlit run` on a free localhost port, driven by Debian's Chromium.

Fixtures: ``server`` (base URL of the running app), ``browser`` (Playwright Chromium), ``page``
(a fresh page whose every non-localhost request is blocked and whose console errors are collected
in ``page.console_errors``). ``open_app(page, url)`` loads a URL and waits until Streamlit has
finished running the script. Screenshots go to artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from ui.cluster import free_port, serve_command

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def run_coroutine(coro):
    """Run ``coro`` on a loop of its own thread: after the browser tests, sync Playwright owns this
    thread's loop, and ``asyncio.run`` refuses to start another there."""
    import asyncio
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def start_server(port: int, env: dict | None = None) -> subprocess.Popen:
    """``python -m ui.serve`` on ``port``; its output goes to a log file (``proc.log_path``), never to an
    unread pipe: a server whose pipe fills (64 KB of log) blocks in its next write, with every session
    that logs after it (seen as lesson 5's first loads never finishing under the load benchmark)."""
    fd, log_path = tempfile.mkstemp(prefix=f"attention-lab-{port}-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen(
            serve_command(port),
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    proc.log_path = log_path
    return proc


def server_log(proc: subprocess.Popen) -> str:
    try:
        return Path(proc.log_path).read_text(encoding="utf-8", errors="replace")
    except (AttributeError, OSError):
        return ""


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early:\n{server_log(proc)[-4000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"streamlit did not become healthy at {url}")


def stop_server(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    with contextlib.suppress(AttributeError, OSError):
        os.unlink(proc.log_path)


@pytest.fixture(scope="session")
def server():
    port = free_port()
    proc = start_server(port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def _block_remote(route) -> None:
    host = urlparse(route.request.url).hostname or ""
    if host in LOCAL_HOSTS or route.request.url.startswith(("data:", "blob:", "about:")):
        route.continue_()
    else:
        route.abort()


def _failed(pg, request) -> None:
    """Record a failed request, except a same-origin one the browser aborted itself: navigating
    away cancels the page's pending /media and /static fetches (net::ERR_ABORTED), which is normal."""
    host = urlparse(request.url).hostname or ""
    if host in LOCAL_HOSTS and "ERR_ABORTED" in (request.failure or ""):
        return
    pg.blocked.append(request.url)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    context.route("**/*", _block_remote)
    pg = context.new_page()
    pg.console_errors = []
    pg.blocked = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(f"pageerror: {e}"))
    pg.bad_responses = []
    pg.on("requestfailed", lambda r: _failed(pg, r))
    pg.on("response", lambda r: pg.bad_responses.append(r.url) if r.status >= 400 else None)
    yield pg
    context.close()


IDLE_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (!document.querySelector('[data-testid="stMain"] h1')) return false;
    // Between the page's first message and the script's run, Streamlit shows skeletons.
    if (document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]')) return false;
    // Plotly draws after the script finished (its library loads lazily): wait for every chart.
    for (const chart of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
        if (!chart.querySelector('.main-svg')) return false;
    }
    return true;
}"""


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the script and every Plotly chart is drawn."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    for _ in range(2):  # idle twice, 300 ms apart: a rerun can start right after a first idle moment
        page.wait_for_function(IDLE_JS, timeout=timeout, polling=100)
        page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=timeout, polling=100)


def open_app(page, url: str, timeout: float = 60_000) -> None:
    page.goto(url, wait_until="domcontentloaded")
    wait_idle(page, timeout)


def screenshot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# Opening a deep link such as /bahdanau, Streamlit's front end first probes /bahdanau/_stcore/health
# and /bahdanau/_stcore/host-config to find its base path; the 404s it gets are expected.
BASE_PATH_PROBE = re.compile(r"^http://[^/]+/[^?#]+/_stcore/(health|host-config)$")


def real_console_errors(page) -> list[str]:
    """Console errors, less the 404s of Streamlit's own base-path probe (and only those)."""
    probes = [u for u in page.bad_responses if BASE_PATH_PROBE.match(u)]
    others = [u for u in page.bad_responses if not BASE_PATH_PROBE.match(u)]
    errors, allowed = [], len(probes)
    for text in page.console_errors:
        if allowed and not others and "status of 404" in text:
            allowed -= 1
            continue
        errors.append(text)
    return errors + [f"blocked request: {u}" for u in page.blocked]
