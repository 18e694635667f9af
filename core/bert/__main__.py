"""python -m core.bert count [--vocab N --hidden N --layers N --heads N --intermediate N
                              --max-position N --type-vocab N] [--json]
python -m core.bert pretrain --preset live|full [--steps N] [--time-budget S] [--json]

count: BERT's parameters by part on the meta device (no weights are allocated). Defaults: BERT-base.
pretrain: pre-train a BERT from scratch with BERT's recipe (full: the shipped model, from registry packages).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from .params import BERT_BASE, count


def _count_cmd(args) -> int:
    try:
        result = count(vocab=args.vocab, hidden=args.hidden, layers=args.layers, heads=args.heads,
                       intermediate=args.intermediate, max_position=args.max_position, type_vocab=args.type_vocab)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        for row in result.rows():
            print(f"{row['group']:<11} {row['label']:<36} {row['parameters']:>15,}")
    return 0


def _pretrain_cmd(args) -> int:
    if args.preset == "full":
        from . import full
        recipe = full.FULL if args.steps is None else dataclasses.replace(full.FULL, steps=args.steps)
        res = full.run(recipe, time_budget_s=args.time_budget)
        out = {k: res[k] for k in ("steps", "mlm_loss", "nsp_loss", "seconds")}
        out["heldout"] = res["heldout"]
    else:
        from . import live
        res = live.pretrain_live(steps=args.steps)
        out = {k: res[k] for k in ("steps", "mlm_loss", "nsp_loss", "seconds")}
    print(json.dumps(out, indent=2 if args.json else None, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bert", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("count", help="parameter anatomy of a BERT shape (default BERT-base)")
    for flag, key in [("--vocab", "vocab"), ("--hidden", "hidden"), ("--layers", "layers"), ("--heads", "heads"),
                      ("--intermediate", "intermediate"), ("--max-position", "max_position"),
                      ("--type-vocab", "type_vocab")]:
        c.add_argument(flag, type=int, default=BERT_BASE[key], dest=key)
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=_count_cmd)
    p = sub.add_parser("pretrain", help="pre-train a BERT from scratch (live: tiny, <= 60 s; full: the shipped model)")
    p.add_argument("--preset", choices=["live", "full"], required=True)
    p.add_argument("--steps", type=int, default=None, help="override the preset's step count")
    p.add_argument("--time-budget", type=float, default=None, dest="time_budget",
                   help="full: seconds of training; the step count shrinks to fit")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_pretrain_cmd)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
