"""What a lesson is, as data: its card (lesson.toml), its steps, and the problems found in it."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ATTENTION_LAB_LESSONS points the app at another lessons folder (tests use it for broken copies).
LESSONS_DIR = Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))
LOCALES_DIR = ROOT / "ui" / "locales"
LANGS = ("zh-TW", "en")
ID_RE = re.compile(r"^[a-z][a-z0-9-]*$")


def lessons_dir_default() -> Path:
    """The lessons folder, read from the environment at call time (tests switch it)."""
    return Path(os.environ.get("ATTENTION_LAB_LESSONS", ROOT / "lessons"))


@dataclass(frozen=True)
class Problem:
    file: str  # relative to the repo root
    line: int
    reason: str
    in_block: bool = False  # a widget/quiz block's fault: the app shows it in the block's place

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class Step:
    index: int
    anchor: str  # "intro" for the text before the first heading
    title: str  # "" for the intro
    body: str  # Markdown, heading excluded, blocks included as written
    line: int  # where the heading (or the file) starts
    segments: tuple = ()  # in order: Markdown strings and widgets.Block objects


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


class NotUtf8(ValueError):
    """A lesson file whose bytes are not UTF-8; ``problem`` says where and what to do."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


_BOMS = ((b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"))


def read_text(path: Path) -> str:
    """A lesson file's text. UTF-8, with or without a byte-order mark; anything else raises
    :class:`NotUtf8` naming the file, the line of the first bad byte and the encoding expected."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        guess = next((name for bom, name in _BOMS if data.startswith(bom)), None)
        if guess is None and data.count(b"\x00") > len(data) // 4:
            guess = "UTF-16"
        line = data[: exc.start].count(b"\n") + 1
        found = f"it looks like {guess}" if guess else f"byte 0x{data[exc.start]:02x} at line {line} is not UTF-8"
        raise NotUtf8(
            Problem(
                rel(path),
                line,
                f"{path.name} is not UTF-8 text ({found}); save it with the "
                "encoding UTF-8 (in your editor: Save as / Encoding: UTF-8)",
            )
        ) from None


@dataclass
class Lesson:
    folder: Path
    id: str
    order: int
    section: str = "lessons"
    icon: str = "📖"
    titles: dict[str, str] = field(default_factory=dict)
    page: str | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def title(self, lang: str) -> str:
        return self.titles.get(lang) or self.titles.get("en") or self.id

    def markdown_path(self, lang: str) -> Path:
        return self.folder / f"{lang}.md"

    def text(self, lang: str) -> str:
        """The text in one language; "" when the file is missing or unreadable (its problem is
        on ``problems``, put there by the loader)."""
        path = self.markdown_path(lang)
        if not path.is_file():
            return ""
        try:
            return read_text(path)
        except NotUtf8:
            return ""

    def steps(self, lang: str) -> list[Step]:
        return list(_steps_of(self.text(lang)))

    def page_path(self) -> Path | None:
        return ROOT / self.page if self.page else None


@functools.lru_cache(maxsize=64)
def _steps_of(markdown: str) -> tuple[Step, ...]:
    """Parsed steps by the text itself (steps are frozen): a page rerun reparses a lesson only when its
    file changed, and an edited file is parsed anew because its text is a new key."""
    from core.lessons.markdown import split_steps

    return tuple(split_steps(markdown))
