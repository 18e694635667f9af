"""Figures for lessons 2-3 (prints them; asserts nothing).

    python bench/bench_seq2seq.py              # everything (about 3 minutes on 2 quiet cores)
    python bench/bench_seq2seq.py --skip-train # only the curves and the heatmap latency

1. Date model with attention: train from scratch with the committed config and seed, report the
   held-out exact match and the training seconds.
2. Copy task: held-out exact match by input length, attention vs none (committed checkpoints).
3. New input -> new alignment heatmap, server side: decode + figure + JSON for the browser.
4. The pages' live-training configs: seconds and validation accuracy reached.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def bench_date(threads: int) -> None:
    from core.seq2seq.evaluate import evaluate_model
    from core.seq2seq.tasks import get_task
    from core.seq2seq.train import TrainConfig, train

    cfg = TrainConfig(seed=0, threads=threads)
    res = train("date", "bahdanau", cfg)
    task = get_task("date")
    rep = evaluate_model(res.model, task, task.heldout(2000))
    print(
        f"[date, attention] threads={threads}: held-out exact match {rep['exact_match']:.4f} "
        f"(n={rep['n']}), trained {res.seconds:.1f} s, {res.steps} steps (early stop at valid "
        f"{res.valid_acc:.4f})"
    )


def bench_curves() -> None:
    from core.seq2seq.evaluate import evaluate_committed

    reports = [r for r in evaluate_committed() if r["task"] in ("copy", "reverse")]
    by = {(r["task"], r["attention"]): r for r in reports}
    for task in sorted({r["task"] for r in reports}):
        none, att = by.get((task, "none")), by.get((task, "bahdanau"))
        print(f"[{task}] held-out exact match by input length (committed checkpoints)")
        print(f"  {'length':>8} {'none':>8} {'bahdanau':>9}")
        rows = (att or none)["by_length"]
        for k, b in enumerate(rows):
            n = none["by_length"][k]["exact_match"] if none else float("nan")
            a = att["by_length"][k]["exact_match"] if att else float("nan")
            print(f"  {b['lengths']:>8} {n:8.3f} {a:9.3f}")
        for name, r in (("none", none), ("bahdanau", att)):
            if r:
                print(f"  overall {name}: {r['exact_match']:.4f} (n={r['n']})")


def bench_heatmap(threads: int, n: int = 60) -> None:
    import datetime as dt

    import torch

    from core.figures import seq2seq as figs
    from core.seq2seq.explain import trace
    from core.seq2seq.tasks import DATE_FORMATS, FIRST_DAY, get_task
    from core.seq2seq.train import CHECKPOINT_DIR, load_checkpoint

    torch.set_num_threads(threads)
    task = get_task("date")
    model = load_checkpoint(CHECKPOINT_DIR / "date-bahdanau.safetensors")
    rng = random.Random(1)
    fmts = list(DATE_FORMATS)
    texts = [
        DATE_FORMATS[rng.choice(fmts)](FIRST_DAY + dt.timedelta(days=rng.randrange(36500)), None) for _ in range(n + 5)
    ]
    for s in texts[:5]:  # warm-up
        trace(model, task, s)
    times = []
    for s in texts[5:]:
        t0 = time.perf_counter()
        tr = trace(model, task, s)
        fig = figs.alignment(tr.weights, tr.source, tr.outputs, step=3)
        payload = fig.to_json()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    print(
        f"[heatmap] threads={threads}: new input -> decode + alignment figure + JSON ({len(payload)} bytes), n={n}: "
        f"median {statistics.median(times):.1f} ms, p95 {times[int(0.95 * len(times)) - 1]:.1f} ms, "
        f"max {times[-1]:.1f} ms"
    )


def bench_live() -> None:
    from core.seq2seq.train import live_config, train

    r = train("copy", "none", live_config("seq2seq"))
    print(f"[live, lesson 2] copy/none: {r.steps} steps in {r.seconds:.1f} s, valid exact match {r.valid_acc:.3f}")
    r = train("date", "bahdanau", live_config("bahdanau", probe="2026年12月2日"))
    print(
        f"[live, lesson 3] date/bahdanau: {r.steps} steps in {r.seconds:.1f} s, valid exact match "
        f"{r.valid_acc:.3f}, {len(r.snapshots)} alignment snapshots"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-train", action="store_true")
    args = ap.parse_args()
    print(f"cpu count {os.cpu_count()}, load average {os.getloadavg()}")
    if not args.skip_train:
        bench_date(args.threads)
    bench_curves()
    for threads in (1, 2):  # on a busy machine two threads wait on each other; report both
        bench_heatmap(threads)
    if not args.skip_train:
        bench_live()


if __name__ == "__main__":
    main()
