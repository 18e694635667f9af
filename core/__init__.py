"""Attention Lab's computing side: models, attention math, calculators, figure builders.

Nothing in core/ imports streamlit; every module works from a notebook or `python -m core.<module>`.
"""
