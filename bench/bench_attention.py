"""Lessons 4-5 at 64 tokens: page rerun after a text change vs the model's own forward pass, and the
bytes each view sends to the browser. Prints figures; asserts nothing (docs/ARCHITECTURE.md, tests).

    python bench/bench_attention.py [--runs 15] [--json out.json] [--gc on|off] [--bertviz]

--gc sets Streamlit's runner.postScriptGC (a full gc.collect(2) after every script run; the
server's config decides it, .streamlit/config.toml); --bertviz switches lesson 5's bertviz on
before timing (it is drawn only on request). The time of one gc.collect(2) in this process, with
every model and library loaded, is printed too.

Page rerun = AppTest: the page script runs in-process exactly as under `streamlit run` (every core
call, figure, data export and the serialisation of every element), minus the websocket. Forward =
the encoder's own forward pass on the same 64 tokens with output_attentions, as timed inside that
very rerun by core.attention.encode (Encoding.forward_seconds): same process, thread and moment.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = (
    "the cat sat on a mat while the dog ran in the park and a bird sang near the old tree "
    "because the day was warm and bright so every child went out to play with a red ball"
).split()
ENDINGS = (
    "today",
    "again",
    "there",
    "slowly",
    "happily",
    "together",
    "outside",
    "early",
    "later",
    "quickly",
    "quietly",
    "alone",
    "home",
    "yesterday",
    "tonight",
    "now",
    "soon",
    "still",
    "twice",
    "once",
    "first",
    "last",
    "far",
    "near",
    "inside",
)


def sentence(tok, n_tokens: int, ending: str) -> str:
    """Words from WORDS, then ``ending``, padded with single letters to exactly ``n_tokens`` tokens
    ([CLS] and [SEP] included) under this tokenizer, whatever its vocabulary splits into pieces."""

    def n(words):
        return len(tok(" ".join(words))["input_ids"])

    words = [ending]
    for w in WORDS * 8:
        if n(words[:-1] + [w, ending]) > n_tokens:
            break
        words = words[:-1] + [w, ending]
    while n(words) < n_tokens:
        words.insert(-1, "a")
    return " ".join(words)


def p95(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def _forward_seconds(bundle, text: str) -> tuple[float, float]:
    """Wall and CPU seconds of one forward pass (CPU time: all of this process's threads)."""
    import torch

    ids = bundle.tokenizer(text, return_tensors="pt")
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        bundle.encoder(**ids, output_attentions=True)
    return time.perf_counter() - t0, time.process_time() - c0


def _summary(reruns, inner, forwards, rerun_cpu, forward_cpu) -> dict:
    """Medians, p95s, minima and their ratios, in milliseconds."""
    return {
        # CPU time (process_time, all threads) is recorded but not used for the budget: torch's
        # OpenMP workers spin after each parallel region, and that spinning is counted too
        "rerun_cpu_median_ms": 1000 * statistics.median(rerun_cpu),
        "forward_cpu_median_ms": 1000 * statistics.median(forward_cpu),
        "ratio_median_rerun_to_median_forward_in_rerun": statistics.median(reruns) / statistics.median(inner),
        "forward_median_ms": 1000 * statistics.median(forwards),
        "forward_p95_ms": 1000 * p95(forwards),
        "rerun_median_ms": 1000 * statistics.median(reruns),
        "rerun_p95_ms": 1000 * p95(reruns),
        "ratio_p95_rerun_to_p95_forward": p95(reruns) / p95(forwards),
        "ratio_p95_rerun_to_median_forward": p95(reruns) / statistics.median(forwards),
        "forward_min_ms": 1000 * min(forwards),
        "rerun_min_ms": 1000 * min(reruns),
        "forward_in_rerun_median_ms": 1000 * statistics.median(inner),
        "forward_in_rerun_p95_ms": 1000 * p95(inner),
        "ratio_p95_rerun_to_p95_forward_in_rerun": p95(reruns) / p95(inner),
        "ratio_min_rerun_to_min_forward": min(reruns) / min(forwards),
    }


def _time_lesson(bundle, lesson_id: str, key: str, texts: list[str], args) -> dict:
    """``args.runs`` text changes on one lesson page: the rerun, the forward pass inside it, a
    forward pass timed on its own, and the bytes of every view the last rerun sent."""
    from core import attention as A
    from tests.apptest import lesson_app

    at = lesson_app(lesson_id, "en", timeout=300)
    at.run()  # warm: model load, first figures
    assert not at.exception, [e.value for e in at.exception]
    if args.bertviz and lesson_id == "multi-head":
        at.toggle(key="multi-head.bertviz_on").set_value(True).run()
    reruns, forwards, inner, rerun_cpu, forward_cpu = [], [], [], [], []
    for r in range(args.runs):
        text = texts[(r + (7 if lesson_id == "multi-head" else 0)) % len(texts)]
        A.clear_cache()
        t0, c0 = time.perf_counter(), time.process_time()
        at.text_area(key=key).set_value(text).run()
        reruns.append(time.perf_counter() - t0)
        rerun_cpu.append(time.process_time() - c0)
        assert not at.exception, [e.value for e in at.exception]
        # the forward pass the page itself ran during this rerun (core.attention.encode times it)
        inner.append(min(e.forward_seconds for e in A.cached_encodings()))
        wall, cpu = _forward_seconds(bundle, text)
        forwards.append(wall)
        forward_cpu.append(cpu)
    chart_bytes = [len(c.proto.spec.encode()) + len(c.proto.config.encode()) for c in at.get("plotly_chart")]
    res = {
        **_summary(reruns, inner, forwards, rerun_cpu, forward_cpu),
        "plotly_bytes_per_view": chart_bytes,
        "plotly_bytes_max": max(chart_bytes),
    }
    frames = at.get("iframe")
    if frames:
        res["bertviz_frame_bytes"] = len(frames[0].proto.srcdoc.encode())
    return res


def _bertviz_sizes(bundle, text: str) -> tuple[dict, int]:
    """Each bertviz view on its own at 64 tokens, and the bytes of stock bertviz's attention JSON."""
    from core import attention as A
    from core import bertviz_views as BV

    sizes = {}
    for kind in BV.KINDS:
        t0 = time.perf_counter()
        v = BV.build(bundle, text, kind)
        sizes[kind] = {"bytes": v.n_bytes, "tokens": v.n_tokens, "build_ms": 1000 * (time.perf_counter() - t0)}
    enc = A.encode(bundle, text, max_tokens=64)
    return sizes, len(json.dumps(enc.attentions.astype("float64").tolist()))


def _gc_collect_median_ms(times: int = 5) -> float:
    import gc

    gcs = []
    for _ in range(times):
        t0 = time.perf_counter()
        gc.collect(2)
        gcs.append(time.perf_counter() - t0)
    return 1000 * statistics.median(gcs)


def _report(results: dict) -> None:
    print(
        f"model {results['model']}; runner.postScriptGC {results['post_script_gc']}; one gc.collect(2) here: "
        f"median {results['gc_collect_2_median_ms']:.0f} ms"
    )
    for lesson_id in ("self-attention", "multi-head"):
        r = results[lesson_id]
        print(
            f"{lesson_id:15s} median rerun / median forward in rerun "
            f"{r['ratio_median_rerun_to_median_forward_in_rerun']:.1f}x (budget 3x); "
            f"page rerun median {r['rerun_median_ms']:.0f} ms, p95 {r['rerun_p95_ms']:.0f} ms; "
            f"the model's forward pass inside those reruns: median {r['forward_in_rerun_median_ms']:.1f} ms, "
            f"p95 {r['forward_in_rerun_p95_ms']:.1f} ms -> p95 ratio {r['ratio_p95_rerun_to_p95_forward_in_rerun']:.1f}x "
            f"(budget 3x); largest Plotly view {r['plotly_bytes_max'] / 1e6:.2f} MB (budget 1 MB)"
        )
        print(
            f"{'':15s} (a forward timed separately in the main thread: median {r['forward_median_ms']:.1f} ms, "
            f"p95 {r['forward_p95_ms']:.1f} ms; on a contended 2-core machine it is far noisier than the "
            f"one inside the rerun, so it is not used for the ratio)"
        )
    for kind, s in results["bertviz"].items():
        print(
            f"bertviz {kind:6s} view: {s['bytes'] / 1e6:.2f} MB at {s['tokens']} tokens (budget 2 MB), "
            f"built in {s['build_ms']:.0f} ms"
        )
    stock = results["stock_bertviz_attention_json_bytes"]
    print(f"stock bertviz would send {stock / 1e6:.1f} MB of attention JSON alone for the same input")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--gc", choices=("on", "off"), default="on")
    ap.add_argument("--bertviz", action="store_true")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(2)
    from streamlit import config as st_config
    from streamlit.testing.v1 import AppTest  # noqa: F401  (imported before timing)

    st_config.set_option("runner.postScriptGC", args.gc == "on")

    from core.bert import load

    bundle = load()
    tok = bundle.tokenizer
    texts = [sentence(tok, 64, e) for e in ENDINGS]
    assert all(len(tok(s)["input_ids"]) == 64 for s in texts), [len(tok(s)["input_ids"]) for s in texts[:3]]

    results = {
        "machine": "2 CPU cores (torch threads = 2); timings under contention unless re-run quietly",
        "tokens": 64,
        "model": bundle.name,
        "post_script_gc": args.gc,
        "bertviz_on": args.bertviz,
    }
    for lesson_id, key in (("self-attention", "self-attention.text"), ("multi-head", "multi-head.text")):
        results[lesson_id] = _time_lesson(bundle, lesson_id, key, texts, args)
    results["bertviz"], results["stock_bertviz_attention_json_bytes"] = _bertviz_sizes(bundle, texts[0])
    results["gc_collect_2_median_ms"] = _gc_collect_median_ms()
    _report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
