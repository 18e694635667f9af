"""Start the app: ``python -m ui.serve [streamlit options]`` (what ``make run`` does).


Streamlit treats a folder named pages/ beside app.py as an old-style multipage app until
st.navigation runs once in the process; until then a deep link such as /bahdanau?step=3 opened
first after a start is answered "page not found". Our pages/ holds scripts that st.navigation
lists itself, so we say so before the server starts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli

APP = Path(__file__).resolve().parent.parent / "app.py"


def main(argv: list[str]) -> int:
    PagesManager.uses_pages_directory = False
    # One intra-op thread per computation: the server runs one script thread per browser session,
    # and on a small CPU two torch threads per session fight each other (measured: a 12 ms decode
    # took ~400 ms under load). Set OMP_NUM_THREADS yourself to override; it must precede torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(APP.parent))
    if os.environ.get("ATTENTION_LAB_PROFILE"):  # where the server's time goes (bench/sampler.py)
        from bench import sampler

        sampler.start(os.environ["ATTENTION_LAB_PROFILE"])
    from ui import warmup

    warmup.start()  # torch, the default BERT and the first sentences, while the server comes up
    sys.argv = ["streamlit", "run", str(APP), *argv]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
