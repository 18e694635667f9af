"""Toy sequence-to-sequence tasks, generated in code and readable on screen.

* ``copy`` / ``reverse``: a string of lowercase letters (length 1..40) is copied or reversed.
  Nothing but memory is needed, so the length at which a model fails measures how much of the
  input it can keep: the bottleneck of the fixed-length vector c.
* ``date``: a date spelt in English or Chinese ("2 December 2026", "2026年12月2日",
  "二〇二六年十二月二日", "Dec 2, 2026", "12/02/26") becomes ISO 8601 ("2026-12-02"). Each output
  character comes from a few input characters that a student can name, so its alignment
  heatmap can be read.

Held-out examples never meet training: a stable hash of the *answer* (the date, or the letter
string) puts it in exactly one split, so no spelling of a held-out date is ever trained on.
"""

from __future__ import annotations

import datetime as _dt
import random
import zlib
from dataclasses import dataclass
from typing import Callable

PAD, BOS, EOS = "<pad>", "<s>", "</s>"
SPECIALS = (PAD, BOS, EOS)
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2


class Vocab:
    """Characters to ids and back. Ids 0..2 are the specials <pad>, <s>, </s>."""

    def __init__(self, chars: str):
        self.itos: list[str] = list(SPECIALS) + sorted(set(chars))
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def unknown(self, text: str) -> list[str]:
        """Characters of ``text`` the vocabulary does not have, in first-seen order."""
        seen: list[str] = []
        for ch in text:
            if ch not in self.stoi and ch not in seen:
                seen.append(ch)
        return seen

    def encode(self, text: str) -> list[int]:
        bad = self.unknown(text)
        if bad:
            raise ValueError(f"characters outside the vocabulary: {bad!r}")
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        """Ids to text, stopping at </s> and skipping <pad>/<s>."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i >= len(SPECIALS):
                out.append(self.itos[i])
        return "".join(out)

    @property
    def symbols(self) -> str:
        return "".join(self.itos[len(SPECIALS) :])


def _split_of(answer: str) -> str:
    """test / valid / train by a stable hash of the answer (crc32 does not change between runs)."""
    bucket = zlib.crc32(answer.encode("utf-8")) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 else "train"


@dataclass(frozen=True)
class Example:
    src: str
    tgt: str
    kind: str = ""  # which spelling produced it (date formats); "" for copy/reverse


@dataclass(frozen=True)
class Task:
    name: str
    src_vocab: Vocab
    tgt_vocab: Vocab
    max_src_len: int
    max_tgt_len: int
    _draw: Callable[[random.Random], Example]
    bucket_width: int = 5
    examples: tuple[str, ...] = ()  # inputs offered on the pages

    def sample(self, rng: random.Random, split: str = "train") -> Example:
        """One example from ``split`` ("train", "valid" or "test")."""
        while True:
            ex = self._draw(rng)
            if _split_of(ex.tgt) == split:
                return ex

    def batch(self, rng: random.Random, n: int, split: str = "train") -> list[Example]:
        return [self.sample(rng, split) for _ in range(n)]

    def heldout(self, n: int = 2000, seed: int = 20141) -> list[Example]:
        """The fixed held-out set the manifest's accuracy is measured on."""
        return self.batch(random.Random(seed), n, "test")

    def target(self, src: str) -> str | None:
        """The right answer for a source string, when the task can compute it."""
        return _TARGET_FNS[self.name](src)

    def bucket(self, length: int) -> tuple[int, int]:
        lo = (length - 1) // self.bucket_width * self.bucket_width + 1
        return lo, lo + self.bucket_width - 1


# ---------------------------------------------------------------- copy / reverse
LETTERS = "abcdefghijklmnopqrstuvwxyz"
MAX_COPY_LEN = 40


def _letters(rng: random.Random) -> str:
    n = rng.randint(1, MAX_COPY_LEN)
    return "".join(rng.choice(LETTERS) for _ in range(n))


def _copy_draw(rng: random.Random) -> Example:
    s = _letters(rng)
    return Example(s, s)


def _reverse_draw(rng: random.Random) -> Example:
    s = _letters(rng)
    return Example(s, s[::-1])


# ---------------------------------------------------------------- dates
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
FIRST_DAY = _dt.date(1950, 1, 1)
LAST_DAY = _dt.date(2049, 12, 31)  # two-digit years are then unambiguous: 50-99 -> 19xx, 00-49 -> 20xx
ZH_DIGITS = "〇一二三四五六七八九"


def _zh_number(n: int) -> str:
    """1..31 in Chinese numerals: 十 = 10, 十二 = 12, 二十 = 20, 二十一 = 21."""
    tens, ones = divmod(n, 10)
    head = "" if tens == 0 else ("十" if tens == 1 else ZH_DIGITS[tens] + "十")
    return head + (ZH_DIGITS[ones] if ones or tens == 0 else "")


def _month_name(d: _dt.date, short: bool, rng: random.Random | None) -> str:
    name = MONTHS[d.month - 1][:3] if short else MONTHS[d.month - 1]
    # a fifth in lower case, so "december 2, 2026" typed by a student is not out of distribution
    if rng is not None and rng.random() < 0.2:
        name = name.lower()
    return name


DATE_FORMATS: dict[str, Callable[[_dt.date, random.Random | None], str]] = {
    "d MMMM yyyy": lambda d, r: f"{d.day} {_month_name(d, False, r)} {d.year}",
    "MMMM d, yyyy": lambda d, r: f"{_month_name(d, False, r)} {d.day}, {d.year}",
    "MMM d, yyyy": lambda d, r: f"{_month_name(d, True, r)} {d.day}, {d.year}",
    "d MMM yyyy": lambda d, r: f"{d.day} {_month_name(d, True, r)} {d.year}",
    "MM/dd/yy": lambda d, r: f"{d.month:02d}/{d.day:02d}/{d.year % 100:02d}",
    "yyyy年M月d日": lambda d, r: f"{d.year}年{d.month}月{d.day}日",
    "中文數字": lambda d, r: (
        "".join(ZH_DIGITS[int(c)] for c in str(d.year)) + f"年{_zh_number(d.month)}月{_zh_number(d.day)}日"
    ),
}


def spell_date(d: _dt.date, fmt: str) -> str:
    """A date in one of :data:`DATE_FORMATS`, month names capitalised."""
    return DATE_FORMATS[fmt](d, None)


def _date_draw(rng: random.Random) -> Example:
    d = FIRST_DAY + _dt.timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    fmt = rng.choice(list(DATE_FORMATS))
    return Example(DATE_FORMATS[fmt](d, rng), d.isoformat(), fmt)


def _date_chars() -> str:
    chars = set("0123456789 ,/年月日十" + ZH_DIGITS)
    for m in MONTHS:
        chars |= set(m) | set(m.lower())
    return "".join(sorted(chars))


def parse_date(text: str) -> str | None:
    """The ISO answer for any spelling the task generates, else None (used to mark answers on
    the pages; independent of the model)."""
    s = text.strip()
    for fmt in DATE_FORMATS:
        # trying every date is slow; instead parse each format's shape directly
        iso = _parse_one(s, fmt)
        if iso:
            return iso
    return None


def _zh_to_int(s: str) -> int | None:
    if not s or any(c not in ZH_DIGITS + "十" for c in s):
        return None
    if "十" not in s:
        return int("".join(str(ZH_DIGITS.index(c)) for c in s)) if len(s) == 1 else None
    tens, _, ones = s.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    t = 1 if tens == "" else ZH_DIGITS.index(tens)
    o = 0 if ones == "" else ZH_DIGITS.index(ones)
    return 10 * t + o


def _month_of(name: str) -> int | None:
    for i, m in enumerate(MONTHS):
        if name.lower() in (m.lower(), m[:3].lower()):
            return i + 1
    return None


def _parse_one(s: str, fmt: str) -> str | None:
    import re

    y = m = d = None
    try:
        if fmt in ("d MMMM yyyy", "d MMM yyyy"):
            g = re.fullmatch(r"(\d{1,2}) ([A-Za-z]+) (\d{4})", s)
            if g:
                d, m, y = int(g[1]), _month_of(g[2]), int(g[3])
        elif fmt in ("MMMM d, yyyy", "MMM d, yyyy"):
            g = re.fullmatch(r"([A-Za-z]+) (\d{1,2}), (\d{4})", s)
            if g:
                m, d, y = _month_of(g[1]), int(g[2]), int(g[3])
        elif fmt == "MM/dd/yy":
            g = re.fullmatch(r"(\d{2})/(\d{2})/(\d{2})", s)
            if g:
                yy = int(g[3])
                m, d, y = int(g[1]), int(g[2]), (1900 + yy if yy >= 50 else 2000 + yy)
        elif fmt == "yyyy年M月d日":
            g = re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})日", s)
            if g:
                y, m, d = int(g[1]), int(g[2]), int(g[3])
        else:
            g = re.fullmatch(r"([〇一二三四五六七八九]{4})年([一二三四五六七八九十]+)月([一二三四五六七八九十]+)日", s)
            if g:
                y = int("".join(str(ZH_DIGITS.index(c)) for c in g[1]))
                m, d = _zh_to_int(g[2]), _zh_to_int(g[3])
        if y is None or m is None or d is None:
            return None
        day = _dt.date(y, m, d)
    except ValueError:
        return None
    if not FIRST_DAY <= day <= LAST_DAY:
        return None
    return day.isoformat()


_TARGET_FNS: dict[str, Callable[[str], str | None]] = {
    "copy": lambda s: s,
    "reverse": lambda s: s[::-1],
    "date": parse_date,
}

_LETTER_VOCAB = Vocab(LETTERS)

TASKS: dict[str, Task] = {
    "copy": Task(
        "copy",
        _LETTER_VOCAB,
        _LETTER_VOCAB,
        MAX_COPY_LEN,
        MAX_COPY_LEN,
        _copy_draw,
        examples=(
            "attention",
            "abcdefghijklmnopqrst",
            "thequickbrownfoxjumpsoverthelazydog",
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmn",
        ),
    ),
    "reverse": Task(
        "reverse",
        _LETTER_VOCAB,
        _LETTER_VOCAB,
        MAX_COPY_LEN,
        MAX_COPY_LEN,
        _reverse_draw,
        examples=("attention", "abcdefghijklmnopqrst", "thequickbrownfoxjumpsoverthelazydog"),
    ),
    "date": Task(
        "date",
        Vocab(_date_chars()),
        Vocab("0123456789-"),
        24,
        10,
        _date_draw,
        examples=(
            "2 December 2026",
            "2026年12月2日",
            "二〇二六年十二月二日",
            "Dec 2, 2026",
            "12/02/26",
            "July 20, 1969",
        ),
    ),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose from {sorted(TASKS)}") from None
