"""Megatron tensor-parallel demo: wall time from the "click" (subprocess start) to the parsed result.

    .venv/bin/python bench/bench_megatron.py [--repeats 3] [--ranks 1 2 4]

Budget (docs/PERFORMANCE.md): 2 ranks, forward + backward + check, <= 5 s from the click on 2 CPU cores.
This is what the page does: it runs `python -m core.megatron demo --ranks N --json` as a subprocess
and parses its JSON. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def click(ranks: int) -> tuple[float, dict]:
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "core.megatron", "demo", "--ranks", str(ranks), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(p.stdout)
    return time.perf_counter() - t0, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cpus={os.cpu_count()} load1={load:.2f} python={sys.executable}")
    print("ranks  median_s  min_s  max_s  ok  backend  all_reduces(f/b)  worst_diff  step_ms(rank0)")
    for n in args.ranks:
        times, last = [], None
        for _ in range(args.repeats):
            dt, last = click(n)
            times.append(dt)
        ar = last.get("all_reduces", {})
        worst = max(last["max_abs_diff"].values()) if last.get("ok") else float("nan")
        step = last.get("step_ms", [float("nan")])[0]
        print(
            f"{n:>5}  {statistics.median(times):8.2f}  {min(times):5.2f}  {max(times):5.2f}  "
            f"{str(last.get('ok')):>3}  {last.get('backend', '-'):>7}  "
            f"{ar.get('forward', '-')}/{ar.get('backward', '-'):<15}  {worst:10.2e}  {step:8.1f}"
        )


if __name__ == "__main__":
    main()
