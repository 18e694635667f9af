"""One student in Chromium: Enter in the sentence box to every figure drawn, lessons 4 and 5.

    python bench/bench_browser.py [--url URL] [--edits 10] [--pages self-attention multi-head] [--lang en]

Starts its own server unless --url is given. For each page, --edits sentences are typed in turn; a
figure "depends on the text" when it showed the previous sentence's marker word. The time runs, in
the page's own clock, from the Enter keydown to the first animation frame in which the script has
finished, no figure still shows the old marker and as many figures show the new one (so every
text-dependent figure was redrawn). Budgets (2 cores): p95 <= 0.5 s on lesson 4, <= 1 s on lesson 5.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_load import MARKERS, pct  # noqa: E402
from bench.server import app_server, launch_chromium  # noqa: E402
from tests.e2e.conftest import _block_remote, wait_idle  # noqa: E402

BUDGET = {"self-attention": 0.5, "multi-head": 1.0}
COUNT_JS = """(word) => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')]
    .filter(svg => svg.textContent.includes(word)).length"""
ARM_JS = """() => {
  window.__enterAt = null;
  if (!window.__armed) {
    window.__armed = true;
    document.addEventListener('keydown', e => {
      if (e.key === 'Enter' && window.__enterAt === null) window.__enterAt = performance.now();
    }, {capture: true});
  }
}"""
DRAWN_JS = """([oldWord, newWord, need]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (window.__enterAt === null || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const svgs = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg')];
  if (svgs.some(s => s.textContent.includes(oldWord))) return false;
  if (svgs.filter(s => s.textContent.includes(newWord)).length < need) return false;
  return performance.now() - window.__enterAt;
}"""


def sentence(word: str) -> str:
    return f"The {word} did not move because it was tired."


def bench_page(browser, url: str, page_id: str, lang: str, edits: int) -> dict:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    ctx.route("**/*", _block_remote)
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    t0 = time.perf_counter()
    page.goto(f"{url}/{page_id}?lang={lang}", wait_until="domcontentloaded")
    wait_idle(page, 120_000)
    first = time.perf_counter() - t0
    box = page.locator('[data-testid="stMain"] [data-testid="stTextArea"] textarea').first
    # a first edit puts a known marker on screen, and tells how many figures show the sentence
    old = MARKERS[-1]
    box.fill(sentence(old))
    box.press("Control+Enter")
    page.wait_for_timeout(500)
    wait_idle(page, 120_000)
    need = page.evaluate(COUNT_JS, old)
    times = []
    for k in range(edits):
        new = MARKERS[k % (len(MARKERS) - 1)]
        box.fill(sentence(new))
        page.evaluate(ARM_JS)
        box.press("Control+Enter")
        ms = page.wait_for_function(DRAWN_JS, arg=[old, new, need], polling="raf", timeout=120_000).json_value()
        times.append(ms / 1000)
        if page.locator('[data-testid="stException"]').count():
            errors.append(f"exception on page after edit {k}")
        old = new
        wait_idle(page, 120_000)
    ctx.close()
    return {
        "page": page_id,
        "lang": lang,
        "first_load_s": round(first, 2),
        "figures_with_text": need,
        "edits": len(times),
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(pct(times, 0.95), 3),
        "max_s": round(max(times), 3),
        "budget_p95_s": BUDGET.get(page_id),
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--pages", nargs="+", default=["self-attention", "multi-head"])
    ap.add_argument("--lang", default="en")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` too stops our server
    from playwright.sync_api import sync_playwright

    results = []
    with app_server(args.url) as (url, _), sync_playwright() as pw:
        browser = launch_chromium(pw, headless=True)
        for p in args.pages:
            results.append(bench_page(browser, url, p, args.lang, args.edits))
        browser.close()
    for r in results:
        if args.json:
            print(json.dumps(r, ensure_ascii=False))
        else:
            print(
                f"/{r['page']} ({r['lang']}): {r['edits']} edits, Enter to every figure drawn "
                f"({r['figures_with_text']} figures show the sentence): median {r['median_s']:.2f} s, "
                f"p95 {r['p95_s']:.2f} s, max {r['max_s']:.2f} s (budget p95 <= {r['budget_p95_s']} s); "
                f"first load {r['first_load_s']:.1f} s; page errors {len(r['errors'])}"
            )
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
