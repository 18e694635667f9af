"""python -m core.bert count [--vocab N --hidden N --layers N --heads N --intermediate N
                              --max-position N --type-vocab N] [--json]

Counts BERT's parameters by part on the meta device (no weights are allocated). Defaults: BERT-base.
"""
from __future__ import annotations

import argparse
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
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
