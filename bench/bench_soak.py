"""A term of use without a restart: sessions come and go over every lesson; does RSS plateau?

    python bench/bench_soak.py [--url URL --pid PID] [--marks 500 2000] [--concurrency 4]
                               [--duration 1800] [--long 0.5] [--json]

Protocol-level sessions (bench/protocol.py, no browser), --concurrency at a time. Each opens a
random lesson in a random language, replaces the sentence 0-5 times (when the lesson has a text
box) with a short sentence or, with probability --long, a text past the lessons' token cap, then
closes. Every script run counts as a rerun. The server's RSS is read every 50 reruns and at each
of --marks; the verdict compares the last mark with the first: a plateau is within 10 %.
Starts its own server unless --url is given (then pass its --pid).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_load import rss_mb, sentence  # noqa: E402
from bench.protocol import ProtocolError, ProtocolSession  # noqa: E402


def lesson_paths() -> list[str]:
    from core.lessons import load_catalog

    return [lesson.id if lesson.order else "" for lesson in load_catalog().lessons]


class Soak:
    def __init__(self, args):
        self.args = args
        self.reruns = 0
        self.errors: list[str] = []
        self.series: list[tuple[int, float]] = []  # (reruns, RSS MB)
        self.at_mark: dict[int, float] = {}
        self.marks = sorted(args.marks)
        self.per_page: dict[str, int] = {}
        self.t_end = time.monotonic() + args.duration
        self.done = asyncio.Event()

    def count(self, page: str) -> None:
        self.reruns += 1
        self.per_page[page or "home"] = self.per_page.get(page or "home", 0) + 1
        if self.reruns % 50 == 0:
            self.series.append((self.reruns, rss_mb(self.args.pid) or 0.0))
        for m in self.marks:
            if self.reruns >= m and m not in self.at_mark:
                self.at_mark[m] = rss_mb(self.args.pid) or 0.0
        if self.reruns >= self.marks[-1] or time.monotonic() > self.t_end:
            self.done.set()

    async def visitor(self, who: int, pages: list[str]) -> None:
        rng = random.Random(self.args.seed * 7919 + who)
        while not self.done.is_set():
            page, lang = rng.choice(pages), rng.choice(["en", "zh-TW"])
            sess = ProtocolSession(self.args.url, page, lang=lang, timeout=self.args.timeout)
            try:
                run = await sess.open()
                self.count(page)
                if run.exceptions:
                    self.errors.append(f"/{page}: {run.exceptions[0][:160]}")
                if sess.text_id is None:
                    continue
                for _ in range(rng.randint(0, 5)):
                    if self.done.is_set():
                        break
                    text, _ = sentence(rng, lang, long=rng.random() < self.args.long)
                    run = await sess.set_text(text)
                    self.count(page)
                    if run.exceptions:
                        self.errors.append(f"/{page}: {run.exceptions[0][:160]}")
            except (ProtocolError, OSError) as e:
                self.errors.append(f"/{page}: {e}")
            finally:
                await sess.close()

    async def run(self) -> dict:
        pages = self.args.pages or lesson_paths()
        start = rss_mb(self.args.pid)
        t0 = time.monotonic()
        workers = [asyncio.create_task(self.visitor(i, pages)) for i in range(self.args.concurrency)]
        await self.done.wait()
        await asyncio.gather(*workers, return_exceptions=True)
        await asyncio.sleep(self.args.settle)  # closed sessions are dropped; memory that stays is kept
        first, last = self.marks[0], self.marks[-1]
        a, b = self.at_mark.get(first), self.at_mark.get(last)
        growth = round(100 * (b - a) / a, 1) if a and b else None
        return {
            "reruns": self.reruns,
            "wall_s": round(time.monotonic() - t0, 1),
            "rss_mb_start": start,
            "rss_mb_at": {str(k): v for k, v in sorted(self.at_mark.items())},
            "rss_mb_after_settle": rss_mb(self.args.pid),
            "growth_pct_first_to_last_mark": growth,
            "plateau": growth is not None and growth <= 10,
            "series": self.series,
            "reruns_per_page": self.per_page,
            "errors": len(self.errors),
            "error_samples": self.errors[:5],
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--pid", type=int, action="append", default=[])
    ap.add_argument(
        "--marks",
        type=int,
        nargs="+",
        default=[500, 2000],
        help="rerun counts at which RSS is reported (the last one ends the soak)",
    )
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--duration", type=float, default=1800.0, help="upper bound in seconds")
    ap.add_argument("--long", type=float, default=0.5, help="share of edits with a text past the cap")
    ap.add_argument("--pages", nargs="*", help="url paths; default: every lesson ('' is home)")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds idle before the last reading")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` too stops our server
    from bench.server import app_server

    with app_server(args.url) as (args.url, proc):
        if proc is not None:
            args.pid = [proc.pid]
        r = asyncio.run(Soak(args).run())
    if args.json:
        print(json.dumps(r, ensure_ascii=False))
    else:
        marks = ", ".join(f"{k} reruns: {v:.0f} MB" for k, v in r["rss_mb_at"].items())
        print(
            f"{r['reruns']} reruns in {r['wall_s']} s over {len(r['reruns_per_page'])} lessons, "
            f"errors {r['errors']}; RSS start {r['rss_mb_start']} MB; {marks}; "
            f"after settling {r['rss_mb_after_settle']} MB"
        )
        print(
            f"growth from the first to the last mark: {r['growth_pct_first_to_last_mark']} % -> "
            + ("plateau (<= 10 %)" if r["plateau"] else "still growing (> 10 %) or too few reruns")
        )
        print("RSS every 50 reruns: " + " ".join(f"{n}:{m:.0f}" for n, m in r["series"]))
        if r["errors"]:
            print("errors: " + "; ".join(r["error_samples"]))
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
