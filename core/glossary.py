"""The course glossary (lessons/glossary.toml): one word per concept, in zh-TW and English.

:func:`glossary_problems` flags a lesson or a UI string that uses a listed variant instead of the
glossary's term, in the same shape as ``core.lessons`` problems (file, line, reason), so that
``python -m core.lessons check`` can report them next to everything else.

    python -m core.glossary            # the terms, as JSON
    python -m core.glossary check      # only the glossary's problems; exit 1 if any
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from core.lessons import LANGS, LOCALES_DIR, ROOT, Catalog, NotUtf8, Problem, load_catalog, read_text, rel

GLOSSARY_PATH = ROOT / "lessons" / "glossary.toml"
GROUPS = ("attention", "models", "training", "parallel", "usage")
GLOSSARY_LESSON = "glossary"  # its own page lists the variants on purpose
ID_RE = re.compile(r"^[a-z][a-z0-9-]*$")
REQUIRED = ("id", "group", "en", "zh-TW", "define_en", "define_zh")


@dataclass(frozen=True)
class Term:
    id: str
    group: str
    en: str
    zh: str
    avoid_en: tuple[str, ...]
    avoid_zh: tuple[str, ...]
    define_en: str
    define_zh: str
    line: int  # where its [[term]] starts in glossary.toml

    def term(self, lang: str) -> str:
        return self.zh if lang == "zh-TW" else self.en

    def avoid(self, lang: str) -> tuple[str, ...]:
        return self.avoid_zh if lang == "zh-TW" else self.avoid_en

    def define(self, lang: str) -> str:
        return self.define_zh if lang == "zh-TW" else self.define_en


def load_terms(path: Path = GLOSSARY_PATH) -> tuple[list[Term], list[Problem]]:
    """The terms in file order, and the glossary file's own faults (never raised)."""
    where = rel(path)
    if not path.is_file():
        return [], [Problem(where, 1, "the glossary file is missing")]
    raw = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return [], [Problem(where, int(m[1]) if m else 1, f"glossary.toml does not parse: {exc}")]
    starts = [i for i, line in enumerate(raw.splitlines(), start=1) if line.strip() == "[[term]]"]
    terms, problems, seen = [], [], {}
    for k, entry in enumerate(data.get("term", [])):
        line = starts[k] if k < len(starts) else 1
        missing = [key for key in REQUIRED if not str(entry.get(key, "")).strip()]
        if missing:
            problems.append(Problem(where, line, f"term {entry.get('id', k)!r} needs {', '.join(missing)}"))
            continue
        if not ID_RE.match(entry["id"]):
            problems.append(
                Problem(where, line, f"term id must be lowercase letters, digits and '-', got {entry['id']!r}")
            )
            continue
        if entry["id"] in seen:
            problems.append(
                Problem(where, line, f"term id {entry['id']!r} is already used at line {seen[entry['id']]}")
            )
            continue
        if entry["group"] not in GROUPS:
            problems.append(Problem(where, line, f"group must be one of {', '.join(GROUPS)}, got {entry['group']!r}"))
            continue
        seen[entry["id"]] = line
        terms.append(
            Term(
                entry["id"],
                entry["group"],
                entry["en"],
                entry["zh-TW"],
                tuple(entry.get("avoid_en", ())),
                tuple(entry.get("avoid_zh", ())),
                entry["define_en"],
                entry["define_zh"],
                line,
            )
        )
    for term in terms:
        for lang in LANGS:
            for variant in term.avoid(lang):
                if variant and variant in term.term(lang):
                    problems.append(
                        Problem(
                            where,
                            term.line,
                            f"term {term.id!r}: the variant {variant!r} is part of the term {term.term(lang)!r} itself",
                        )
                    )
    return terms, problems


def _matcher(variant: str, lang: str) -> re.Pattern:
    if lang == "en":  # whole words, any case
        return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(variant)}(?![A-Za-z0-9_])", re.IGNORECASE)
    return re.compile(re.escape(variant))


def _scan(path: Path, lang: str, rules: list[tuple[re.Pattern, str, Term]]) -> list[Problem]:
    out = []
    try:
        text = read_text(path)
    except NotUtf8:  # reported once, by the lesson's own check; nothing to scan here
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        for pattern, variant, term in rules:
            if pattern.search(line):
                out.append(
                    Problem(
                        rel(path),
                        lineno,
                        f"uses {variant!r} where the glossary says {term.term(lang)!r} "
                        f"({term.en}; lessons/glossary.toml, term {term.id!r})",
                    )
                )
    return out


def glossary_path(catalog: Catalog) -> Path:
    """The glossary beside the catalog's lessons (a lessons folder of its own may carry one), else ours."""
    if catalog.lessons:
        beside = catalog.lessons[0].folder.parent / "glossary.toml"
        if beside.is_file():
            return beside
    return GLOSSARY_PATH


def glossary_problems(catalog: Catalog, path: Path | None = None, locales_dir: Path = LOCALES_DIR) -> list[Problem]:
    """Every lesson text and UI string that uses a variant the glossary lists instead of its term.

    Lessons are read from the catalog (both languages); UI strings from ``locales_dir/<lang>/``.
    The glossary lesson itself and the glossary's own locale file name the variants on purpose.
    ``path`` defaults to :func:`glossary_path`.
    """
    terms, problems = load_terms(path or glossary_path(catalog))
    for lang in LANGS:
        rules = [(_matcher(v, lang), v, term) for term in terms for v in term.avoid(lang) if v]
        if not rules:
            continue
        for lesson in catalog.lessons:
            md = lesson.markdown_path(lang)
            if lesson.id != GLOSSARY_LESSON and md.is_file():
                problems += _scan(md, lang, rules)
        folder = locales_dir / lang
        if folder.is_dir():
            for toml in sorted(folder.glob("*.toml")):
                if toml.stem != "glossary":
                    problems += _scan(toml, lang, rules)
    return sorted(set(problems), key=lambda p: (p.file, p.line, p.reason))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"]:
        problems = glossary_problems(load_catalog())
        for p in problems:
            print(p)
        print(f"{len(problems)} glossary problem(s)" if problems else "glossary OK", file=sys.stderr)
        return 1 if problems else 0
    terms, problems = load_terms()
    print(json.dumps([asdict(t) for t in terms], ensure_ascii=False, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
