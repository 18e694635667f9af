"""The lecture's sentiment-factor story, live on the model in use, with posts in the page's language.

The lecture: a student recorded every day's tweets, classified each as positive / neutral /
negative with BERT, and compared the daily mix with the Nasdaq's move. We have no tweets and no
prices, so we wrote our own short market posts (core/bert/data/posts.json in English,
posts_zh.json in Traditional Chinese, labelled by their authors) and show only the first half of that pipeline: classify, then aggregate per day.

How a post is scored (said plainly on the page): the model in use has no sentiment
head, so we add one: a 3-way softmax layer (logistic regression, the "classification on the
sentence vector" head of Devlin et al. 2018, §4.1, with BERT frozen) trained at load time on the
`train` posts' sentence vectors (mean-pooled, L2-normalised), with L2 regularisation. The `days`
posts are never trained on: their accuracy is the held-out figure we report.

Daily factor = (#positive - #negative) / #posts of that day, in [-1, 1].
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .loader import BertBundle
from .outputs import sentence_embeddings

POSTS_FILE = Path(__file__).resolve().parent / "data" / "posts.json"
POSTS_FILES = {"en": POSTS_FILE, "zh-TW": POSTS_FILE.with_name("posts_zh.json")}
LABELS = ("positive", "neutral", "negative")
MAX_UNK = 0.10  # above this share of [UNK] tokens a model cannot read the posts: warn, do not score


def posts_file(lang: str) -> Path:
    """The posts of the page's language: Traditional Chinese for zh-TW, English otherwise."""
    return POSTS_FILES.get(lang, POSTS_FILE)


def unk_rate(tokenizer, texts: list[str]) -> float:
    """Share of the word-piece tokens of `texts` (no [CLS]/[SEP]) that are the tokenizer's [UNK]."""
    unk = tokenizer.unk_token_id
    ids = [i for x in tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] for i in x]
    return sum(i == unk for i in ids) / max(1, len(ids))


def load_posts(path: Path | str = POSTS_FILE) -> dict:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    for post in data["train"] + [p for d in data["days"] for p in d["posts"]]:
        if post["label"] not in LABELS:
            raise ValueError(f"unknown label {post['label']!r}")
    return data


def fit_softmax_head(
    x: np.ndarray, y: np.ndarray, n_classes: int, l2: float = 1e-3, steps: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression p = softmax(W x + b), fitted by L-BFGS in float64:
    min_W,b  mean cross-entropy + l2 * ||W||^2. Deterministic (full batch, zero start)."""
    X = torch.as_tensor(x, dtype=torch.float64)  # (N, H)
    Y = torch.as_tensor(y, dtype=torch.long)  # (N,)
    W = torch.zeros(n_classes, X.shape[1], dtype=torch.float64, requires_grad=True)  # (C, H)
    b = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)  # (C,)
    opt = torch.optim.LBFGS(
        [W, b], max_iter=steps, tolerance_grad=1e-10, tolerance_change=1e-12, line_search_fn="strong_wolfe"
    )

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(X @ W.T + b, Y) + l2 * (W * W).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return W.detach().numpy(), b.detach().numpy()


@dataclass
class Scored:
    texts: list[str]
    probs: np.ndarray  # (N, 3) in LABELS order
    predicted: list[str]

    def table(self) -> list[dict]:
        return [
            {"post": t, "predicted": p, **{f"p_{lab}": float(self.probs[i, j]) for j, lab in enumerate(LABELS)}}
            for i, (t, p) in enumerate(zip(self.texts, self.predicted))
        ]


class SentimentScorer:
    """A softmax head on frozen sentence vectors, fitted on our `train` posts when constructed."""

    def __init__(self, bundle: BertBundle, posts: dict | None = None, l2: float = 1e-3):
        self.bundle = bundle
        self.posts = posts or load_posts()
        train = self.posts["train"]
        x = sentence_embeddings(bundle, [p["text"] for p in train])  # (N, H)
        y = np.array([LABELS.index(p["label"]) for p in train])
        self.W, self.b = fit_softmax_head(x, y, len(LABELS), l2=l2)
        self.train_accuracy = float(((x @ self.W.T + self.b).argmax(1) == y).mean())
        self.n_train = len(train)

    def score(self, texts: list[str]) -> Scored:
        if not texts:
            return Scored(texts=[], probs=np.zeros((0, len(LABELS))), predicted=[])
        x = sentence_embeddings(self.bundle, list(texts)).astype(np.float64)  # (N, H)
        z = x @ self.W.T + self.b  # (N, 3)
        z = z - z.max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        return Scored(texts=list(texts), probs=p, predicted=[LABELS[i] for i in p.argmax(1)])


@dataclass
class FactorResult:
    days: list[dict]  # per day: date, n, counts (model and human), factor (model and human)
    posts: list[dict]  # every held-out post: date, text, human label, predicted, probabilities
    accuracy: float  # held-out accuracy on the `days` posts
    confusion: list[list[int]]  # rows = human label, columns = predicted, in LABELS order
    n_train: int
    train_accuracy: float
    correlation: float  # Pearson r between the model's and the human daily factor


def _factor(labels: list[str]) -> float:
    return (labels.count("positive") - labels.count("negative")) / max(len(labels), 1)


def sentiment_factor(scorer: SentimentScorer) -> FactorResult:
    """Score every held-out post, compare with its author's label, aggregate per day."""
    days = scorer.posts["days"]
    flat = [(d["date"], p) for d in days for p in d["posts"]]
    scored = scorer.score([p["text"] for _, p in flat])
    posts = [
        {
            "date": date,
            "text": p["text"],
            "human": p["label"],
            "predicted": pred,
            **{f"p_{lab}": float(scored.probs[i, j]) for j, lab in enumerate(LABELS)},
        }
        for i, ((date, p), pred) in enumerate(zip(flat, scored.predicted))
    ]
    confusion = [[0] * len(LABELS) for _ in LABELS]
    for row in posts:
        confusion[LABELS.index(row["human"])][LABELS.index(row["predicted"])] += 1
    per_day = []
    for d in days:
        rows = [r for r in posts if r["date"] == d["date"]]
        model, human = [r["predicted"] for r in rows], [r["human"] for r in rows]
        per_day.append(
            {
                "date": d["date"],
                "n": len(rows),
                **{f"model_{lab}": model.count(lab) for lab in LABELS},
                **{f"human_{lab}": human.count(lab) for lab in LABELS},
                "factor_model": _factor(model),
                "factor_human": _factor(human),
            }
        )
    fm = np.array([d["factor_model"] for d in per_day])
    fh = np.array([d["factor_human"] for d in per_day])
    corr = float(np.corrcoef(fm, fh)[0, 1]) if fm.std() > 0 and fh.std() > 0 else float("nan")
    accuracy = sum(r["human"] == r["predicted"] for r in posts) / max(len(posts), 1)
    return FactorResult(
        days=per_day,
        posts=posts,
        accuracy=accuracy,
        confusion=confusion,
        n_train=scorer.n_train,
        train_accuracy=scorer.train_accuracy,
        correlation=corr,
    )


def score_posts(scorer: SentimentScorer, texts: list[str]) -> Scored:
    return scorer.score(texts)
