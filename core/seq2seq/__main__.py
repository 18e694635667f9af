"""Command line: ``python -m core.seq2seq train --task date --attention bahdanau`` and
``python -m core.seq2seq evaluate --json``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from .tasks import TASKS
from .train import CHECKPOINT_DIR, TrainConfig, set_threads, train_and_save


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m core.seq2seq")
    sub = ap.add_subparsers(dest="cmd", required=True)
    tr = sub.add_parser("train", help="train one model and write its checkpoint + manifest entry")
    tr.add_argument("--task", choices=sorted(TASKS), required=True)
    tr.add_argument("--attention", choices=["none", "bahdanau"], required=True)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--steps", type=int, default=TrainConfig.steps)
    tr.add_argument("--batch-size", type=int, default=TrainConfig.batch_size)
    tr.add_argument("--lr", type=float, default=TrainConfig.lr)
    tr.add_argument("--patience", type=int, default=TrainConfig.patience)
    tr.add_argument("--target-acc", type=float, default=TrainConfig.target_acc)
    tr.add_argument("--max-seconds", type=float, default=None)
    tr.add_argument("--threads", type=int, default=TrainConfig.threads)
    tr.add_argument("--out", type=Path, default=CHECKPOINT_DIR)
    tr.add_argument("--quiet", action="store_true")
    ev = sub.add_parser("evaluate", help="re-measure every committed checkpoint on its held-out set")
    ev.add_argument("--json", action="store_true", help="print JSON (default: a short table)")
    ev.add_argument("--dir", type=Path, default=CHECKPOINT_DIR)
    ev.add_argument("--threads", type=int, default=1, help="tiny models decode fastest on one thread")
    ev.add_argument(
        "--update-manifest",
        action="store_true",
        help="write the re-measured evaluation fields back into manifest.json (training fields stay)",
    )
    return ap


def _train_cmd(args) -> int:
    given = vars(args)
    cfg = TrainConfig(**{f.name: given[f.name] for f in dataclasses.fields(TrainConfig) if f.name in given})

    def show(p):
        if not args.quiet:
            acc = "" if p.valid_acc is None else f"  valid exact match {p.valid_acc:.4f}"
            print(f"step {p.step:5d}/{p.total_steps}  loss {p.loss:.4f}{acc}  {p.seconds:6.1f} s", flush=True)

    set_threads(args.threads)
    entry = train_and_save(args.task, args.attention, cfg, args.out, on_progress=show)
    keep = ("file", "heldout_exact_match", "heldout_n", "train_seconds", "steps", "device", "bytes")
    print(json.dumps({k: entry[k] for k in keep}, indent=2))
    return 0


def _update_manifest(directory: Path, reports: list[dict]) -> None:
    from .evaluate import manifest_fields
    from .train import read_manifest

    path = directory / "manifest.json"
    manifest = read_manifest(path)
    by_file = {r["file"]: r for r in reports}
    for entry in manifest["checkpoints"]:
        entry.update(manifest_fields(by_file[entry["file"]]))
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _evaluate_cmd(args) -> int:
    import torch

    from .errors import CheckpointError
    from .evaluate import evaluate_committed

    torch.set_num_threads(args.threads)
    try:
        reports = evaluate_committed(args.dir)
    except CheckpointError as exc:
        # nothing to evaluate is a failure, not an empty success: exit 2 and say how to fix it
        what = {
            "manifest_missing": f"{args.dir / 'manifest.json'} is missing",
            "manifest_empty": f"{args.dir / 'manifest.json'} lists no checkpoints",
            "manifest_invalid": f"{args.dir / 'manifest.json'} is not a valid manifest",
            "checkpoint_missing": f"checkpoint {exc.params.get('file')} is missing",
            "checkpoint_corrupt": f"checkpoint {exc.params.get('file')} is damaged or truncated",
        }
        print(f"error: {what.get(exc.code, exc.code)}. To make it again: {exc.params.get('command')}", file=sys.stderr)
        return 2
    if args.update_manifest:
        _update_manifest(args.dir, reports)
    if args.json:
        print(json.dumps(reports, indent=2, ensure_ascii=False))
    else:
        for r in reports:
            print(
                f"{r['file']:32s} exact match {r['exact_match']:.4f} "
                f"(manifest {r['manifest_exact_match']:.4f}, n={r['n']})"
            )
            print("   by length: " + "  ".join(f"{b['lengths']}:{b['exact_match']:.2f}" for b in r["by_length"]))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return _train_cmd(args) if args.cmd == "train" else _evaluate_cmd(args)


if __name__ == "__main__":
    sys.exit(main())
