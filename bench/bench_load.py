"""A class on one server: N protocol-level sessions (no browser) editing a lesson's sentence.

    python bench/bench_load.py [--url URL] [--sessions 30] [--page self-attention] [--lang en]
                               [--interval 15] [--duration 60] [--burst 1] [--ramp 10]
                               [--pid PID ...] [--ratio [--ratio-edits 10] [--forward-log FILE]] [--json]

Each session speaks Streamlit's own websocket protocol (bench/protocol.py): it opens /<page>?lang=..,
then replaces the sentence at exponentially distributed intervals (mean --interval s) for
--duration s; then --burst rounds in which all N send their edit at the same moment. An edit counts
as an error unless its run finishes without an exception and the new sentence's marker word is in a
Plotly figure that came back (the edit reached the figures). Times are from the send to
``script_finished``. Without --url the benchmark starts its own server (``python -m ui.serve``) and
reads its RSS; with --url, pass the server's pid(s) with --pid (``python -m ui.cluster`` prints them).
--lang both alternates sessions between en and zh-TW. --ratio first times --ratio-edits (10) edits of one idle
session against the model's own forward pass on the same sentence (the budget is 3x), and edits back
to a sentence whose results are cached (what a rerun costs besides the model). The forward pass is
timed here, steady, one thread; with --forward-log (the server's ATTENTION_LAB_FORWARD_LOG file,
bench/forward_log.py; set by itself for a server this benchmark starts) each edit is also divided by
the forward pass inside that very run on the server (the budget's "same run", docs/ARCHITECTURE.md).
Budgets (2 cores): 30 sessions every ~15 s: 0 errors, p95 <= 1 s; burst of 30: p95 <= 3 s;
RSS <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import forward_log  # noqa: E402
from bench.protocol import ProtocolError, ProtocolSession  # noqa: E402

# Words that are one WordPiece in both models the lessons ship with (the project's bilingual BERT and
# all-MiniLM-L6-v2), so each is a token in the figures; tests/test_cluster.py checks that they still are.
MARKERS = [
    "river",
    "music",
    "winter",
    "mountain",
    "market",
    "forest",
    "letter",
    "island",
    "engine",
    "summer",
    "camera",
    "planet",
    "silver",
    "ocean",
    "student",
    "table",
    "train",
    "paper",
    "storm",
    "valley",
]
TEMPLATES = {
    "en": "The {w} did not move because it was tired, said the {o}.",
    "zh-TW": "老師說 {w} 很重要，因為 the {o} was tired.",
}


def sentence(rng: random.Random, lang: str, long: bool = False) -> tuple[str, str]:
    """A new sentence and its marker word (a token the figures must show)."""
    w, o = rng.sample(MARKERS, 2)
    text = TEMPLATES.get(lang, TEMPLATES["en"]).format(w=w, o=o)
    if long:  # past the lessons' token cap: the marker leads, so it survives the cut
        text = text + " " + " ".join(rng.choice(MARKERS) for _ in range(200))
    return text, w


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * len(v))) - 1))]


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "median_s": round(statistics.median(values), 3) if values else None,
        "p95_s": round(pct(values, 0.95), 3) if values else None,
        "max_s": round(max(values), 3) if values else None,
    }


def rss_mb(pids: list[int]) -> float | None:
    """Resident memory of the server processes and their children (torchrun, workers), MB."""
    if not pids:
        return None
    import psutil

    total = 0
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs = [p, *p.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for q in procs:
            try:
                total += q.memory_info().rss
            except psutil.NoSuchProcess:
                pass
    return round(total / 2**20, 1)


class Stats:
    def __init__(self):
        self.first_load: list[float] = []
        self.steady: list[float] = []
        self.burst: list[float] = []
        self.errors: list[str] = []
        self.bytes: list[int] = []


async def edit(
    sess: ProtocolSession, rng: random.Random, lang: str, stats: Stats, bucket: list[float], who: int
) -> None:
    text, marker = sentence(rng, lang)
    try:
        run = await sess.set_text(text)
    except (ProtocolError, OSError) as e:
        stats.errors.append(f"session {who}: {e}")
        return
    bucket.append(run.seconds)
    stats.bytes.append(run.bytes)
    if run.exceptions:
        stats.errors.append(f"session {who}: {run.exceptions[0][:200]}")
    elif not run.figures_contain(marker):
        stats.errors.append(f"session {who}: '{marker}' not in any of {len(run.figures)} figures")


async def student(
    who: int,
    args,
    stats: Stats,
    t_end: float,
    burst_go: list[asyncio.Event],
    ready: list[asyncio.Event],
    gone: list[bool],
) -> None:
    rng = random.Random(args.seed * 1000 + who)
    lang = ("en", "zh-TW")[who % 2] if args.lang == "both" else args.lang
    await asyncio.sleep(args.ramp * who / max(1, args.sessions))
    sess = ProtocolSession(args.url, args.page, lang=lang, timeout=args.timeout)
    try:
        try:
            first = await sess.open()
        except (ProtocolError, OSError) as e:
            stats.errors.append(f"session {who}: open failed: {e}")
            return
        stats.first_load.append(first.seconds)
        if first.exceptions:
            stats.errors.append(f"session {who}: open: {first.exceptions[0][:200]}")
        while True:
            wait = rng.expovariate(1 / args.interval) if args.interval > 0 else 0
            if time.monotonic() + wait >= t_end:
                break
            await asyncio.sleep(wait)
            await edit(sess, rng, lang, stats, stats.steady, who)
        for go in burst_go:
            ready[who].set()
            await go.wait()
            await edit(sess, rng, lang, stats, stats.burst, who)
    finally:
        gone[who] = True
        ready[who].set()
        await sess.close()


RATIO_TOKENS = 64  # docs/PERFORMANCE.md: "a rerun after a text change, 64 tokens"


def sentence_of(tokenizer, rng: random.Random, n_tokens: int = RATIO_TOKENS) -> tuple[str, str]:
    """A sentence of exactly ``n_tokens`` wordpieces ([CLS] and [SEP] included) and its marker word:
    marker words are one WordPiece each, so each one appended adds one token."""
    text, w = sentence(rng, "en")
    while len(tokenizer(text)["input_ids"]) < n_tokens:
        text += " " + rng.choice(MARKERS)
    if len(tokenizer(text)["input_ids"]) != n_tokens:
        raise RuntimeError(f"could not build a {n_tokens}-token sentence")
    return text, w


async def ratio(args) -> dict:
    """One idle session: edits of a 64-token sentence, each against the model's own forward pass on
    the same tokens, as the app runs it (eager attention, attentions and hidden states returned)."""
    import torch

    torch.set_num_threads(1)  # what ui.serve gives each computation (OMP_NUM_THREADS=1)
    import core.bert as cb

    bundle = cb.load("")
    # Sentences new to the server: it keeps every encoding it computed, shared by every session, so a
    # sentence an earlier run (another page, the same page before) sent would time no forward pass.
    rng = random.Random(f"{args.seed}:{args.page}:{time.time_ns()}")
    sess = ProtocolSession(args.url, args.page, lang="en", timeout=args.timeout)
    await sess.open()
    log = forward_log.Reader(args.forward_log) if args.forward_log else None
    edits, forwards, cached, prev, same_run = [], [], [], None, []
    for _ in range(args.ratio_edits):
        text, _ = sentence_of(bundle.tokenizer, rng)
        if log is not None:
            log.new()
        run = await sess.set_text(text)
        edits.append(run.seconds)
        if log is not None:  # the server's own forward pass of this edit's run (one new sentence: one line)
            mine = [x for x in log.new() if x["tokens"] == RATIO_TOKENS]
            if len(mine) != 1:
                raise RuntimeError(
                    f"expected one {RATIO_TOKENS}-token forward pass in the server's log, found {len(mine)}"
                )
            same_run.append((run.seconds, mine[0]["forward_s"]))
        if prev is not None:  # back to the text before: its encoding and results are cached, no model runs
            cached.append((await sess.set_text(prev)).seconds)
            await sess.set_text(text)
        prev = text
        ids = torch.tensor([bundle.tokenizer(text)["input_ids"]], device=bundle.device)
        with torch.inference_mode():
            times = []
            for _ in range(4):  # the first is a warm-up
                t0 = time.perf_counter()
                bundle.encoder(input_ids=ids, output_attentions=True, output_hidden_states=True)
                times.append(time.perf_counter() - t0)
            forwards.append(statistics.median(times[1:]))
    await sess.close()
    e, f = statistics.median(edits), statistics.median(forwards)
    server = {}
    if same_run:  # the budget's reading: each edit against the forward pass inside that very run
        per_edit = [edit / fwd for edit, fwd in same_run]
        server = {
            "server_forward_median_s": round(statistics.median(fwd for _, fwd in same_run), 4),
            "same_run_ratio": round(statistics.median(per_edit), 1),
            "same_run_ratio_p95": round(pct(per_edit, 0.95), 1),
        }
    return {
        "tokens": RATIO_TOKENS,
        "model": bundle.name,
        "edits": len(edits),
        "edit_median_s": round(e, 4),
        "forward_median_s": round(f, 4),
        "ratio": round(e / f, 1),
        "edit_p95_s": round(pct(edits, 0.95), 4),
        "ratio_p95": round(pct(edits, 0.95) / f, 1),
        # the same rerun with every result already computed: what an edit costs besides the model
        "cached_edit_median_s": round(statistics.median(cached), 4),
        "cached_ratio": round(statistics.median(cached) / f, 1),
        **server,
    }


async def run(args) -> dict:
    result: dict = {
        "server_env": args.server_env,
        "url": args.url,
        "page": args.page,
        "lang": args.lang,
        "sessions": args.sessions,
        "interval_s": args.interval,
        "duration_s": args.duration,
        "burst_rounds": args.burst,
    }
    started = time.monotonic()
    result["rss_mb_start"] = rss_mb(args.pid)
    if args.ratio:
        result["ratio"] = await ratio(args)
    stats = Stats()
    burst_go = [asyncio.Event() for _ in range(args.burst)]
    ready = [asyncio.Event() for _ in range(args.sessions)]
    gone = [False] * args.sessions
    t0 = time.monotonic()
    t_end = t0 + args.ramp + args.duration
    tasks = [asyncio.create_task(student(i, args, stats, t_end, burst_go, ready, gone)) for i in range(args.sessions)]
    peak = 0.0

    async def sample():
        nonlocal peak
        while True:
            peak = max(peak, rss_mb(args.pid) or 0.0)
            await asyncio.sleep(1)

    async def drive():
        for go in burst_go:  # when every live session is waiting, all send their edit at once
            await asyncio.gather(*(e.wait() for e in ready))
            for i, e in enumerate(ready):
                if not gone[i]:
                    e.clear()
            go.set()
        await asyncio.gather(*tasks, return_exceptions=True)

    sampler = asyncio.create_task(sample())
    left = args.max_wall - (time.monotonic() - started)
    try:
        await asyncio.wait_for(drive(), max(1.0, left))
        result["cut_short"] = False
    except asyncio.TimeoutError:  # report what was measured; runs still in flight are not counted
        result["cut_short"] = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    sampler.cancel()
    result.update(
        {
            "wall_s": round(time.monotonic() - t0, 1),
            "first_load": summary(stats.first_load),
            "steady": summary(stats.steady),
            "burst": summary(stats.burst),
            "errors": len(stats.errors),
            "error_samples": stats.errors[:5],
            "kb_per_edit_median": round(statistics.median(stats.bytes) / 1024, 1) if stats.bytes else None,
            "rss_mb_peak": peak or None,
            "rss_mb_end": rss_mb(args.pid),
        }
    )
    return result


def report(r: dict) -> None:
    def line(name, s):
        if s["n"]:
            return f"  {name:<11} n={s['n']:<4} median {s['median_s']:.2f} s  p95 {s['p95_s']:.2f} s  max {s['max_s']:.2f} s"
        return f"  {name:<11} n=0"

    print(
        f"{r['sessions']} sessions on /{r['page']} (lang {r['lang']}), one edit every ~{r['interval_s']} s "
        f"for {r['duration_s']} s, then {r['burst_rounds']} burst(s) of {r['sessions']} at once; "
        f"{r['wall_s']} s" + (" (cut short by --max-wall)" if r.get("cut_short") else "")
    )
    if "ratio" in r:
        q = r["ratio"]
        print(
            f"  idle edit {q['edit_median_s'] * 1000:.0f} ms / forward {q['forward_median_s'] * 1000:.1f} ms "
            f"= {q['ratio']}x (budget 3x); the same rerun with its results cached "
            f"{q['cached_edit_median_s'] * 1000:.0f} ms = {q['cached_ratio']}x"
        )
        if "same_run_ratio" in q:
            print(
                f"  against the server's own forward pass of each edit's run ({q['server_forward_median_s'] * 1000:.1f} ms): "
                f"median {q['same_run_ratio']}x, p95 {q['same_run_ratio_p95']}x (budget p95 3x)"
            )
    print(line("first load", r["first_load"]))
    print(line("steady", r["steady"]) + "   (budget p95 <= 1 s)")
    print(line("burst", r["burst"]) + "   (budget p95 <= 3 s)")
    print(f"  errors {r['errors']} (budget 0) {r['error_samples'][:2] if r['errors'] else ''}")
    print(f"  {r['kb_per_edit_median']} KB sent per edit (median)")
    if r["rss_mb_end"] is not None:
        print(
            f"  server RSS: start {r['rss_mb_start']} MB, peak {r['rss_mb_peak']} MB, end {r['rss_mb_end']} MB "
            f"(budget 1536 MB)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running app or balancer; default: start one here")
    ap.add_argument("--sessions", "-n", type=int, default=30)
    ap.add_argument("--page", default="self-attention", help="a lesson's url path, e.g. multi-head")
    ap.add_argument("--lang", default="both", choices=["en", "zh-TW", "both"])
    ap.add_argument("--interval", type=float, default=15.0, help="mean seconds between one session's edits")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of steady editing after the ramp")
    ap.add_argument("--burst", type=int, default=1, help="rounds in which all sessions edit at once")
    ap.add_argument("--ramp", type=float, default=10.0, help="seconds over which sessions open")
    ap.add_argument("--pid", type=int, action="append", default=[], help="server pid(s) for RSS")
    ap.add_argument("--ratio", action="store_true", help="also time idle edits against the forward pass")
    ap.add_argument("--ratio-edits", type=int, default=10, help="how many sentences --ratio times (default 10)")
    ap.add_argument(
        "--forward-log",
        help="the server's ATTENTION_LAB_FORWARD_LOG file (bench/forward_log.py), for --ratio against each "
        "run's own forward pass; set for the server this benchmark starts itself",
    )
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--max-wall",
        type=float,
        default=600.0,
        help="seconds after which the sessions stop and what was measured is reported",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    ap.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of the server this benchmark starts, e.g. OMP_NUM_THREADS=2",
    )
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` too stops our server
    from bench.server import app_server

    env = dict(kv.split("=", 1) for kv in args.server_env)
    if args.ratio and not args.url and not args.forward_log:  # our own server: log its forward passes
        args.forward_log = str(Path(tempfile.mkdtemp(prefix="attention-lab-")) / "forward.jsonl")
        env["ATTENTION_LAB_FORWARD_LOG"] = args.forward_log
    with app_server(args.url, env=env) as (args.url, proc):
        if proc is not None:
            args.pid = [proc.pid]
        r = asyncio.run(run(args))
    print(json.dumps(r, ensure_ascii=False)) if args.json else report(r)
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
