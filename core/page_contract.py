"""What a lesson's page script needs from its Markdown: the steps it draws after, and where its
shared inputs live. Read from the page script's source (``@page.widget("anchor")`` and
``@page.inputs("anchor")`` decorators), so the contract is the code itself and cannot drift.

``page_problems(lesson)`` returns problems in the same form as the lesson check's (file, line,
reason), so ``python -m core.lessons check`` can reject a lesson whose steps its page cannot serve.
No streamlit here: the page script is parsed, never run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class PageContract:
    path: Path
    sections: dict[str, int] = field(default_factory=dict)  # anchor -> line of its first @page.widget
    inputs: dict[str, int] = field(default_factory=dict)  # anchor -> line of its @page.inputs
    problems: tuple[tuple[int, str], ...] = ()  # (line, reason) found while reading

    @property
    def anchors(self) -> set[str]:
        """Every step the page needs: those it draws after and those holding its inputs."""
        return set(self.sections) | set(self.inputs)


def _decorator_anchor(dec: ast.expr) -> tuple[str, str | None] | None:
    """("widget" | "inputs", anchor) for ``@<name>.widget("x")`` / ``@<name>.inputs("x")``."""
    if not (
        isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr in ("widget", "inputs")
    ):
        return None
    arg = dec.args[0] if dec.args else None
    anchor = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
    return dec.func.attr, anchor


def read_contract(path: Path) -> PageContract:
    """The anchors a page script registers, with their lines. Unreadable scripts give a problem."""
    sections: dict[str, int] = {}
    inputs: dict[str, int] = {}
    problems: list[tuple[int, str]] = []
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        line = getattr(exc, "lineno", None) or 1
        return PageContract(path, problems=((line, f"cannot read the page script: {type(exc).__name__}"),))
    decorators = {
        id(dec)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for dec in node.decorator_list
    }
    for node in ast.walk(tree):  # @page.widget("x") on a def, or page.widget("x")(fn) anywhere
        found = _decorator_anchor(node) if isinstance(node, ast.Call) else None
        if found is None:
            continue
        kind, anchor = found
        if anchor is None:
            if id(node) in decorators:
                problems.append((node.lineno, f'@page.{kind} needs a literal anchor, like @page.{kind}("scores")'))
            continue  # registered in a loop from data (the glossary's groups): checked where it runs
        (sections if kind == "widget" else inputs).setdefault(anchor, node.lineno)
    return PageContract(path, sections, inputs, tuple(problems))


def page_problems(lesson) -> list:
    """Problems (file, line, reason) for every step the lesson's page needs and a language lacks.

    A page draws its sections after named steps and its shared inputs in a named step; the steps
    may come in any order (inputs are computed before any section), but each must exist in every
    language. Lessons without a page script have no such needs.
    """
    from core.lessons import LANGS, Problem, rel  # core.lessons may call this module

    if not lesson.page:
        return []
    path = lesson.page_path()
    contract = read_contract(path)
    where = rel(path)
    problems = [Problem(where, line, reason) for line, reason in contract.problems]
    for lang in LANGS:
        try:
            if not lesson.text(lang).strip():  # missing or unreadable: the lesson check's own problem
                continue
            anchors = [s.anchor for s in lesson.steps(lang)]
        except Exception:
            continue
        listed = ", ".join(f"#{a}" for a in anchors)
        md = rel(lesson.markdown_path(lang))
        for kind, needed in (("draws a section after", contract.sections), ("keeps its inputs in", contract.inputs)):
            for anchor, line in sorted(needed.items(), key=lambda item: item[1]):
                if anchor not in anchors:
                    problems.append(
                        Problem(
                            where,
                            line,
                            f"the page {kind} step #{anchor}, which {md} lacks "
                            f"(its steps: {listed}); add a heading "
                            f"'## … {{#{anchor}}}' or change the page",
                        )
                    )
    return problems
