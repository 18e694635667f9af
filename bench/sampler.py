"""A sampling profiler for the running server: where do the script threads spend their time?

``ATTENTION_LAB_PROFILE=/tmp/profile.json python -m ui.serve ...`` (or bench_load's
``--server-env ATTENTION_LAB_PROFILE=...``) starts it; every 5 ms it looks at each thread that is
running this repository's code and counts the innermost repository function and the innermost
module (torch, plotly, streamlit's protobuf work ...). The counts are written as JSON every 2 s.
It costs well under 1 % of a core; the numbers are shares of samples, not absolute times.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
from pathlib import Path

IDLE = {"selectors.py", "threading.py", "queue.py"}  # a thread waiting, not working
ROOT = str(Path(__file__).resolve().parent.parent) + os.sep


def _where(frame) -> tuple[str | None, str]:
    top = frame.f_code.co_filename
    lib = top.split("site-packages" + os.sep)[1].split(os.sep)[0] if "site-packages" in top else Path(top).name
    f = frame
    while f is not None:
        fn = f.f_code.co_filename
        if fn.startswith(ROOT) and "site-packages" not in fn and not fn.endswith("sampler.py"):
            return f"{fn[len(ROOT) :]}:{f.f_code.co_name}", lib
        f = f.f_back
    return None, lib


def start(path: str, interval: float = 0.005) -> None:
    repo, libs, total = collections.Counter(), collections.Counter(), [0]
    me = []

    def run():
        me.append(threading.get_ident())
        last = time.monotonic()
        while True:
            for tid, frame in sys._current_frames().items():
                if tid in me:
                    continue
                where, lib = _where(frame)
                if where and lib not in IDLE:
                    repo[where] += 1
                    libs[lib] += 1
                    total[0] += 1
            if time.monotonic() - last > 2:
                last = time.monotonic()
                Path(path).write_text(
                    json.dumps(
                        {
                            "samples": total[0],
                            "interval_s": interval,
                            "functions": repo.most_common(40),
                            "innermost_modules": libs.most_common(20),
                        }
                    )
                )
            time.sleep(interval)

    threading.Thread(target=run, name="attention-lab-sampler", daemon=True).start()
