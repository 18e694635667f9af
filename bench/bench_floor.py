"""What Streamlit itself costs per text edit, before any lesson does anything: the floor under
the budget "edit ≤ 3 × the model's forward pass" (docs/ARCHITECTURE.md, Budgets).

    python bench/bench_floor.py [--elements 0 20 60] [--edits 60] [--pause 0.05] [--json]

Starts bench/floor_app.py (a text box in a fragment, then N Markdown lines) with the app's own server
fixes (ui.serve.server_fixes: no Nagle delay, no pause between sends) and config
(.streamlit/config.toml), then times --edits text edits per N over Streamlit's protocol
(bench/protocol.py), send to ``script_finished``, with --pause between edits as a person leaves (an
idle server is slower to answer than a busy loop). Prints median and p95 per N and the fixed cost and
cost per element they imply. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_load import pct  # noqa: E402
from bench.protocol import ProtocolSession  # noqa: E402
from tests.e2e.conftest import free_port, stop_server, wait_healthy  # noqa: E402


def serve(port: int) -> int:
    """The floor app, started as the app is (ui.serve's socket fix, the repository's config)."""
    from streamlit.web import cli

    from ui import serve as app_serve

    app_serve.server_fixes()
    sys.argv = ["streamlit", "run", str(ROOT / "bench" / "floor_app.py"), "--server.port", str(port)]
    sys.argv += ["--server.address", "127.0.0.1", "--server.headless", "true"]
    return cli.main()


async def edits(url: str, n: int, count: int, pause: float) -> list[float]:
    s = ProtocolSession(url, "", lang=None, query=f"n={n}", timeout=30)
    await s.open()
    times = []
    try:
        for i in range(count + 5):  # the first five warm up
            run = await s.set_text(f"sentence {i} {time.time_ns()}")
            if not run.ok or len(run.elements) != n + 1:
                raise RuntimeError(f"edit {i} with {n} lines came back as {run.status}, {len(run.elements)} elements")
            times.append(run.seconds)
            await asyncio.sleep(pause)
    finally:
        await s.close()
    return times[5:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, nargs="+", default=[0, 20, 60])
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--pause", type=float, default=0.05, help="seconds between edits")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the server process itself
    args = ap.parse_args(argv)
    if args.serve:
        return serve(args.serve)
    port = free_port()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        rows = []
        for n in args.elements:
            t = asyncio.run(edits(url, n, args.edits, args.pause))
            rows.append(
                {
                    "elements": n,
                    "edits": len(t),
                    "median_s": round(statistics.median(t), 5),
                    "p95_s": round(pct(t, 0.95), 5),
                }
            )
    finally:
        stop_server(proc)
    lo, hi = rows[0], rows[-1]
    per = (
        (hi["median_s"] - lo["median_s"]) / (hi["elements"] - lo["elements"])
        if hi["elements"] != lo["elements"]
        else None
    )
    result = {"pause_s": args.pause, "rows": rows, "fixed_s": lo["median_s"], "per_element_s": per and round(per, 6)}
    if args.json:
        print(json.dumps({"floor": result}))
        return 0
    for r in rows:
        print(
            f"  {r['elements']:>3} Markdown lines: median {r['median_s'] * 1000:.1f} ms, p95 {r['p95_s'] * 1000:.1f} ms ({r['edits']} edits)"
        )
    if per is not None:
        print(f"  fixed cost of a fragment rerun {lo['median_s'] * 1000:.1f} ms, then {per * 1000:.2f} ms per element")
    return 0


if __name__ == "__main__":
    sys.exit(main())
