"""Timings for lessons 6–7's core calls on the embedded model. Prints figures; asserts nothing.

    python bench/bench_bert.py [--threads 2] [--repeat 20] [--source S]
    python bench/bench_bert.py --compare       # the shipped attention-lab-bert against all-MiniLM-L6-v2

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
    ap.add_argument("--source", default="", help="model folder or id (default: the app's default)")
    ap.add_argument(
        "--compare",
        action="store_true",
        help="load time and 64-token forward of models/attention-lab-bert vs the embedded MiniLM",
    )
    args = ap.parse_args()
    if args.compare:
        return compare(args)

    import torch

    torch.set_num_threads(args.threads)
    import core.bert as cb
    from core.bert.sentiment import SentimentScorer, sentiment_factor

    t0 = time.perf_counter()
    bundle = cb.load(args.source)
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


ZH_TEXT = (
    "注意力機制讓模型看見整個句子，而不是只看前一個詞元；BERT 同時從左邊和右邊讀入上下文，"
    "再用遮罩語言模型與下一句預測兩個任務預訓練。"
)


def compare(args) -> None:
    """Fresh-process load time is measured by bench_startup-style runs; here: in-process load and the
    forward pass at 64 tokens, interleaved so that other CPU users slow both models alike."""
    import torch

    torch.set_num_threads(args.threads)
    import core.bert as cb

    ours_dir = Path(__file__).resolve().parents[1] / "models" / "attention-lab-bert"
    import transformers  # noqa: F401 - both loads below then pay for the files, not for the imports
    from transformers import BertForPreTraining, BertModel, BertTokenizerFast  # noqa: F401

    t0 = time.perf_counter()
    ours = cb.load(str(ours_dir), device="cpu")
    ours_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    mini = cb.load(cb.embedded_model_dir().as_posix(), device="cpu")
    mini_load = time.perf_counter() - t0

    def fwd(bundle, text):
        enc = cb.encode_pair(bundle, text, None, max_length=64)
        ids = torch.tensor([(enc.input_ids * 4)[:64]])  # exactly 64 tokens for both models

        def run():
            with torch.no_grad():
                bundle.model.bert(input_ids=ids, output_attentions=True) if hasattr(
                    bundle.model, "bert"
                ) else bundle.model(input_ids=ids, output_attentions=True)

        return run

    runs = {"ours": fwd(ours, ZH_TEXT), "minilm": fwd(mini, TEXT)}
    for r in runs.values():
        r()
    times = {k: [] for k in runs}
    for _ in range(args.repeat):
        for k, r in runs.items():
            t0 = time.perf_counter()
            r()
            times[k].append(time.perf_counter() - t0)
    res = {
        "threads": torch.get_num_threads(),
        "load_s": {"ours": ours_load, "minilm": mini_load},
        "forward_64_p50_ms": {k: 1000 * statistics.median(v) for k, v in times.items()},
        "parameters": {
            "ours": sum(p.numel() for p in ours.model.parameters()),
            "minilm": sum(p.numel() for p in mini.model.parameters()),
        },
    }
    res["forward_ratio_ours_over_minilm"] = res["forward_64_p50_ms"]["ours"] / res["forward_64_p50_ms"]["minilm"]
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
