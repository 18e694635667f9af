"""Shared state between sessions and interrupted runs: each bug here had a test that failed first."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def test_scaling_figure_is_not_shared_between_callers():
    from core.attention import scaling_study
    from core.figures.attention import scaling_figure

    study = scaling_study()
    labels = {"y": "mean largest weight"}
    first = scaling_figure(study, labels=labels)
    first.update_layout(title_text="session A was here")
    first.data[0].y = [9.0] * len(first.data[0].y)
    second = scaling_figure(study, labels=labels)
    assert second is not first
    assert second.layout.title.text != "session A was here"
    import numpy as np

    from tests.apptest import plotly_values

    y = np.asarray(plotly_values(second.to_plotly_json()["data"][0]["y"]), dtype=float)
    np.testing.assert_allclose(y, np.round(study.max_weight_unscaled, 4))  # untouched by session A


def _training_app():
    from ui.seq2seq import live_training

    live_training("probe.live", "date", "bahdanau", config=None)


def test_interrupted_live_training_clears_its_running_flag(monkeypatch):
    import core.seq2seq.train as train_module

    def interrupted(*args, **kwargs):  # what a stop or a crash mid-run looks like to the caller
        raise RuntimeError("interrupted mid-run")

    monkeypatch.setattr(train_module, "train", interrupted)
    at = AppTest.from_function(_training_app, default_timeout=60)
    at.run()
    at.button(key="probe.live.start").click().run()
    assert at.exception  # the interruption surfaced...
    assert at.session_state["probe.live.running"] is False  # ...and the session is not stuck "running"
    at.run()
    assert not at.button(key="probe.live.start").disabled  # Train can be pressed again


def test_warm_up_leaves_the_first_students_a_loaded_model_and_their_first_sentence():
    """A cold server and a class opening lessons 4 and 5 at once: the warm-up (started by ui.serve
    before the server listens) has already loaded the default BERT and encoded each language's first
    preset, so a first page run is a cache hit; measured in docs/PERFORMANCE.md."""
    from core.attention import cached_encodings, clear_cache, explain_head
    from core.lessons import LANGS
    from ui import warmup
    from ui.attention import DEFAULT_HEAD, DEFAULT_LAYER, PRESETS
    from ui.bert import get_bundle
    from ui.i18n import strings

    clear_cache()
    warmup._warm_model()
    bundle = get_bundle("")
    held = {e.text for e in cached_encodings()}
    firsts = [strings(lang)[f"self_attention.presets.{PRESETS[0]}"] for lang in LANGS]
    assert len(set(firsts)) == len(LANGS) and set(firsts) <= held
    layer, head = min(DEFAULT_LAYER, bundle.num_layers - 1), min(DEFAULT_HEAD, bundle.num_heads - 1)
    before = len(cached_encodings())
    expl = explain_head(bundle, firsts[0], layer, head)  # what lesson 4's first run asks for
    assert len(cached_encodings()) == before
    assert explain_head(bundle, firsts[0], layer, head) is expl  # computed in the warm-up, shared
    clear_cache()


def test_the_server_starts_its_warm_up_before_it_listens(monkeypatch):
    import sys

    from streamlit.web import cli

    from ui import serve, warmup

    calls = []
    # what main() sets for the server process, restored for the rest of this test process
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(serve.PagesManager, "uses_pages_directory", serve.PagesManager.uses_pages_directory)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(warmup, "start", lambda *a, **k: calls.append("warm-up"))
    monkeypatch.setattr(cli, "main", lambda *a, **k: calls.append("server") or 0)
    assert serve.main(["--server.port", "1"]) == 0
    assert calls == ["warm-up", "server"]


def test_reruns_take_turns_in_the_process_slots_and_long_waits_step_out(monkeypatch):
    """ui.admission: never more than SLOTS inside at once; re-entrant; released() frees the slot."""
    import threading
    import time

    from ui import admission

    monkeypatch.setattr(admission, "_SEMAPHORE", threading.BoundedSemaphore(2))
    inside, most, lock = [0], [0], threading.Lock()

    def rerun():
        with admission.slot():
            with admission.slot():  # a nested page or widget: the same slot
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.02)
                with lock:
                    inside[0] -= 1

    threads = [threading.Thread(target=rerun) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert most[0] == 2 and inside[0] == 0  # two at a time, and nested slots took no second one

    # a rerun that steps out (live training) lets another in while it waits, then takes a slot again
    monkeypatch.setattr(admission, "_SEMAPHORE", threading.BoundedSemaphore(1))
    waiting, other_ran = threading.Event(), threading.Event()

    def trainer():
        with admission.slot():
            with admission.released():
                waiting.set()
                assert other_ran.wait(5)
            assert admission._HELD.depth == 1

    def student():
        waiting.wait(5)
        with admission.slot():
            other_ran.set()

    pair = [threading.Thread(target=trainer), threading.Thread(target=student)]
    for th in pair:
        th.start()
    for th in pair:
        th.join(10)
    assert other_ran.is_set()
    assert admission._SEMAPHORE.acquire(blocking=False)  # every slot came back
