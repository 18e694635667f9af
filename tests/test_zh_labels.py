"""Chinese all the way through: every lesson rendered in zh-TW under AppTest, and every label a
reader sees (titles, prose, captions, widget labels and options, metric labels, table headers,
figure titles, axis and colour-bar titles, legends, annotations) checked for ASCII words.

A word passes when it is in :data:`ALLOW` (each group with its reason), is a math symbol (one
letter with an optional subscript: x_j, W_a, h_1), or is part of an example input on offer (the
text boxes' values and the example pickers' options, whose WordPiece pieces show in figures).
Data cells (table cells, token labels in figures) are data, not labels: there only ``None``,
``nan`` and snake_case keys fail, and a table cell that is one bare English word.
Prose drops code spans, math and link targets first; English set in italics (a cited title) and an
English gloss in full-width parentheses after its Chinese term (注意力（attention）) are allowed.
"""

from __future__ import annotations

import json
import re

import pytest

from core.lessons import load_catalog
from tests.apptest import run_lesson

CATALOG = load_catalog()

ALLOW: dict[str, set[str]] = {
    "model, architecture and library names, kept as published": {
        "BERT",
        "Megatron",
        "MiniLM",
        "L6",
        "v2",
        "RoBERTa",
        "ALBERT",
        "XLNet",
        "GPT",
        "Transformer",
        "Transformers",
        "transformers",
        "RNN",
        "LSTM",
        "GRU",
        "seq2seq",
        "Seq2seq",
        "RNNsearch",
        "GPipe",
        "PipeDream",
        "Flush",
        "F1B",
        "BertForPreTraining",
        "ZeRO",
        "bertviz",
        "WordPiece",
        "PyTorch",
        "Streamlit",
        "Plotly",
        "sympy",
        "Adam",
        "all",
        "MiniLM-L6-v2",
    },
    "authors cited (et al.)": {
        "Bahdanau",
        "Cho",
        "Bengio",
        "Devlin",
        "Vaswani",
        "Luong",
        "Pham",
        "Manning",
        "Shoeybi",
        "Narayanan",
        "Rajbhandari",
        "Korthikanti",
        "Abnar",
        "Zuidema",
        "Vig",
        "Clark",
        "Radford",
        "Sutskever",
        "Liu",
        "Wang",
        "Xiong",
        "Ba",
        "Kiros",
        "Hinton",
        "Hochreiter",
        "Schmidhuber",
        "Kingma",
        "et",
        "al",
    },
    "benchmarks and their metrics, named as in the papers": {
        "MNLI",
        "QQP",
        "SQuAD",
        "RACE",
        "GLUE",
        "EM",
        "F1",
        "mm",
    },
    "BERT's special tokens and task names, as the model and the paper spell them": {
        "CLS",
        "SEP",
        "MASK",
        "PAD",
        "UNK",
        "IsNext",
        "NotNext",
        "MLM",
        "NSP",
        "SOP",
    },
    "operations and layer names as written in code and papers (glossary keeps them in English)": {
        "LayerNorm",
        "LN",
        "MLP",
        "softmax",
        "tanh",
        "Concat",
        "GeLU",
        "GELU",
        "ReLU",
        "all-reduce",
        "reduce",
        "post",
        "pre",
        "head_1",
        "head_h",
        "d_model",
        "d_k",
        "qquad",
        "arXiv",
        "Attention",
    },
    "hardware, units and numeric notation": {
        "CPU",
        "GPU",
        "GPUs",
        "A100",
        "V100",
        "H100",
        "FLOP",
        "FLOPs",
        "PFLOP",
        "TFLOP",
        "kB",
        "MB",
        "GB",
        "B",
        "M",
        "K",
        "fp16",
        "fp32",
        "bf16",
        "nats",
        "e",
        "NVIDIA",
        "x86_64",
        "aarch64",
        "cuda",
        "cpu",
        "mps",
        "ms",
        "s",
    },
    "distributed-training names the lesson teaches as terms (glossary: rank, worker)": {
        "rank",
        "worker",
        "torchrun",
        "torch",
        "gloo",
        "nccl",
        "NLP",
    },
    "the app's own name, and English named as a language (language switch, glossary column)": {
        "Attention",
        "Lab",
        "English",
    },
    "ISO date format name in lesson 3": {"ISO"},
    "Hugging Face, where the model picker's names come from": {"Hugging", "Face"},
    "model sizes and variants as the papers name them; the code package core; NASDAQ in the example posts; pooler, the glossary's gloss for 池化層": {
        "base",
        "large",
        "Large",
        "GPT-2",
        "GPT-3",
        "Megatron-3",
        "BertModel",
        "n-gram",
        "gram",
        "float32",
        "core",
        "NASDAQ",
        "pooler",
    },
}
# Allowed in lesson prose only (the authors' Markdown, where an English word next to its Chinese is a
# deliberate choice); never in a label, table header or figure.
PROSE_ONLY: dict[str, set[str]] = {
    "the lecture's own English words, quoted as the lecturer said them (lessons 2-5)": {
        "Encoder",
        "Decoder",
        "encoder",
        "decoder",
        "Self",
        "Multi",
        "head",
        "BLEU",
        "maxout",
    },
    "the sentiment classes as the model names them (lesson 1 pairs each with its Chinese)": {
        "positive",
        "neutral",
        "negative",
    },
    "cited works, corpora and organisations, named as published": {
        "Wikipedia",
        "BooksCorpus",
        "OpenWebText",
        "RealNews",
        "CC-Stories",
        "Stories",
        "CC",
        "OpenAI",
        "Twitter",
        "Jain",
        "Wallace",
        "Joshi",
        "Jaccard",
        "L-BFGS",
        "BFGS",
        "NASDAQ",
        "Task",
        "Masked",
        "LM",
        "Input",
        "Output",
        "Representations",
        "Pre-training",
        "training",
        "Deep",
        "Bidirectional",
        "Language",
        "Understanding",
        "of",
        "for",
        "Is",
        "All",
        "You",
        "Need",
        "What",
        "Does",
        "Look",
        "At",
    },
    "code: package, module, file and command names (lessons tell the reader what to type)": {
        "core",
        "python",
        "Python",
        "torch",
        "distributed",
        "run",
        "README",
        "json",
        "config",
        "manifest",
        "vocab",
        "column-parallel",
        "column",
        "parallel",
        "query",
        "key",
        "value",
        "dropout",
        "segment",
        "type",
        "attention",
        "rollout",
        "tags",
        "tokenization",
        "play",
        "wide",
        "pooler",
    },
}
ALLOWED = set().union(*ALLOW.values())
PROSE_ALLOWED = ALLOWED | set().union(*PROSE_ONLY.values())
WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*")
MATH_SYMBOL = re.compile(r"^[A-Za-z](?:_?[A-Za-z0-9]{1,2})?$|^[A-Za-z]_[A-Za-z0-9]+$")
SNAKE = re.compile(r"^[a-z]+(?:_[a-z0-9]+)+$")
PROSE_DROP = re.compile(
    r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)|\*[A-Za-z][^*\n]*\*|（[ -~]+）|\\\([^)]*\\\)"
    r'|"[^"\n]*"|“[^”\n]*”|〈[^〉\n]*〉|\d+(?:\.\d+)?e[-+]?\d+',
    re.S,
)


def _title(o) -> str | None:
    if not isinstance(o, dict):
        return None
    tt = o.get("title")
    return tt.get("text") if isinstance(tt, dict) else tt


def figure_strings(spec: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(labels, data) of one Plotly figure's JSON."""
    labels: list[tuple[str, str]] = []
    data: list[tuple[str, str]] = []
    lay = spec.get("layout", {})
    labels.append(("figure title", _title(lay)))
    for k, v in lay.items():
        if re.match(r"[xy]axis\d*$", k) and isinstance(v, dict):
            labels.append((f"{k} title", _title(v)))
            data += [(f"{k} tick", str(x)) for x in v.get("ticktext") or []]
        if k.startswith("coloraxis") and isinstance(v, dict):
            labels.append(("colour-bar title", _title(v.get("colorbar", {}))))
    labels += [("legend title", _title(lay.get("legend", {})))]
    labels += [("annotation", a.get("text")) for a in lay.get("annotations") or []]
    for tr in spec.get("data", []):
        if tr.get("showlegend") is not False:
            labels.append(("legend entry", tr.get("name")))
        for cb in (tr.get("colorbar"), (tr.get("marker") or {}).get("colorbar")):
            labels.append(("colour-bar title", _title(cb)))
        for k in ("text", "x", "y", "hovertext"):
            val = tr.get(k)
            if isinstance(val, list):
                for row in val:
                    data += [(f"trace {k}", c) for c in (row if isinstance(row, list) else [row]) if isinstance(c, str)]
        if isinstance(tr.get("header"), dict):
            labels += [("table header", str(c)) for c in tr["header"].get("values", [])]
    return [(k, str(v)) for k, v in labels if v], data


def visible(at) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]], set[str]]:
    """(prose, labels, data, example words) of one AppTest run."""
    prose, labels, data, examples = [], [], [], set()
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "text",
        "info",
        "warning",
        "error",
        "success",
        "exception",
    ):
        prose += [(kind, str(getattr(el, "value", "") or "")) for el in getattr(at, kind, [])]
    labels += [("metric", m.label) for m in at.metric]
    for kind in (
        "button",
        "checkbox",
        "toggle",
        "text_input",
        "text_area",
        "number_input",
        "slider",
        "select_slider",
        "selectbox",
        "radio",
        "multiselect",
    ):
        for el in getattr(at, kind, []):
            labels.append((kind, el.label))
            opts = [str(o) for o in getattr(el, "options", []) or []]
            if kind in ("text_input", "text_area"):
                examples |= set(WORD.findall(str(el.value)))
            else:  # an option with no Chinese and 3+ words or 12+ characters is an example input on offer
                for o in opts:
                    if not re.search(r"[\u3400-\u9fff]", o) and (len(re.findall(r"\w+", o)) >= 3 or len(o) >= 12):
                        examples |= set(WORD.findall(o))
                    else:
                        labels.append((f"{kind} option", o))
    labels += [("tab", tab.label) for tab in at.tabs] + [("expander", ex.label) for ex in at.expander]
    for el in at.dataframe:
        frame = el.value
        labels += [("table header", str(c)) for c in frame.columns]
        data += [("table cell", str(c)) for row in frame.astype(object).itertuples(index=False) for c in row]
    for chart in at.get("plotly_chart"):
        lab, dat = figure_strings(json.loads(chart.proto.spec))
        labels += lab
        data += dat
    return prose, labels, data, examples


def _ok(word: str, examples_lower: str, allowed: set[str] = ALLOWED) -> bool:
    return (
        word in allowed
        or bool(MATH_SYMBOL.match(word))
        or all(part in allowed or MATH_SYMBOL.match(part) for part in re.split(r"[-_]", word))
        or word.lower() in examples_lower
    )


def english_left(at, *, term_cells: bool = False) -> list[str]:
    """Every ASCII word a zh-TW reader would see that is not allowed, as 'where: word in text'.
    ``term_cells``: the table is a glossary whose cells name terms in English on purpose."""
    prose, labels, data, examples = visible(at)
    ex = " ".join(sorted(examples)).lower()
    bad = []
    for where, text in prose:
        for w in WORD.findall(PROSE_DROP.sub(" ", text)):
            if not _ok(w, ex, PROSE_ALLOWED if where in ("markdown", "title", "header", "subheader") else ALLOWED):
                bad.append(f"{where}: {w!r} in {text[:60]!r}")
    for where, text in labels:
        for w in WORD.findall(PROSE_DROP.sub(" ", text) if where != "table header" else text):
            if not _ok(w, ex):
                bad.append(f"{where}: {w!r} in {text[:60]!r}")
    for where, text in data:
        s = text.strip()
        if s in ("None", "nan", "NaN", "null") or SNAKE.match(s) and not _ok(s, ex):
            bad.append(f"{where}: {s!r}")
        elif where == "table cell" and not term_cells and re.fullmatch(r"[A-Za-z]{3,}", s) and not _ok(s, ex):
            bad.append(f"{where}: {s!r}")
    return sorted(set(bad))


@pytest.mark.parametrize("lesson_id", [lesson.id for lesson in CATALOG.lessons])
def test_every_zh_tw_page_speaks_chinese(lesson_id):
    at = run_lesson(lesson_id, "zh-TW")
    assert not at.exception, [e.value for e in at.exception]
    # the glossary's "English" column lists each term's English name: that is its content
    bad = english_left(at, term_cells=lesson_id == "glossary")
    assert not bad, "\n".join(bad)


def test_the_check_catches_english_labels():
    """The checker itself: a snake_case header, None in a cell, an English colour-bar title fail;
    a model name, a math symbol and an example word pass."""

    class Fake:
        metric = tabs = expander = dataframe = []

        def __init__(self, spec, frame=None):
            self._spec, self.dataframe = spec, frame or []

        def get(self, _):
            return [type("C", (), {"proto": type("P", (), {"spec": json.dumps(self._spec)})()})()]

    import pandas as pd

    frame = type("D", (), {"value": pd.DataFrame({"params_b": [1.0, None], "模型": ["BERT", "mixed"]})})()
    spec = {
        "data": [{"type": "heatmap", "colorbar": {"title": {"text": "weight"}}, "name": "x_j"}],
        "layout": {"xaxis": {"title": {"text": "輸入 x_j"}}},
    }
    bad = english_left(Fake(spec, [frame]))
    assert any("'params'" in b or "params_b" in b for b in bad), bad
    assert any("'weight'" in b for b in bad), bad
    assert any("'mixed'" in b for b in bad), bad
    assert any("'nan'" in b or "'None'" in b for b in bad), bad
    assert not any("BERT" in b or "x_j" in b for b in bad), bad


def test_the_app_shell_speaks_chinese():
    """app.py: navigation, the sidebar's language switch, presenter toggle and device line."""
    from streamlit.testing.v1 import AppTest

    from core.lessons import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["lang"] = "zh-TW"
    at.run()
    assert not at.exception
    bad = english_left(at)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ("cpu (x86_64, 1 threads)", "CPU（x86_64，1 個 torch 執行緒）"),
        ("cuda (H100, 8 threads)", "GPU（H100，8 個 torch 執行緒）"),
        ("something else", "something else"),
    ],
)
def test_a_recorded_device_reads_in_chinese(recorded, expected, monkeypatch):
    from ui import shell, state

    monkeypatch.setattr(state, "lang", lambda: "zh-TW")
    assert shell.recorded_device(recorded) == expected


def test_tables_name_every_column_and_dash_empty_cells(monkeypatch):
    """ui/tables.display_rows: headers from labels.column.<key> in the reader's language (read here
    straight from the locale file), None/NaN as "—", a column's values mapped when asked."""
    import tomllib

    from core.lessons import ROOT
    from ui import state, tables

    zh = tomllib.loads((ROOT / "ui/locales/zh-TW/labels.toml").read_text(encoding="utf-8"))["column"]
    monkeypatch.setattr(state, "lang", lambda: "zh-TW")
    rows = [
        {"model": "ALBERT", "mnli_mm": None, "race": float("nan"), "op": "all_reduce"},
        {"model": "RoBERTa", "mnli_mm": 90.2, "race": 83.2, "op": "all_reduce"},
    ]
    out = tables.display_rows(rows, values={"op": {"all_reduce": "all-reduce"}})
    assert list(out[0]) == [zh["model"], zh["mnli_mm"], zh["race"], zh["op"]]
    assert out[0][zh["mnli_mm"]] == "—" and out[0][zh["race"]] == "—" and out[1][zh["mnli_mm"]] == 90.2
    assert out[0][zh["op"]] == "all-reduce"
    # every column key the Megatron tables use has a name in both languages
    from core.megatron import story

    en = tomllib.loads((ROOT / "ui/locales/en/labels.toml").read_text(encoding="utf-8"))["column"]
    keys = set(story.NARAYANAN_TABLE1_COLUMNS) | set(story.results_table()[0]) | set(story.SCALING_CONFIGS[0])
    assert keys <= set(zh) and keys <= set(en), keys - set(zh)
