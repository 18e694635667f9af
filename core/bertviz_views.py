"""bertviz's head view, model view and neuron view (Vig 2019, arXiv 1906.05714), offline.

Stock bertviz loads require.js, d3 and jQuery from a CDN (blank without internet), sends the
weights as a JSON dump of float64 (13 MB for 64 tokens on BERT-base) and passes its parameters by
string-replacing a ``PYTHON_PARAMS`` marker in its JavaScript. Here:

* the three libraries are read from pip-installed packages and inlined into the frame's HTML
  (d3 5.7.0, the version bertviz asks for, from ``mpld3``; jQuery from ``XStatic-jQuery``;
  RequireJS from ``openedx-django-require``); nothing is fetched, and a Content-Security-Policy
  forbids any request the page might still try;
* bertviz's own view scripts are read from the installed ``bertviz`` package (its Python modules
  are never imported: they pull in IPython); the one marker is replaced by a fixed identifier,
  never by data;
* the data sits in a ``<script type="application/json">`` block (``<``, ``>``, ``&`` and the
  JavaScript line separators escaped) and is decoded by ``bertviz_bridge.js``: attention quantised
  to 1/255 (the step at which a browser renders opacity), queries and keys as float16;
* tokens reach the page only as JSON strings and are drawn by d3's ``.text()``: never as HTML.

The neuron view needs each head's queries and keys, which bertviz gets from its own copy of old
model classes (it cannot load today's checkpoints offline); we recompute them from the layer's own
weights (:func:`core.attention.explain_head`'s path) and show the view only when that recomputation
reproduces the model's attentions.
"""

from __future__ import annotations

import base64
import functools
import html
import importlib.metadata
import importlib.util
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core import attention as attn_core

BYTES_BUDGET = 2_000_000  # per view, at 64 tokens (docs/ARCHITECTURE.md, Budgets)
NEURON_CHECK_TOLERANCE = 1e-4
KINDS = ("head", "model", "neuron")

# (distribution, file inside it): the libraries bertviz's views need.
_ASSETS = {
    "d3": ("mpld3", "mpld3/js/d3.v5.min.js"),
    "jquery": ("XStatic-jQuery", "xstatic/pkg/jquery/data/jquery.min.js"),
    "require": ("openedx-django-require", "require/resources/require.js"),
}
_REQUIRE_CONFIG = re.compile(r"require\.config\(\{.*?\}\s*\}\);", re.S)
_MARKER = "const params = PYTHON_PARAMS;"


class AssetMissing(RuntimeError):
    """A JavaScript library that should come from a pip package is not installed."""


@functools.lru_cache(maxsize=None)
def asset(name: str) -> str:
    """The text of one library (d3, jquery, require), read from its pip package."""
    dist, rel = _ASSETS[name]
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise AssetMissing(f"pip package {dist} is not installed (needed for {name})") from exc
    for f in files:
        if str(f).replace("\\", "/") == rel:
            return Path(f.locate()).read_text(encoding="utf-8")
    raise AssetMissing(f"{rel} not found in pip package {dist}")


@functools.lru_cache(maxsize=None)
def view_script(kind: str) -> str:
    """bertviz's own ``<kind>_view.js`` from the installed package, found without importing it."""
    spec = importlib.util.find_spec("bertviz")
    if spec is None or not spec.submodule_search_locations:
        raise AssetMissing("pip package bertviz is not installed")
    text = (Path(next(iter(spec.submodule_search_locations))) / f"{kind}_view.js").read_text(encoding="utf-8")
    # Its require.config points d3 and jQuery at a CDN; the libraries are defined inline instead,
    # so the block goes (the CSP would block the request anyway, but no CDN address should ship).
    text, n = _REQUIRE_CONFIG.subn("", text, count=1)
    if n != 1:
        raise AssetMissing(f"bertviz {kind}_view.js: require.config block not found")
    if kind in ("head", "model"):
        # bertviz's template habit, contained: the marker becomes a fixed name, the data comes
        # from the bridge. Exactly one marker is expected; a new bertviz release that moves it
        # fails here loudly instead of rendering a blank frame.
        if text.count(_MARKER) != 1:
            raise AssetMissing(f"bertviz {kind}_view.js: expected one {_MARKER} marker")
        text = text.replace(_MARKER, "const params = window.__attnlab_params;")
    return text


@functools.lru_cache(maxsize=None)
def _bridge() -> str:
    return (Path(__file__).with_name("bertviz_bridge.js")).read_text(encoding="utf-8")


def json_for_script(obj) -> str:
    """JSON that is safe inside a <script> element: no '</script>', no '<!--', no line separators."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return (
        s.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _inline_script(js: str) -> str:
    # A library's own text could hold "</script" in a string; break it so the parser cannot end early.
    return "<script>" + js.replace("</script", "<\\/script") + "</script>"


def pretty_tokens(tokens) -> list[str]:
    """bertviz's token clean-up (byte-level 'Ġ' and sentencepiece '▁' shown as a space)."""
    return [str(t).replace("Ġ", " ").replace("▁", " ") for t in tokens]


@dataclass
class BertvizView:
    kind: str
    html: str | None  # the frame's document; None when the view cannot be drawn
    supported: bool
    reason_code: str | None = None  # why not (translated by the page): "neuron_mismatch", ...
    reason: str | None = None  # the same in plain English, for logs and the CLI
    n_bytes: int = 0
    n_tokens: int = 0
    notices: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    n_tokens_full: int = 0  # tokens the input had before the cap


DEFAULT_LABELS = {
    "layer": "Layer",
    "head": "Head",
    "attention": "Attention",
    "all": "All",
    "aa": "Sentence A -> Sentence A",
    "bb": "Sentence B -> Sentence B",
    "ab": "Sentence A -> Sentence B",
    "ba": "Sentence B -> Sentence A",
    # words bertviz's own scripts draw inside the views; core/bertviz_bridge.js swaps them for these
    "heads": "Heads",
    "layers": "Layers",
    "softmax": "Softmax",
    "no_token": "No token selected",
}
# bertviz's drawn text -> the label key that replaces it ("Layer 3, Head 5" is matched by the bridge)
DRAWN_TEXT = {"Heads": "heads", "Layers": "layers", "Softmax": "softmax", "No token selected": "no_token"}

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; connect-src 'none'"
)


def _controls(kind: str, pair: bool, labels: dict[str, str]) -> str:
    e = {k: html.escape(v) for k, v in labels.items()}
    parts = []
    if kind in ("head", "neuron"):
        parts.append(f'<span class="dropdown-label">{e["layer"]}: </span><select id="layer"></select>')
    if kind == "neuron":
        parts.append(f'<span class="dropdown-label">{e["head"]}: </span><select id="att_head"></select>')
    if pair:
        if kind == "neuron":
            vals = ["all", "aa", "ab", "ba", "bb"]
        else:  # head/model: index into the bridge's list (All, A->A, B->B, A->B, B->A)
            vals = ["0", "1", "2", "3", "4"]
        keys = ["all", "aa", "ab", "ba", "bb"] if kind == "neuron" else ["all", "aa", "bb", "ab", "ba"]
        opts = "".join(f'<option value="{v}">{e[k]}</option>' for v, k in zip(vals, keys))
        parts.append(f'<span class="dropdown-label">{e["attention"]}: </span><select id="filter">{opts}</select>')
    return " ".join(parts)


def render(
    kind: str,
    tokens,
    attentions,
    *,
    sentence_b_start: int | None = None,
    layer: int = 0,
    head: int = 0,
    queries=None,
    keys=None,
    labels: dict[str, str] | None = None,
) -> str:
    """The frame document for one view. attentions: (L, H, T, T); queries/keys: (L, H, T, d_k)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    A = np.asarray(attentions, dtype=np.float64)
    L, H, T, _ = A.shape
    root = "bertviz-" + uuid.uuid4().hex
    payload = {
        "kind": kind,
        "root": root,
        "L": L,
        "H": H,
        "T": T,
        "layer": int(layer),
        "head": int(head),
        "tokens": pretty_tokens(tokens),
        "b_start": sentence_b_start,
        "attn": base64.b64encode(np.rint(np.clip(A, 0, 1) * 255).astype(np.uint8).tobytes()).decode("ascii"),
    }
    if kind == "neuron":
        q = np.asarray(queries, dtype=np.float32)
        k = np.asarray(keys, dtype=np.float32)
        payload["D"] = int(q.shape[-1])
        payload["q"] = base64.b64encode(q.astype("<f2").tobytes()).decode("ascii")
        payload["k"] = base64.b64encode(k.astype("<f2").tobytes()).decode("ascii")
    labels = {**DEFAULT_LABELS, **(labels or {})}
    payload["text"] = {drawn: labels[key] for drawn, key in DRAWN_TEXT.items()}
    payload["layer_head"] = [labels["layer"], labels["head"]]
    pair = sentence_b_start is not None and 0 < sentence_b_start < T
    return "".join(
        [
            '<!doctype html><html><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            "<style>body{margin:0;font-family:'Helvetica Neue',Helvetica,Arial,sans-serif;background:#fff}"
            "select{font-size:14px;margin:0 8px 6px 0}#vis{overflow:hidden}</style></head><body>",
            # d3 and jQuery first, before require.js exists, so they install plain globals instead of
            # anonymous AMD modules; then they are named for RequireJS so bertviz's requirejs() finds them
            # already defined and never consults its CDN paths.
            _inline_script(asset("d3")),
            _inline_script(asset("jquery")),
            _inline_script(asset("require")),
            "<script>define('d3',[],function(){return window.d3;});"
            "define('jquery',[],function(){return window.jQuery;});</script>",
            f'<div id="{root}" style="padding:4px"><span style="user-select:none">',
            _controls(kind, pair, labels),
            '</span><div id="vis"></div></div>',
            f'<script type="application/json" id="attnlab-payload">{json_for_script(payload)}</script>',
            _inline_script(_bridge()),
            _inline_script(view_script(kind)),
            "</body></html>",
        ]
    )


def _neuron_check(bundle, enc) -> tuple[bool, str | None, str | None, np.ndarray | None, np.ndarray | None]:
    """Queries and keys for every head, and whether they reproduce the model's attentions."""
    import torch

    try:
        layers = bundle.encoder.encoder.layer
        qs, ks, vs = [], [], []
        for l in range(len(layers)):
            q, k, v = attn_core._head_projections(bundle, l, enc.hidden_states[l])  # (H, T, d_k)
            qs.append(q.float().cpu())
            ks.append(k.float().cpu())
            vs.append(v.double().cpu())
    except AttributeError as exc:
        return False, "neuron_no_qk", f"the model's layers expose no query/key projections ({exc})", None, None
    Q = torch.stack(qs)  # (L, H, T, d_k)
    K = torch.stack(ks)  # (L, H, T, d_k)
    # the app's one kernel, in float64: softmax(Q K^T / sqrt(d_k))
    _, W = attn_core.scaled_dot_product_attention(Q.double(), K.double(), torch.stack(vs))  # (L, H, T, T)
    diff = float((W - torch.from_numpy(enc.attentions).double()).abs().max())
    if diff > NEURON_CHECK_TOLERANCE:
        return (
            False,
            "neuron_mismatch",
            f"softmax(q·k/√d_k) differs from the model's attention by {diff:.2g}: this model's "
            "attention is not plain scaled dot-product, so q and k would not explain it",
            None,
            None,
        )
    return True, None, None, Q.numpy(), K.numpy()


def build(
    bundle,
    text: str | None,
    kind: str,
    text_b: str | None = None,
    *,
    layer: int = 0,
    head: int = 0,
    max_tokens: int = attn_core.MAX_TOKENS_BERTVIZ,
    labels: dict[str, str] | None = None,
    bytes_budget: int = BYTES_BUDGET,
) -> BertvizView:
    """One bertviz view for the page: encode (capped at ``max_tokens``), check, render, measure.

    When the document would pass ``bytes_budget`` (a larger model than the default), the token cap
    is lowered until it fits and ``bertviz_bytes_capped`` is added to the notices.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    cap = max_tokens
    while True:
        enc = attn_core.encode(bundle, text, text_b, max_tokens=cap)
        notices = list(enc.notices)
        q = k = None
        if kind == "neuron":
            ok, code, why, q, k = _neuron_check(bundle, enc)
            if not ok:
                return BertvizView(
                    kind, None, False, code, why, 0, enc.n_tokens, notices, list(enc.tokens), enc.n_tokens_full
                )
        doc = render(
            kind,
            enc.tokens,
            enc.attentions,
            sentence_b_start=enc.sentence_b_start,
            layer=min(layer, enc.num_layers - 1),
            head=min(head, enc.num_heads - 1),
            queries=q,
            keys=k,
            labels=labels,
        )
        size = len(doc.encode("utf-8"))
        if size > bytes_budget and enc.n_tokens > 8:
            cap = max(8, int(enc.n_tokens * 0.8))  # a larger model than the default: fewer tokens
            continue
        if cap < max_tokens:
            notices.append("bertviz_bytes_capped")
        if size > bytes_budget:
            notices.append("bertviz_over_budget")
        return BertvizView(
            kind, doc, True, None, None, size, enc.n_tokens, notices, list(enc.tokens), enc.n_tokens_full
        )


if __name__ == "__main__":  # python -m core.bertviz_views "some text" > view.html
    import sys

    from core.bert import load

    b = load()
    v = build(
        b,
        sys.argv[1] if len(sys.argv) > 1 else "The animal didn't cross the street.",
        sys.argv[2] if len(sys.argv) > 2 else "head",
    )
    if v.html is None:
        print(v.reason, file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(v.html)
    print(f"{v.kind} view: {v.n_bytes} bytes, {v.n_tokens} tokens", file=sys.stderr)
