"""BERT taken apart on a real model: loading, inputs (lesson 6), outputs and pre-training (lesson 7).

Importing this package is free: torch and transformers load only when a function that needs them
runs (the sidebar's model picker imports it before any model is asked for).
"""

from __future__ import annotations

import importlib

from .loader import (
    ACCEPTED_MODEL_TYPES,
    EMBEDDED_NAME,
    BertBundle,
    SourceError,
    embedded_model_dir,
    heads_in,
    load,
    resolve,
)

# name -> submodule; resolved on first use (PEP 562) so that `import core.bert` stays torch-free.
_LAZY = {
    # lesson 6: inputs
    "tokenize": "inputs",
    "TokenView": "inputs",
    "encode_pair": "inputs",
    "pad_batch": "inputs",
    "embedding_parts": "inputs",
    "EmbeddingParts": "inputs",
    "MAX_POSITIONS": "inputs",
    # parameter anatomy
    "count": "params",
    "count_bundle": "params",
    "ParamCount": "params",
    "BERT_BASE": "params",
    "BERT_LARGE": "params",
    # lesson 7: outputs and pre-training
    "mask_tokens": "pretraining",
    "MaskResult": "pretraining",
    "simulate_masking": "pretraining",
    "fill_mask": "pretraining",
    "next_sentence": "pretraining",
    "nsp_pairs": "pretraining",
    "hidden_states": "outputs",
    "HiddenStates": "outputs",
    "sentence_embeddings": "outputs",
    "similarity": "outputs",
    "layer_trajectory": "outputs",
    "sentiment_factor": "sentiment",
    "SentimentScorer": "sentiment",
    "score_posts": "sentiment",
    "masking_rates": "pretraining",
    "task_head_params": "params",
    "HeadMissing": "pretraining",
    "max_positions": "inputs",
    "load_posts": "sentiment",
    # pre-training from scratch: the shipped model (full) and lesson 7's "watch BERT learn" (live)
    "pretrain_live": "live",
    "CLOZE": "live",
    "evaluate_pretraining": "evaluate",
    "Recipe": "pretrain",
    "FillMask": "pretraining",
    "NextSentence": "pretraining",
}

__all__ = [
    "ACCEPTED_MODEL_TYPES",
    "EMBEDDED_NAME",
    "BertBundle",
    "SourceError",
    "embedded_model_dir",
    "heads_in",
    "load",
    "resolve",
    *_LAZY,
]  # the loader's names, and the ones imported lazily


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
