"""The glossary: its file is well formed, the check flags variants (and only variants), and the page
renders and filters in both languages."""

from __future__ import annotations

import shutil

import pytest

from core.glossary import GLOSSARY_PATH, GROUPS, glossary_problems, load_terms
from core.lessons import LANGS, LOCALES_DIR, ROOT, load_catalog
from tests.apptest import run_lesson

TERMS, TERM_PROBLEMS = load_terms()


def test_glossary_file_is_complete_and_clean():
    assert not TERM_PROBLEMS, [str(p) for p in TERM_PROBLEMS]
    assert len(TERMS) >= 30
    ids = [term.id for term in TERMS]
    assert len(ids) == len(set(ids))
    assert {term.group for term in TERMS} == set(GROUPS)
    # the Taiwan-usage list is enforced
    variants = {v for term in TERMS for v in term.avoid_zh}
    for word in ("數據", "對沖基金", "納斯達克", "標注", "歸一化", "通過", "算力", "匯總", "復習", "積極", "消極"):
        assert word in variants, word
    # and one word per concept: the glossary's own choices
    chosen = {term.id: term.zh for term in TERMS}
    assert chosen["token"] == "詞元" and chosen["bias"] == "偏差" and chosen["inference"] == "推論"


def test_lessons_and_locales_use_only_glossary_terms():
    problems = glossary_problems(load_catalog())
    assert not problems, "\n".join(map(str, problems))


@pytest.fixture
def broken(tmp_path):
    """A copy of the lessons and locales with variants planted in known places."""
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    locales = tmp_path / "locales"
    shutil.copytree(LOCALES_DIR, locales)
    zh = lessons / "01-nlp-tasks" / "zh-TW.md"
    zh.write_text(zh.read_text(encoding="utf-8") + "\n這些數據通過 softmax 歸一化。\n", encoding="utf-8")
    en = lessons / "05-multi-head" / "en.md"
    en.write_text(
        en.read_text(encoding="utf-8") + "\nEvery head is Pretrained; the AllReduce sums.\n", encoding="utf-8"
    )
    (locales / "zh-TW" / "extra.toml").write_text('note = "偏置與算力"\nkey_microbatch = "微批次"\n', encoding="utf-8")
    (locales / "en" / "extra.toml").write_text('fig_microbatch = "micro-batch"\n', encoding="utf-8")
    # the glossary lesson itself names variants on purpose: never flagged
    gl = lessons / "09-glossary" / "zh-TW.md"
    gl.write_text(gl.read_text(encoding="utf-8") + "\n例如數據。\n", encoding="utf-8")
    return lessons, locales


def test_check_flags_each_variant_with_file_and_line(broken):
    lessons, locales = broken
    catalog = load_catalog(lessons, locales)
    problems = glossary_problems(catalog, locales_dir=locales)  # finds the copy's own glossary.toml
    assert problems == glossary_problems(catalog, lessons / "glossary.toml", locales)
    found = {(p.file.split("/")[-2] + "/" + p.file.split("/")[-1], p.reason.split("'")[1]) for p in problems}
    assert found == {
        ("01-nlp-tasks/zh-TW.md", "數據"),
        ("01-nlp-tasks/zh-TW.md", "通過"),
        ("01-nlp-tasks/zh-TW.md", "歸一化"),
        ("05-multi-head/en.md", "pretrained"),
        ("05-multi-head/en.md", "allreduce"),
        ("zh-TW/extra.toml", "偏置"),
        ("zh-TW/extra.toml", "算力"),
    }, problems
    # a lessons folder's own glossary is the one that counts: drop a term there and it is not flagged
    (lessons / "glossary.toml").write_text(
        (lessons / "glossary.toml").read_text(encoding="utf-8").replace('avoid_zh = ["偏置"]', "avoid_zh = []"),
        encoding="utf-8",
    )
    assert "偏置" not in {p.reason.split("'")[1] for p in glossary_problems(catalog, locales_dir=locales)}
    zh_line = len((lessons / "01-nlp-tasks" / "zh-TW.md").read_text(encoding="utf-8").splitlines())
    assert any(p.line == zh_line and "資料" in p.reason for p in problems)


def test_a_broken_glossary_file_is_reported_not_raised(tmp_path):
    bad = tmp_path / "glossary.toml"
    bad.write_text(
        '[[term]]\nid = "Token"\ngroup = "models"\nen = "token"\nzh-TW = "詞元"\n'
        'define_en = "x"\ndefine_zh = "x"\n\n[[term]]\nid = "bias"\ngroup = "nowhere"\n',
        encoding="utf-8",
    )
    terms, problems = load_terms(bad)
    assert terms == []
    reasons = " | ".join(p.reason for p in problems)
    assert "lowercase" in reasons and "needs en, zh-TW, define_en, define_zh" in reasons
    bad.write_text("[[term]\n", encoding="utf-8")
    assert "does not parse" in load_terms(bad)[1][0].reason
    assert load_terms(tmp_path / "missing.toml")[1][0].reason == "the glossary file is missing"
    assert GLOSSARY_PATH.is_file()


@pytest.mark.parametrize("lang", LANGS)
def test_glossary_page_renders_and_filters(lang):
    at = run_lesson("glossary", lang)
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.dataframe) == len(GROUPS)
    total = sum(len(df.value) for df in at.dataframe)
    assert total == len(TERMS)
    term_col = at.dataframe[0].value.columns[0]
    all_terms = {v for df in at.dataframe for v in df.value[term_col]}
    assert ("詞元" if lang == "zh-TW" else "token") in all_terms
    # filter in the other language: "詞元" finds the token row on the English page too
    at.text_input(key="glossary.filter").set_value("詞元").run()
    rows = [v for df in at.dataframe for v in df.value[term_col]]
    assert rows and ("詞元" if lang == "zh-TW" else "token") in rows and len(rows) < len(TERMS)
    # a filter that matches nothing says so, and HTML typed in is shown as text, not markup
    at.text_input(key="glossary.filter").set_value("<b>zzz</b>").run()
    assert not at.dataframe and not at.exception
    assert any("<b>zzz</b>" in c.value for c in at.caption)
    for odd in ("🙂🙂", "مرحبا", "**x** `y`", "\u200b"):
        at.text_input(key="glossary.filter").set_value(odd).run()
        assert not at.exception and not at.dataframe and at.caption
