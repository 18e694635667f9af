"""The papers' own formulas for size, compute, memory and pipeline idle time. No torch.

Each formula is written once, in core/megatron/formulas.py; these functions check their inputs,
evaluate it, and return the numbers with the formula's text and LaTeX.

Sources (each function cites its equation):
- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM", arXiv 2104.04473: eq. (2) parameters, eq. (3) FLOPs, eq. (4) training time,
  section 2.2 pipeline bubble.
- Rajbhandari et al. 2019, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
  arXiv 1910.02054, section 5 / Figure 1: model-state memory per device under each ZeRO-DP stage.
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  arXiv 2205.05198, eq. (1)-(6) and Table 2: activation memory per transformer layer.
"""

from __future__ import annotations

import re

from core.megatron import formulas as fm

SECONDS_PER_DAY = 86400.0


def _shown(f, equation: str | None = None) -> dict:
    """How a result names its formula: where it comes from, as text, and as the LaTeX the page prints."""
    return {"equation": equation or f.source, "formula": fm.text(f), "latex": fm.latex(f)}


def parse_count(text: str | float | int) -> float:
    """'7.5B', '175e9', '1.2T', '300G' -> a float; ValueError with a readable message otherwise."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", str(text))
        if not m:
            raise ValueError(f"not a number: {text!r} (try 7.5e9 or 7.5B)")
        scale = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}[m.group(2).lower()]
        value = float(m.group(1)) * scale
    if value <= 0:
        raise ValueError(f"must be positive: {text!r}")
    return value


def _positive(**kw) -> None:
    for name, v in kw.items():
        if v is None or v <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {v}")


def params(layers: int, hidden: int, vocab: int, seq: int) -> dict:
    """Narayanan et al. 2021, eq. (2): P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h))."""
    _positive(layers=layers, hidden=hidden, vocab=vocab, seq=seq)
    l, h, V, s = layers, hidden, vocab, seq
    per_layer = 12 * h * h + 13 * h  # 4h^2 attention + 8h^2 MLP weights; 13h biases and norms
    embeddings = (V + s) * h  # token and position embeddings
    total = fm.PARAMS(l=l, h=h, V=V, s=s)
    return {
        **_shown(fm.PARAMS),
        "inputs": {"layers": l, "hidden": h, "vocab": V, "seq": s},
        "params": total,
        "params_billions": total / 1e9,
        "breakdown": {"transformer_layers": l * per_layer, "embeddings": embeddings},
    }


def flops(
    layers: int,
    hidden: int,
    vocab: int,
    seq: int,
    batch: int,
    *,
    tokens: float | None = None,
    gpus: int | None = None,
    tflops: float | None = None,
) -> dict:
    """Narayanan et al. 2021, eq. (3): F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration,
    counting the forward, the backward (2x forward) and the recomputed forward of activation
    checkpointing. With tokens, gpus and achieved TFLOP/s also eq. (4): time ~ 8 T P / (n X)."""
    _positive(layers=layers, hidden=hidden, vocab=vocab, seq=seq, batch=batch)
    l, h, V, s, B = layers, hidden, vocab, seq, batch
    F = fm.FLOPS(l=l, h=h, V=V, s=s, B=B)
    out = {
        **_shown(fm.FLOPS),
        "inputs": {"layers": l, "hidden": h, "vocab": V, "seq": s, "batch": B},
        "flops_per_iteration": F,
    }
    given = [v is not None for v in (tokens, gpus, tflops)]
    if any(given):
        if not all(given):
            raise ValueError("the training-time estimate needs --tokens, --gpus and --tflops together")
        out["training_time"] = training_time(tokens, params(l, h, V, s)["params"], gpus, tflops)
    return out


def training_time(tokens: float, n_params: float, gpus: int, tflops: float) -> dict:
    """Narayanan et al. 2021, eq. (4): end-to-end training time ~ 8 T P / (n X)."""
    _positive(tokens=tokens, params=n_params, gpus=gpus, tflops=tflops)
    seconds = fm.TRAINING_SECONDS(T=tokens, P=n_params, n=gpus, X=tflops * 1e12)
    f = fm.TRAINING_SECONDS
    return {
        **_shown(f),
        "inputs": {"tokens": tokens, "params": n_params, "gpus": gpus, "tflops_per_gpu": tflops},
        "seconds": seconds,
        "days": seconds / SECONDS_PER_DAY,
    }


def zero_memory(n_params: float, dp: int, zero_stage: int, k: int = 12) -> dict:
    """Model-state bytes per device under mixed-precision Adam (Rajbhandari et al. 2019, section 5,
    Figure 1): fp16 parameters 2Psi, fp16 gradients 2Psi, optimizer states K Psi with K = 12
    (fp32 parameters, momentum, variance).
      stage 0 (plain data parallel): (2 + 2 + K) Psi
      stage 1 (P_os):      2Psi + 2Psi + K Psi / N_d
      stage 2 (P_os+g):    2Psi + (2 + K) Psi / N_d
      stage 3 (P_os+g+p):  (2 + 2 + K) Psi / N_d"""
    _positive(params=n_params, dp=dp)
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"--zero-stage must be 0, 1, 2 or 3, got {zero_stage}")
    values = {"Psi": n_params, "N_d": dp, "K": k}
    parts = {name: f(**values) for name, f in fm.ZERO_PART_FORMULAS[zero_stage].items()}
    f = fm.ZERO[zero_stage]
    total = f(**values)
    return {
        **_shown(f),
        "inputs": {"params": n_params, "dp": dp, "zero_stage": zero_stage, "K": k},
        "bytes_per_device": total,
        "gb_per_device": total / 1e9,
        "breakdown_bytes": parts,
        "replicated_bytes": fm.ZERO[0](**values),
    }


def zero_holdings(dp: int, zero_stage: int) -> list[dict]:
    """Which part of each model state every data-parallel device keeps: 'all' or its 1/N_d slice."""
    _positive(dp=dp)
    rows = []
    for d in range(dp):
        for state, sharded_from in (("parameters_fp16", 3), ("gradients_fp16", 2), ("optimizer_states", 1)):
            sharded = zero_stage >= sharded_from
            rows.append(
                {
                    "device": d,
                    "state": state,
                    "start": d / dp if sharded else 0.0,
                    "end": (d + 1) / dp if sharded else 1.0,
                    "sharded": sharded,
                }
            )
    return rows


RECOMPUTE = ("none", "selective", "full")


def activations(
    seq: int, batch: int, hidden: int, heads: int, layers: int, tp: int = 1, sp: bool = False, recompute: str = "none"
) -> dict:
    """Activation bytes (16-bit) per transformer layer and for the first pipeline stage, which holds
    L layers' worth under 1F1B whatever p is (Korthikanti et al. 2022, Table 2 and eq. (5)-(6)):
      no recompute, tensor parallel:        s b h (10 + 24/t + 5 a s / (h t))      eq. (2)
      no recompute, tensor + sequence par.:  s b h (34/t + 5 a s / (h t))          eq. (4)
      selective, tensor parallel:            s b h (10 + 24/t)
      selective, tensor + sequence par.:     s b h (34/t)                          eq. (6) per layer
      full recomputation:                    s b h (2)  (only the layer input is kept)
    With t = 1 the first line is eq. (1): s b h (34 + 5 a s / h)."""
    _positive(seq=seq, batch=batch, hidden=hidden, heads=heads, layers=layers, tp=tp)
    if recompute not in RECOMPUTE:
        raise ValueError(f"--recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    f = fm.ACTIVATIONS[(recompute, bool(sp))]
    per_layer = f(s=seq, b=batch, h=hidden, a=heads, t=tp)
    return {
        **_shown(f, "Korthikanti et al. 2022, Table 2 and eq. (1)-(6)"),
        "source": f.source,
        "inputs": {
            "seq": seq,
            "batch": batch,
            "hidden": hidden,
            "heads": heads,
            "layers": layers,
            "tp": tp,
            "sp": sp,
            "recompute": recompute,
        },
        "bytes_per_layer": per_layer,
        "bytes_total": per_layer * layers,
        "gb_total": per_layer * layers / 1e9,
    }


def bubble(pipeline: int, microbatches: int, interleave: int = 1) -> dict:
    """Narayanan et al. 2021, section 2.2: bubble time / ideal time = (p - 1)/m for GPipe and 1F1B,
    (p - 1)/(v m) for the interleaved schedule with v model chunks per device."""
    _positive(pipeline=pipeline, microbatches=microbatches, interleave=interleave)
    p, m, v = pipeline, microbatches, interleave
    f = fm.BUBBLE if v == 1 else fm.BUBBLE_INTERLEAVED
    frac = f(p=p, m=m, v=v)
    return {
        **_shown(f, "Narayanan et al. 2021, section 2.2"),
        "inputs": {"pipeline": p, "microbatches": m, "interleave": v},
        "bubble_fraction": frac,
        # the same idle time as a share of the whole iteration, as a timeline shows it
        "idle_share_of_iteration": frac / (1 + frac),
    }
