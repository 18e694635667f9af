"""Held-out accuracy: exact match overall, by source-length bucket, and per output position."""

from __future__ import annotations

from pathlib import Path

import torch

from .model import Seq2Seq
from .tasks import Example, Task, get_task
from .train import CHECKPOINT_DIR, load_checkpoint, read_manifest


def predict(model: Seq2Seq, task: Task, sources: list[str], batch_size: int = 500) -> list[str]:
    """Greedy outputs for a list of inputs (every character must be in the vocabulary)."""
    from .train import encode_batch

    outs: list[str] = []
    model.eval()
    for k in range(0, len(sources), batch_size):
        chunk = [Example(s, "") for s in sources[k : k + batch_size]]
        src, lens, _, _ = encode_batch(task, chunk, next(model.parameters()).device)
        ids = model.greedy(src, lens)  # (B, U)
        outs.extend(task.tgt_vocab.decode(row) for row in ids.tolist())
    return outs


def exact_match(predictions: list[str], targets: list[str]) -> float:
    if not targets:
        return 0.0
    return sum(p == t for p, t in zip(predictions, targets)) / len(targets)


def evaluate_model(model: Seq2Seq, task: Task, examples: list[Example]) -> dict:
    """Exact match overall and by source-length bucket; token accuracy per output position
    (position i right when the i-th output character equals the i-th target character)."""
    with torch.no_grad():
        preds = predict(model, task, [e.src for e in examples])
    buckets: dict[tuple[int, int], list[int]] = {}
    pos_right: dict[int, int] = {}
    pos_total: dict[int, int] = {}
    # the same, split by length bucket: position i of a short input vs of a long one
    bpos_right: dict[tuple[int, int], dict[int, int]] = {}
    bpos_total: dict[tuple[int, int], dict[int, int]] = {}
    for p, e in zip(preds, examples):
        b = task.bucket(len(e.src))
        buckets.setdefault(b, []).append(int(p == e.tgt))
        for i, ch in enumerate(e.tgt):
            ok = int(i < len(p) and p[i] == ch)
            pos_total[i] = pos_total.get(i, 0) + 1
            pos_right[i] = pos_right.get(i, 0) + ok
            bpos_total.setdefault(b, {})[i] = bpos_total.get(b, {}).get(i, 0) + 1
            bpos_right.setdefault(b, {})[i] = bpos_right.get(b, {}).get(i, 0) + ok
    return {
        "task": task.name,
        "attention": model.cfg.attention,
        "n": len(examples),
        "exact_match": exact_match(preds, [e.tgt for e in examples]),
        "by_length": [
            {"lengths": f"{lo}-{hi}", "lo": lo, "hi": hi, "n": len(v), "exact_match": sum(v) / len(v)}
            for (lo, hi), v in sorted(buckets.items())
        ],
        "per_position": [
            {"position": i + 1, "n": pos_total[i], "accuracy": pos_right[i] / pos_total[i]} for i in sorted(pos_total)
        ],
        "per_position_by_length": [
            {
                "lengths": f"{lo}-{hi}",
                "n": [bpos_total[(lo, hi)][i] for i in sorted(bpos_total[(lo, hi)])],
                "accuracy": [bpos_right[(lo, hi)][i] / bpos_total[(lo, hi)][i] for i in sorted(bpos_total[(lo, hi)])],
            }
            for (lo, hi) in sorted(bpos_total)
        ],
    }


EVAL_FIELDS = ("heldout_exact_match", "by_length", "per_position", "per_position_by_length")


def manifest_fields(report: dict) -> dict:
    """The evaluation part of a manifest entry, from a report of :func:`evaluate_model`."""
    return {
        "heldout_exact_match": report["exact_match"],
        "heldout_n": report["n"],
        "by_length": report["by_length"],
        "per_position": report["per_position"],
        "per_position_by_length": report["per_position_by_length"],
    }


def evaluate_committed(directory: Path = CHECKPOINT_DIR) -> list[dict]:
    """Re-measure every checkpoint in the manifest on the same held-out set it was scored on."""
    reports = []
    for entry in read_manifest(directory / "manifest.json")["checkpoints"]:
        task = get_task(entry["task"])
        model = load_checkpoint(directory / entry["file"])
        report = evaluate_model(model, task, task.heldout(entry["heldout_n"]))
        report["file"] = entry["file"]
        report["manifest_exact_match"] = entry["heldout_exact_match"]
        reports.append(report)
    return reports
