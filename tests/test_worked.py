"""The hand-sized worked examples against an independent float64 computation written out here
(plain Python math, no torch), and every number lesson 02 states against the committed manifest."""

from __future__ import annotations

import json
import math
import re

import pytest

from core import worked
from core.lessons import ROOT

TOL = 1e-12


def close(a, b, tol=TOL):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            close(x, y, tol)
    else:
        assert math.isclose(a, b, rel_tol=0, abs_tol=tol), (a, b)


def softmax(xs):
    m = max(xs)
    ex = [math.exp(x - m) for x in xs]
    return [e / sum(ex) for e in ex]


def matvec(M, x):  # M as written in the paper (rows = outputs), x a vector
    return [sum(M[r][c] * x[c] for c in range(len(x))) for r in range(len(M))]


# -- lesson 3: Bahdanau et al. 2014, eqs. (5)-(6) ---------------------------------------------------
def test_bahdanau_example_matches_the_equations_by_hand():
    ex = worked.bahdanau()
    s, h = ex.s_prev, ex.h
    Ws = matvec(ex.W_a, s)
    e = []
    for h_j in h:
        Uh = matvec(ex.U_a, h_j)
        hidden = [math.tanh(a + b) for a, b in zip(Ws, Uh)]
        e.append(sum(v * x for v, x in zip(ex.v_a, hidden)))
    alpha = softmax(e)
    c = [sum(alpha[j] * h[j][d] for j in range(3)) for d in range(2)]
    close(ex.e, e)
    close(ex.alpha, alpha)
    close(ex.c, c)
    # the numbers a student checks on paper: tanh(1.5) - tanh(0.5), 2 tanh(0.5), tanh(1.5) + tanh(0.5)
    close(ex.e, [math.tanh(1.5) - math.tanh(0.5), 2 * math.tanh(0.5), math.tanh(1.5) + math.tanh(0.5)])
    assert abs(sum(ex.alpha) - 1) < TOL
    assert ex.alpha[2] > ex.alpha[1] > ex.alpha[0]  # x₃ matches s best, x₁ worst


def test_bahdanau_example_uses_the_model_code_not_a_copy(monkeypatch):
    """Break the model's softmax and the example must change: the numbers come from core."""
    from core.seq2seq import model

    good = worked.bahdanau().alpha
    monkeypatch.setattr(model.torch, "softmax", lambda x, dim: x * 0 + 1 / x.shape[dim])
    assert worked.bahdanau().alpha != good


# -- lesson 4: Vaswani et al. 2017, eq. (1), three tokens, d_k = 2 ------------------------------------
def test_attention_example_matches_eq1_by_hand():
    ex = worked.attention()
    assert ex.d_k == 2 and len(ex.tokens) == 3
    Q, K, V = ex.Q, ex.K, ex.V
    for i in range(3):
        dots = [sum(Q[i][d] * K[j][d] for d in range(2)) for j in range(3)]
        scaled = [x / math.sqrt(2) for x in dots]
        w = softmax(scaled)
        z = [sum(w[j] * V[j][d] for j in range(3)) for d in range(2)]
        close(ex.dots[i], dots)
        close(ex.scaled[i], scaled)
        close(ex.weights[i], w)
        close(ex.Z[i], z)
    # row "sat": scores 1/√2, 2/√2, 1/√2 -> weights e^a/(2e^a + e^{2a}) with a = 1/√2
    a = 1 / math.sqrt(2)
    close(ex.weights[2][1], math.exp(2 * a) / (2 * math.exp(a) + math.exp(2 * a)))


# -- lesson 8: Shoeybi et al. 2019, column- then row-parallel --------------------------------------
def test_megatron_example_split_by_hand():
    ex = worked.megatron()
    X, A, B = ex.X[0], ex.A, ex.B
    assert len(A) == 2 and len(A[0]) == 4 and len(B) == 4 and len(B[0]) == 2  # a 2x4 weight, then 4x2
    Y = [sum(X[r] * A[r][c] for r in range(2)) for c in range(4)]
    Z = [sum(Y[r] * B[r][c] for r in range(4)) for c in range(2)]
    close(ex.Y_full[0], Y)
    close(ex.Z_full[0], Z)
    # rank i holds columns 2i, 2i+1 of A and rows 2i, 2i+1 of B
    for i in range(2):
        close(ex.A_parts[i], [row[2 * i : 2 * i + 2] for row in A])
        close(ex.B_parts[i], B[2 * i : 2 * i + 2])
        close(ex.Y_parts[i][0], Y[2 * i : 2 * i + 2])
        partial = [sum(Y[2 * i + r] * B[2 * i + r][c] for r in range(2)) for c in range(2)]
        close(ex.Z_parts[i][0], partial)
    close(ex.Z[0], Z)  # the all-reduce of the partial sums is the unsplit result
    assert ex.Z_parts[0] != ex.Z  # and one rank alone is wrong


def test_unknown_example_is_a_clear_error():
    with pytest.raises(ValueError, match="known: bahdanau, attention, megatron"):
        worked.example("transformer")


# -- lesson 2: every number it states, against the manifest ---------------------------------------
MANIFEST = json.loads((ROOT / "core/seq2seq/checkpoints/manifest.json").read_text(encoding="utf-8"))


def _ckpt(task: str, attention: str) -> dict:
    return next(c for c in MANIFEST["checkpoints"] if c["task"] == task and c["attention"] == attention)


def _exact(task: str, attention: str, lengths: str) -> float:
    return next(b["exact_match"] for b in _ckpt(task, attention)["by_length"] if b["lengths"] == lengths)


def _row(task: str, lengths: str) -> list[float]:
    return next(r["accuracy"] for r in _ckpt(task, "none")["per_position_by_length"] if r["lengths"] == lengths)


def _middle_third(acc):
    n = len(acc)
    part = acc[n // 3 : 2 * n // 3]
    return sum(part) / len(part)


def _last_five(acc):
    return sum(acc[-5:]) / 5


def _pct(x: float) -> str:
    """How the lesson writes a share: whole percent, one decimal under 10 %."""
    v = x * 100
    return f"{v:.1f}" if v < 9.95 and round(v) != v else f"{v:.0f}"


# (the number as written, the value computed from the manifest)
STATED = [
    ("99", _exact("copy", "none", "1-5")),
    ("86", _exact("copy", "none", "6-10")),
    ("29", _exact("copy", "none", "11-15")),
    ("1.7", _exact("copy", "none", "16-20")),
    ("0", max(_exact("copy", "none", f"{lo}-{lo + 4}") for lo in (21, 26, 31, 36))),
    ("98", min(b["exact_match"] for b in _ckpt("copy", "bahdanau")["by_length"])),
    ("51", _exact("reverse", "none", "11-15")),
    ("7.4", _exact("reverse", "none", "16-20")),
    ("52", _middle_third(_row("copy", "16-20"))),
    ("37", _middle_third(_row("copy", "21-25"))),
    ("54", _last_five(_row("copy", "16-20"))),
    ("39", _last_five(_row("copy", "21-25"))),
    ("20", _middle_third(_row("copy", "36-40"))),
    ("8.5", _last_five(_row("copy", "36-40"))),
]


@pytest.mark.parametrize("written,value", STATED, ids=[w for w, _ in STATED])
def test_lesson02_numbers_match_the_manifest(written, value):
    if written == "98":
        assert value >= 0.98  # "98 % or more at every length"
    else:
        assert _pct(value) == written, f"the manifest gives {value:.4f}, the lesson says {written} %"
    for lang in ("en", "zh-TW"):
        text = (ROOT / f"lessons/02-seq2seq/{lang}.md").read_text(encoding="utf-8")
        assert re.search(rf"(?<![\d.]){re.escape(written)}\s?%", text), f"{lang}.md does not state {written} %"


def test_lesson02_shape_claims_hold():
    """Middle dip for 16–25 letters; a steady fall to the end from 26 on; reversing nearly doubles 11–15."""
    for lengths in ("16-20", "21-25"):
        row = _row("copy", lengths)
        assert _middle_third(row) < _last_five(row), lengths
    for lengths in ("26-30", "31-35", "36-40"):
        row = _row("copy", lengths)
        assert _middle_third(row) > _last_five(row), lengths
    ratio = _exact("reverse", "none", "11-15") / _exact("copy", "none", "11-15")
    assert 1.6 < ratio < 2.0  # "nearly doubles"
    assert 128 * 32 == 4096 and round(40 * math.log2(26)) == 188


# -- the numbers the lessons write out by hand are core's numbers -----------------------------------
def _r3(x: float) -> str:
    return f"{x:.3f}"


def _lesson(folder: str, lang: str) -> str:
    return (ROOT / f"lessons/{folder}/{lang}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_lessons_state_the_worked_numbers_core_computes(lang):
    b = worked.bahdanau()
    text = _lesson("03-bahdanau", lang)
    for x in [*b.e, *b.c]:
        assert _r3(x) in text, (lang, _r3(x))
    assert "\\alpha_i = (" + ", ".join(_r3(a) for a in b.alpha) + ")" in text
    a = worked.attention()
    text = _lesson("04-self-attention", lang)
    assert ", ".join(_r3(w) for w in a.weights[2]) in text  # the row of "sat"
    assert "(" + ", ".join(_r3(z) for z in a.Z[2]) + ")" in text
    m = worked.megatron()
    text = _lesson("08-megatron", lang)
    for part in (m.Y_parts[0][0], m.Y_parts[1][0], m.Z_parts[0][0], m.Z_parts[1][0], m.Z[0]):
        assert "(" + ", ".join(f"{v:.0f}" for v in part) + ")" in text
    for folder, name in (("03-bahdanau", "bahdanau"), ("04-self-attention", "attention"), ("08-megatron", "megatron")):
        assert f"```widget worked-example\nexample: {name}\n```" in _lesson(folder, lang)


def _worked_app(name: str) -> None:  # runs as its own script inside AppTest
    from ui import state
    from ui.worked import worked_example

    state.init()
    worked_example({"example": name}, f"test.{name}")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
@pytest.mark.parametrize("name", worked.EXAMPLES)
def test_worked_example_renders_core_numbers(name, lang):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_worked_app, args=(name,), default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    df = at.dataframe[0].value
    cells = {str(v) for col in df.columns for v in df[col]}
    if name == "bahdanau":
        assert "0.443" in cells and "(0.685, 0.805)" in cells
    elif name == "attention":
        assert "(0.248, 0.503, 0.248)" in cells and len(df) == 3
    else:
        assert "(7, 9)" in cells and "(4, 3)" in cells and "(3, 6)" in cells and "(1, 1; 0, 1)" in cells
    title = "Worked by hand" if lang == "en" else "手算範例"
    assert any(title in m.value for m in at.markdown)


def test_lesson8_parameter_counts_are_core_counts_and_an_independent_sum():
    """340M (BERT paper) / 335,141,888 (no heads) / 336,226,108 (with heads, rounds to Megatron's 336M)."""
    from core.bert.params import count

    c = count(hidden=1024, layers=24, heads=16, intermediate=4096)
    V, H, F, L, P = 30522, 1024, 4096, 24, 512
    layer = 4 * (H * H + H) + (H * F + F) + (F * H + H) + 2 * 2 * H
    model = V * H + P * H + 2 * H + 2 * H + L * layer + (H * H + H)  # embeddings, layers, pooler
    heads = (H * H + H) + 2 * H + V + (2 * H + 2)  # MLM transform, its LayerNorm, output bias; NSP
    assert c.bert_model_total == model == 335_141_888
    assert c.pretraining_total == model + heads == 336_226_108
    assert round(c.pretraining_total / 1e6) == 336
    for lang in ("en", "zh-TW"):
        text = _lesson("08-megatron", lang)
        assert "335,141,888" in text and "336,226,108" in text and "340M" in text and "336M" in text
