"""The WordPiece vocabulary: BERT's own tokenizer rules, learnt from our corpus with `tokenizers`.

As in Devlin et al. 2018 (and Google's multilingual BERT), text is lower-cased, accents stripped, and
every CJK character becomes a word of its own (`handle_chinese_chars`), so Chinese is one token per
character and English is split into WordPiece sub-words ("##" marks a continuation).
Characters that the lessons and the interface ship (lessons/, ui/locales/) are added to the alphabet,
so no sentence the app shows comes out as [UNK].
"""

from __future__ import annotations

from pathlib import Path

from .inputs import is_cjk  # the same CJK blocks BERT splits per character

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
REPO = Path(__file__).resolve().parents[2]


def repo_characters() -> list[str]:
    """CJK characters in the text the repository itself ships (lessons and locale files)."""
    chars = set()
    for folder, pattern in (("lessons", "*.md"), ("lessons", "*.toml"), ("ui/locales", "*")):
        for f in sorted((REPO / folder).rglob(pattern)):
            if f.is_file():
                chars.update(c for c in f.read_text(encoding="utf-8", errors="ignore") if is_cjk(c))
    return sorted(chars)


def train_wordpiece(sentences, vocab_size: int, min_frequency: int = 3, extra_chars=()):
    """A BertWordPieceTokenizer trained on `sentences` (an iterable of str)."""
    from tokenizers import BertWordPieceTokenizer

    tok = BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True)
    tok.train_from_iterator(
        sentences,
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL,
        initial_alphabet=list(extra_chars),
        limit_alphabet=12000,
        wordpieces_prefix="##",
    )
    return tok


def to_transformers(tok, folder: Path, model_max_length: int):
    """Write vocab.txt and wrap it as transformers' BertTokenizerFast (what the app's loader reads)."""
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tok.save_model(str(folder))
    fast = BertTokenizerFast.from_pretrained(
        str(folder),
        do_lower_case=True,
        tokenize_chinese_chars=True,
        strip_accents=True,
        model_max_length=model_max_length,
    )
    return fast
