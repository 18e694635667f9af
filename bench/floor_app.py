"""The smallest page a text edit can rerun: a text box in a fragment and ``?n=`` Markdown lines after it
(bench/bench_floor.py times it). Not part of the app."""

import streamlit as st

N = int(st.query_params.get("n", "0"))


@st.fragment
def sentence_and_lines():
    text = st.text_area("Sentence", key="text")
    for i in range(N):
        st.markdown(f"line {i}: {text[:20]}")


sentence_and_lines()
