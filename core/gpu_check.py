"""Every lesson's model on the GPU, in one go: ``python -m core.gpu_check`` (``make gpu-check``).

On a CUDA machine it runs, and prints the figures of:
1. BERT (lessons 4-7): one forward pass with attentions (a sentence capped at 64 tokens), float32 and under bfloat16
   autocast; attention weights checked against the CPU's float32 (max |difference|);
2. seq2seq (lessons 2-3): every committed checkpoint on the GPU, exact match on held-out
   examples, and a short live training run (lesson 3's date task with attention);
3. a BERT pre-training step (lesson 7): masked-LM loss (Devlin et al. 2018, 15 %, 80/10/10) through
   the encoder and the tied word embeddings, backward and AdamW, in bf16 autocast; the loss falls;
4. the Megatron demo (lesson 8): the tensor-parallel layer on torch.distributed, with nccl where
   there are at least two GPUs (one per rank) and gloo otherwise.
Without CUDA it says so and exits 0. ``--device cpu`` runs the same checks on the CPU (slow; it
shows the checks themselves work on a machine without a GPU). Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time


def _timed(fn, repeat: int, sync) -> float:
    fn()
    sync()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


TEXT = (
    "The animal didn't cross the street because it was too tired, and the bank by the river "
    "flooded after the storm, so the village waited for the morning train."
)


def check_bert(device, repeat: int) -> dict:
    import torch

    import core.bert as cb

    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    cpu = cb.load("", device="cpu")
    bundle = cb.load("", device=device)
    enc = cb.encode_pair(bundle, TEXT, None, max_length=64)
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        ref = torch.stack(cpu.encoder(input_ids=ids, output_attentions=True).attentions).double()
        model = bundle.encoder
        ids_d = ids.to(device)
        f32 = lambda: model(input_ids=ids_d, output_attentions=True)  # noqa: E731

        def bf16():
            with torch.autocast(device.type, dtype=torch.bfloat16):
                return model(input_ids=ids_d, output_attentions=True)

        got32 = torch.stack(f32().attentions).double().cpu()
        got16 = torch.stack(bf16().attentions).double().cpu()
        t32, t16 = _timed(f32, repeat, sync), _timed(bf16, repeat, sync)
    d32, d16 = (got32 - ref).abs().max().item(), (got16 - ref).abs().max().item()
    return {
        "model": bundle.name,
        "tokens": int(ids.shape[1]),
        "forward_fp32_ms": round(1000 * t32, 2),
        "forward_bf16_ms": round(1000 * t16, 2),
        "attn_max_diff_fp32": d32,
        "attn_max_diff_bf16": d16,
        "ok": d32 < 1e-3 and d16 < 5e-2,
    }


def check_seq2seq(device, train_seconds: float) -> dict:
    from core.seq2seq.evaluate import exact_match, predict
    from core.seq2seq.tasks import get_task
    from core.seq2seq.train import CHECKPOINT_DIR, live_config, load_checkpoint, train

    out = {}
    for path in sorted(CHECKPOINT_DIR.glob("*.safetensors")):
        task = get_task(path.stem.split("-")[0])
        examples = task.batch(random.Random(1), 500, "test")
        model = load_checkpoint(path, device=device)
        t0 = time.perf_counter()
        preds = predict(model, task, [e.src for e in examples])
        em = exact_match(preds, [e.tgt for e in examples])
        out[path.stem] = {"exact_match": round(em, 3), "predict_500_ms": round(1000 * (time.perf_counter() - t0), 1)}
    # lesson 2's live settings for 300 steps, on the device's own thread count and time budget
    cfg = dataclasses.replace(
        live_config("seq2seq", steps=300), eval_every=100, max_seconds=train_seconds, threads=None
    )
    t0 = time.perf_counter()
    res = train("date", "bahdanau", cfg, device=device)
    wall = time.perf_counter() - t0
    out["train_date_bahdanau"] = {
        "wall_s": round(wall, 1),
        "steps": res.steps,
        "valid_exact_match": round(res.valid_acc, 3),
    }
    # the committed checkpoints scored >= 0.99 on the CPU (their manifest); the GPU must agree
    ok = all(v["exact_match"] >= 0.95 for k, v in out.items() if "bahdanau" in k and k != "train_date_bahdanau")
    return {**out, "ok": ok}


def check_pretraining_step(device, steps: int = 5) -> dict:
    import torch

    import core.bert as cb
    from core.bert.pretraining import mask_tokens

    bundle = cb.load("", device=device)
    enc_model = bundle.encoder
    enc_model.train()
    tok = bundle.tokenizer
    texts = [
        TEXT,
        "Attention is all you need.",
        "注意力機制讓模型看見整個句子。",
        "The trophy would not fit in the suitcase because it was too big.",
    ] * 8  # batch of 32
    batch = tok(texts, padding="max_length", truncation=True, max_length=64, return_tensors="pt")
    masked, labels = mask_tokens(batch["input_ids"], tok, seed=0)
    masked, labels = masked.to(device), labels.to(device)
    attn = batch["attention_mask"].to(device)
    emb = enc_model.get_input_embeddings().weight  # (V, H), tied MLM decoder
    opt = torch.optim.AdamW(enc_model.parameters(), lr=1e-4)
    losses, times = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            h = enc_model(input_ids=masked, attention_mask=attn).last_hidden_state  # (B, T, H)
            logits = h @ emb.T  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
        losses.append(round(loss.item(), 4))
    enc_model.eval()
    return {
        "batch": list(masked.shape),
        "losses": losses,
        "step_ms_median": round(1000 * statistics.median(times[1:]), 1),
        "ok": losses[-1] < losses[0],
    }


def check_megatron() -> dict:
    import torch

    from core.megatron.demo import run_demo

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    res = run_demo(ranks=2, timeout=120)
    keep = {k: res[k] for k in ("ok", "backend", "devices", "wall_s", "error") if k in res}
    keep["gpus"] = gpus
    if isinstance(res.get("max_abs_diff"), dict):
        keep["max_abs_diff"] = max(res["max_abs_diff"].values())
    return keep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m core.gpu_check", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--device", choices=["cuda", "cpu"], default="cuda", help="cpu: run the same checks without a GPU (slow)"
    )
    ap.add_argument("--repeat", type=int, default=20, help="timed forward passes")
    ap.add_argument("--train-seconds", type=float, default=20.0)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = ap.parse_args(argv)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            f"No CUDA device: torch {torch.__version__} sees no GPU here, so there is nothing to check. "
            "The app runs on the CPU. (`--device cpu` runs the same checks on the CPU.)"
        )
        return 0
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        name = torch.cuda.get_device_name(device)
    else:
        name = "CPU"
    report = {
        "device": name,
        "torch": torch.__version__,
        "gpus": torch.cuda.device_count() if torch.cuda.is_available() else 0,
    }
    checks = [
        ("bert_forward", lambda: check_bert(device, args.repeat)),
        ("seq2seq", lambda: check_seq2seq(device, args.train_seconds)),
        ("pretraining_step", lambda: check_pretraining_step(device)),
        ("megatron_demo", check_megatron),
    ]
    failed = []
    for name_, fn in checks:
        t0 = time.perf_counter()
        try:
            report[name_] = fn()
        except Exception as e:  # a check that breaks is reported, and the others still run
            report[name_] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        report[name_]["check_s"] = round(time.perf_counter() - t0, 1)
        if not report[name_].get("ok", False):
            failed.append(name_)
        if not args.json:
            print(f"{name_}: {json.dumps(report[name_], ensure_ascii=False)}", flush=True)
    report["failed"] = failed
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(
            f"device {name}, torch {torch.__version__}: "
            + ("all checks passed" if not failed else f"FAILED: {', '.join(failed)}")
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
