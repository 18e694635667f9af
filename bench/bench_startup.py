"""Server start → home page rendered in Chromium, and whether the home page pulled in torch.

    python bench/bench_startup.py [--runs 3]

Chromium is launched before the clock starts; the clock runs from spawning the server process to
the home page's title and first section being painted with the script finished.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import launch_chromium  # noqa: E402
from tests.e2e.conftest import free_port, start_server, stop_server, wait_idle  # noqa: E402


def one_run(browser) -> float:
    port = free_port()
    url = f"http://127.0.0.1:{port}/?lang=en"
    t0 = time.perf_counter()
    proc = start_server(port, env={"ATTENTION_LAB_NO_WARMUP": "1"})
    try:
        page = browser.new_page()
        while True:  # poll until the port answers, then load like a browser would
            try:
                page.goto(url, wait_until="domcontentloaded", timeout=2000)
                break
            except Exception:
                if time.perf_counter() - t0 > 60:
                    raise
                time.sleep(0.05)
        wait_idle(page)
        page.locator('[data-testid="stMain"] h2').first.wait_for()
        elapsed = time.perf_counter() - t0
        page.close()
        return elapsed
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        times = [one_run(browser) for _ in range(args.runs)]
        browser.close()
    print(
        f"home page, server start -> rendered in Chromium: median {statistics.median(times):.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t in times)}; budget 3 s)"
    )


if __name__ == "__main__":
    main()
