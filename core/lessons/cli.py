"""The command line: ``python -m core.lessons check|list|new|widgets``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.lessons.authoring import describe_widgets, new_lesson
from core.lessons.catalog import load_catalog
from core.lessons.model import rel

DESCRIPTION = "The lesson catalog: validate, list and create lessons."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.lessons", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check", help="validate every lesson; exit 1 on any fault")
    check.add_argument("--lessons", type=Path, default=None, help="lessons folder (default: lessons/)")
    lst = sub.add_parser("list", help="print the catalog in lecture order")
    lst.add_argument("--lessons", type=Path, default=None)
    new = sub.add_parser("new", help="create a lesson folder with both texts and every feature shown")
    new.add_argument("slug", help="the lesson's id and address, e.g. why-scale")
    new.add_argument("--title-zh", required=True)
    new.add_argument("--title-en", required=True)
    new.add_argument("--section", help="navigation group (default: the last one)")
    new.add_argument("--order", type=int, help="place in the course (default: after the last lesson)")
    sub.add_parser("widgets", help="list the widgets a lesson can embed, with their arguments")
    args = parser.parse_args(argv)
    if args.cmd == "widgets":
        print(describe_widgets())
        return 0
    if args.cmd == "new":
        try:
            folder = new_lesson(args.slug, {"zh-TW": args.title_zh, "en": args.title_en}, args.section, args.order)
        except (ValueError, FileExistsError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"created {rel(folder)}/ (lesson.toml, zh-TW.md, en.md)")
        print(f"next: edit the two texts, run `python -m core.lessons check`, reload the app and open /{args.slug}")
        return 0
    catalog = load_catalog(args.lessons)
    if args.cmd == "list":
        for lesson in catalog.lessons:
            mark = "ok " if lesson.ok else "ERR"
            print(f"{mark} {lesson.order:>2} {lesson.section:<12} {lesson.id:<18} {lesson.title('en')}")
        return 0
    problems = catalog.all_problems()
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {len(catalog.lessons)} lessons", file=sys.stderr)
        return 1
    print(f"{len(catalog.lessons)} lessons OK")
    return 0
