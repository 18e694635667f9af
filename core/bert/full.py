"""`--preset full`: the shipped model, models/attention-lab-bert/, rebuilt from the registry packages.

corpus (core.bert.corpus) -> WordPiece vocabulary (core.bert.vocab) -> BERT pre-training (core.bert.pretrain)
-> fp16 safetensors + config.json + tokenizer files + manifest.json with the held-out metrics measured on
the fp16 weights that ship.
"""

from __future__ import annotations

import json
import pickle
import platform
import sys
import time
from pathlib import Path

import torch

from . import corpus as corpus_mod
from .evaluate import EVAL_SEED, EVAL_SEQ_LEN, FULL_PAIRS, QUICK_PAIRS, metrics_on, unk_rate
from .pretrain import EncodedDocs, Recipe, encode_docs, train
from .vocab import repo_characters, to_transformers, train_wordpiece

REPO = Path(__file__).resolve().parents[2]
MODEL_DIR = REPO / "models" / "attention-lab-bert"
WORK_DIR = REPO / "artifacts" / "bert-pretrain"  # ignored: caches and checkpoints, never committed
FULL = Recipe(steps=100000, batch_size=64)  # an upper bound: the time budget ends the run
TIME_BUDGET_S = 3600  # the shipped run's training budget (one hour on a 2-core machine)


def log(*a, **k):
    print(*a, file=sys.stderr, **{"flush": True, **k})


def prepare(recipe: Recipe, work: Path = WORK_DIR):
    """Corpus, vocabulary and token ids (cached in `work` by vocabulary size)."""
    work.mkdir(parents=True, exist_ok=True)
    cache = work / f"data-v{recipe.vocab_size}.pkl"
    tok_dir = work / f"tokenizer-v{recipe.vocab_size}"
    if cache.exists() and (tok_dir / "vocab.txt").exists():
        from transformers import BertTokenizerFast

        with open(cache, "rb") as f:
            blob = pickle.load(f)
        return BertTokenizerFast.from_pretrained(str(tok_dir)), blob
    t = time.perf_counter()
    c = corpus_mod.read_corpus()
    log(f"corpus read in {time.perf_counter() - t:.1f} s: {json.dumps(c.counts())}")
    sents = [s for lang in corpus_mod.LANGS for d in c.train[lang] for s in d]
    wp = train_wordpiece(sents, recipe.vocab_size, extra_chars=repo_characters())
    tok = to_transformers(wp, tok_dir, recipe.max_position)
    tok.save_pretrained(str(tok_dir))
    blob = {
        "train": {lang: encode_docs(tok, c.train[lang]).docs for lang in corpus_mod.LANGS},
        "heldout": {lang: encode_docs(tok, c.heldout[lang]).docs for lang in corpus_mod.LANGS},
        "heldout_text": c.heldout,
        "counts": c.counts(),
        "sources": corpus_mod.sources(),
    }
    with open(cache, "wb") as f:
        pickle.dump(blob, f)
    log(f"prepared in {time.perf_counter() - t:.1f} s")
    return tok, blob


def run(
    recipe: Recipe = FULL,
    out_dir: Path = MODEL_DIR,
    work: Path = WORK_DIR,
    log_every: int = 50,
    eval_pairs: dict | None = None,
    time_budget_s: float | None = None,
) -> dict:
    torch.set_flush_denormal(True)  # a separate process: denormals in Adam's moments slow CPU steps
    t0 = time.perf_counter()
    tok, blob = prepare(recipe, work)
    data = {lang: EncodedDocs(blob["train"][lang]) for lang in recipe.langs}
    log("train tokens: " + ", ".join(f"{k} {v.tokens():,}" for k, v in data.items()))
    ckpt = work / "checkpoint.pt"

    def on_step(step, mlm, nsp, model):
        if (step + 1) % 500 == 0:
            torch.save({"step": step + 1, "model": model.state_dict()}, ckpt)

    model, hist = train(recipe, tok, data, on_step=on_step, log_every=log_every, log=log, time_budget_s=time_budget_s)
    log(f"trained {hist['steps']} steps in {hist['seconds']:.0f} s; saving and evaluating")
    # ship fp16 and measure what ships: round-trip the weights through fp16 before evaluating
    out_dir.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(str(out_dir), safe_serialization=True)
    model.float()
    tok.save_pretrained(str(out_dir))
    metrics = metrics_on(model, tok, None, eval_pairs or FULL_PAIRS, encoded=blob["heldout"])
    quick = metrics_on(model, tok, None, QUICK_PAIRS, encoded=blob["heldout"])
    manifest = {
        "model": "attention-lab-bert",
        "architecture": "BertForPreTraining (post-LN BERT, MLM + NSP heads)",
        "recipe": {**hist["recipe"], "steps": hist["steps"]},
        "time_budget_s": time_budget_s,
        "seeds": {"train": recipe.seed, "evaluation": EVAL_SEED},
        "evaluation": {
            "pairs": eval_pairs or FULL_PAIRS,
            "quick_pairs": QUICK_PAIRS,
            "seq_len": EVAL_SEQ_LEN,
            "masking": "15 % chosen, 80/10/10, accuracy over every chosen position",
        },
        "corpus": {
            "sources": blob["sources"],
            "documents": blob["counts"],
            "train_tokens": {k: v.tokens() for k, v in data.items()},
            "heldout_split": "by document, 5 % (sha256 of language:index)",
        },
        "steps": hist["steps"],
        "train_seconds": round(hist["seconds"], 1),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "final_losses": {"mlm": sum(hist["mlm_loss"][-50:]) / 50, "nsp": sum(hist["nsp_loss"][-50:]) / 50},
        "heldout": metrics,
        "heldout_quick": quick,
        "unk_rate_heldout": {lang: unk_rate(tok, blob["heldout_text"][lang]) for lang in corpus_mod.LANGS},
        "weights": "fp16 safetensors; metrics measured on these fp16 weights",
        "machine": {
            "cpu_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {
        "steps": hist["steps"],
        "mlm_loss": hist["mlm_loss"],
        "nsp_loss": hist["nsp_loss"],
        "seconds": round(time.perf_counter() - t0, 1),
        "heldout": metrics,
    }


if __name__ == "__main__":  # pilots: python -m core.bert.full STEPS BATCH LR [SEQ]
    import dataclasses

    steps, bs, lr = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    seq = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    r = dataclasses.replace(
        FULL,
        steps=steps,
        batch_size=bs,
        peak_lr=lr,
        seq_len=seq,
        **({"hidden": int(sys.argv[5]), "intermediate": 4 * int(sys.argv[5])} if len(sys.argv) > 5 else {}),
    )
    res = run(r, out_dir=Path("/tmp/bert-pilot"), eval_pairs={"zh": 400, "en": 300}, log_every=20)
    print(json.dumps({k: res[k] for k in ("steps", "seconds", "heldout")}, indent=1))
