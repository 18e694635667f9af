"""Attention Lab: `streamlit run app.py`. Reads the lesson catalog and hands over to the lessons."""

import streamlit as st

# No page_icon: Streamlit fetches Material-icon favicons from a font CDN, and the app must run offline.
st.set_page_config(page_title="Attention Lab", layout="wide")

from ui import shell  # noqa: E402  (set_page_config must come first)

shell.main()
