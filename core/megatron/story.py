"""The Megatron-BERT story as data, transcribed from the papers' tables (cited per item).

Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
Parallelism", arXiv 1909.08053 (v4). Narayanan et al. 2021, arXiv 2104.04473. No torch.
"""

from __future__ import annotations

from core.megatron.calculators import params as eq2_params

BERT_VOCAB = 30522  # "We use the original BERT dictionary with vocab size of 30,522" (section 4.2)
BERT_SEQ = 512

# Shoeybi et al. 2019, Table 4: "Model configurations used for BERT."
BERT_CONFIGS = [
    {"model": "Megatron-336M", "params_paper": "336M", "layers": 24, "hidden": 1024, "heads": 16, "gpus": 128},
    {"model": "Megatron-1.3B", "params_paper": "1.3B", "layers": 24, "hidden": 2048, "heads": 32, "gpus": 256},
    {"model": "Megatron-3.9B", "params_paper": "3.9B", "layers": 48, "hidden": 2560, "heads": 40, "gpus": 512},
]

# Shoeybi et al. 2019, Table 5: dev-set MNLI m/mm, QQP, SQuAD 1.1 and 2.0 (F1/EM); test-set RACE
# (all, with middle/high school in brackets). None where the paper leaves the cell empty.
TABLE5_COLUMNS = [
    "model",
    "trained_tokens_ratio",
    "mnli_m",
    "mnli_mm",
    "qqp",
    "squad11_f1",
    "squad11_em",
    "squad20_f1",
    "squad20_em",
    "race",
    "race_m",
    "race_h",
]
TABLE5 = [
    ["RoBERTa", 2, 90.2, 90.2, 92.2, 94.6, 88.9, 89.4, 86.5, 83.2, 86.5, 81.8],
    ["ALBERT", 3, 90.8, None, 92.2, 94.8, 89.3, 90.2, 87.4, 86.5, 89.0, 85.5],
    ["XLNet", 2, 90.8, 90.8, 92.3, 95.1, 89.7, 90.6, 87.9, 85.4, 88.6, 84.0],
    ["Megatron-336M", 1, 89.7, 90.0, 92.3, 94.2, 88.0, 88.1, 84.8, 83.0, 86.9, 81.5],
    ["Megatron-1.3B", 1, 90.9, 91.0, 92.6, 94.9, 89.1, 90.2, 87.1, 87.3, 90.4, 86.1],
    ["Megatron-3.9B", 1, 91.4, 91.4, 92.7, 95.5, 90.0, 91.2, 88.5, 89.5, 91.8, 88.6],
    ["ALBERT ensemble", None, None, None, None, 95.5, 90.1, 91.4, 88.9, 89.4, 91.2, 88.6],
    ["Megatron-3.9B ensemble", None, None, None, None, 95.8, 90.5, 91.7, 89.0, 90.9, 93.1, 90.0],
]

# Shoeybi et al. 2019, section 5.3: validation perplexity on a 3% held-out set.
BERT_HELDOUT_PPL = {"Megatron-336M": 1.58, "Megatron-1.3B": 1.30, "Megatron-3.9B": 1.16}

# Shoeybi et al. 2019, Table 1 (GPT-2 weak-scaling configurations, 96 hidden units per head) and
# Figure 5 (weak-scaling efficiency against the 1.2B model on one V100 at 39 TFLOP/s).
SCALING_CONFIGS = [
    {
        "hidden": 1536,
        "heads": 16,
        "layers": 40,
        "params_b": 1.2,
        "model_parallel_gpus": 1,
        "model_data_parallel_gpus": 64,
    },
    {
        "hidden": 1920,
        "heads": 20,
        "layers": 54,
        "params_b": 2.5,
        "model_parallel_gpus": 2,
        "model_data_parallel_gpus": 128,
    },
    {
        "hidden": 2304,
        "heads": 24,
        "layers": 64,
        "params_b": 4.2,
        "model_parallel_gpus": 4,
        "model_data_parallel_gpus": 256,
    },
    {
        "hidden": 3072,
        "heads": 32,
        "layers": 72,
        "params_b": 8.3,
        "model_parallel_gpus": 8,
        "model_data_parallel_gpus": 512,
    },
]
WEAK_SCALING = {  # GPUs -> efficiency, Figure 5
    "model_parallel": {1: 1.00, 2: 0.95, 4: 0.82, 8: 0.77},
    "model_data_parallel": {64: 0.96, 128: 0.83, 256: 0.79, 512: 0.74},
}
BASELINE_TFLOPS = 39.0  # one V100, 30% of peak (abstract, section 1)
SUSTAINED_PFLOPS = 15.1  # 8.3B model, 512 GPUs, 8-way model parallel (abstract)
SCALING_EFFICIENCY_512 = 0.76  # "76% scaling efficiency" (abstract)

# Narayanan et al. 2021, Table 1: weak scaling on Selene (A100), V = 51,200, s = 2048.
NARAYANAN_TABLE1_COLUMNS = [
    "params_b",
    "heads",
    "hidden",
    "layers",
    "tp",
    "pp",
    "gpus",
    "batch",
    "tflops_per_gpu",
    "percent_peak",
    "aggregate_pflops",
]
NARAYANAN_TABLE1 = [
    [1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 44, 4.4],
    [3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 44, 8.8],
    [7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 46, 18.2],
    [18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 34.6],
    [39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 70.8],
    [76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 143.8],
    [145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 227.1],
    [310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 297.4],
    [529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 410.2],
    [1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 502.0],
]
NARAYANAN_VOCAB, NARAYANAN_SEQ = 51200, 2048


def bert_params_exact(layers: int, hidden: int, vocab: int = BERT_VOCAB, seq: int = BERT_SEQ) -> int:
    """Every weight of a BERT encoder with its MLM head, counted one by one (not a paper formula):
    eq. (2)'s terms plus token-type embeddings, the embedding layer norm, the pooler and the
    MLM transform (dense + layer norm) with its output bias."""
    h = hidden
    attention = 4 * h * h + 4 * h  # W_Q, W_K, W_V, W_O and their biases
    mlp = 8 * h * h + 4 * h + h  # h -> 4h -> h with biases
    layer = attention + mlp + 2 * 2 * h  # two layer norms (gain, bias): 12h^2 + 13h
    emb = (vocab + seq + 2) * h + 2 * h
    pooler = h * h + h
    mlm = h * h + h + 2 * h + vocab
    return layers * layer + emb + pooler + mlm


def bert_table() -> list[dict]:
    """Table 4 with eq. (2)'s count and an exact count beside the paper's rounded figure."""
    rows = []
    for c in BERT_CONFIGS:
        eq2 = eq2_params(c["layers"], c["hidden"], BERT_VOCAB, BERT_SEQ)["params"]
        rows.append(
            {
                **c,
                "head_dim": c["hidden"] // c["heads"],
                "params_eq2": eq2,
                "params_exact": bert_params_exact(c["layers"], c["hidden"]),
                "heldout_ppl": BERT_HELDOUT_PPL[c["model"]],
            }
        )
    return rows


def results_table() -> list[dict]:
    return [dict(zip(TABLE5_COLUMNS, row)) for row in TABLE5]


def scaling_table() -> list[dict]:
    """Figure 5 as rows, with the FLOP/s each efficiency implies: efficiency x GPUs x 39 TFLOP/s."""
    rows = []
    for kind, eff in WEAK_SCALING.items():
        for gpus, e in eff.items():
            rows.append(
                {"setting": kind, "gpus": gpus, "efficiency": e, "implied_pflops": e * gpus * BASELINE_TFLOPS / 1000}
            )
    return rows
