"""A change to a lesson's shared input reruns only the sections that take it (ui.lesson._live_sections).

Spoken as the browser speaks to the server (bench.protocol): the edit names the fragment its text box
is drawn in, as the browser does, and the server answers with a fragment run.
"""

from __future__ import annotations

import json

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.e2e.conftest import run_coroutine

FULL, FRAGMENT = ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY


def _edits(url: str, page: str, lang: str, texts: list[str], empty_first: bool = False):
    from bench.protocol import ProtocolSession

    async def go():
        s = ProtocolSession(url, page, lang=lang, timeout=120)
        try:
            runs = [await s.open()]
            if empty_first:  # a full run with an empty sentence: the sections draw nothing
                s.widget_values[s.text_id] = ""
                runs.append(await s.rerun())
            for text in texts:
                runs.append(await s.set_text(text))
            return runs, s.fragments.get(s.text_id, "")
        finally:
            await s.close()

    return run_coroutine(go())


def test_a_new_sentence_reruns_lesson_4s_sections_not_its_text(server):
    full, edit = _edits(server, "self-attention", "en", ["The valley was closed because it was late."])[0]
    assert full.status == FULL and not full.exceptions
    assert edit.status == FRAGMENT and not edit.exceptions
    assert "heading" in full.elements  # the lesson's title and step headings...
    assert "heading" not in edit.elements  # ...are not sent again
    assert len(edit.elements) < len(full.elements) / 2
    # the four figures of the sentence come back with it; the scaling study (random vectors) stays
    assert len(full.figures) == 5 and len(edit.figures) == 4
    assert all("valley" in spec for spec in edit.figures)


def test_a_section_empty_on_the_full_run_fills_on_a_later_edit(server):
    (opened, empty, edit), fragment = _edits(
        server, "self-attention", "zh-TW", ["貓坐在墊子上，因為它累了。"], empty_first=True
    )
    assert fragment
    assert empty.status == FULL and not empty.exceptions
    assert len(empty.figures) == 1  # the scaling study only: no sentence, no glass box
    assert edit.status == FRAGMENT and not edit.exceptions, edit.exceptions
    assert len(edit.figures) == 4 and all("貓" in str(json.loads(spec)) for spec in edit.figures)


def test_a_new_sentence_reruns_lesson_5s_sections_in_one_fragment(server):
    runs, fragment = _edits(server, "multi-head", "en", ["The valley slept.", "A river and a valley met."])
    full, *edits = runs
    assert full.status == FULL and fragment
    for edit in edits:
        assert edit.status == FRAGMENT and not edit.exceptions
        assert "heading" not in edit.elements
        assert len(edit.figures) == len(full.figures) >= 5
        assert edit.figures_contain("valley")


def test_an_edit_for_a_fragment_the_session_does_not_hold_runs_the_whole_page(server):
    """What the browser sends after it reconnected to a new session (another replica, a restarted
    server): the edit names a fragment of the lost session. The page is run whole, with the edit."""
    from bench.protocol import ProtocolSession

    async def go():
        s = ProtocolSession(server, "self-attention", lang="en", timeout=120)
        try:
            await s.open()
            s.fragments[s.text_id] = "0" * 32  # a fragment id this session never had
            return await s.set_text("The valley was closed because it was late.")
        finally:
            await s.close()

    run = run_coroutine(go())
    assert run.status == FULL and not run.exceptions
    assert len(run.figures) == 5 and run.figures_contain("valley")
