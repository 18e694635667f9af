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

from .errors import CheckpointError, retrain_command
from .model import Seq2Seq, Seq2SeqConfig, count_parameters, masked_cross_entropy
from .tasks import BOS_ID, EOS_ID, PAD_ID, Example, Task, get_task

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
MANIFEST = CHECKPOINT_DIR / "manifest.json"


@dataclass
class TrainConfig:
    steps: int = 4000  # upper bound; early stopping usually ends sooner
    batch_size: int = 128
    lr: float = 3e-3
    clip: float = 1.0  # gradient-norm clipping keeps GRU training stable
    eval_every: int = 100
    valid_size: int = 400
    patience: int = 8  # evaluations without improvement before stopping
    target_acc: float = 1.0  # stop as soon as validation exact match reaches this
    max_seconds: float | None = None
    seed: int = 0
    threads: int | None = 2  # the command line sets torch's thread count from this; train() never
    # touches it (a process-wide setting, shared with other sessions)
    snapshot_every: int = 0  # >0: also report the probe's alignment every so many steps
    probe: str | None = None  # an input whose alignment is reported while training


LIVE_SECONDS = 45.0


def live_config(lesson: str, steps: int | None = None, probe: str | None = None) -> TrainConfig:
    """The pages' live-training configs: small batches, capped at LIVE_SECONDS, one thread (on a
    shared server one thread is also what keeps a busy machine from stalling the run)."""
    live = dict(batch_size=64, valid_size=100, patience=1000, max_seconds=LIVE_SECONDS, seed=0, threads=1)
    if lesson == "seq2seq":  # copy task, the student picks the model
        return TrainConfig(steps=steps or 600, eval_every=25, **live)
    if lesson == "bahdanau":  # date task with attention, alignment snapshots of the probe
        return TrainConfig(steps=steps or 500, eval_every=50, target_acc=1.01, snapshot_every=25, probe=probe, **live)
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


def make_model(task: Task, attention: str, generator: torch.Generator | None = None, **overrides) -> Seq2Seq:
    """A fresh model; with `generator`, its weights come from that generator alone."""
    from .model import init_parameters

    cfg = Seq2SeqConfig(
        task=task.name,
        attention=attention,
        src_vocab=len(task.src_vocab),
        tgt_vocab=len(task.tgt_vocab),
        max_src_len=task.max_src_len,
        max_tgt_len=task.max_tgt_len,
        **overrides,
    )
    if generator is None:
        return Seq2Seq(cfg)
    with torch.device("meta"):  # built without drawing from torch's global generator (meta: no data)
        model = Seq2Seq(cfg)
    return init_parameters(model.to_empty(device="cpu"), generator)


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


def train(
    task_name: str,
    attention: str,
    config: TrainConfig | None = None,
    on_progress: Callable[[Progress], bool | None] | None = None,
    model_overrides: dict | None = None,
    device=None,
) -> TrainResult:
    """Train one model. ``on_progress`` is called every ``eval_every`` (and ``snapshot_every``)
    steps; returning False stops training (the app's cancel button).

    Reproducible under concurrency: the weights come from a torch.Generator of this run and the
    batches from a random.Random of this run; nothing process-global (torch's global generator,
    its thread count) is read or set, so two students training at once each get the model a run
    alone would give."""
    cfg = config or TrainConfig()
    return _train(task_name, attention, cfg, on_progress, model_overrides, device)


def set_threads(threads: int | None) -> None:
    """The command line's thread count (process-wide: never called from the app)."""
    if threads is not None:
        torch.set_num_threads(max(1, min(threads, os.cpu_count() or 1)))


def _train(task_name, attention, cfg, on_progress, model_overrides, device) -> TrainResult:
    from .evaluate import exact_match, predict  # evaluate imports train's helpers

    task = get_task(task_name)
    generator = torch.Generator().manual_seed(cfg.seed)  # this run's own: see train()
    rng = random.Random(cfg.seed)
    device = torch.device(device or "cpu")
    model = make_model(task, attention, generator, **(model_overrides or {})).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    valid = task.batch(random.Random(cfg.seed + 7919), cfg.valid_size, "valid")

    result = TrainResult(model, task.name, attention, cfg.seed, 0, 0.0, 0.0)
    best_acc, best_state, since_best = -1.0, None, 0
    t0 = time.perf_counter()
    running = None
    for step in range(1, cfg.steps + 1):
        model.train()
        src, lens, tin, tout = encode_batch(task, task.batch(rng, cfg.batch_size), device)
        logits, _ = model(src, lens, tin)  # (B, U, V)
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


def _task_of(name: str) -> tuple[str | None, str | None]:
    """("date", "bahdanau") from "date-bahdanau.safetensors"."""
    stem = Path(name).name.removesuffix(".safetensors")
    task, _, attention = stem.partition("-")
    return (task, attention) if task and attention in ("none", "bahdanau") else (None, None)


def _write(path: Path, write) -> None:
    """Write through a temporary file, so a full disk leaves the old file whole, and say so."""
    import errno

    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CheckpointError("disk_full", file=path.name, folder=str(path.parent)) from None
        raise


def save_checkpoint(model: Seq2Seq, path: Path) -> None:
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    _write(Path(path), lambda p: save_file(state, str(p), metadata={"config": json.dumps(model.cfg.to_dict())}))


def load_checkpoint(path: Path | str, device=None) -> Seq2Seq:
    """A model from a safetensors file (no pickle: nothing in the file can run code).

    Raises CheckpointError("checkpoint_missing" / "checkpoint_corrupt", file=, command=) for a
    file that is gone, truncated or not a checkpoint of this model."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    path = Path(path)
    command = retrain_command(*_task_of(path.name))
    if not path.is_file():
        raise CheckpointError("checkpoint_missing", file=path.name, command=command)
    try:
        with safe_open(str(path), framework="pt") as f:
            cfg = Seq2SeqConfig(**json.loads((f.metadata() or {})["config"]))
        model = Seq2Seq(cfg)
        model.load_state_dict(load_file(str(path)))
    except Exception as exc:  # noqa: BLE001 - SafetensorError, KeyError, bad JSON, wrong shapes
        raise CheckpointError(
            "checkpoint_corrupt", file=path.name, command=command, reason=type(exc).__name__
        ) from None
    model.eval()
    return model.to(device or "cpu")


def read_manifest(path: Path | None = None, required: bool = True) -> dict:
    """The manifest. `required`: a missing, unreadable or empty one raises CheckpointError
    (the lessons cannot run without it); otherwise a missing one is an empty manifest (training
    writes the first entry)."""
    path = Path(path) if path is not None else MANIFEST
    command = retrain_command()
    if not path.exists():
        if required:
            raise CheckpointError("manifest_missing", file=path.name, command=command)
        return {"checkpoints": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["checkpoints"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "file" in e for e in entries):
            raise ValueError("entries")
    except (OSError, ValueError, KeyError, TypeError):
        raise CheckpointError("manifest_invalid", file=path.name, command=command) from None
    if required and not entries:
        raise CheckpointError("manifest_empty", file=path.name, command=command)
    return data


def train_and_save(
    task_name: str,
    attention: str,
    config: TrainConfig | None = None,
    out_dir: Path = CHECKPOINT_DIR,
    on_progress=None,
    model_overrides=None,
    heldout_n: int = 2000,
    device=None,
) -> dict:
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
        "file": name,
        "task": task_name,
        "attention": attention,
        "bidirectional": res.model.cfg.bidirectional,
        "seed": cfg.seed,
        **manifest_fields(report),
        "valid_exact_match": res.valid_acc,
        "train_seconds": round(res.seconds, 1),
        "steps": res.steps,
        "batch_size": cfg.batch_size,
        "device": f"{device or 'cpu'} ({platform.processor() or platform.machine()}, "
        f"{cfg.threads or torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "parameters": count_parameters(res.model),
        "bytes": (out_dir / name).stat().st_size,
        "train_config": asdict(cfg),
        "model_config": res.model.cfg.to_dict(),
    }
    manifest_path = out_dir / "manifest.json"
    manifest = read_manifest(manifest_path, required=False)
    manifest["checkpoints"] = [e for e in manifest["checkpoints"] if e["file"] != name] + [entry]
    manifest["checkpoints"].sort(key=lambda e: e["file"])
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    _write(manifest_path, lambda p: p.write_text(text, encoding="utf-8"))
    return entry
