"""A class opens a lesson on a server that has just started: every first page is whole.

Found by the load benchmark (docs/PERFORMANCE.md): on a cold server, thirty sessions opening lesson 5
within seconds got error cards in place of figures (plotly read a half-imported pandas from another
session's thread), and a server whose log went to an unread pipe hung once that pipe filled.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from tests.e2e.conftest import ROOT, free_port, run_coroutine, server_log, start_server, stop_server, wait_healthy


def test_importing_the_figure_builders_completes_pandas_first():
    """Deterministic half of the race: a thread that can build a figure finds pandas whole."""
    code = (
        "import sys, core.figures; m = sys.modules.get('pandas'); "
        "assert m is not None and hasattr(m, 'Series') and hasattr(m, 'DataFrame'), m"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_thirty_students_opening_lesson_5_on_a_cold_server_each_get_every_figure():
    from bench.protocol import ProtocolSession

    port = free_port()
    proc = start_server(port)
    url = f"http://127.0.0.1:{port}"

    async def first_load(i: int):
        await asyncio.sleep(0.05 * i)  # within a second and a half, as a class pressing Enter
        s = ProtocolSession(url, "multi-head", lang="en" if i % 2 else "zh-TW", timeout=150)
        try:
            run = await s.open()
            return len(run.figures), run.exceptions
        finally:
            await s.close()

    async def class_opens():
        return await asyncio.gather(*(first_load(i) for i in range(30)))

    try:
        wait_healthy(url, proc)
        runs = run_coroutine(class_opens())
        warm = run_coroutine(first_load(0))  # the same page on the now warm server
        log = server_log(proc)
    finally:
        stop_server(proc)
    assert warm[0] >= 5 and not warm[1]
    assert [n for n, _ in runs] == [warm[0]] * 30, log[-3000:]
    assert not any(e for _, e in runs)
    assert "Traceback" not in log, log[-3000:]
