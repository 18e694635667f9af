"""Streamlit helpers shared by pages: i18n, lesson rendering, cached loaders, figure display."""
