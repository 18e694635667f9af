"""Both languages complete; the language comes from the URL, the browser, or the default."""

from core.lessons import load_locale_keys
from ui.state import _lang_from_locale, _normalise_lang


def test_both_locales_have_exactly_the_same_keys():
    zh, en = load_locale_keys("zh-TW"), load_locale_keys("en")
    assert zh.keys() == en.keys(), sorted(zh.keys() ^ en.keys())
    assert all(v.strip() for v in zh.values()) and all(v.strip() for v in en.values())


def test_placeholders_match_between_languages():
    import string

    zh, en = load_locale_keys("zh-TW"), load_locale_keys("en")
    fields = lambda s: sorted(f for _, f, _, _ in string.Formatter().parse(s) if f)  # noqa: E731
    for key in en:
        assert fields(en[key]) == fields(zh[key]), key


def test_language_from_url_and_locale():
    assert _normalise_lang("en") == "en"
    assert _normalise_lang("zh-tw") == "zh-TW"
    assert _normalise_lang("zh_TW") == "zh-TW"
    assert _normalise_lang("fr") is None
    assert _lang_from_locale("en-GB") == "en"
    assert _lang_from_locale("zh-CN") == "zh-TW"
    assert _lang_from_locale("de-DE") is None
    assert _lang_from_locale(None) is None
