"""The papers' own formulas for size, compute, memory and pipeline idle time. Pure Python, no torch.

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

SECONDS_PER_DAY = 86400.0


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
    per_layer = 12 * h * h + 13 * h          # 4h^2 attention + 8h^2 MLP weights; 13h biases and norms
    embeddings = (V + s) * h                 # token and position embeddings
    total = 12 * l * h ** 2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
    return {"equation": "Narayanan et al. 2021, eq. (2)",
            "formula": "P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))",
            "inputs": {"layers": l, "hidden": h, "vocab": V, "seq": s},
            "params": total, "params_billions": total / 1e9,
            "breakdown": {"transformer_layers": l * per_layer, "embeddings": embeddings}}


def flops(layers: int, hidden: int, vocab: int, seq: int, batch: int,
          tokens: float | None = None, gpus: int | None = None, tflops: float | None = None) -> dict:
    """Narayanan et al. 2021, eq. (3): F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration,
    counting the forward, the backward (2x forward) and the recomputed forward of activation
    checkpointing. With tokens, gpus and achieved TFLOP/s also eq. (4): time ~ 8 T P / (n X)."""
    _positive(layers=layers, hidden=hidden, vocab=vocab, seq=seq, batch=batch)
    l, h, V, s, B = layers, hidden, vocab, seq, batch
    F = 96 * B * s * l * h ** 2 * (1 + s / (6 * h) + V / (16 * l * h))
    out = {"equation": "Narayanan et al. 2021, eq. (3)",
           "formula": "F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))",
           "inputs": {"layers": l, "hidden": h, "vocab": V, "seq": s, "batch": B},
           "flops_per_iteration": F}
    given = [v is not None for v in (tokens, gpus, tflops)]
    if any(given):
        if not all(given):
            raise ValueError("the training-time estimate needs --tokens, --gpus and --tflops together")
        out["training_time"] = training_time(tokens, params(l, h, V, s)["params"], gpus, tflops)
    return out


def training_time(tokens: float, n_params: float, gpus: int, tflops: float) -> dict:
    """Narayanan et al. 2021, eq. (4): end-to-end training time ~ 8 T P / (n X)."""
    _positive(tokens=tokens, params=n_params, gpus=gpus, tflops=tflops)
    seconds = 8 * tokens * n_params / (gpus * tflops * 1e12)
    return {"equation": "Narayanan et al. 2021, eq. (4)", "formula": "time = 8 T P / (n X)",
            "inputs": {"tokens": tokens, "params": n_params, "gpus": gpus, "tflops_per_gpu": tflops},
            "seconds": seconds, "days": seconds / SECONDS_PER_DAY}


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
    psi, nd = n_params, dp
    parts = {"parameters_fp16": 2 * psi / (nd if zero_stage >= 3 else 1),
             "gradients_fp16": 2 * psi / (nd if zero_stage >= 2 else 1),
             "optimizer_states": k * psi / (nd if zero_stage >= 1 else 1)}
    total = sum(parts.values())
    formula = {0: "(2 + 2 + K) Psi", 1: "2Psi + 2Psi + K Psi / N_d", 2: "2Psi + (2 + K) Psi / N_d",
               3: "(2 + 2 + K) Psi / N_d"}[zero_stage]
    return {"equation": "Rajbhandari et al. 2019, section 5 and Figure 1", "formula": formula,
            "inputs": {"params": psi, "dp": nd, "zero_stage": zero_stage, "K": k},
            "bytes_per_device": total, "gb_per_device": total / 1e9,
            "breakdown_bytes": parts, "replicated_bytes": (2 + 2 + k) * psi}


def zero_holdings(dp: int, zero_stage: int) -> list[dict]:
    """Which part of each model state every data-parallel device keeps: 'all' or its 1/N_d slice."""
    _positive(dp=dp)
    rows = []
    for d in range(dp):
        for state, sharded_from in (("parameters_fp16", 3), ("gradients_fp16", 2),
                                    ("optimizer_states", 1)):
            sharded = zero_stage >= sharded_from
            rows.append({"device": d, "state": state,
                         "start": d / dp if sharded else 0.0,
                         "end": (d + 1) / dp if sharded else 1.0, "sharded": sharded})
    return rows


RECOMPUTE = ("none", "selective", "full")


def activations(seq: int, batch: int, hidden: int, heads: int, layers: int, tp: int = 1,
                sp: bool = False, recompute: str = "none") -> dict:
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
    s, b, h, a, L, t = seq, batch, hidden, heads, layers, tp
    attention_scores = 5 * a * s / (h * t)            # softmax input/output, dropout mask and output
    if recompute == "full":
        coef, formula = 2.0, "s b h (2)"
    elif recompute == "selective":
        coef, formula = (34 / t, "s b h (34/t)") if sp else (10 + 24 / t, "s b h (10 + 24/t)")
    elif sp:
        coef, formula = 34 / t + attention_scores, "s b h (34/t + 5as/(ht))"
    else:
        coef, formula = 10 + 24 / t + attention_scores, "s b h (10 + 24/t + 5as/(ht))"
    per_layer = s * b * h * coef
    return {"equation": "Korthikanti et al. 2022, Table 2 and eq. (1)-(6)", "formula": formula,
            "inputs": {"seq": s, "batch": b, "hidden": h, "heads": a, "layers": L, "tp": t,
                       "sp": sp, "recompute": recompute},
            "bytes_per_layer": per_layer, "bytes_total": per_layer * L,
            "gb_total": per_layer * L / 1e9}


def bubble(pipeline: int, microbatches: int, interleave: int = 1) -> dict:
    """Narayanan et al. 2021, section 2.2: bubble time / ideal time = (p - 1)/m for GPipe and 1F1B,
    (p - 1)/(v m) for the interleaved schedule with v model chunks per device."""
    _positive(pipeline=pipeline, microbatches=microbatches, interleave=interleave)
    p, m, v = pipeline, microbatches, interleave
    frac = (p - 1) / (v * m)
    return {"equation": "Narayanan et al. 2021, section 2.2",
            "formula": "(p - 1)/m" if v == 1 else "(p - 1)/(v m)",
            "inputs": {"pipeline": p, "microbatches": m, "interleave": v},
            "bubble_fraction": frac,
            # the same idle time as a share of the whole iteration, as a timeline shows it
            "idle_share_of_iteration": frac / (1 + frac)}
