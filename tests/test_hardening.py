"""Issue 15: seeded training under concurrency, typed errors for missing or damaged checkpoints and
manifests (and the cards users see for them), an interrupted live training, the Megatron demo
leaving nothing behind, and `make run`'s address."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import threading
import time
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


def test_concurrent_seeded_training_is_bit_identical_to_a_run_alone(monkeypatch):
    """Two students (seeds 3 and 4) train at once while the rest of the server draws from torch's
    global generator; each gets, bit for bit, the model a run alone gives. A pause before each
    model is built (a busy machine switching threads there) makes the old race certain."""
    alone = {s: _weights(tr.train("date", "bahdanau", _cfg(s), model_overrides=TINY)) for s in (3, 4)}
    real = tr.make_model

    def slow(*a, **k):
        time.sleep(0.05)
        return real(*a, **k)

    monkeypatch.setattr(tr, "make_model", slow)
    results, stop = {}, threading.Event()

    def student(seed):
        results[seed] = _weights(tr.train("date", "bahdanau", _cfg(seed), model_overrides=TINY))

    def other_pages():
        while not stop.is_set():
            torch.manual_seed(12345)
            torch.rand(64)

    noise = threading.Thread(target=other_pages, daemon=True)
    noise.start()
    threads = [threading.Thread(target=student, args=(s,)) for s in (3, 4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    stop.set()
    noise.join(10)
    for seed in (3, 4):
        assert results[seed].keys() == alone[seed].keys()
        for name, value in alone[seed].items():
            assert torch.equal(results[seed][name], value), (seed, name)


def test_training_reads_and_sets_no_process_global_torch_state(monkeypatch):
    def forbidden(*_a, **_k):
        raise AssertionError("train() changed a process-wide setting")

    torch.manual_seed(777)
    state = torch.get_rng_state()
    monkeypatch.setattr(torch, "set_num_threads", forbidden)
    monkeypatch.setattr(torch, "manual_seed", forbidden)
    tr.train("copy", "none", _cfg(), model_overrides=TINY)
    assert torch.equal(torch.get_rng_state(), state)  # the global generator was not drawn from


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
    out = subprocess.run(
        [sys.executable, "-m", "core.seq2seq", "evaluate", "--json", "--dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
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


@pytest.mark.parametrize(
    "lesson, manifest, lang, says",
    [
        ("bahdanau", None, "en", "is missing"),
        ("bahdanau", None, "zh-TW", "不見了"),
        ("seq2seq", '{"checkpoints": []}', "en", "is empty"),
        ("seq2seq", None, "zh-TW", "不見了"),
        (
            "bahdanau",
            '{"checkpoints": [{"file": "copy-none.safetensors", "task": "copy", "attention": "none"}]}',
            "en",
            "is missing",
        ),  # the manifest lists no checkpoint of the lesson's task
    ],
)
def test_pages_show_an_error_card_for_a_missing_or_empty_manifest(tmp_path, monkeypatch, lesson, manifest, lang, says):
    import streamlit as st

    from tests.apptest import run_lesson
    from ui import seq2seq as us

    if manifest is not None:
        (tmp_path / "manifest.json").write_text(manifest)
    monkeypatch.setattr(tr, "MANIFEST", tmp_path / "manifest.json")
    st.cache_data.clear()
    try:
        at = run_lesson(lesson, lang)
    finally:
        us._manifest.clear()
    assert not at.exception
    assert any(says in e.value for e in at.error), [e.value for e in at.error]
    assert at.code and all("Traceback" not in c.value for c in at.code)


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

    st.cache_data.clear()  # the page caches what it computed from the model, too
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

    files = {
        lang: tomllib.loads((ROOT / "ui" / "locales" / lang / "errors.toml").read_text(encoding="utf-8"))
        for lang in ("en", "zh-TW")
    }
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
        raise KeyboardInterrupt("the script was stopped mid-run")  # what a stopped script sees

    monkeypatch.setattr(tr, "train", interrupted)
    at = AppTest.from_string(LIVE_SCRIPT, default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    at.button(key="t.start").click().run()
    assert at.session_state["t.running"] is False
    at.run()  # the next run neither trains again nor shows a stuck Cancel button
    assert at.button(key="t.cancel").proto.disabled and not at.button(key="t.start").proto.disabled
    assert any("interrupted" in i.value for i in at.info)


# ---------------------------------------------------------------- the Megatron demo leaves nothing behind


def _run_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("megatron-demo-*"))


@pytest.fixture()
def own_tmp(tmp_path, monkeypatch):
    """The demo's temporary folder (and its children's TMPDIR) is a folder of this test's own."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_a_demo_leaves_no_folder_and_no_torchelastic_tree(own_tmp):
    from core.megatron.demo import run_demo

    r = run_demo(2, timeout=120)
    assert r["ok"], r.get("error")
    assert list(own_tmp.iterdir()) == []  # no megatron-demo-*, no torchelastic_*
    assert "--standalone" in r["command"]


def test_a_killed_worker_is_named_with_its_signal(own_tmp):
    import psutil

    from core.megatron.demo import run_demo

    box = {}
    th = threading.Thread(target=lambda: box.setdefault("r", run_demo(2, timeout=60, fault="hang")))
    th.start()
    victim = None
    for _ in range(600):
        for p in psutil.process_iter(["cmdline"]):
            try:
                if (
                    "--as-worker" in (p.info["cmdline"] or [])
                    and p.environ().get("RANK") == "1"
                    and str(own_tmp) in " ".join(p.info["cmdline"])
                ):
                    victim = p
            except psutil.Error:
                continue
        if victim or not th.is_alive():
            break
        time.sleep(0.1)
    assert victim is not None, "rank 1 never started"
    victim.kill()
    th.join(90)
    r = box["r"]
    assert not r["ok"] and r["code"] == "demo_worker_killed"
    assert r["params"] == {"rank": "1", "signal": "SIGKILL"}
    assert "SIGKILL" in r["error"] and "error_file" not in r["error"]
    assert list(own_tmp.iterdir()) == []


PARENT = """
import sys
from core.megatron.demo import run_demo
run_demo(2, timeout=120, fault="hang")
"""


def test_workers_die_with_the_process_that_started_them(own_tmp):
    """SIGKILL the app mid-run: torchrun and its workers must not live on; the next start reaps
    the run's folder."""
    import psutil

    from core.megatron.demo import reap_orphans

    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT)
    try:
        for _ in range(600):
            workers = [
                p
                for p in psutil.process_iter(["cmdline"])
                if "--as-worker" in (p.info["cmdline"] or [])
                and "--as-torchrun" not in p.info["cmdline"]
                and str(own_tmp) in " ".join(p.info["cmdline"])
            ]
            if len(workers) == 2:
                break
            time.sleep(0.1)
        assert len(workers) == 2, "the workers never started"
        run_dir = _run_dirs(own_tmp)[0]
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = [
            p
            for p in psutil.process_iter(["cmdline"])
            if str(run_dir) in " ".join(p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE
        ]
        if not left:
            break
        time.sleep(0.1)
    assert left == []
    assert reap_orphans(own_tmp) == [str(run_dir)] and _run_dirs(own_tmp) == []


def test_reaping_kills_the_processes_of_a_run_whose_starter_is_gone(own_tmp):
    from core.megatron.demo import reap_orphans

    dead = own_tmp / "megatron-demo-999999-1-abc"  # no process 999999 started at t=1
    dead.mkdir()
    alive = own_tmp / "megatron-demo-0-0-mine"
    import psutil

    me = psutil.Process()
    mine = own_tmp / f"megatron-demo-{me.pid}-{int(me.create_time())}-xyz"
    mine.mkdir()
    straggler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(dead)])
    try:
        removed = reap_orphans(own_tmp)
        straggler.wait(10)  # ended long before its 120 s (psutil reaped it, so no exit code)
    finally:
        straggler.kill()
    assert removed == [str(dead)] and not dead.exists() and mine.exists() and not alive.exists()


def test_a_full_disk_in_the_workers_is_named(tmp_path):
    from core.megatron.demo import diagnose

    (tmp_path / "error0.txt").write_text("rank 0: OSError: [Errno 28] No space left on device")
    code, params, _ = diagnose("", tmp_path, 1)
    assert code == "demo_disk_full" and params["folder"]


DEMO_SCRIPT = """
import streamlit as st
from ui.megatron import run_demo
r = run_demo(2)
st.write(r)
"""


def test_a_second_session_is_told_it_waits_and_its_time_counts_from_the_click(monkeypatch):
    from streamlit.testing.v1 import AppTest

    import core.megatron.demo as demo
    import ui.megatron as um

    monkeypatch.setattr(demo, "run_demo", lambda ranks, **kw: {"ok": True, "wall_s": 0.25})

    class HeldByAnotherSession:
        """The demo lock as a second session finds it: taken, and freed 1.5 s after it first looked
        (so the test does not depend on how long AppTest takes to reach the click under load)."""

        def __init__(self):
            self.lock = threading.Lock()
            self.lock.acquire()
            self.looked = False

        def acquire(self, blocking=True, timeout=-1):
            if not blocking and not self.looked:
                self.looked = True
                threading.Timer(1.5, self.lock.release).start()
                return False
            return self.lock.acquire(blocking, timeout)

        def release(self):
            self.lock.release()

    monkeypatch.setattr(um, "_demo_lock", lambda: held)
    held = HeldByAnotherSession()
    at = AppTest.from_string(DEMO_SCRIPT, default_timeout=60)
    at.query_params["lang"] = "en"
    at.run()
    assert not at.exception and held.looked
    r = at.session_state[um.DEMO_KEY]
    assert r["ok"] and r["run_s"] == 0.25
    assert 1.5 <= r["waited_s"] <= 4 and r["wall_s"] >= r["waited_s"]
    assert any(f"waited {r['waited_s']:.0f} s" in i.value for i in at.info)


# ---------------------------------------------------------------- make run binds where the README says


def _make_dry(*args: str) -> str:
    out = subprocess.run(
        ["make", "-n", "-o", ".venv/.deps-run", "run", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_make_run_listens_on_the_loopback_address_by_default():
    import os
    import signal as sig

    import psutil

    from core.megatron.demo import free_port

    assert "--server.address 127.0.0.1" in _make_dry()
    assert "--server.address 0.0.0.0" in _make_dry("HOST=0.0.0.0")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "http://127.0.0.1:8501" in readme and "make run HOST=0.0.0.0" in readme

    port = free_port()
    app = subprocess.Popen(
        ["make", "-o", ".venv/.deps-run", "run", f"PORT={port}"],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        addresses = set()
        for _ in range(600):
            for p in [psutil.Process(app.pid)] + psutil.Process(app.pid).children(recursive=True):
                try:
                    addresses |= {
                        c.laddr.ip
                        for c in p.net_connections(kind="inet")
                        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
                    }
                except psutil.Error:
                    continue
            if addresses or app.poll() is not None:
                break
            time.sleep(0.1)
        assert addresses == {"127.0.0.1"}
    finally:
        os.killpg(app.pid, sig.SIGTERM)
        app.wait(30)


def test_a_full_disk_before_the_demo_starts_is_named(monkeypatch):
    import tempfile

    from core.megatron import demo

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    r = demo.run_demo(2)
    assert not r["ok"] and r["code"] == "demo_disk_full" and r["params"]["folder"]


def test_every_error_code_core_can_raise_has_a_message_in_both_languages():
    import re
    import tomllib

    codes = set(re.findall(r'"(demo_\w+)"', (ROOT / "core/megatron/demo.py").read_text(encoding="utf-8")))
    codes |= set(
        re.findall(
            r"\b(manifest_\w+|checkpoint_\w+|disk_full)\b",
            (ROOT / "core/seq2seq/errors.py").read_text(encoding="utf-8"),
        )
    )
    codes -= {"demo_busy"}  # ui/megatron's own, not core's
    assert {"demo_worker_killed", "demo_disk_full", "checkpoint_corrupt", "manifest_empty"} <= codes
    for lang in ("en", "zh-TW"):
        words = tomllib.loads((ROOT / "ui" / "locales" / lang / "errors.toml").read_text(encoding="utf-8"))
        assert codes <= set(words), (lang, codes - set(words))
