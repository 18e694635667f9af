"""Parameter anatomy of BERT, counted on a model built on the meta device (shapes only, no memory).

Defaults are BERT-base (Devlin et al. 2018, §3: L=12, H=768, A=12, "Total Parameters=110M");
BERT-large is L=24, H=1024, A=16 ("340M"). The exact counts come from transformers' own classes:
BertModel = embeddings + L layers + pooler; BertForPreTraining adds the MLM transform and bias (its
decoder weight is tied to the word embeddings, so it adds no matrix) and the 2-way NSP classifier.

    python -m core.bert count [--vocab --hidden --layers --heads --intermediate --max-position --type-vocab] --json
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

BERT_BASE = dict(vocab=30522, hidden=768, layers=12, heads=12, intermediate=3072, max_position=512, type_vocab=2)
BERT_LARGE = dict(vocab=30522, hidden=1024, layers=24, heads=16, intermediate=4096, max_position=512, type_vocab=2)

# One encoder layer, by part, in the order data flows through it: (parameter-name prefix, key).
# Keys are stable identifiers (the UI translates them); LABELS gives the English for the CLI.
_LAYER_PARTS = (
    ("attention.self.query.", "query"),  # W_Q, b_Q
    ("attention.self.key.", "key"),  # W_K, b_K
    ("attention.self.value.", "value"),  # W_V, b_V
    ("attention.output.dense.", "attention_output"),  # W_O, b_O
    ("attention.output.LayerNorm.", "attention_layer_norm"),
    ("intermediate.dense.", "ffn_in"),  # H -> 4H, GELU
    ("output.dense.", "ffn_out"),  # 4H -> H
    ("output.LayerNorm.", "ffn_layer_norm"),
)
_EMBED_PARTS = (
    ("word_embeddings.", "token"),
    ("position_embeddings.", "position"),
    ("token_type_embeddings.", "segment"),
    ("LayerNorm.", "layer_norm"),
)
LABELS = {
    "token": "token embeddings (vocab x H)",
    "position": "position embeddings (positions x H)",
    "segment": "segment embeddings (types x H)",
    "layer_norm": "embedding LayerNorm",
    "query": "W_Q (query)",
    "key": "W_K (key)",
    "value": "W_V (value)",
    "attention_output": "W_O (attention output)",
    "attention_layer_norm": "LayerNorm after attention",
    "ffn_in": "feed-forward in (H -> 4H)",
    "ffn_out": "feed-forward out (4H -> H)",
    "ffn_layer_norm": "LayerNorm after feed-forward",
    "layers": "all layers",
    "pooler": "pooler (tanh on [CLS])",
    "mlm_head": "MLM head (decoder tied)",
    "nsp_head": "NSP head",
    "bert_model_total": "BertModel",
    "pretraining_total": "BertForPreTraining",
}


@dataclass
class ParamCount:
    config: dict
    embeddings: dict[str, int]
    layer: dict[str, int]  # one encoder layer, by part
    layer_total: int
    all_layers: int
    pooler: int
    mlm_head: int  # excluding the decoder matrix tied to the word embeddings
    nsp_head: int
    bert_model_total: int  # BertModel
    pretraining_total: int  # BertForPreTraining
    shares: dict[str, float] = field(default_factory=dict)  # fraction of BertModel's total

    def to_dict(self) -> dict:
        return asdict(self)

    def rows(self) -> list[dict]:
        """Flat table: group, part key, English label, parameters."""
        out = [("embeddings", k, v) for k, v in self.embeddings.items()]
        out += [("layer", k, v) for k, v in self.layer.items()]
        out += [
            ("encoder", "layers", self.all_layers),
            ("pooler", "pooler", self.pooler),
            ("heads", "mlm_head", self.mlm_head),
            ("heads", "nsp_head", self.nsp_head),
            ("total", "bert_model_total", self.bert_model_total),
            ("total", "pretraining_total", self.pretraining_total),
        ]
        return [{"group": g, "part": k, "label": LABELS[k], "parameters": v} for g, k, v in out]


# count()'s shape names and the BertConfig fields they set, in count()'s order.
_CONFIG_FIELDS = {
    "vocab": "vocab_size",
    "hidden": "hidden_size",
    "layers": "num_hidden_layers",
    "heads": "num_attention_heads",
    "intermediate": "intermediate_size",
    "max_position": "max_position_embeddings",
    "type_vocab": "type_vocab_size",
}


def _sum(named: list[tuple[str, int]], prefix: str) -> int:
    return sum(n for name, n in named if name.startswith(prefix))


def hf_config(**fields):
    """A transformers BertConfig from a shape in count()'s names (vocab, hidden, layers, ...); any
    other keyword is a BertConfig field and passes as it is."""
    from transformers import BertConfig

    return BertConfig(**{_CONFIG_FIELDS.get(name, name): v for name, v in fields.items()})


def count(**shape: int) -> ParamCount:
    """Count BERT's parameters by part for a shape in BERT_BASE's names (vocab, hidden, layers, heads,
    intermediate, max_position, type_vocab; any left out as in BERT-base), without allocating any weight."""
    import torch
    from transformers import BertForPreTraining

    unknown = sorted(set(shape) - set(BERT_BASE))
    if unknown:
        raise TypeError(f"count() takes BERT_BASE's shape names, not {', '.join(unknown)}")
    shape = {**BERT_BASE, **shape}
    if shape["hidden"] % shape["heads"]:
        raise ValueError(f"hidden ({shape['hidden']}) must be divisible by heads ({shape['heads']})")
    for name, v in shape.items():
        if v < 1:
            raise ValueError(f"{name} must be at least 1")
    cfg = hf_config(**shape)
    with torch.device("meta"):
        model = BertForPreTraining(cfg)
    # named_parameters() lists a tied tensor once, so the MLM decoder (tied to the word embeddings)
    # is not counted twice, exactly as sum(p.numel() for p in model.parameters()).
    named = [(n, p.numel()) for n, p in model.named_parameters()]
    embeddings = {key: _sum(named, "bert.embeddings." + pre) for pre, key in _EMBED_PARTS}
    layer = {key: _sum(named, "bert.encoder.layer.0." + pre) for pre, key in _LAYER_PARTS}
    layer_total = _sum(named, "bert.encoder.layer.0.")
    all_layers = _sum(named, "bert.encoder.")
    pooler = _sum(named, "bert.pooler.")
    mlm = _sum(named, "cls.predictions.")
    nsp = _sum(named, "cls.seq_relationship.")
    base_total = sum(embeddings.values()) + all_layers + pooler
    total = sum(n for _, n in named)
    shares = {
        "embeddings": sum(embeddings.values()) / base_total,
        "encoder": all_layers / base_total,
        "pooler": pooler / base_total,
    }
    return ParamCount(
        config=shape,
        embeddings=embeddings,
        layer=layer,
        layer_total=layer_total,
        all_layers=all_layers,
        pooler=pooler,
        mlm_head=mlm,
        nsp_head=nsp,
        bert_model_total=base_total,
        pretraining_total=total,
        shares=shares,
    )


def config_of(bundle) -> dict:
    return {name: getattr(bundle.config, field) for name, field in _CONFIG_FIELDS.items()}


def count_bundle(bundle) -> ParamCount:
    """The anatomy for the loaded model's shape (its own weights are counted separately by the caller)."""
    return count(**config_of(bundle))


def loaded_total(bundle) -> int:
    """Parameters actually held by the loaded model (heads included, tied weights once)."""
    return sum(p.numel() for p in bundle.model.parameters())


def task_head_params(hidden: int, n_classes: int = 3, n_tags: int = 9) -> dict[str, int]:
    """Parameters a fine-tuning head adds on top of BERT (Devlin et al. 2018, §4):
    classification softmax(W C) with W in R^{K x H} (+ bias); token labeling, one W in R^{tags x H}
    shared by every T_i; span QA, a start vector S and an end vector E in R^H (transformers stores
    them as one Linear(H, 2), with 2 biases)."""
    return {
        "classification": n_classes * hidden + n_classes,
        "labeling": n_tags * hidden + n_tags,
        "span_qa": 2 * hidden + 2,
    }
