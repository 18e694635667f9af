"""Training with fixed seeds, a progress callback, early stopping, checkpoints and a manifest.

The same function serves the command line (``python -m core.seq2seq train``), the committed
checkpoints (a longer run) and the pages' live training (a small config): the page passes a
callback that draws the progress bar and returns False when the student presses cancel.
"""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch

from .model import Seq2Seq, Seq2SeqConfig, count_parameters, masked_cross_entropy
from .tasks import BOS_ID, EOS_ID, PAD_ID, Example, Task, get_task

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
MANIFEST = CHECKPOINT_DIR / "manifest.json"


@dataclass
class TrainConfig:
    steps: int = 4000            # upper bound; early stopping usually ends sooner
    batch_size: int = 128
    lr: float = 3e-3
    clip: float = 1.0            # gradient-norm clipping keeps GRU training stable
    eval_every: int = 100
    valid_size: int = 400
    patience: int = 8            # evaluations without improvement before stopping
    target_acc: float = 1.0      # stop as soon as validation exact match reaches this
    max_seconds: float | None = None
    seed: int = 0
    threads: int | None = 2      # None: leave torch's thread count alone
    snapshot_every: int = 0      # >0: also report the probe's alignment every so many steps
    probe: str | None = None     # an input whose alignment is reported while training


LIVE_SECONDS = 45.0


def live_config(lesson: str, steps: int | None = None, probe: str | None = None) -> TrainConfig:
    """The pages' live-training configs: small batches, capped at LIVE_SECONDS, one thread (on a
    shared server one thread is also what keeps a busy machine from stalling the run)."""
    if lesson == "seq2seq":   # copy task, the student picks the model
        return TrainConfig(steps=steps or 600, batch_size=64, eval_every=25, valid_size=100, patience=1000,
                           max_seconds=LIVE_SECONDS, seed=0, threads=1)
    if lesson == "bahdanau":  # date task with attention, alignment snapshots of the probe
        return TrainConfig(steps=steps or 500, batch_size=64, eval_every=50, valid_size=100, patience=1000,
                           target_acc=1.01, max_seconds=LIVE_SECONDS, seed=0, threads=1,
                           snapshot_every=25, probe=probe)
    raise ValueError(f"no live config for {lesson!r}")


@dataclass
class Progress:
    step: int
    total_steps: int
    loss: float
    seconds: float
    valid_acc: float | None = None
    alignment: list[list[float]] | None = None  # probe: α (outputs x inputs), when asked
    probe_output: list[str] | None = None  # the probe's output token at each decoding step
    probe: str | None = None


@dataclass
class TrainResult:
    model: Seq2Seq
    task: str
    attention: str
    seed: int
    steps: int
    seconds: float
    valid_acc: float
    losses: list[tuple[int, float]] = field(default_factory=list)
    snapshots: list[Progress] = field(default_factory=list)
    cancelled: bool = False


def make_model(task: Task, attention: str, **overrides) -> Seq2Seq:
    cfg = Seq2SeqConfig(task=task.name, attention=attention, src_vocab=len(task.src_vocab),
                        tgt_vocab=len(task.tgt_vocab), max_src_len=task.max_src_len,
                        max_tgt_len=task.max_tgt_len, **overrides)
    return Seq2Seq(cfg)


def encode_batch(task: Task, examples: list[Example], device=None):
    """Padded tensors: src (B, T), src_len (B,), tgt_in (B, U+1) = <s> y, tgt_out (B, U+1) = y </s>."""
    src = [task.src_vocab.encode(e.src) for e in examples]
    tgt = [task.tgt_vocab.encode(e.tgt) for e in examples]
    T, U = max(map(len, src)), max(map(len, tgt)) + 1
    src_t = torch.full((len(src), T), PAD_ID, dtype=torch.long)
    tin = torch.full((len(tgt), U), PAD_ID, dtype=torch.long)
    tout = torch.full((len(tgt), U), PAD_ID, dtype=torch.long)
    for b, (s, y) in enumerate(zip(src, tgt)):
        src_t[b, : len(s)] = torch.tensor(s)
        tin[b, : len(y) + 1] = torch.tensor([BOS_ID] + y)
        tout[b, : len(y) + 1] = torch.tensor(y + [EOS_ID])
    lens = torch.tensor([len(s) for s in src])
    if device is not None:
        src_t, lens, tin, tout = (t.to(device) for t in (src_t, lens, tin, tout))
    return src_t, lens, tin, tout


def train(task_name: str, attention: str, config: TrainConfig | None = None,
          on_progress: Callable[[Progress], bool | None] | None = None,
          model_overrides: dict | None = None, device=None) -> TrainResult:
    """Train one model. ``on_progress`` is called every ``eval_every`` (and ``snapshot_every``)
    steps; returning False stops training (the app's cancel button)."""
    cfg = config or TrainConfig()
    before = torch.get_num_threads()
    if cfg.threads is not None:
        torch.set_num_threads(max(1, min(cfg.threads, os.cpu_count() or 1)))
    try:
        return _train(task_name, attention, cfg, on_progress, model_overrides, device)
    finally:
        torch.set_num_threads(before)  # the app's other pages share this process


def _train(task_name, attention, cfg, on_progress, model_overrides, device) -> TrainResult:
    from .evaluate import exact_match, predict  # evaluate imports train's helpers

    task = get_task(task_name)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    device = torch.device(device or "cpu")
    model = make_model(task, attention, **(model_overrides or {})).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    valid = task.batch(random.Random(cfg.seed + 7919), cfg.valid_size, "valid")

    result = TrainResult(model, task.name, attention, cfg.seed, 0, 0.0, 0.0)
    best_acc, best_state, since_best = -1.0, None, 0
    t0 = time.perf_counter()
    running = None
    for step in range(1, cfg.steps + 1):
        model.train()
        src, lens, tin, tout = encode_batch(task, task.batch(rng, cfg.batch_size), device)
        logits, _ = model(src, lens, tin)                                 # (B, U, V)
        loss = masked_cross_entropy(logits, tout)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
        result.losses.append((step, loss.item()))

        out_of_time = cfg.max_seconds is not None and time.perf_counter() - t0 > cfg.max_seconds
        # the last step (by count or by clock) is always evaluated, so the result has a score
        at_eval = step % cfg.eval_every == 0 or step == cfg.steps or out_of_time
        at_snap = cfg.snapshot_every and step % cfg.snapshot_every == 0
        if not (at_eval or at_snap):
            continue
        model.eval()
        p = Progress(step, cfg.steps, running, time.perf_counter() - t0)
        if at_eval:
            acc = exact_match(predict(model, task, [e.src for e in valid]), [e.tgt for e in valid])
            p.valid_acc = acc
            if acc > best_acc:
                best_acc, since_best = acc, 0
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                since_best += 1
        if cfg.probe and model.cfg.attention == "bahdanau":
            from .explain import alignment_of
            out, alpha = alignment_of(model, task, cfg.probe)
            p.alignment, p.probe_output, p.probe = alpha, out, cfg.probe
            result.snapshots.append(p)
        keep_going = on_progress(p) if on_progress else None
        result.steps = step
        if keep_going is False:
            result.cancelled = True
            break
        if out_of_time or (at_eval and (best_acc >= cfg.target_acc or since_best >= cfg.patience)):
            break
    result.steps = max(result.steps, step)
    result.seconds = time.perf_counter() - t0
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    result.valid_acc = max(best_acc, 0.0)
    return result


# ---------------------------------------------------------------- checkpoints
def checkpoint_name(task: str, attention: str) -> str:
    return f"{task}-{attention}.safetensors"


def save_checkpoint(model: Seq2Seq, path: Path) -> None:
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path), metadata={"config": json.dumps(model.cfg.to_dict())})


def load_checkpoint(path: Path | str, device=None) -> Seq2Seq:
    """A model from a safetensors file (no pickle: nothing in the file can run code)."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as f:
        cfg = Seq2SeqConfig(**json.loads(f.metadata()["config"]))
    model = Seq2Seq(cfg)
    model.load_state_dict(load_file(str(path)))
    model.eval()
    return model.to(device or "cpu")


def read_manifest(path: Path = MANIFEST) -> dict:
    if not path.exists():
        return {"checkpoints": []}
    return json.loads(path.read_text(encoding="utf-8"))


def train_and_save(task_name: str, attention: str, config: TrainConfig | None = None,
                   out_dir: Path = CHECKPOINT_DIR, on_progress=None, model_overrides=None,
                   heldout_n: int = 2000, device=None) -> dict:
    """Train, measure on the held-out set, write the checkpoint and its manifest entry."""
    from .evaluate import evaluate_model, manifest_fields

    cfg = config or TrainConfig()
    res = train(task_name, attention, cfg, on_progress, model_overrides, device)
    task = get_task(task_name)
    report = evaluate_model(res.model.to("cpu"), task, task.heldout(heldout_n))
    out_dir.mkdir(parents=True, exist_ok=True)
    name = checkpoint_name(task_name, attention)
    save_checkpoint(res.model, out_dir / name)
    import platform

    entry = {
        "file": name, "task": task_name, "attention": attention,
        "bidirectional": res.model.cfg.bidirectional, "seed": cfg.seed,
        **manifest_fields(report),
        "valid_exact_match": res.valid_acc, "train_seconds": round(res.seconds, 1),
        "steps": res.steps, "batch_size": cfg.batch_size,
        "device": f"{device or 'cpu'} ({platform.processor() or platform.machine()}, "
                  f"{cfg.threads or torch.get_num_threads()} threads)",
        "torch": torch.__version__, "parameters": count_parameters(res.model),
        "bytes": (out_dir / name).stat().st_size,
        "train_config": asdict(cfg), "model_config": res.model.cfg.to_dict(),
    }
    manifest_path = out_dir / "manifest.json"
    manifest = read_manifest(manifest_path)
    manifest["checkpoints"] = [e for e in manifest["checkpoints"] if e["file"] != name] + [entry]
    manifest["checkpoints"].sort(key=lambda e: e["file"])
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return entry
