"""`--preset live`: watch BERT learn (lesson 7). A tiny BERT pre-trained from scratch in well under a
minute on 2 CPU cores, on text that ships with the repository (the lessons' own Markdown, both languages).

Same recipe as the shipped model (core.bert.pretrain: 15 % chosen, 80/10/10, NSP 50/50), but tiny
(2 layers, hidden 64) and on ~50 KB of text, so it learns which characters are common and a little of
their neighbours, not language: the shipped model saw ~4 M tokens for over an hour.

Safe to run from several threads at once (two students pressing "train" together): all randomness
comes from generators owned by the run, nothing process-global is set (no torch.manual_seed, no
set_num_threads), and the corpus and vocabulary are built once, read-only afterwards.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
import time
from pathlib import Path
from typing import Callable

import torch

from .pretrain import Recipe, encode_docs, train

REPO = Path(__file__).resolve().parents[2]

LIVE = Recipe(
    layers=2,
    hidden=64,
    heads=2,
    intermediate=256,
    max_position=64,
    vocab_size=3000,
    steps=120,
    batch_size=32,
    seq_len=48,
    long_seq_len=64,
    long_frac=0.0,
    peak_lr=2e-3,
    warmup_frac=0.1,
    bf16=False,
    seed=0,
)

# The same sentences are filled in at the start, the middle and the end of the run ([MASK] = one token).
CLOZE = {
    "zh-TW": [
        "注意力機制讓模型看見整個[MASK]子。",
        "BERT 的輸入由詞元、片段與位置[MASK]入相加而成。",
        "遮罩語言模型預測被遮住的詞[MASK]。",
    ],
    "en": [
        "The model predicts the masked [MASK].",
        "Attention lets the decoder look at every encoder [MASK].",
        "BERT adds token, segment and position [MASK].",
    ],
}


def _strip_markdown(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)  # widgets, code
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\{#[^}]*\}", " ", text)  # step anchors
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links -> their words
    text = re.sub(r"[*_`>#|]", " ", text)
    return text


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[。！？.!?])\s*", text)
    return [p.strip() for p in parts if len(p.strip()) >= 4]


@functools.lru_cache(maxsize=1)
def lesson_documents() -> tuple:
    """One document per lesson step (a "## " section) per language, from lessons/*/{zh-TW,en}.md."""
    docs = []
    for md in sorted(REPO.glob("lessons/*/*.md")):
        for section in re.split(r"^## ", md.read_text(encoding="utf-8"), flags=re.M):
            sents = []
            for para in _strip_markdown(section).split("\n"):
                sents.extend(_sentences(re.sub(r"\s+", " ", para)))
            if len(sents) >= 2:
                docs.append(tuple(sents))
    return tuple(docs)


@functools.lru_cache(maxsize=1)
def _prepared():
    """(tokenizer, encoded documents): built once per process, then only read."""
    import tempfile

    from .vocab import to_transformers, train_wordpiece

    docs = lesson_documents()
    wp = train_wordpiece(
        [s for d in docs for s in d] + [c.replace("[MASK]", "") for v in CLOZE.values() for c in v],
        LIVE.vocab_size,
        min_frequency=2,
    )
    tok = to_transformers(wp, Path(tempfile.mkdtemp(prefix="bert-live-")), LIVE.max_position)
    return tok, encode_docs(tok, [list(d) for d in docs])


@torch.no_grad()
def cloze(model, tokenizer, top_k: int = 5) -> dict:
    """Top-k fillers of each CLOZE sentence's [MASK] under `model` (its MLM head, softmax)."""
    was_training = model.training
    model.eval()
    out = {}
    for lang, sents in CLOZE.items():
        rows = []
        for s in sents:
            enc = tokenizer(s, return_tensors="pt")
            logits = model(**enc).prediction_logits[0]  # (T, V)
            pos = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0])
            p, idx = logits[pos].softmax(-1).topk(top_k)
            rows.append(
                {
                    "text": s,
                    "candidates": [
                        {"token": tokenizer.convert_ids_to_tokens(int(i)), "prob": float(q)} for q, i in zip(p, idx)
                    ],
                }
            )
        out[lang] = rows
    model.train(was_training)
    return out


def pretrain_live(
    steps: int | None = None,
    on_step: Callable[[dict], None] | None = None,
    cancel: threading.Event | None = None,
    seed: int = 0,
    time_budget_s: float | None = None,
) -> dict:
    """Pre-train the tiny BERT; `on_step(info)` after each step with info = {"step", "steps", "progress",
    "mlm_loss", "nsp_loss", "cloze" (only at the start, middle and end: {"phase", lang: [...]})}.
    Set `cancel` to stop after the current step. With `time_budget_s` the run also ends when that many
    seconds are spent (a busy machine, several students at once): the learning-rate schedule then follows
    the clock (pretrain.train), `progress` is the larger of the steps' and the time's share, and the middle
    snapshot is taken when progress first reaches one half. Returns {"steps", "mlm_loss", "nsp_loss",
    "seconds", "cloze": {"start", "middle", "end"}, "cancelled"}."""
    tok, enc = _prepared()
    recipe = dataclasses.replace(LIVE, steps=steps or LIVE.steps, seed=seed)
    from .pretrain import build_model

    model = build_model(recipe, tok, torch.Generator().manual_seed(seed))
    snapshots = {"start": cloze(model, tok)}
    t_start = time.perf_counter()

    def progress_at(step):
        p = (step + 1) / recipe.steps
        if time_budget_s:
            p = max(p, (time.perf_counter() - t_start) / time_budget_s)
        return min(1.0, p)

    def step_cb(step, mlm, nsp, m):
        progress = progress_at(step)
        info = {"step": step + 1, "steps": recipe.steps, "progress": progress, "mlm_loss": mlm, "nsp_loss": nsp}
        if "middle" not in snapshots and (progress >= 0.5 or step + 1 == recipe.steps // 2):
            snapshots["middle"] = cloze(m, tok)
            info["cloze"] = {"phase": "middle", **snapshots["middle"]}
        if on_step is not None:
            on_step(info)

    if on_step is not None:
        on_step(
            {
                "step": 0,
                "steps": recipe.steps,
                "progress": 0.0,
                "mlm_loss": None,
                "nsp_loss": None,
                "cloze": {"phase": "start", **snapshots["start"]},
            }
        )
    t0 = time.perf_counter()
    model, hist = train(
        recipe, tok, {"zh": enc}, on_step=step_cb, cancel=cancel, model=model, time_budget_s=time_budget_s
    )
    snapshots["end"] = cloze(model, tok)
    if on_step is not None:
        done = 1.0 if not hist["cancelled"] else hist["steps"] / recipe.steps
        on_step(
            {
                "step": hist["steps"],
                "steps": recipe.steps,
                "progress": done,
                "mlm_loss": hist["mlm_loss"][-1] if hist["mlm_loss"] else None,
                "nsp_loss": hist["nsp_loss"][-1] if hist["nsp_loss"] else None,
                "cloze": {"phase": "end", **snapshots["end"]},
            }
        )
    return {
        "steps": hist["steps"],
        "mlm_loss": hist["mlm_loss"],
        "nsp_loss": hist["nsp_loss"],
        "seconds": time.perf_counter() - t0,
        "cloze": snapshots,
        "cancelled": hist["cancelled"],
        "recipe": recipe.to_dict(),
        "model": model,
        "tokenizer": tok,
    }
