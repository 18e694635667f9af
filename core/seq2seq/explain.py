"""What the pages show, computed in one call per input (no streamlit here).

* :func:`check_input` says whether a student's text can go into a model, and if not, why
  (a notice code the page translates).
* :func:`bottleneck` runs a model and returns its output and the one vector c (lesson 2).
* :func:`trace` runs the attention model and returns everything lesson 3 draws: the BiGRU's
  forward and backward states, and for every decoder step e_ij, α_ij, c_i, s_i and the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .model import Seq2Seq
from .tasks import EOS, Example, Task

MAX_TYPED_CHARS = 200  # anything longer is cut before it is even checked against the vocabulary


@dataclass
class InputCheck:
    text: str  # cleaned text (what the model would read)
    ok: bool
    problem: str | None = None  # "empty" | "unknown_chars" | "too_long"
    unknown: list[str] = field(default_factory=list)
    max_len: int = 0
    length: int = 0
    notices: list[str] = field(default_factory=list)  # from core.text.clean: invisible_removed, ...


def check_input(task: Task, text: str | None) -> InputCheck:
    """Clean ``text`` and check it fits the model: not empty, every character in the vocabulary,
    no longer than the longest input the model was trained on."""
    from core.text import clean

    cleaned = clean(text, max_chars=MAX_TYPED_CHARS)
    s = cleaned.text
    notices = [n for n in cleaned.notices if n not in ("empty", "truncated")]
    base = dict(text=s, max_len=task.max_src_len, length=len(s), notices=notices)
    if not s:
        return InputCheck(ok=False, problem="empty", **base)
    if "truncated" in cleaned.notices:
        # the notice says how long the input really is, not where the cleaner cut it
        base["length"] = len(clean(text, max_chars=len(text or "") + 1).text)
    if "truncated" in cleaned.notices or len(s) > task.max_src_len:
        return InputCheck(ok=False, problem="too_long", **base)
    unknown = task.src_vocab.unknown(s)
    if unknown:
        return InputCheck(ok=False, problem="unknown_chars", unknown=unknown, **base)
    return InputCheck(ok=True, **base)


def _encode_one(model: Seq2Seq, task: Task, text: str):
    from .train import encode_batch

    src, lens, _, _ = encode_batch(task, [Example(text, "")], next(model.parameters()).device)
    return src, lens


@dataclass
class BottleneckView:
    source: str
    output: str
    target: str | None
    c: list[float]  # the fixed-length vector the decoder starts from
    position_correct: list[bool | None]  # per target position (None: no target known)

    @property
    def correct(self) -> bool | None:
        return None if self.target is None else self.output == self.target


@torch.no_grad()
def bottleneck(model: Seq2Seq, task: Task, text: str) -> BottleneckView:
    """The model's output for ``text`` and the vector c its encoder produced (uni: h_T;
    bi: [→h_T ; ←h_1])."""
    src, lens = _encode_one(model, task, text)
    ids, enc, _ = model.greedy(src, lens, trace=True)
    out = task.tgt_vocab.decode(ids[0].tolist())
    target = task.target(text)
    marks: list[bool | None] = (
        [i < len(out) and out[i] == ch for i, ch in enumerate(target)] if target is not None else []
    )
    return BottleneckView(text, out, target, enc.c[0].tolist(), marks)


@dataclass
class AttentionTrace:
    source: list[str]  # input characters (x_1..x_T)
    outputs: list[str]  # output characters, the last one "</s>" when the model stopped
    forward: list[list[float]]  # (T, H)  →h_j
    backward: list[list[float]]  # (T, H)  ←h_j
    energies: list[list[float]]  # (U, T)  e_ij
    weights: list[list[float]]  # (U, T)  α_ij
    contexts: list[list[float]]  # (U, D)  c_i
    states: list[list[float]]  # (U, S)  s_i
    top: list[list[tuple[str, float]]]  # (U, k) most probable outputs at each step
    output_text: str
    target: str | None

    @property
    def annotations(self) -> list[list[float]]:
        """h_j = [→h_j ; ←h_j] (Bahdanau et al. 2014, §3.2)."""
        return [f + b for f, b in zip(self.forward, self.backward)]

    def argmax_inputs(self) -> list[int]:
        """For each output step, the input position with the largest α_ij."""
        return [max(range(len(row)), key=row.__getitem__) for row in self.weights]


@torch.no_grad()
def trace(model: Seq2Seq, task: Task, text: str, k: int = 3) -> AttentionTrace:
    """Everything lesson 3 draws for one input, from one greedy decode of the attention model."""
    if model.cfg.attention != "bahdanau":
        raise ValueError("trace needs the attention model")
    src, lens = _encode_one(model, task, text)
    ids, enc, steps = model.greedy(src, lens, trace=True)
    H = model.cfg.enc_hidden
    ann = enc.annotations[0]  # (T, 2H)
    itos = task.tgt_vocab.itos
    outputs, top = [], []
    for i, st in zip(ids[0].tolist(), steps):
        outputs.append(EOS if itos[i] == EOS else itos[i])
        p, idx = st["probs"][0].topk(k)
        top.append([(itos[j], float(q)) for q, j in zip(p.tolist(), idx.tolist())])
    text_out = task.tgt_vocab.decode(ids[0].tolist())
    return AttentionTrace(
        source=list(text),
        outputs=outputs,
        forward=ann[:, :H].tolist(),
        backward=ann[:, H:].tolist(),
        energies=[st["energies"][0].tolist() for st in steps],
        weights=[st["weights"][0].tolist() for st in steps],
        contexts=[st["context"][0].tolist() for st in steps],
        states=[st["s"][0].tolist() for st in steps],
        top=top,
        output_text=text_out,
        target=task.target(text),
    )


@torch.no_grad()
def alignment_of(model: Seq2Seq, task: Task, text: str) -> tuple[list[str], list[list[float]]]:
    """The output token of every decoding step (the last is "</s>" when the model stopped) and
    the α matrix (one row per step, one column per input character)."""
    src, lens = _encode_one(model, task, text)
    ids, _, steps = model.greedy(src, lens, trace=True)
    tokens = [task.tgt_vocab.itos[i] for i in ids[0, : len(steps)].tolist()]
    return tokens, [st["weights"][0].tolist() for st in steps]


# -- lesson 3's predict block and lesson 2's "Try it" slider ------------------------------------

CLOSE_SHARE = 0.5  # "close": at least half the largest weight of the step ...
CLOSE_MIN = 0.01  # ... and at least this much (an input the step all but ignores is never close)


def verdict(weights: list[float], guess: int) -> str:
    """How good a guess of "the input step i looks at most" is, from that step's α_i·:
    ``"right"`` when ``guess`` has the largest weight, ``"close"`` when its weight is at least
    half the largest and at least 0.01, else ``"wrong"``."""
    if not 0 <= guess < len(weights):
        raise IndexError(f"guess {guess} is not an input position (0..{len(weights) - 1})")
    top = max(weights)
    a = weights[guess]
    if a == top:
        return "right"
    if a >= CLOSE_SHARE * top and a >= CLOSE_MIN:
        return "close"
    return "wrong"


def predictable_steps(outputs: list[str]) -> list[int]:
    """The output steps worth predicting: those that write a digit. A separator, the end marker
    or padding comes from no single input, so "which input does it look at" has no answer."""
    return [i for i, out in enumerate(outputs) if len(out) == 1 and out.isdecimal()]


@torch.no_grad()
def bottleneck_start(plain: Seq2Seq, attention: Seq2Seq, task: Task, text: str, default: int) -> int:
    """Where lesson 2's "Try it" slider starts: the length of the shortest prefix of ``text`` that
    the model without attention copies wrong and the attention model copies right (the bottleneck,
    seen). ``default`` when no prefix shows it."""
    for n in range(1, min(len(text), task.max_src_len) + 1):
        prefix = text[:n]
        if task.src_vocab.unknown(prefix):
            continue
        if bottleneck(plain, task, prefix).correct is False and bottleneck(attention, task, prefix).correct:
            return n
    return default
