"""Markdown tables for docs/PERFORMANCE.md from the benchmarks' --json output.

    python bench/bench_load.py --page self-attention --json > load4.json   (and multi-head > load5.json)
    python bench/bench_browser.py --json > browser.json
    python bench/bench_soak.py --json > soak.json
    python bench/report.py load4.json load5.json browser.json soak.json

Each file holds JSON lines; the kind of each line is told by its keys.
"""

from __future__ import annotations

import json
import sys


def fmt(v, unit="s"):
    return "–" if v is None else f"{v:.2f} {unit}"


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table: the header, its separator, one line per row of cells."""
    return [f"| {' | '.join(str(c) for c in cells)} |" for cells in [header, ["---"] * len(header), *rows]]


def load_rows(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        s, b, q = r["steady"], r["burst"], r.get("ratio")
        ratio = (
            f"{q['edit_median_s'] * 1000:.0f} ms ÷ {q['forward_median_s'] * 1000:.1f} ms = {q['ratio']}× "
            f"(p95 {q.get('ratio_p95', '–')}×, {q.get('tokens', '?')} tokens)"
            + (
                f"; results cached: {q['cached_edit_median_s'] * 1000:.0f} ms = {q['cached_ratio']}×"
                if "cached_ratio" in q
                else ""
            )
            + (
                f"; each run's own forward pass ({q['server_forward_median_s'] * 1000:.1f} ms): "
                f"median {q['same_run_ratio']}×, p95 {q['same_run_ratio_p95']}×"
                if "same_run_ratio" in q
                else ""
            )
            if q
            else "–"
        )
        env = f" ({', '.join(r['server_env'])})" if r.get("server_env") else ""
        out.append(
            [
                f"/{r['page']}{env}",
                f"{r['sessions']} every ~{r['interval_s']:g} s, {r['duration_s']:g} s",
                f"{s['n']}, {fmt(s['median_s'])}, {fmt(s['p95_s'])}",
                f"{fmt(b['median_s'])}, {fmt(b['p95_s'])}",
                r["errors"],
                f"{r['first_load']['n']} of {r['sessions']}: "
                f"{fmt(r['first_load']['median_s'])} / {fmt(r['first_load']['p95_s'])}",
                f"{r['rss_mb_peak']:.0f} / {r['rss_mb_end']:.0f} MB",
                r["kb_per_edit_median"],
                ratio,
            ]
        )
    header = ["page", "sessions", "steady: n, median, p95 (≤ 1 s)", "burst of N: median, p95 (≤ 3 s)", "errors"]
    header += [
        "opened: first load median / p95",
        "RSS peak / end (≤ 1536 MB)",
        "KB per edit",
        "idle edit ÷ forward (≤ 3×)",
    ]
    return table(header, out)


def browser_rows(rows: list[dict]) -> list[str]:
    header = ["page", "edits", "figures that show the text", "median", "p95", "budget p95", "page errors"]
    cells = ("edits", "figures_with_text")
    times = ("median_s", "p95_s", "budget_p95_s")
    return table(
        header,
        [
            [f"/{r['page']} ({r['lang']})", *(r[k] for k in cells), *(fmt(r[k]) for k in times), len(r["errors"])]
            for r in rows
        ],
    )


def soak_rows(rows: list[dict]) -> list[str]:
    header = ["reruns", "wall", "RSS start", "RSS at marks", "after settling", "growth first→last mark", "errors"]
    out = []
    for r in rows:
        marks = ", ".join(f"{k}: {v:.0f} MB" for k, v in r["rss_mb_at"].items())
        out.append(
            [
                r["reruns"],
                f"{r['wall_s']:.0f} s",
                f"{r['rss_mb_start']:.0f} MB",
                marks,
                f"{r['rss_mb_after_settle']:.0f} MB",
                f"{r['growth_pct_first_to_last_mark']} %",
                r["errors"],
            ]
        )
    return table(header, out)


def main(paths: list[str]) -> int:
    kinds: dict[str, list[dict]] = {"load": [], "browser": [], "soak": []}
    for path in paths:
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            kind = "load" if "steady" in r else "browser" if "figures_with_text" in r else "soak"
            kinds[kind].append(r)
    for title, rows, fn in (
        ("A class on one server (protocol sessions)", kinds["load"], load_rows),
        ("One browser session: Enter to every figure drawn", kinds["browser"], browser_rows),
        ("Soak", kinds["soak"], soak_rows),
    ):
        if rows:
            print(f"### {title}\n")
            print("\n".join(fn(rows)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
