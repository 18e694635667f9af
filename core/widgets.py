"""What an instructor may write inside a lesson's Markdown: live widget blocks, quizzes, predictions.

    ```widget attention-heatmap
    text: The animal didn't cross the street because it was too tired
    layer: 2
    head: 5
    ```

    ```quiz
    question: What does the decoder of a plain seq2seq model see?
    - [ ] every encoder state
    - [x] only the final vector c
    explain: Without attention, c is all that crosses from encoder to decoder.
    ```

    ```predict
    question: Which input will the output "12" look at?
    answer: The month, "December", in the input.
    ```

This module is the single list of widgets, their arguments and the ranges of those arguments (data,
no streamlit), so that ``python -m core.lessons check`` validates blocks without starting the app
and accepts exactly what the app draws. The code that draws each widget is registered under the
same name in ui/widgets.py, and lesson pages draw the same widgets through ``ui.widgets.draw``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FENCE_OPEN = re.compile(r"^\s*```\s*(?P<kind>widget|quiz|predict)\b\s*(?P<name>[A-Za-z0-9_-]*)\s*$")
ARG_RE = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(?P<value>.*?)\s*$")
CHOICE_RE = re.compile(r"^\s*-\s*\[(?P<mark>[ xX])\]\s*(?P<text>.+?)\s*$")


@dataclass(frozen=True)
class Param:
    kind: str  # "str", "int", "choice"
    default: Any = None
    choices: tuple = ()
    minimum: int | None = None
    maximum: int | None = None
    help: str = ""

    def parse(self, raw: str) -> Any:
        """The typed value, or ValueError with a reason an author can act on."""
        if self.kind == "int":
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"must be a whole number, got {raw!r}") from None
            if self.minimum is not None and value < self.minimum:
                raise ValueError(f"must be at least {self.minimum}, got {value}")
            if self.maximum is not None and value > self.maximum:
                raise ValueError(f"must be at most {self.maximum}, got {value}")
            return value
        if self.kind == "choice":
            if raw not in self.choices:
                raise ValueError(f"must be one of {', '.join(map(str, self.choices))}; got {raw!r}")
            return raw
        if not raw:
            raise ValueError("must not be empty")
        return raw


@dataclass(frozen=True)
class WidgetSpec:
    name: str
    summary: str
    params: dict[str, Param] = field(default_factory=dict)


ANIMAL = "The animal didn't cross the street because it was too tired."

# One definition of each limit and range, used by the check (the specs below), the Markdown
# widgets and the lesson pages (ui/widgets.py, pages/).
SHOW_TOKENS = 64  # tokens a BERT figure draws (the model itself reads up to its position table)
MAX_CHARS = 2000  # characters kept from a text box (core.text.clean)
SENTENCE = Param("str", ANIMAL, help="the sentence")
SEED = Param("int", 0, minimum=0, maximum=1_000_000, help="random seed")
RANKS = Param("choice", "2", choices=("1", "2", "4"), help="tensor-parallel ranks")
SCHEDULE = Param("choice", "1f1b", choices=("gpipe", "1f1b", "interleaved"), help="schedule")
STAGES = Param("int", 4, minimum=1, maximum=8, help="pipeline stages p")
MICROBATCHES = Param("int", 8, minimum=1, maximum=32, help="micro-batches m")
CHUNKS = Param("int", 2, minimum=1, maximum=4, help="model chunks per stage v (interleaved)")

WIDGETS: dict[str, WidgetSpec] = {
    spec.name: spec
    for spec in [
        WidgetSpec(
            "attention-heatmap",
            "one head of the BERT model as a heatmap for a sentence",
            {
                "text": SENTENCE,
                "layer": Param("int", 0, minimum=0, help="layer, counted from 0"),
                "head": Param("int", 0, minimum=0, help="head, counted from 0"),
            },
        ),
        WidgetSpec(
            "head-grid",
            "every layer x head of the BERT model as small heatmaps",
            {"text": SENTENCE},
        ),
        WidgetSpec(
            "bahdanau-alignment",
            "the trained date model's alignment heatmap for an input",
            {"text": Param("str", "2 December 2026", help="a date in English or Chinese spelling")},
        ),
        WidgetSpec(
            "tokenizer",
            "WordPiece tokens and ids of a text",
            {"text": Param("str", ANIMAL, help="the text")},
        ),
        WidgetSpec(
            "embedding-sum",
            "token + segment + position embeddings and their LayerNorm'd sum",
            {"text": Param("str", "Attention is all you need", help="the sentence")},
        ),
        WidgetSpec(
            "mask-simulator",
            "BERT's 15 % / 80-10-10 masking applied to a text",
            {
                "text": SENTENCE,
                "seed": SEED,
            },
        ),
        WidgetSpec(
            "parallel-split",
            "how tensor parallelism splits a layer's weights across ranks",
            {
                "ranks": RANKS,
            },
        ),
        WidgetSpec(
            "pipeline-schedule",
            "a pipeline schedule's timeline and bubble fraction",
            {
                "schedule": SCHEDULE,
                "stages": STAGES,
                "microbatches": MICROBATCHES,
                "chunks": CHUNKS,
            },
        ),
        WidgetSpec(
            "worked-example",
            "a hand-sized worked example, numbers from core.worked",
            {
                "example": Param(
                    "choice", "attention", choices=("bahdanau", "attention", "megatron"), help="which example"
                ),
            },
        ),
    ]
}

QUIZ_PARAMS = {"question": Param("str"), "explain": Param("str", "")}
PREDICT_PARAMS = {"question": Param("str"), "answer": Param("str"), "placeholder": Param("str", "")}


@dataclass(frozen=True)
class Block:
    """A fenced block in a lesson: a widget, a quiz or a prediction."""

    kind: str  # "widget" | "quiz" | "predict"
    name: str  # the widget's name; "quiz" or "predict" otherwise
    raw_args: tuple[tuple[str, str, int], ...]  # (key, value, line)
    choices: tuple[tuple[bool, str], ...]  # quiz: (correct, text)
    line: int  # the opening fence's line in the file
    end_line: int
    problems: tuple[tuple[int, str], ...] = ()  # (line, reason) found while parsing

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.name}-{self.line}"


def parse_block(kind: str, name: str, lines: list[tuple[int, str]], start: int, end: int) -> Block:
    args, choices, problems = [], [], []
    for lineno, line in lines:
        if not line.strip():
            continue
        m = CHOICE_RE.match(line)
        if m and kind == "quiz":
            choices.append((m["mark"] in "xX", m["text"]))
            continue
        m = ARG_RE.match(line)
        if m:
            args.append((m["key"], m["value"], lineno))
        else:
            expected = "'key: value' or a choice '- [ ] text' / '- [x] text'" if kind == "quiz" else "'key: value'"
            problems.append((lineno, f"cannot read {line.strip()!r}: expected {expected}"))
    return Block(kind, name or kind, tuple(args), tuple(choices), start, end, tuple(problems))


def validate(block: Block) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """Typed arguments (defaults filled in) and a list of (line, reason) problems."""
    problems = list(block.problems)
    if block.kind == "widget":
        spec = WIDGETS.get(block.name)
        if spec is None:
            known = ", ".join(sorted(WIDGETS))
            reason = (
                "a widget block needs a name"
                if not block.name or block.name == "widget"
                else f"unknown widget {block.name!r}"
            )
            return {}, problems + [(block.line, f"{reason}; the widgets are: {known}")]
        params = spec.params
    elif block.kind == "quiz":
        params = QUIZ_PARAMS
    else:
        params = PREDICT_PARAMS
    values: dict[str, Any] = {}
    seen = set()
    for key, raw, lineno in block.raw_args:
        if key not in params:
            valid = ", ".join(params) or "none"
            problems.append((lineno, f"unknown argument {key!r} for {block.name}; valid: {valid}"))
            continue
        if key in seen:
            problems.append((lineno, f"argument {key!r} is given twice"))
            continue
        seen.add(key)
        try:
            values[key] = params[key].parse(raw)
        except ValueError as exc:
            problems.append((lineno, f"{block.name}: {key} {exc}"))
    for key, param in params.items():
        if key not in values:
            if param.default is None:
                problems.append((block.line, f"{block.name} needs '{key}: …'"))
            else:
                values[key] = param.parse(str(param.default)) if param.kind == "int" else param.default
    if block.kind == "quiz":
        if len(block.choices) < 2:
            problems.append((block.line, "a quiz needs at least two choices, written '- [ ] text'"))
        elif not any(correct for correct, _ in block.choices):
            problems.append((block.line, "a quiz needs a correct choice, marked '- [x] text'"))
    return values, problems
