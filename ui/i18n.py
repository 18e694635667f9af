"""UI strings in two languages: every string on screen goes through :func:`t`.

Strings live in ui/locales/<lang>/<namespace>.toml; a key's first part is the file stem
(``t("app.next_step")`` reads ``next_step`` from ``app.toml``).
"""

from __future__ import annotations

import functools

from core.lessons import LANGS, load_locale_keys
from ui import state

DEFAULT_LANG = "zh-TW"
LANG_NAMES = {"zh-TW": "中文", "en": "English"}


@functools.lru_cache(maxsize=len(LANGS))
def strings(lang: str) -> dict[str, str]:
    return load_locale_keys(lang)


def t(key: str, **fmt) -> str:
    """The string for ``key`` in the current language (English, then the key itself, as fallback)."""
    lang = state.lang()
    text = strings(lang).get(key) or strings("en").get(key) or key
    return text.format(**fmt) if fmt else text


def t_keys(prefix: str, *keys: str, **slots: str) -> dict[str, str]:
    """``{key: t(prefix + key)}`` for each key, and ``{slot: t(prefix + name)}`` for each
    ``slot=name`` whose string has another name than the slot it fills."""
    return {k: t(prefix + k) for k in keys} | {slot: t(prefix + name) for slot, name in slots.items()}
