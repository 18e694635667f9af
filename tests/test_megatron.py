"""Lesson 8 core: tensor-parallel layers (in-process in float64, and a real 2-rank torchrun run),
pipeline schedules, and the calculators against figures published in the papers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from core.megatron import calculators as calc
from core.megatron import formulas as fm
from core.megatron import story
from core.megatron.demo import port_is_free, run_demo
from core.megatron.layers import (
    MLP,
    ColumnParallelLinear,
    LayerConfig,
    ParallelMLP,
    ParallelSelfAttention,
    ParallelTransformerLayer,
    SelfAttention,
    TransformerLayer,
    VocabParallelEmbedding,
    build_reference,
    gradient_diffs,
)
from core.megatron.mappings import (
    COLLECTIVE_LOG,
    clear_log,
    copy_to_tensor_model_parallel_region,
    reduce_from_tensor_model_parallel_region,
)
from core.megatron.schedules import timeline

ROOT = Path(__file__).resolve().parents[1]


# ---- f and g, one process ------------------------------------------------------------------


def test_f_and_g_are_identities_at_world_size_one_and_log_every_call():
    clear_log()
    x = torch.randn(3, 5, requires_grad=True)
    y = reduce_from_tensor_model_parallel_region(copy_to_tensor_model_parallel_region(x, "t.f"), "t.g")
    assert torch.equal(y, x)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad, torch.ones_like(x))
    log = [(c.operator, c.direction, c.site, c.bytes, c.skipped) for c in COLLECTIVE_LOG]
    # g communicates in the forward pass, f in the backward pass: the conjugate pair of Fig. 3
    assert log == [("g", "forward", "t.g", 60, True), ("f", "backward", "t.f", 60, True)]


# ---- the slicing math: t ranks simulated in one process, float64 ----------------------------


@pytest.mark.parametrize("t", [2, 4])
def test_parallel_mlp_partials_sum_to_the_unsharded_mlp(t):
    torch.manual_seed(0)
    ref = MLP(16, 64).double()
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    expected = ref(x)
    parts = []
    for r in range(t):
        par = ParallelMLP(ref, r, t)
        par(x)  # at world size 1, g returns the partial + bias
        parts.append(par.dense_4h_to_h.last_partial)
    got = sum(parts) + ref.dense_4h_to_h.bias
    assert torch.allclose(got, expected, atol=1e-12, rtol=0)
    # and no single rank's partial is the answer on its own
    assert all((p + ref.dense_4h_to_h.bias - expected).abs().max() > 1e-3 for p in parts)


@pytest.mark.parametrize("t", [2, 4])
def test_parallel_attention_splits_heads_and_sums_to_the_unsharded_attention(t):
    torch.manual_seed(1)
    ref = SelfAttention(32, 8).double()
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    expected = ref(x)
    parts = []
    for r in range(t):
        par = ParallelSelfAttention(ref, r, t)
        assert par.heads_local == 8 // t
        assert par.query_key_value.weight.shape == (3 * 32 // t, 32)
        par(x)
        parts.append(par.dense.last_partial)
    assert torch.allclose(sum(parts) + ref.dense.bias, expected, atol=1e-12, rtol=0)


def test_reference_attention_equals_torch_multihead_attention():
    # An independent reference for the unsharded layer's attention: torch's nn.MultiheadAttention
    # with the same fused [W_Q; W_K; W_V] and W^O.
    torch.manual_seed(5)
    ref = SelfAttention(32, 8).double()
    mha = torch.nn.MultiheadAttention(32, 8, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(ref.query_key_value.weight)
        mha.in_proj_bias.copy_(ref.query_key_value.bias)
        mha.out_proj.weight.copy_(ref.dense.weight)
        mha.out_proj.bias.copy_(ref.dense.bias)
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    torch.testing.assert_close(ref(x), mha(x, x, x, need_weights=False)[0], rtol=0, atol=1e-12)


def test_column_parallel_input_gradients_sum_to_the_reference_gradient():
    # What f's backward all-reduce computes: dL/dX = sum over ranks of each rank's dL/dX_i.
    torch.manual_seed(2)
    lin = torch.nn.Linear(8, 12).double()
    x = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, 12, dtype=torch.float64)
    lin(x).backward(g)
    total = torch.zeros_like(x)
    for r in range(3):
        col = ColumnParallelLinear(lin.weight, lin.bias, r, 3)
        xr = x.detach().clone().requires_grad_(True)
        col(xr).backward(g[:, 4 * r : 4 * (r + 1)])
        total += xr.grad
        assert torch.allclose(col.weight.grad, lin.weight.grad[4 * r : 4 * (r + 1)], atol=1e-12)
    assert torch.allclose(total, x.grad, atol=1e-12)


def test_vocab_parallel_embedding_masks_rows_it_does_not_hold():
    torch.manual_seed(3)
    table = torch.randn(12, 4, dtype=torch.float64)
    ids = torch.tensor([[0, 5, 11, 6], [3, 3, 9, 2]])
    parts = []
    for r in range(4):
        emb = VocabParallelEmbedding(table, r, 4)
        assert (emb.vocab_start, emb.vocab_end) == (3 * r, 3 * r + 3)
        emb(ids)
        held = (ids >= emb.vocab_start) & (ids < emb.vocab_end)
        assert torch.all(emb.last_partial[~held] == 0)
        parts.append(emb.last_partial)
    assert torch.equal(sum(parts), F.embedding(ids, table))


def test_qkv_slicing_gives_each_rank_its_own_heads_of_q_k_and_v():
    # hidden 4, 2 heads of size 2: rows 0..3 are W_Q, 4..7 W_K, 8..11 W_V; rank 1 of 2 owns head 1,
    # i.e. rows 2-3 of each block (Shoeybi et al. 2019, Fig. 3b: heads split across ranks).
    ref = TransformerLayer(LayerConfig(hidden=4, heads=2, ffn=8, vocab=4))
    with torch.no_grad():
        ref.attention.query_key_value.weight.copy_(torch.arange(12.0).repeat_interleave(4).view(12, 4))
    par = ParallelTransformerLayer(ref, 1, 2)
    assert par.attention.query_key_value.weight[:, 0].tolist() == [2, 3, 6, 7, 10, 11]
    full = ref.attention.query_key_value.weight
    assert par.local_slice("attention.query_key_value.weight", full)[:, 0].tolist() == [2, 3, 6, 7, 10, 11]
    # row parallel: the columns (input features) of W^O; layer norms are whole on every rank
    w_o = torch.arange(16.0).view(4, 4)
    assert par.local_slice("attention.dense.weight", w_o).tolist() == [[2, 3], [6, 7], [10, 11], [14, 15]]
    assert par.local_slice("input_layernorm.weight", torch.ones(4)).shape == (4,)


def test_parallel_and_reference_layers_share_megatrons_parameter_names():
    ref = build_reference(LayerConfig(), 0)[0]
    par = ParallelTransformerLayer(ref, 0, 2)
    names = [name for name, _ in par.named_parameters()]
    assert names == [name for name, _ in ref.named_parameters()]
    assert {
        "attention.query_key_value.weight",
        "attention.dense.weight",
        "mlp.dense_h_to_4h.weight",
        "mlp.dense_4h_to_h.weight",
        "input_layernorm.weight",
        "post_attention_layernorm.bias",
    } <= set(names)


def test_gradient_check_at_one_rank_matches_autograd_and_catches_a_wrong_gradient():
    cfg = LayerConfig(hidden=16, heads=4, ffn=64, seq=5, batch=2)
    ref, x, dy, _, _ = build_reference(cfg, 3, dtype=torch.float64)
    par = ParallelTransformerLayer(ref, 0, 1)
    ref(x).backward(dy)
    par(x).backward(dy)
    diffs = gradient_diffs(par, ref)
    assert len(diffs) == 12 and max(diffs.values()) < 1e-12
    with torch.no_grad():
        par.mlp.dense_4h_to_h.bias.grad[0] += 1.0
    diffs = gradient_diffs(par, ref)
    assert diffs["mlp.dense_4h_to_h.bias.grad"] == pytest.approx(1.0)
    assert max(v for k, v in diffs.items() if k != "mlp.dense_4h_to_h.bias.grad") < 1e-12


def test_layer_config_rejects_head_counts_that_do_not_split():
    with pytest.raises(ValueError, match="divisible"):
        LayerConfig(heads=6).check(4)


def test_reference_build_is_deterministic():
    cfg = LayerConfig()
    a = build_reference(cfg, 7)
    b = build_reference(cfg, 7)
    assert torch.equal(a[1], b[1]) and torch.equal(a[0].mlp.dense_h_to_4h.weight, b[0].mlp.dense_h_to_4h.weight)
    assert not torch.equal(a[1], build_reference(cfg, 8)[1])


# ---- the real thing: torchrun, gloo, 2 ranks --------------------------------------------------


@pytest.fixture(scope="module")
def demo2():
    return run_demo(2, timeout=120)


def test_two_rank_torchrun_demo_matches_the_unsharded_layer(demo2):
    assert demo2["ok"], demo2.get("error")
    # the worker picks nccl only when every rank can have its own GPU
    expected = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= 2 else "gloo"
    assert demo2["world_size"] == 2 and demo2["backend"] == expected
    diffs = demo2["max_abs_diff"]
    assert {
        "output",
        "input.grad",
        "attention.query_key_value.weight.grad",
        "mlp.dense_4h_to_h.weight.grad",
        "input_layernorm.weight.grad",
    } <= set(diffs)
    assert len(diffs) == 14
    assert max(diffs.values()) < 1e-4
    assert max(demo2["embedding"]["max_abs_diff"].values()) < 1e-5
    assert demo2["port_free"]


def test_one_layer_needs_two_all_reduces_forward_and_two_backward(demo2):
    log = demo2["collectives"]
    assert demo2["all_reduces"] == {"forward": 2, "backward": 2}
    assert [(c["operator"], c["direction"], c["site"]) for c in log] == [
        ("g", "forward", "attention.g"),
        ("g", "forward", "mlp.g"),
        ("f", "backward", "mlp.f"),
        ("f", "backward", "attention.f"),
    ]
    cfg = demo2["config"]
    nbytes = cfg["batch"] * cfg["seq"] * cfg["hidden"] * 4  # one (b, s, h) float32 tensor
    assert all(c["op"] == "all_reduce" and not c["skipped"] and c["bytes"] == nbytes for c in log)
    assert demo2["same_log_on_every_rank"]


def test_shards_tile_each_weight_exactly_once(demo2):
    cfg = demo2["config"]
    for name in (
        "attention.query_key_value.weight",
        "mlp.dense_h_to_4h.weight",
        "attention.dense.weight",
        "mlp.dense_4h_to_h.weight",
    ):
        covered = []
        for shards in demo2["shards"].values():
            s = next(x for x in shards if x["name"] == name)
            covered += [i for lo, hi in s["ranges"] for i in range(lo, hi)]
        full = s["global_shape"][s["split_dim"]]
        assert sorted(covered) == list(range(full)), name
    assert next(x for x in demo2["shards"]["0"] if x["name"] == "mlp.dense_h_to_4h.weight")["local_shape"] == [
        cfg["ffn"] // 2,
        cfg["hidden"],
    ]


def test_partials_from_each_rank_sum_to_the_all_reduced_value(demo2):
    for site, j in demo2["joins"].items():
        assert len(j["partials_first"]) == 2
        assert j["max_abs_diff"] < 1e-5, site
        # each rank really holds a different partial sum
        assert j["partials_first"][0] != j["partials_first"][1]


@pytest.mark.slow
def test_four_ranks_and_one_rank():
    for n in (4, 1):
        r = run_demo(n, timeout=150)
        assert r["ok"], r.get("error")
        assert r["all_reduces"] == {"forward": 2, "backward": 2}
        assert all(c["skipped"] == (n == 1) for c in r["collectives"])
        assert len(r["shards"]) == n


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_a_hung_rank_is_killed_after_the_timeout_and_nothing_is_left_behind():
    r = run_demo(2, timeout=6, fault="hang")
    assert not r["ok"] and r["timed_out"]
    assert "6 s" in r["error"] and "killed" in r["error"]
    out_dir = r["command"].split("--out ")[1].split()[0]
    assert _processes_mentioning(out_dir) == []
    assert r["port_free"] and port_is_free(r["port"])


def test_a_crashed_rank_is_reported_with_its_reason():
    r = run_demo(2, timeout=120, fault="crash")
    assert not r["ok"] and not r["timed_out"]
    assert "injected crash on rank 1" in r["error"]
    assert _processes_mentioning(r["command"].split("--out ")[1].split()[0]) == []


def test_bad_rank_counts_are_refused_without_starting_anything():
    r = run_demo(3)
    assert not r["ok"] and "1, 2, 4" in r["error"] and "got 3" in r["error"]


# ---- pipeline schedules: measured on the drawing vs the formula -----------------------------


@pytest.mark.parametrize(
    "kind,p,m,v",
    [
        ("gpipe", 4, 8, 1),
        ("1f1b", 4, 8, 1),
        ("1f1b", 8, 3, 1),
        ("interleaved", 4, 8, 2),
        ("interleaved", 4, 8, 4),
        ("interleaved", 2, 6, 3),
        ("gpipe", 1, 5, 1),
    ],
)
def test_measured_bubble_equals_the_papers_formula(kind, p, m, v):
    tl = timeline(kind, p, m, v)
    # Narayanan et al. 2021, section 2.2: (p-1)/m, and (p-1)/(v m) when interleaved
    assert tl["measured_bubble_fraction"] == pytest.approx((p - 1) / (v * m), abs=1e-9)
    assert tl["measured_bubble_fraction"] == pytest.approx(calc.bubble(p, m, v)["bubble_fraction"], abs=1e-9)
    # every device does each forward and backward exactly once per chunk
    assert len(tl["ops"]) == 2 * p * m * v


def test_schedule_respects_dependencies():
    tl = timeline("interleaved", 4, 8, 2)
    end = {(o["kind"], o["stage"], o["microbatch"]): o["end"] for o in tl["ops"]}
    for o in tl["ops"]:
        if o["kind"] == "F" and o["stage"] > 0:
            assert o["start"] >= end[("F", o["stage"] - 1, o["microbatch"])] - 1e-12
        if o["kind"] == "B" and o["stage"] < 7:
            assert o["start"] >= end[("B", o["stage"] + 1, o["microbatch"])] - 1e-12


def test_1f1b_keeps_p_micro_batches_in_flight_gpipe_keeps_m():
    # Narayanan et al. 2021, section 2.2.1: 1F1B limits in-flight micro-batches to p
    assert timeline("gpipe", 4, 8)["peak_in_flight"] == 8
    assert timeline("1f1b", 4, 8)["peak_in_flight"] == 4


def test_interleaved_needs_m_multiple_of_p():
    with pytest.raises(ValueError, match="multiple"):
        timeline("interleaved", 4, 6, 2)


# ---- calculators against published figures ---------------------------------------------------


@pytest.mark.parametrize("row", story.NARAYANAN_TABLE1, ids=lambda r: f"{r[0]}B")
def test_eq2_reproduces_narayanan_table1_parameter_counts(row):
    # Narayanan et al. 2021, Table 1, column "Number of parameters (billion)", row = this config;
    # all rows use V = 51,200 and s = 2048 (section 5.1).
    published, heads, hidden, layers = row[:4]
    got = calc.params(layers, hidden, story.NARAYANAN_VOCAB, story.NARAYANAN_SEQ)["params"] / 1e9
    assert round(got, 1) == published


def test_eq4_reproduces_the_papers_training_time_estimates():
    # Narayanan et al. 2021, section 5.1: GPT-3 (175B) on 1024 A100s at 140 TFLOP/s, 300B tokens:
    # "approximately 34 days"; the 1T model (Table 1, last row) on 3072 GPUs at 163 TFLOP/s with
    # 450B tokens: "84 days".
    gpt3 = calc.flops(96, 12288, 51200, 2048, 1536, tokens=300e9, gpus=1024, tflops=140)
    assert round(gpt3["training_time"]["days"]) == 34
    t1 = calc.flops(128, 25600, 51200, 2048, 3072, tokens=450e9, gpus=3072, tflops=163)
    assert round(t1["training_time"]["days"]) == 84


def test_eq3_against_a_float64_count_of_the_gemms():
    # Independent count (Narayanan et al. 2021, appendix): per layer forward 24Bsh^2 + 4Bs^2h,
    # logits 2BshV; backward 2x forward; recomputation 1 more forward -> 4x the forward total.
    l, h, V, s, B = 24, 2304, 51200, 2048, 512
    forward = l * (24 * B * s * h * h + 4 * B * s * s * h) + 2 * B * s * h * V
    # eq. (3) counts the logit layer 3x (no recomputation there): subtract one of its four
    expected = 4 * forward - 2 * B * s * h * V
    assert calc.flops(l, h, V, s, B)["flops_per_iteration"] == pytest.approx(expected, rel=1e-12)


def test_zero_memory_reproduces_figure1_of_the_zero_paper():
    # Rajbhandari et al. 2019, Figure 1: Psi = 7.5B, N_d = 64, K = 12:
    # baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB
    got = [round(calc.zero_memory(7.5e9, 64, st)["gb_per_device"], 1) for st in range(4)]
    assert got == [120.0, 31.4, 16.6, 1.9]


def test_zero_memory_stage0_ignores_dp_and_stage3_divides_everything():
    assert calc.zero_memory(1e9, 8, 0)["bytes_per_device"] == 16e9
    assert calc.zero_memory(1e9, 8, 3)["bytes_per_device"] == 2e9
    rows = calc.zero_holdings(4, 2)
    assert {(r["state"], r["sharded"]) for r in rows} == {
        ("parameters_fp16", False),
        ("gradients_fp16", True),
        ("optimizer_states", True),
    }


def _float64_activation(s, b, h, a, t, sp, selective):
    # Korthikanti et al. 2022, section 4, counted term by term in bytes (16-bit):
    attn_linear = 11 * s * b * h  # QKV input 2, Q K 4, V 2, proj input 2, dropout mask 1
    attn_scores = 5 * a * s * s * b  # softmax out 2, dropout mask 1, dropout out 2
    mlp = 19 * s * b * h
    norms = 4 * s * b * h
    parallel_part = 24 * s * b * h / t  # inputs inside the split regions
    replicated = 10 * s * b * h  # LN inputs 4, dropouts 2, attention/MLP inputs 4
    assert attn_linear + mlp + norms == replicated + parallel_part * t
    scores = 0 if selective else attn_scores / t
    return (replicated / t if sp else replicated) + parallel_part + scores


@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective"])
@pytest.mark.parametrize("t", [1, 2, 8])
def test_activations_match_a_term_by_term_count(sp, recompute, t):
    s, b, h, a, L = 2048, 1, 12288, 96, 96
    got = calc.activations(s, b, h, a, L, t, sp, recompute)
    want = _float64_activation(s, b, h, a, t, sp, recompute == "selective")
    assert got["bytes_per_layer"] == pytest.approx(want, rel=1e-12)
    assert got["bytes_total"] == pytest.approx(want * L, rel=1e-12)


def test_activations_eq1_with_no_parallelism():
    # Korthikanti et al. 2022, eq. (1): s b h (34 + 5 a s / h)
    s, b, h, a = 512, 4, 1024, 16
    assert calc.activations(s, b, h, a, 1)["bytes_per_layer"] == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    assert calc.activations(s, b, h, a, 24, recompute="full")["bytes_total"] == 2 * s * b * h * 24


@pytest.mark.parametrize("name,h,a,saved", [("GPT-3 175B", 12288, 96, 0.70), ("MT-NLG 530B", 20480, 128, 0.65)])
def test_selective_recomputation_savings_match_korthikanti_section5(name, h, a, saved):
    # Korthikanti et al. 2022, section 5 (selective activation recomputation): with sequence
    # parallelism, selective recomputation "saves 70% of the activation memory" for GPT-3 and
    # 65% for MT-NLG (s = 2048, t = 8; Table 3 configurations).
    full = calc.activations(2048, 1, h, a, 1, tp=8, sp=True)["bytes_per_layer"]
    sel = calc.activations(2048, 1, h, a, 1, tp=8, sp=True, recompute="selective")["bytes_per_layer"]
    assert round(1 - sel / full, 2) == saved


def test_sp_plus_selective_cuts_activations_about_5x():
    # Korthikanti et al. 2022, abstract: "reduces activation memory by 5x" (vs tensor parallel only),
    # for the GPT-3 and MT-NLG configurations of Table 3 at t = 8.
    for h, a in ((12288, 96), (20480, 128)):
        base = calc.activations(2048, 1, h, a, 1, tp=8)["bytes_per_layer"]
        best = calc.activations(2048, 1, h, a, 1, tp=8, sp=True, recompute="selective")["bytes_per_layer"]
        assert 4.5 < base / best < 5.5


def test_bubble_formula_and_idle_share():
    r = calc.bubble(8, 32, 1)
    assert r["bubble_fraction"] == 7 / 32
    assert r["idle_share_of_iteration"] == pytest.approx(7 / 39)
    assert calc.bubble(8, 32, 4)["bubble_fraction"] == 7 / 128


# ---- the Megatron-BERT story: the paper's own numbers ----------------------------------------


def test_bert_configs_reproduce_the_parameter_counts_of_table4():
    # Each row's (layers, hidden) must give the paper's rounded count ("params_paper") by an exact
    # weight count and by eq. (2); heads follow "hidden size per attention head ... 64" (section 5.3).
    rows = story.bert_table()
    assert len(rows) == 3
    for r in rows:
        published = float(r["params_paper"][:-1]) * (1e6 if r["params_paper"].endswith("M") else 1e9)
        digits = 0 if r["params_paper"].endswith("M") else 1
        scale = 1e6 if digits == 0 else 1e9
        assert round(r["params_exact"] / scale, digits) == round(published / scale, digits), r["model"]
        assert r["hidden"] == 64 * r["heads"]
    assert [round(r["params_eq2"] / 1e9, 1) for r in rows[1:]] == [1.3, 3.9]


def test_bert_exact_count_matches_a_real_bert_module():
    from transformers import BertForMaskedLM

    from core.bert.params import hf_config

    cfg = hf_config(vocab=100, hidden=32, layers=2, heads=4, intermediate=128, max_position=16, type_vocab=2)
    model = BertForMaskedLM(cfg)
    n = sum(p.numel() for p in model.parameters())  # the MLM decoder is tied to the embeddings
    pooler = 32 * 32 + 32 if model.bert.pooler is None else 0
    assert story.bert_params_exact(2, 32, vocab=100, seq=16) == n + pooler


def test_table5_megatron_39b_is_best_single_model_on_every_task():
    # Shoeybi et al. 2019, section 5.3: "our 3.9B model establishes state of the art results on the
    # development set compared to other BERT based models" (Table 5)
    rows = {r["model"]: r for r in story.results_table()}
    singles = ["RoBERTa", "ALBERT", "XLNet", "Megatron-336M", "Megatron-1.3B"]
    for col in ("mnli_m", "qqp", "squad11_f1", "squad20_f1", "race"):
        assert all(rows["Megatron-3.9B"][col] > rows[m][col] for m in singles), col
    # "... and the ensemble of it outperforms the ALBERT ensemble" on every column both report
    both = [c for c in story.TABLE5_COLUMNS[2:] if rows["ALBERT ensemble"][c] is not None]
    assert both and all(rows["Megatron-3.9B ensemble"][c] >= rows["ALBERT ensemble"][c] for c in both)


def test_scaling_numbers_are_consistent_with_the_abstract():
    # Shoeybi et al. 2019, abstract: 15.1 PFLOP/s on 512 GPUs is 76% of linear scaling from
    # 39 TFLOP/s on one GPU.
    assert story.SCALING_EFFICIENCY_512 * 512 * story.BASELINE_TFLOPS / 1000 == pytest.approx(
        story.SUSTAINED_PFLOPS, abs=0.1
    )
    # Table 1 configurations reproduce their parameter counts with eq. (2), V = 51,200, s = 1024
    for c in story.SCALING_CONFIGS:
        assert round(calc.params(c["layers"], c["hidden"], 51200, 1024)["params"] / 1e9, 1) == c["params_b"]


# ---- layer-norm order ------------------------------------------------------------------------


def test_pre_and_post_ln_differ_only_in_order():
    from core.megatron.ln_order import Encoder

    torch.manual_seed(0)
    post = Encoder(10, 6, 16, 2, 2, pre_ln=False)
    torch.manual_seed(0)
    pre = Encoder(10, 6, 16, 2, 2, pre_ln=True)
    assert sum(p.numel() for p in pre.parameters()) == sum(p.numel() for p in post.parameters()) + 32
    ids = torch.randint(0, 10, (3, 6))
    assert pre(ids).shape == post(ids).shape == (3, 6, 10)
    # post-LN: every layer's output is layer-normalised (zero mean per token)
    h = post.tok(ids) + post.pos(torch.arange(6))
    out = post.blocks[0](h)
    assert out.mean(-1).abs().max() < 1e-5


def test_ln_comparison_runs_and_reports_both_curves():
    from core.megatron.ln_order import train_compare

    r = train_compare(layers=2, steps=5, d=16, heads=2, seq=8, batch=8)
    assert set(r["curves"]) == {"post_ln", "pre_ln"} and len(r["curves"]["pre_ln"]) == 5
    assert r["chance_loss"] == pytest.approx(math.log(24))
    with pytest.raises(ValueError):
        train_compare(layers=0)


# ---- CLI -----------------------------------------------------------------------------------------


def _cli(*args):
    p = subprocess.run(
        [sys.executable, "-m", "core.megatron", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    return p.returncode, p.stdout, p.stderr


def test_cli_calculators_print_json():
    rc, out, _ = _cli("params", "--layers", "128", "--hidden", "25600", "--vocab", "51200", "--seq", "2048", "--json")
    assert rc == 0 and round(json.loads(out)["params_billions"], 1) == 1008.0
    rc, out, _ = _cli("memory", "--params", "7.5B", "--dp", "64", "--zero-stage", "3", "--json")
    assert rc == 0 and round(json.loads(out)["gb_per_device"], 1) == 1.9
    rc, out, _ = _cli(
        "activations",
        "--seq",
        "2048",
        "--batch",
        "1",
        "--hidden",
        "12288",
        "--heads",
        "96",
        "--layers",
        "96",
        "--tp",
        "8",
        "--sp",
        "--recompute",
        "selective",
        "--json",
    )
    assert rc == 0 and json.loads(out)["formula"] == "s b h (34/t)"
    rc, out, _ = _cli("bubble", "--pipeline", "4", "--microbatches", "8", "--interleave", "2", "--json")
    assert rc == 0 and json.loads(out)["bubble_fraction"] == 3 / 16
    rc, out, _ = _cli(
        "flops",
        "--layers",
        "96",
        "--hidden",
        "12288",
        "--vocab",
        "51200",
        "--seq",
        "2048",
        "--batch",
        "1536",
        "--tokens",
        "300B",
        "--gpus",
        "1024",
        "--tflops",
        "140",
        "--json",
    )
    assert rc == 0 and round(json.loads(out)["training_time"]["days"]) == 34


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "--params", "abc", "--dp", "4"],
        ["memory", "--params", "-5", "--dp", "4"],
        ["bubble", "--pipeline", "0", "--microbatches", "4"],
        ["flops", "--layers", "2", "--hidden", "8", "--vocab", "8", "--seq", "8", "--batch", "1", "--tokens", "1e9"],
    ],
)
def test_cli_bad_input_gives_a_clear_message(args):
    rc, out, err = _cli(*args, "--json")
    assert rc != 0
    text = out + err
    assert "Traceback" not in text
    assert "error" in text.lower()


# ---- formulas written once: what is printed is what is computed ------------------------------


def test_printed_formulas_expand_to_independent_counts():
    import sympy as sp

    l, h, V, s, B, a, t, b = (fm.l, fm.h, fm.V, fm.s, fm.B, fm.a, fm.t, fm.b)
    # eq. (2) is 12 l h^2 + 13 l h + (V + s) h: the weights, biases/norms and embeddings summed
    assert sp.simplify(fm.PARAMS.expr - (12 * l * h**2 + 13 * l * h + (V + s) * h)) == 0
    # eq. (3): 4 forward passes of 24Bsh^2 + 4Bs^2h per layer, 3 of the logits' 2BshV
    assert sp.simplify(fm.FLOPS.expr - (4 * l * (24 * B * s * h**2 + 4 * B * s**2 * h) + 6 * B * s * h * V)) == 0
    # Korthikanti eq. (1) is the t = 1 case of eq. (2)
    eq2 = fm.ACTIVATIONS[("none", False)].expr
    assert sp.simplify(eq2.subs(t, 1) - s * b * h * (34 + 5 * a * s / h)) == 0
    assert fm.latex(fm.PARAMS) == r"P = 12 l h^{2} \left(1 + \frac{13}{12 h} + \frac{V + s}{12 l h}\right)"
    assert fm.latex(fm.ACTIVATIONS[("selective", True)]) == r"A = s b h \frac{34}{t}"
    assert fm.text(fm.BUBBLE_INTERLEAVED) == "(p - 1)/(v m)"


def test_calculators_return_the_latex_of_the_formula_they_evaluated():
    r = calc.zero_memory(7.5e9, 64, 2)
    assert r["latex"] == r"\text{bytes} = 2 \Psi + \frac{2 \Psi}{N_{d}} + \frac{K \Psi}{N_{d}}"
    assert sum(r["breakdown_bytes"].values()) == pytest.approx(r["bytes_per_device"], rel=1e-15)
    assert timeline("interleaved", 4, 8, 2)["formula_latex"].endswith(r"\frac{p - 1}{v m}")
    assert calc.bubble(4, 8)["latex"].endswith(r"\frac{p - 1}{m}")
