"""What users see when something fails: the app's own error card, never a raw exception.

core raises typed errors (a `code` and its `params`, no language; or, for the Megatron demo, a
result dict with "code" and "params"); this module maps each code to a translated message in
ui/locales/<lang>/errors.toml, and shows the exact command that repairs it, as text. Tracebacks
stay in the server log.
"""

from __future__ import annotations

import logging
import string

import streamlit as st

from ui.i18n import t

log = logging.getLogger("attention_lab.errors")


class _Blank(dict):
    def __missing__(self, key):  # a parameter core did not send shows as nothing, never a KeyError
        return ""


def message(code: str, **params) -> str:
    """The translated message for an error code (errors.unknown for a code not in the files)."""
    key = f"errors.{code}"
    text = t(key)
    if text == key:
        text = t("errors.unknown")
    fields = {name for _, name, _, _ in string.Formatter().parse(text) if name}
    return text.format_map(_Blank({k: v for k, v in params.items() if k in fields}))


def show(code: str, **params) -> None:
    """An error card: what happened and what to do; the repair command, if any, as plain text."""
    st.error(message(code, **params), icon=":material/error:")
    command = params.get("command")
    if command:
        st.caption(t("errors.command_label"))
        st.code(str(command), language="bash")


def show_exception(exc: BaseException) -> None:
    """A typed core error (`code`, `params`) as a card; anything else as the generic card, with
    the traceback in the server log only."""
    code, params = getattr(exc, "code", None), getattr(exc, "params", None)
    if code is None or not isinstance(params, dict):
        log.error("unexpected error", exc_info=exc)
        code, params = "unknown", {}
    show(code, **params)


def stop_with(exc: BaseException) -> None:
    """show_exception, then end this run of the page (the rest of it needs what failed)."""
    show_exception(exc)
    st.stop()


def show_result(result: dict) -> None:
    """A Megatron demo result that failed: its code and params as a card, the technical detail
    (the worker's own words) folded away below."""
    show(result.get("code") or "unknown", **(result.get("params") or {}))
    detail = result.get("detail")
    if detail:
        with st.expander(t("errors.detail_label")):
            st.text(str(detail))
