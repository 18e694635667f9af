"""python -m core.bert COMMAND ... [--source S] [--json]

  count [--vocab N --hidden N --layers N --heads N --intermediate N --max-position N --type-vocab N]
        BERT's parameters by part on the meta device (no weights are allocated). Defaults: BERT-base.
  tokenize TEXT                   -> {"tokens": [...], "ids": [...], "truncated": bool}
  fill-mask TEXT [--top-k K]      -> {"masks": [{"position": i, "candidates": [{"token": t, "prob": p}]}]}
  nsp TEXT_A TEXT_B               -> {"is_next": p, "not_next": q}
  pretrain --preset live|full     -> {"steps": n, "mlm_loss": [...], "nsp_loss": [...], "seconds": s}
  evaluate-pretraining [--quick]  -> held-out MLM top-1/top-5 and NSP accuracy per language

--source: a model folder or Hugging Face id (default: the app's default model).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from .params import BERT_BASE, count


def _count_cmd(args) -> int:
    try:
        result = count(**{key: getattr(args, key) for key in BERT_BASE})
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
        budget = (
            args.time_budget if args.time_budget is not None else (full.TIME_BUDGET_S if args.steps is None else None)
        )
        res = full.run(recipe, time_budget_s=budget)
        out = {k: res[k] for k in ("steps", "mlm_loss", "nsp_loss", "seconds")}
        out["heldout"] = res["heldout"]
    else:
        from . import live

        res = live.pretrain_live(steps=args.steps)
        out = {k: res[k] for k in ("steps", "mlm_loss", "nsp_loss", "seconds", "cloze")}
    print(json.dumps(out, indent=2 if args.json else None, ensure_ascii=False))
    return 0


def _bundle(args):
    from .loader import load

    bundle = load(args.source or "")
    if bundle.notice:
        print(f"note: {bundle.notice}", file=sys.stderr)
    return bundle


def _text(value: str, what: str = "TEXT") -> str:
    if not value or not value.strip():
        raise ValueError(f"{what} is empty: give a sentence")
    return value


def _emit(obj: dict, as_json: bool, lines: list[str]) -> None:
    if as_json:
        print(json.dumps(obj, ensure_ascii=False, indent=2))
    else:
        print("\n".join(lines))


def _tokenize_cmd(args) -> int:
    from .inputs import max_positions, tokenize

    text = _text(args.text)
    bundle = _bundle(args)
    view = tokenize(bundle, text, max_tokens=max_positions(bundle) - 2)
    _emit(
        {"tokens": view.tokens, "ids": view.ids, "truncated": view.truncated, "model": bundle.name},
        args.json,
        [" ".join(view.tokens)] + (["(truncated)"] if view.truncated else []),
    )
    return 0


def _fill_mask_cmd(args) -> int:
    from .pretraining import fill_mask

    text = _text(args.text)
    bundle = _bundle(args)
    if bundle.tokenizer.mask_token not in text:
        raise ValueError(f"TEXT has no {bundle.tokenizer.mask_token}: write it where a word should be predicted")
    if not 1 <= args.top_k <= 100:
        raise ValueError("--top-k must be between 1 and 100")
    fm = fill_mask(bundle, text, top_k=args.top_k, max_length=_max_len(bundle))
    masks = [
        {"position": m["position"], "candidates": [{"token": c["token"], "prob": c["probability"]} for c in m["top"]]}
        for m in fm.masks
    ]
    if not masks:
        raise ValueError("every [MASK] fell beyond the model's length limit")
    _emit(
        {"masks": masks, "tokens": fm.tokens, "truncated": fm.truncated, "model": bundle.name},
        args.json,
        [f"{m['position']}: " + "  ".join(f"{c['token']} {c['prob']:.3f}" for c in m["candidates"]) for m in masks],
    )
    return 0


def _max_len(bundle) -> int:
    from .inputs import max_positions

    return max_positions(bundle)


def _nsp_cmd(args) -> int:
    from .pretraining import next_sentence

    a, b = _text(args.text_a, "TEXT_A"), _text(args.text_b, "TEXT_B")
    bundle = _bundle(args)
    ns = next_sentence(bundle, a, b, max_length=_max_len(bundle))
    _emit(
        {"is_next": ns.is_next, "not_next": ns.not_next, "truncated": ns.truncated, "model": bundle.name},
        args.json,
        [f"IsNext {ns.is_next:.3f}  NotNext {ns.not_next:.3f}"],
    )
    return 0


def _evaluate_cmd(args) -> int:
    from .evaluate import evaluate_pretraining

    res = evaluate_pretraining(_bundle(args), quick=args.quick)
    _emit(
        res,
        args.json,
        [
            f"{lang}: MLM top-1 {m['mlm_top1']:.1%}  top-5 {m['mlm_top5']:.1%}  NSP {m['nsp_accuracy']:.1%}"
            for lang, m in res["heldout"].items()
        ],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bert", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("count", help="parameter anatomy of a BERT shape (default BERT-base)")
    for key, default in BERT_BASE.items():
        c.add_argument("--" + key.replace("_", "-"), type=int, default=default, dest=key)
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=_count_cmd)
    p = sub.add_parser("pretrain", help="pre-train a BERT from scratch (live: tiny, <= 60 s; full: the shipped model)")
    p.add_argument("--preset", choices=["live", "full"], required=True)
    p.add_argument("--steps", type=int, default=None, help="override the preset's step count")
    p.add_argument(
        "--time-budget",
        type=float,
        default=None,
        dest="time_budget",
        help="full: seconds of training, the schedule follows the clock (default 3600 unless --steps is given)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_pretrain_cmd)
    t = sub.add_parser("tokenize", help="WordPiece tokens and ids of TEXT")
    t.add_argument("text")
    f = sub.add_parser("fill-mask", help="top-k fillers for every [MASK] in TEXT (MLM head)")
    f.add_argument("text")
    f.add_argument("--top-k", type=int, default=5, dest="top_k")
    n = sub.add_parser("nsp", help="IsNext / NotNext probabilities of TEXT_B after TEXT_A (NSP head)")
    n.add_argument("text_a")
    n.add_argument("text_b")
    e = sub.add_parser("evaluate-pretraining", help="held-out MLM top-1/top-5 and NSP accuracy per language")
    e.add_argument("--quick", action="store_true", help="the manifest's quick subset (256 pairs per language)")
    for cmd, fn in ((t, _tokenize_cmd), (f, _fill_mask_cmd), (n, _nsp_cmd), (e, _evaluate_cmd)):
        cmd.add_argument("--source", default="", help="model folder or Hugging Face id (default: the app's)")
        cmd.add_argument("--json", action="store_true", help="print JSON")
        cmd.set_defaults(func=fn)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # HeadMissing, CorpusMissing: say what is wrong, no traceback
        if type(exc).__name__ in {"HeadMissing", "CorpusMissing"}:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
