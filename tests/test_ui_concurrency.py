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
