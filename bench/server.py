"""The app server and browser the benchmarks share (the end-to-end tests' own helpers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from subprocess import Popen

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, free_port, start_server, stop_server, wait_healthy


@contextlib.contextmanager
def app_server(url: str | None = None, env: dict | None = None) -> Iterator[tuple[str, Popen | None]]:
    """(url, server process): the app at ``url`` as it is (process None), or, without a url, a server
    of its own on a free port, healthy before the block runs and stopped after it."""
    if url:
        yield url, None
        return
    port = free_port()
    proc = start_server(port, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc)
        yield url, proc
    finally:
        stop_server(proc)


def launch_chromium(playwright, **options):
    """The tests' Chromium (sync or async Playwright alike: an async one returns an awaitable)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, **options)
