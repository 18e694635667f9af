"""Issue 15: seeded training under concurrency, typed errors for missing or damaged checkpoints and
manifests (and the cards users see for them), an interrupted live training, the Megatron demo
leaving nothing behind, and `make run`'s address."""
from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from core.seq2seq import train as tr
from core.seq2seq.errors import CheckpointError
from core.seq2seq.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(emb_dim=8, enc_hidden=8, dec_hidden=16, attn_dim=8)


def _cfg(seed: int = 3) -> tr.TrainConfig:
    return tr.TrainConfig(steps=30, batch_size=16, lr=1e-2, eval_every=15, valid_size=10, seed=seed, threads=1)


def _weights(result) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in result.model.state_dict().items()}


# ---------------------------------------------------------------- seeded training under concurrency


def test_concurrent_seeded_training_is_bit_identical_to_a_run_alone():
    alone = _weights(tr.train("date", "bahdanau", _cfg(), model_overrides=TINY))
    results, stop = [None, None], threading.Event()

    def student(i):
        results[i] = _weights(tr.train("date", "bahdanau", _cfg(), model_overrides=TINY))

    def other_pages():  # the rest of the server draws from torch's global generator meanwhile
        while not stop.is_set():
            torch.manual_seed(12345)
            torch.rand(64)

    noise = threading.Thread(target=other_pages, daemon=True)
    noise.start()
    threads = [threading.Thread(target=student, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    stop.set()
    noise.join(10)
    for got in results:
        assert got is not None and got.keys() == alone.keys()
        for name, value in alone.items():
            assert torch.equal(got[name], value), name


def test_training_reads_and_sets_no_process_global_torch_state(monkeypatch):
    def forbidden(*_a, **_k):
        raise AssertionError("train() changed a process-wide setting")

    torch.manual_seed(777)
    state = torch.get_rng_state()
    monkeypatch.setattr(torch, "set_num_threads", forbidden)
    monkeypatch.setattr(torch, "manual_seed", forbidden)
    tr.train("copy", "none", _cfg(), model_overrides=TINY)
    assert torch.equal(torch.get_rng_state(), state)   # the global generator was not drawn from


def test_per_run_generator_gives_the_weights_of_torch_manual_seed():
    """The committed checkpoints were built after torch.manual_seed(seed): same numbers now."""
    for task, attention in (("date", "bahdanau"), ("copy", "none")):
        torch.manual_seed(5)
        ref = tr.make_model(get_task(task), attention)
        got = tr.make_model(get_task(task), attention, torch.Generator().manual_seed(5))
        for (name, a), b in zip(ref.state_dict().items(), got.state_dict().values()):
            assert torch.equal(a, b), name


# ---------------------------------------------------------------- checkpoints and the manifest


def test_missing_empty_and_damaged_manifests_raise_typed_errors(tmp_path):
    with pytest.raises(CheckpointError) as missing:
        tr.read_manifest(tmp_path / "manifest.json")
    assert missing.value.code == "manifest_missing" and missing.value.params["command"]
    (tmp_path / "manifest.json").write_text('{"checkpoints": []}')
    with pytest.raises(CheckpointError) as empty:
        tr.read_manifest(tmp_path / "manifest.json")
    assert empty.value.code == "manifest_empty"
    (tmp_path / "manifest.json").write_text('{"checkpoints": [')
    with pytest.raises(CheckpointError) as bad:
        tr.read_manifest(tmp_path / "manifest.json")
    assert bad.value.code == "manifest_invalid"
    assert tr.read_manifest(tmp_path / "none.json", required=False) == {"checkpoints": []}


@pytest.mark.parametrize("manifest", [None, '{"checkpoints": []}'])
def test_evaluate_json_fails_loudly_without_checkpoints(tmp_path, manifest):
    if manifest is not None:
        (tmp_path / "manifest.json").write_text(manifest)
    out = subprocess.run([sys.executable, "-m", "core.seq2seq", "evaluate", "--json", "--dir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout.strip() == ""
    assert "manifest.json" in out.stderr and "To make it again:" in out.stderr


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete"])
def test_damaged_checkpoint_names_the_retrain_command(tmp_path, damage):
    path = tmp_path / "date-bahdanau.safetensors"
    shutil.copy(tr.CHECKPOINT_DIR / "date-bahdanau.safetensors", path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 64)
    else:
        path.unlink()
    with pytest.raises(CheckpointError) as err:
        tr.load_checkpoint(path)
    assert err.value.code == ("checkpoint_missing" if damage == "delete" else "checkpoint_corrupt")
    assert err.value.params["command"] == "python -m core.seq2seq train --task date --attention bahdanau"
    assert err.value.params["file"] == "date-bahdanau.safetensors"


def test_a_full_disk_is_named_and_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    import safetensors.torch

    model = tr.make_model(get_task("copy"), "none", torch.Generator().manual_seed(0), **TINY)
    path = tmp_path / "copy-none.safetensors"
    tr.save_checkpoint(model, path)
    before = path.read_bytes()

    def full(_state, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    with pytest.raises(CheckpointError) as err:
        tr.save_checkpoint(model, path)
    assert err.value.code == "disk_full" and err.value.params["file"] == "copy-none.safetensors"
    assert path.read_bytes() == before and not list(tmp_path.glob("*.tmp"))


# ---------------------------------------------------------------- what users see


@pytest.mark.parametrize("lang, says", [("en", "is missing"), ("zh-TW", "不見了")])
def test_pages_show_an_error_card_for_a_missing_manifest(tmp_path, monkeypatch, lang, says):
    from tests.apptest import run_lesson
    from ui import seq2seq as us

    monkeypatch.setattr(tr, "MANIFEST", tmp_path / "manifest.json")
    us._manifest.clear()
    try:
        at = run_lesson("bahdanau", lang)
    finally:
        us._manifest.clear()
    assert not at.exception
    assert any(says in e.value for e in at.error)
    assert any("core/seq2seq/checkpoints" in c.value for c in at.code)


@pytest.mark.parametrize("lang, says", [("en", "damaged or cut short"), ("zh-TW", "已損壞或不完整")])
def test_pages_show_an_error_card_for_a_truncated_checkpoint(tmp_path, monkeypatch, lang, says):
    from tests.apptest import run_lesson
    from ui import seq2seq as us

    for f in tr.CHECKPOINT_DIR.iterdir():
        shutil.copy(f, tmp_path / f.name)
    data = (tmp_path / "date-bahdanau.safetensors").read_bytes()
    (tmp_path / "date-bahdanau.safetensors").write_bytes(data[: len(data) // 3])
    monkeypatch.setattr(tr, "CHECKPOINT_DIR", tmp_path)
    import streamlit as st

    st.cache_data.clear()     # the page caches what it computed from the model, too
    us._load_model.clear()
    try:
        at = run_lesson("bahdanau", lang)
    finally:
        us._load_model.clear()
    assert not at.exception
    assert any(says in e.value for e in at.error), [e.value for e in at.error]
    assert any("--task date --attention bahdanau" in c.value for c in at.code)


def test_error_messages_exist_in_both_languages_with_the_same_fields():
    import string
    import tomllib

    files = {lang: tomllib.loads((ROOT / "ui" / "locales" / lang / "errors.toml").read_text(encoding="utf-8"))
             for lang in ("en", "zh-TW")}
    assert files["en"].keys() == files["zh-TW"].keys()
    for key, text in files["en"].items():
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        assert fields == {f for _, f, _, _ in string.Formatter().parse(files["zh-TW"][key]) if f}, key


LIVE_SCRIPT = """
import streamlit as st
from core.seq2seq.train import TrainConfig
from ui.seq2seq import live_training
live_training("t", "copy", "none", TrainConfig(steps=5, batch_size=4, eval_every=5, valid_size=2))
"""


def test_an_interrupted_live_training_does_not_leave_its_running_flag(monkeypatch):
    from streamlit.testing.v1 import AppTest

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt("the script was stopped mid-run")   # what a stopped script sees

    monkeypatch.setattr(tr, "train", interrupted)
    at = AppTest.from_string(LIVE_SCRIPT, default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    at.button(key="t.start").click().run()
    assert at.session_state["t.running"] is False
    at.run()   # the next run neither trains again nor shows a stuck Cancel button
    assert at.button(key="t.cancel").proto.disabled and not at.button(key="t.start").proto.disabled
    assert any("interrupted" in i.value for i in at.info)
