"""python -m core.megatron <demo|params|flops|memory|activations|bubble|schedule> ... [--json]"""

from __future__ import annotations

import argparse
import json
import sys

from core.megatron import calculators as calc


def _count(text):
    try:
        return calc.parse_count(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m core.megatron", description="Megatron-LM model parallelism: live demo and calculators"
    )
    sub = ap.add_subparsers(dest="what", required=True)

    d = sub.add_parser("demo", help="tensor-parallel transformer layer on N torchrun workers")
    d.add_argument("--ranks", type=int, default=2, choices=[1, 2, 4])
    d.add_argument("--timeout", type=float, default=60.0)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument(
        "--fault",
        choices=["none", "crash", "hang"],
        default="none",
        help="inject a failure on one rank (to see the timeout and cleanup work)",
    )
    d.add_argument("--fault-rank", type=int, default=1)

    p = sub.add_parser("params", help="Narayanan et al. 2021, eq. (2)")
    f = sub.add_parser("flops", help="Narayanan et al. 2021, eq. (3); eq. (4) with --tokens --gpus --tflops")
    for q in (p, f):
        q.add_argument("--layers", type=int, required=True)
        q.add_argument("--hidden", type=int, required=True)
        q.add_argument("--vocab", type=int, required=True)
        q.add_argument("--seq", type=int, required=True)
    f.add_argument("--batch", type=int, required=True)
    f.add_argument("--tokens", type=_count)
    f.add_argument("--gpus", type=int)
    f.add_argument("--tflops", type=float, help="achieved TFLOP/s per GPU")

    m = sub.add_parser("memory", help="ZeRO model-state memory per device (Rajbhandari et al. 2019)")
    m.add_argument("--params", type=_count, required=True, help="e.g. 7.5e9 or 7.5B")
    m.add_argument("--dp", type=int, required=True)
    m.add_argument("--zero-stage", type=int, choices=[0, 1, 2, 3], default=0)

    a = sub.add_parser("activations", help="Korthikanti et al. 2022, Table 2")
    for name in ("seq", "batch", "hidden", "heads", "layers"):
        a.add_argument(f"--{name}", type=int, required=True)
    a.add_argument("--tp", type=int, default=1)
    a.add_argument("--sp", action="store_true", help="sequence parallelism")
    a.add_argument("--recompute", choices=list(calc.RECOMPUTE), default="none")

    b = sub.add_parser("bubble", help="pipeline bubble (Narayanan et al. 2021, section 2.2)")
    b.add_argument("--pipeline", type=int, required=True)
    b.add_argument("--microbatches", type=int, required=True)
    b.add_argument("--interleave", type=int, default=1, help="model chunks per device (v)")

    s = sub.add_parser("schedule", help="simulate a pipeline schedule and measure its bubble")
    s.add_argument("--kind", choices=["gpipe", "1f1b", "interleaved"], default="1f1b")
    s.add_argument("--pipeline", type=int, required=True)
    s.add_argument("--microbatches", type=int, required=True)
    s.add_argument("--interleave", type=int, default=1)

    for q in (d, p, f, m, a, b, s):
        q.add_argument("--json", action="store_true", help="print JSON")
    return ap


def run(args) -> dict:
    if args.what == "demo":
        from core.megatron.demo import run_demo

        return run_demo(args.ranks, timeout=args.timeout, seed=args.seed, fault=args.fault, fault_rank=args.fault_rank)
    if args.what == "params":
        return calc.params(args.layers, args.hidden, args.vocab, args.seq)
    if args.what == "flops":
        return calc.flops(
            args.layers,
            args.hidden,
            args.vocab,
            args.seq,
            args.batch,
            tokens=args.tokens,
            gpus=args.gpus,
            tflops=args.tflops,
        )
    if args.what == "memory":
        return calc.zero_memory(args.params, args.dp, args.zero_stage)
    if args.what == "activations":
        return calc.activations(
            args.seq, args.batch, args.hidden, args.heads, args.layers, args.tp, args.sp, args.recompute
        )
    if args.what == "bubble":
        return calc.bubble(args.pipeline, args.microbatches, args.interleave)
    from core.megatron.schedules import timeline

    out = timeline(args.kind, args.pipeline, args.microbatches, args.interleave)
    out.pop("ops")
    return out


def _text(result: dict) -> str:
    lines = []
    for k, v in result.items():
        if isinstance(v, (list, dict)) and k not in ("inputs", "max_abs_diff", "all_reduces"):
            continue
        lines.append(f"{k}: {v}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run(args)
    except ValueError as e:
        result = {"ok": False, "error": str(e)}
    print(json.dumps(result, indent=1) if args.json else _text(result))
    return 0 if result.get("ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
