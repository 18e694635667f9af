"""Figures a student can read at 1400 px: no text under 11 px, long grids wrap into bands with cut
text whole on hover, log axes labelled once per tick, a zero on a log axis drawn and labelled."""

from __future__ import annotations

import json
import math

import pytest

from core.figures import MIN_TEXT_PX, log_ticks
from core.figures import bert as bfig
from core.figures import megatron as mfig
from core.figures.seq2seq import loss_curve
from core.megatron.schedules import timeline


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def font_sizes(s: dict) -> list[tuple[str, float]]:
    """Every explicit font size in a figure's JSON, with where it was found."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                if (
                    k == "size"
                    and path
                    and path[-1] in ("font", "textfont", "tickfont", "insidetextfont", "outsidetextfont")
                    and isinstance(v, (int, float))
                ):
                    found.append((".".join(path), v))
                walk(v, path + [k])
        elif isinstance(node, list):
            for x in node:
                walk(x, path)

    walk(s, [])
    return found


def assert_legible(s: dict) -> None:
    small = [(where, v) for where, v in font_sizes(s) if v < MIN_TEXT_PX]
    assert not small, small
    ut = s["layout"].get("uniformtext")
    assert ut and ut["minsize"] >= MIN_TEXT_PX and ut["mode"] == "hide", ut
    assert s["layout"]["font"]["size"] >= 12
    for tr in s["data"]:
        assert tr.get("textangle", 0) in (0, None), tr.get("textangle")  # no vertical labels


def test_minimum_is_eleven_px():
    assert MIN_TEXT_PX == 11


@pytest.mark.parametrize(("lo", "hi"), [(0.3, 4.0), (1.2, 6.9), (1e-13, 1e-3), (0.05, 0.07)])
def test_log_ticks_are_few_distinct_and_in_range(lo, hi):
    vals, text = log_ticks(lo, hi)
    assert 2 <= len(vals) <= 7 and len(set(text)) == len(text)
    assert all(lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9) for v in vals)
    # each tick is 1, 2 or 5 times a power of ten (checked from the logarithm, not the code's loop)
    for v in vals:
        if v in (lo, hi):
            continue
        mant = round(v / 10 ** math.floor(math.log10(v) + 1e-12), 6)
        assert mant in (1.0, 2.0, 5.0), v


def test_short_log_range_gets_one_label_per_model():
    # Megatron-BERT sizes 0.336, 1.3, 3.9 billion: less than one decade, so no pile of minor labels
    table = [
        {"model": m, "race": r}
        for m, r in (("Megatron-336M", 83.0), ("Megatron-1.3B", 87.3), ("Megatron-3.9B", 89.5), ("RoBERTa", 83.2))
    ]
    params = {"Megatron-336M": 336e6, "Megatron-1.3B": 1.3e9, "Megatron-3.9B": 3.9e9}
    s = spec(mfig.bert_results_figure(table, "race", params))
    ax = s["layout"]["xaxis"]
    assert ax["type"] == "log" and ax["tickmode"] == "array"
    assert [round(v, 3) for v in ax["tickvals"]] == [0.336, 1.3, 3.9]
    assert_legible(s)


def test_loss_curve_log_axis_has_no_minor_pile():
    pts = [(i, 2.5 * 0.97**i + 0.4) for i in range(1, 200)]  # loss 2.8 -> 0.4: less than a decade
    ax = spec(loss_curve(pts))["layout"]["yaxis"]
    assert ax["type"] == "log" and len(ax["tickvals"]) <= 7
    assert len(set(ax["ticktext"])) == len(ax["ticktext"])


def test_a_zero_difference_is_drawn_and_says_zero():
    s = spec(mfig.diff_figure({"output": 0.0, "grad": 3e-7}, 1e-5))
    bar = s["data"][0]
    x0 = 10 ** s["layout"]["xaxis"]["range"][0]
    zero = bar["y"].index("output")
    assert bar["x"][zero] > x0 * 5  # a bar you can see, not a zero-width one at the axis edge
    assert bar["text"][zero] == "0" and bar["customdata"][zero] == "0"
    assert_legible(s)


def test_interleaved_timeline_is_legible_and_its_shades_are_in_the_legend():
    tl = timeline("interleaved", 4, 8, 2)
    s = spec(mfig.pipeline_figure(tl, labels={"chunk": "chunk"}))
    assert_legible(s)
    entries = [(tr["name"], tr["marker"]["color"], tr["marker"]["opacity"]) for tr in s["data"]]
    assert len(entries) == 4
    for colour in {c for _, c, _ in entries}:
        assert sorted(o for _, c, o in entries if c == colour) == [0.6, 1.0]  # both shades named
    assert sum(len(tr["x"]) for tr in s["data"]) == 2 * 4 * 8 * 2


def _grid_cells(s: dict) -> tuple[list[list], list[list], list[list]]:
    tr = s["data"][0]
    return tr["z"], tr["text"], tr["customdata"]


def test_a_short_input_is_one_band_with_its_tokens_on_the_axis():
    toks = ["[CLS]", "the", "bank", "[SEP]"]
    s = spec(bfig.wordpiece_figure(toks, [101, 1996, 2924, 102], [0, 1, 2, 3], [False] * 4))
    assert_legible(s)
    assert s["data"][0]["text"][0] == toks


def test_a_long_input_wraps_into_bands_and_keeps_every_token_on_hover():
    long_word = "supercalifragilisticexpialidocious"
    toks = ["[CLS]"] + [f"w{i}" for i in range(70)] + [long_word, "注意力機制", "[SEP]"]
    n = len(toks)
    s = spec(bfig.wordpiece_figure(toks, list(range(n)), list(range(n)), [False] * n))
    assert_legible(s)
    z, text, hover = _grid_cells(s)
    per_band = len(z[0])
    bands = math.ceil(n / per_band)
    assert bands >= 2 and len(z) == 3 * bands  # header row + piece row + id row per band
    assert per_band * bfig.MIN_CELL <= bfig.PLOT_PX
    pieces = [c for b in range(bands) for c in text[3 * b + 1]][:n]
    hovers = " ".join(str(c) for row in hover for c in row)
    for j, tok in enumerate(toks):
        assert tok in hovers  # every token whole on hover
        cell = pieces[j]
        assert cell == tok or (cell.endswith("…") and tok.startswith(cell[:-1])), (tok, cell)
    assert any(c.endswith("…") for c in pieces)  # the long word is cut, not "-"
    assert "-" not in pieces


def test_every_grid_figure_of_lessons_6_and_7_is_legible():
    toks = ["[CLS]", "注", "意", "力", "let", "##s", "un", "##aff", "##able", "[SEP]"] * 3
    n = len(toks)
    figs = [
        bfig.wordpiece_figure(toks, list(range(n)), list(range(n)), [t.startswith("##") for t in toks]),
        bfig.input_rows_figure(toks, {"ids": list(range(n)), "segment": [0] * n, "position": list(range(n))}),
        bfig.batch_figure([toks, toks[:5] + ["[PAD]"] * (n - 5)], [[1] * n, [1] * 5 + [0] * (n - 5)]),
        bfig.masking_figure(
            toks,
            ["[MASK]" if i % 7 == 3 else t for i, t in enumerate(toks)],
            ["mask" if i % 7 == 3 else "not chosen" for i in range(n)],
        ),
        bfig.task_heads_figure(toks),
    ]
    for fig in figs:
        assert_legible(spec(fig))


def test_single_characters_stand_upright_and_long_labels_turn():
    from core.figures import seq2seq as sfig

    src = list("二〇二六年十二月二日") + ["</s>"]
    w = [[1.0 / len(src)] * len(src) for _ in range(11)]
    ax = spec(sfig.alignment(w, src, list("2026-12-02") + ["</s>"]))["layout"]["xaxis"]
    assert ax["tickangle"] == 0 and len(ax["tickvals"]) == len(src)  # every input labelled, upright
    words = [f"token{i:02d}xyz" for i in range(30)]
    ax = spec(sfig.alignment([[0.0] * 30] * 2, words, ["a", "b"]))["layout"]["xaxis"]
    assert ax["tickangle"] == -45


def test_bi_gru_annotations_label_both_halves_and_leave_no_empty_band():
    from core.figures import seq2seq as sfig

    H, src = 16, list("12/02/26")
    s = spec(sfig.annotations([[0.1] * H] * len(src), [[-0.1] * H] * len(src), src))
    ax = s["layout"]["xaxis"]
    assert ax["side"] == "bottom" and ax.get("showticklabels") is not False and ax.get("tickangle", 0) == 0
    assert any(t.startswith("→") for t in ax["ticktext"]) and any(t.startswith("←") for t in ax["ticktext"])
    assert s["layout"]["margin"]["t"] <= 80  # no band reserved for a top axis
    assert all(a["yref"] == "paper" and a["y"] >= 1.0 for a in s["layout"]["annotations"])
    assert_legible(s)
