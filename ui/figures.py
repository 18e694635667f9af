"""Showing a Plotly figure the same way everywhere: PNG export in the toolbar, data downloads."""

from __future__ import annotations

import json
import re

import streamlit as st

from ui import state, theme
from ui.i18n import t

PLOTLY_CONFIG = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def _safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "figure"


def _to_records(data) -> list[dict]:
    if hasattr(data, "to_dict"):
        return data.to_dict(orient="records")
    if isinstance(data, dict):
        return [data]
    return list(data)


def _to_csv(data) -> str:
    import pandas as pd  # pandas comes with streamlit; imported here to keep startup light

    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(_to_records(data))
    return frame.to_csv(index=False)


def download_buttons(key: str, data, filename: str) -> None:
    """CSV and JSON buttons for ``data`` (records, a DataFrame, or a function returning either).

    The files are built only when a button is clicked, so a big export costs nothing per rerun.
    """
    name = _safe_filename(filename)

    def get():
        return data() if callable(data) else data

    # one horizontal row (one block, two buttons): a column layout sent four blocks per figure
    row = st.container(horizontal=True)
    row.download_button(
        t("app.download_csv"),
        lambda: _to_csv(get()),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"{key}.csv",
        icon=":material/download:",
        on_click="ignore",
    )
    row.download_button(
        t("app.download_json"),
        lambda: json.dumps(_to_records(get()), ensure_ascii=False, indent=1, default=float),
        file_name=f"{name}.json",
        mime="application/json",
        key=f"{key}.json",
        icon=":material/download:",
        on_click="ignore",
    )


def show(fig, *, key: str, data=None, filename: str | None = None, **chart_kwargs):
    """Draw ``fig`` with a PNG button in its toolbar and CSV/JSON downloads of ``data``.

    ``data`` may be a function: it is called only when a download is clicked. Extra keyword
    arguments go to ``st.plotly_chart`` (for example ``on_select="rerun"``); its return value is
    returned. In the printable view the figure is static and there are no buttons.
    """
    name = _safe_filename(filename or key)
    config = dict(PLOTLY_CONFIG, toImageButtonOptions={"format": "png", "filename": name, "scale": 2})
    if state.printing():
        config["staticPlot"] = True
    elif state.presenter():
        fig = theme.scaled_figure(fig)
    event = st.plotly_chart(fig, key=key, config=config, **chart_kwargs)
    if data is not None and not state.printing():
        download_buttons(key, data, name)
    return event
