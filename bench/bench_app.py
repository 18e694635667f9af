"""The whole app under a browser: memory after every page, and 10 concurrent sessions.

    python bench/bench_app.py [--sessions 10] [--rounds 5] [--page self-attention]

1. Opens every lesson in both languages in Chromium, then reads the server's resident memory
   (budget: 1 GB).
2. Opens ``--sessions`` browser sessions at once on ``--page`` and has each change the first text
   input ``--rounds`` times; an interaction is timed from pressing Enter to Streamlit reporting the
   script finished (budget: 0 errors, p95 <= 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server import app_server, launch_chromium  # noqa: E402
from core.lessons import LANGS, load_catalog  # noqa: E402
from tests.e2e.conftest import IDLE_JS, LOCAL_HOSTS  # noqa: E402

WATCH_RUN_JS = """() => {
  window.__ranOnce = false;
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver((_, obs) => {
    if (app.getAttribute('data-test-script-state') === 'running') { window.__ranOnce = true; obs.disconnect(); }
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The trophy would not fit in the suitcase because it was too big.",
    "注意力機制讓模型看見整個句子。",
    "Attention is all you need, they said in 2017.",
]


async def block_remote(route) -> None:
    """The async twin of the browser tests' filter: only localhost may be reached."""
    from urllib.parse import urlparse

    if (urlparse(route.request.url).hostname or "") in LOCAL_HOSTS:
        await route.continue_()
    else:
        await route.abort()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def wait_idle(page, timeout=120_000):
    await page.wait_for_function(IDLE_JS, timeout=timeout)


async def visit_all(browser, url: str) -> list[str]:
    errors = []
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await ctx.route("**/*", block_remote)
    page = await ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    for lang in LANGS:
        for lesson in load_catalog().lessons:
            path = lesson.id if lesson.order else ""  # the first lesson is the app's root page
            await page.goto(f"{url}/{path}?lang={lang}", wait_until="domcontentloaded")
            await page.wait_for_timeout(500)
            await wait_idle(page)
    await ctx.close()
    return errors


async def session(browser, url: str, lesson: str, rounds: int, index: int) -> tuple[list[float], list[str]]:
    errors, times = [], []
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await ctx.route("**/*", block_remote)
    page = await ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(f"{url}/{lesson}?lang=en", wait_until="domcontentloaded")
    await page.wait_for_timeout(500)
    await wait_idle(page)
    box = page.locator(
        '[data-testid="stMain"] [data-testid="stTextArea"] textarea, '
        '[data-testid="stMain"] [data-testid="stTextInput"] input'
    ).first
    submit = "Control+Enter" if await box.evaluate("e => e.tagName") == "TEXTAREA" else "Enter"
    for r in range(rounds):
        await box.fill(SENTENCES[(index + r) % len(SENTENCES)] + f" ({index}.{r})")
        # A MutationObserver notes the rerun starting, however briefly it runs.
        await page.evaluate(WATCH_RUN_JS)
        t0 = time.perf_counter()
        await box.press(submit)
        await page.wait_for_function("() => window.__ranOnce === true", timeout=60_000, polling=10)
        await wait_idle(page)
        times.append(time.perf_counter() - t0)
        if await page.locator('[data-testid="stException"]').count():
            errors.append("exception on page")
    await ctx.close()
    return times, errors


async def main_async(args) -> None:
    from playwright.async_api import async_playwright

    with app_server() as (url, proc):
        async with async_playwright() as pw:
            browser = await launch_chromium(pw)
            t0 = time.perf_counter()
            errors = await visit_all(browser, url)
            print(
                f"every lesson in both languages opened in {time.perf_counter() - t0:.1f} s; page errors: {len(errors)}"
            )
            print(f"server RSS after every page: {rss_mb(proc.pid):.0f} MB (budget 1024 MB)")
            results = await asyncio.gather(
                *(session(browser, url, args.page, args.rounds, i) for i in range(args.sessions))
            )
            await browser.close()
        times = sorted(t for ts, _ in results for t in ts)
        errs = [e for _, es in results for e in es]
        p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
        print(
            f"{args.sessions} concurrent sessions x {args.rounds} text changes on /{args.page}: "
            f"errors {len(errs)}, median {statistics.median(times):.2f} s, p95 {p95:.2f} s, "
            f"max {times[-1]:.2f} s (budget: 0 errors, p95 <= 1 s)"
        )
        print(f"server RSS after the sessions: {rss_mb(proc.pid):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--page", default="self-attention")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
