"""A lesson's Markdown cut into steps, read with a CommonMark parser (markdown-it-py).

A step starts at a level-2 heading, ATX (``## Title {#anchor}``) or setext (``Title`` over
``---``). Fenced blocks whose info string is ``widget NAME``, ``quiz`` or ``predict`` (with backticks
or tildes, any fence length) become :class:`core.widgets.Block` segments with their simple
``key: value`` bodies. Everything the parser calls code (fences of any length, indented code) is
text, never a heading or a block. HTML comments are notes for authors and are dropped, except inside
code, where they are code.
"""

from __future__ import annotations

import re
from dataclasses import replace

from markdown_it import MarkdownIt

from core.lessons.model import Step
from core.widgets import parse_block

ANCHOR_RE = re.compile(r"^(?P<title>.*?)\s*(?:\{#(?P<anchor>[A-Za-z0-9_-]+)\})?\s*$", re.S)
BLOCK_INFO_RE = re.compile(r"^(?P<kind>widget|quiz|predict)\b\s*(?P<name>[A-Za-z0-9_-]*)\s*$")
LINK_RE = re.compile(r"\]\(lesson:(?P<id>[A-Za-z0-9_-]*)(?:#(?P<anchor>[A-Za-z0-9_-]+))?\)")
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)

_PARSER = MarkdownIt("commonmark")

# What each source line is, for cutting: prose, an author's comment, a step heading, a lesson block
# (widget/quiz/predict), or code.
TEXT, COMMENT, HEADING, BLOCK, CODE = "text", "comment", "heading", "block", "code"


def _blank_comments(text: str) -> str:
    """Drop HTML comments but keep their line breaks, so line numbers stay right."""
    return COMMENT_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _regions(markdown: str) -> tuple[list[str], dict[int, tuple]]:
    """Per line, its kind; and, at the first line of each heading or block, what it holds."""
    lines = markdown.splitlines()
    kinds = [TEXT] * len(lines)
    starts: dict[int, tuple] = {}
    tokens = _PARSER.parse(markdown)
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None:
            continue
        lo, hi = tok.map
        kind = None
        if tok.type == "html_block" and tok.content.lstrip().startswith("<!--"):
            kind = COMMENT
        elif tok.type == "heading_open" and tok.tag == "h2":
            kind = HEADING
            starts[lo] = ("heading", tokens[i + 1].content)
        elif tok.type == "fence":
            info = BLOCK_INFO_RE.match(tok.info.strip())
            if info:
                kind = BLOCK
                closing = lines[hi - 1].strip() if hi - 1 > lo else ""
                closed = len(closing) >= len(tok.markup) and set(closing) == {tok.markup[0]}
                starts[lo] = ("block", info["kind"], info["name"], hi, closed, tok.markup)
            else:
                kind = CODE
        elif tok.type == "code_block":
            kind = CODE
        if kind is not None:
            for n in range(lo, min(hi, len(lines))):
                kinds[n] = kind
    return kinds, starts


def _text_segment(text: list[tuple[str, str]]) -> str:
    """Lines of prose and code as one Markdown string: comments dropped from prose, kept in code."""
    out: list[str] = []
    run: list[str] = []
    for line, kind in [*text, ("", CODE)]:
        if kind == CODE:
            out += _blank_comments("\n".join(run)).split("\n") if run else []
            run = []
            out.append(line)
        else:
            run.append(line)
    return "\n".join(out[:-1]).strip()


def _block_segment(lines: list[str], n: int, head: tuple):
    """The widget/quiz/predict block whose opening fence is line index ``n``."""
    _, kind, name, hi, closed, markup = head
    content_end = hi - 1 if closed else hi
    content = _blank_comments("\n".join(lines[n + 1 : content_end])).split("\n")
    numbered = [(n + 2 + k, c) for k, c in enumerate(content) if n + 1 + k < content_end]
    block = parse_block(kind, name, numbered, n + 1, hi if closed else n + 1)
    if not closed:
        block = replace(block, problems=block.problems + ((n + 1, f"this block is never closed with {markup}"),))
    return block


def split_steps(markdown: str) -> list[Step]:
    """Cut Markdown into steps at level-2 headings, and each step into text and lesson blocks.

    Lines are numbered from 1 as in the file; a block's problems carry its own lines.
    """
    lines = markdown.splitlines()
    kinds, starts = _regions(markdown)
    steps: list[Step] = []
    anchor, title, start = "intro", "", 1
    body: list[str] = []
    segments: list = []
    text: list[tuple[str, str]] = []  # (line, kind) since the last block

    def flush_text() -> None:
        chunk = _text_segment(text)
        if chunk:
            segments.append(chunk)
        text.clear()

    for n, line in enumerate(lines):
        kind, head = kinds[n], starts.get(n)
        if kind == HEADING and head is not None:
            flush_text()
            steps.append(Step(len(steps), anchor, title, "\n".join(body).strip(), start, tuple(segments)))
            m = ANCHOR_RE.match(head[1])
            title, anchor = m["title"], m["anchor"] or f"step-{len(steps)}"
            start, body, segments = n + 1, [], []
        elif kind == COMMENT:
            body.append("")
            text.append(("", TEXT))
        elif kind == BLOCK:
            body.append(line)
            if head is not None:
                flush_text()
                segments.append(_block_segment(lines, n, head))
        elif kind != HEADING:  # the underline of a setext heading belongs to the heading
            body.append(line)
            text.append((line, kind))
    flush_text()
    steps.append(Step(len(steps), anchor, title, "\n".join(body).strip(), start, tuple(segments)))
    if not steps[0].body and len(steps) > 1:  # no intro text: the first heading is step 0
        steps = [replace(s, index=i) for i, s in enumerate(steps[1:])]
    return steps


def prose_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, text) of the lines a reader sees as prose or headings: not comments, not code,
    not block bodies. Where the check looks for ``lesson:`` links."""
    kinds, _ = _regions(markdown)
    out = []
    for n, line in enumerate(_blank_comments(markdown).splitlines()):
        if n < len(kinds) and kinds[n] in (TEXT, HEADING):
            out.append((n + 1, line))
    return out
