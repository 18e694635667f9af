"""Timings for lessons 6–7's core calls on the embedded model. Prints figures; asserts nothing.

    python bench/bench_bert.py [--threads 2] [--repeat 20]

Each step is what one widget of pages/06_bert_inputs.py or pages/07_bert_outputs.py computes, at
the page's cap of 64 tokens; the model's own forward pass on the same input is the yardstick.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TEXT = (
    "The bank raised interest rates after the river bank flooded, and the markets, which had opened "
    "higher on strong chip earnings, fell back as investors worried about what the central bank "
    "would do next week when its members meet to discuss the outlook for inflation and jobs."
)


def timed(fn, repeat: int) -> dict:
    fn()  # warm-up
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    runs.sort()
    return {"p50_ms": 1000 * statistics.median(runs), "p95_ms": 1000 * runs[min(len(runs) - 1, int(0.95 * len(runs)))]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    import core.bert as cb
    from core.bert.sentiment import SentimentScorer, sentiment_factor

    t0 = time.perf_counter()
    bundle = cb.load("")
    load_s = time.perf_counter() - t0
    enc = cb.encode_pair(bundle, TEXT, None, max_length=64)
    ids = torch.tensor([enc.input_ids], device=bundle.device)

    def forward():
        with torch.no_grad():
            bundle.model(input_ids=ids, output_attentions=True)

    results = {
        "device": str(bundle.device),
        "threads": torch.get_num_threads(),
        "tokens": len(enc.input_ids),
        "load_s": load_s,
    }
    steps = {
        "forward_64 (yardstick)": forward,
        "tokenize": lambda: cb.tokenize(bundle, TEXT, max_tokens=64),
        "embedding_parts": lambda: cb.embedding_parts(bundle, TEXT, "and a second sentence", max_length=64),
        "hidden_states": lambda: cb.hidden_states(bundle, TEXT, max_length=64),
        "similarity_5": lambda: cb.similarity(bundle, TEXT.split(", ")[:5]),
        "simulate_masking": lambda: cb.simulate_masking(bundle, TEXT, seed=1, max_length=64),
        "masking_rates_1000": lambda: cb.masking_rates(bundle, TEXT, runs=1000, max_length=64),
    }
    for name, fn in steps.items():
        results[name] = timed(fn, args.repeat)
    base = results["forward_64 (yardstick)"]["p50_ms"]
    for name in steps:
        results[name]["x_forward"] = results[name]["p50_ms"] / base

    t0 = time.perf_counter()
    scorer = SentimentScorer(bundle)
    results["sentiment_fit_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fr = sentiment_factor(scorer)
    results["sentiment_score_80_s"] = time.perf_counter() - t0
    results["sentiment_heldout_accuracy"] = fr.accuracy
    results["sentiment_factor_r"] = fr.correlation
    for name, shape in (("count_base_s", cb.BERT_BASE), ("count_large_s", cb.BERT_LARGE)):
        t0 = time.perf_counter()
        cb.count(**shape)
        results[name] = time.perf_counter() - t0
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
