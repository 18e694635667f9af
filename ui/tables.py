"""Tables as a reader sees them: display names for column keys, a dash for empty cells, and wide
tables that scroll sideways instead of losing columns.

``show(rows)`` takes records keyed by column keys (``params_b``, ``squad11_f1`` ...); each header is
``t("labels.column.<key>")``, so both languages name every column. A key with no entry there is
shown as written, and tests/test_zh_labels.py fails on it in zh-TW.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ui import state
from ui.i18n import strings, t

EMPTY = "—"


def column_name(key: str) -> str:
    """The display name of a column key in the current language (the key itself if it has none)."""
    full = f"labels.column.{key}"
    return t(full) if full in strings(state.lang()) or full in strings("en") else key


def _empty(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def display_rows(
    rows: Iterable[Mapping], columns: Iterable[str] | None = None, values: Mapping[str, Mapping] | None = None
) -> list[dict]:
    """Rows with display headers and "—" for empty cells. ``columns`` picks and orders the keys;
    ``values`` maps a column's raw values to display text (e.g. ``{"dir": {"fwd": "前向"}}``)."""
    rows = list(rows)
    keys = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    names = {k: column_name(k) for k in keys}
    values = values or {}
    out = []
    for r in rows:
        row = {}
        for k in keys:
            v = r.get(k)
            if k in values and not _empty(v):
                v = values[k].get(v, v)
            row[names[k]] = EMPTY if _empty(v) else v
        out.append(row)
    return out


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def show(
    rows: Iterable[Mapping],
    columns: Iterable[str] | None = None,
    *,
    values: Mapping[str, Mapping] | None = None,
    **kwargs,
):
    """:func:`ui.lesson.table` of :func:`display_rows`; wide tables scroll inside their frame (the frame
    keeps the page's width, so no column is cut off), the index is hidden."""
    shown = display_rows(rows, columns, values)
    for col in shown[0] if shown else ():  # a dash among numbers: the whole column as text (one type)
        cells = [r[col] for r in shown]
        if EMPTY in cells and any(not isinstance(c, str) for c in cells):
            for r, c in zip(shown, cells):
                r[col] = _text(c)
    kwargs.setdefault("hide_index", True)
    kwargs.setdefault("width", "stretch")
    from ui import lesson  # static in print and presenter modes, a data grid on screen

    return lesson.table(shown, **kwargs)
