"""One tensor-parallel rank of the demo. Started by torchrun (see core.megatron.demo), never directly.

Each rank builds the same seeded unsharded layer, keeps its own slice of every weight, runs the
parallel layer forward and backward, and compares its output and its gradient slices with the
unsharded layer's. The result goes to <out>/rank<R>.json; nothing is printed on success.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta


def _summary(t, n: int = 4) -> dict:
    flat = t.detach().reshape(-1).double().cpu()
    return {
        "shape": list(t.shape),
        "first": [float(v) for v in flat[:n]],
        "norm": float(flat.norm()),
        "sum": float(flat.sum()),
    }


def main(argv=None) -> int:
    args = _parse(argv)
    rank = int(os.environ["RANK"])
    with open(os.path.join(args.out, f"pid{rank}"), "w") as fh:
        fh.write(str(os.getpid()))
    try:
        return _run(args, rank)
    except BaseException as e:
        # torchrun's own report names only the exit code; leave the launcher the real reason.
        with open(os.path.join(args.out, f"error{rank}.txt"), "w") as fh:
            fh.write(f"rank {rank}: {type(e).__name__}: {e}")
        raise


def _parse(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fault", choices=["none", "crash", "hang"], default="none")
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--batch", type=int, default=2)
    return ap.parse_args(argv)


def _init_process_group(local_rank: int, local_world: int):
    """(device, backend, use_cuda): nccl with one GPU per rank, else gloo on the CPU."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    # nccl needs one GPU per rank; with fewer GPUs than ranks on this node, fall back to gloo on CPU.
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= local_world
    if use_cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # TF32 would round the matmuls to 10 mantissa bits and hide the comparison we are making.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    init = dict(backend=backend, timeout=timedelta(seconds=120))
    if use_cuda:
        init["device_id"] = device
    dist.init_process_group(**init)
    return device, backend, use_cuda


def _inject_fault(args, rank: int, world: int) -> None:
    if args.fault != "none" and rank == args.fault_rank % world:
        if args.fault == "crash":
            raise RuntimeError(f"injected crash on rank {rank}")
        while True:  # injected hang: the other ranks wait for us inside their first all-reduce
            time.sleep(1)


def _layer_check(ref, x, dy, rank: int, world: int, device, use_cuda: bool) -> dict:
    """The parallel transformer layer against the unsharded one: output, gradients, the
    partial sums before each g, the step's time and its collectives."""
    import torch

    from core.megatron.layers import ParallelTransformerLayer, gradient_diffs
    from core.megatron.mappings import COLLECTIVE_LOG, clear_log

    # The unsharded reference, on every rank (it is small).
    x_ref = x.clone().requires_grad_(True)
    y_ref = ref(x_ref)  # (b, s, h)
    y_ref.backward(dy)

    par = ParallelTransformerLayer(ref, rank, world).to(device)
    clear_log()
    if use_cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    x_par = x.clone().requires_grad_(True)
    y = par(x_par)  # (b, s, h), identical on every rank
    y.backward(dy)
    if use_cuda:
        torch.cuda.synchronize()
    step_ms = (time.perf_counter() - t0) * 1e3
    layer_log = [c.to_dict() for c in COLLECTIVE_LOG]

    diffs = {"output": float((y - y_ref).abs().max()), "input.grad": float((x_par.grad - x_ref.grad).abs().max())}
    diffs.update(gradient_diffs(par, ref))

    partials = {}
    for site, row in (("attention.g", par.attention.dense), ("mlp.g", par.mlp.dense_4h_to_h)):
        partials[site] = {"partial": _summary(row.last_partial), "reduced": _summary(row.last_reduced)}
    return {
        "step_ms": step_ms,
        "max_abs_diff": diffs,
        "shards": par.shards(),
        "partials": partials,
        "output": _summary(y),
        "collectives": layer_log,
    }


def _embedding_check(emb, ids, rank: int, world: int, device) -> dict:
    """VocabParallelEmbedding: each rank looks up only the ids in its vocabulary range."""
    import torch
    import torch.nn.functional as F

    from core.megatron.layers import VocabParallelEmbedding
    from core.megatron.mappings import COLLECTIVE_LOG, clear_log

    clear_log()
    table = emb.clone().requires_grad_(True)
    e_ref = F.embedding(ids, table)  # (b, s, h)
    g_out = torch.ones_like(e_ref)
    e_ref.backward(g_out)
    vpe = VocabParallelEmbedding(emb, rank, world).to(device)
    e_par = vpe(ids)  # (b, s, h)
    e_par.backward(g_out)
    emb_log = [c.to_dict() for c in COLLECTIVE_LOG]
    in_range = (ids >= vpe.vocab_start) & (ids < vpe.vocab_end)
    return {
        "vocab_range": [vpe.vocab_start, vpe.vocab_end],
        "tokens_here": int(in_range.sum()),
        "max_abs_diff": {
            "output": float((e_par - e_ref).abs().max()),
            "weight.grad": float((vpe.weight.grad - table.grad[vpe.vocab_start : vpe.vocab_end]).abs().max()),
        },
        "partial": _summary(vpe.last_partial),
        "collectives": emb_log,
    }


def _write_result(out: str, rank: int, result: dict) -> None:
    tmp = os.path.join(out, f"rank{rank}.json.tmp")
    with open(tmp, "w") as fh:
        json.dump(result, fh)
    os.replace(tmp, os.path.join(out, f"rank{rank}.json"))


def _run(args, rank: int) -> int:
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))

    import torch
    import torch.distributed as dist

    from core.megatron.layers import LayerConfig, build_reference

    device, backend, use_cuda = _init_process_group(local_rank, local_world)
    _inject_fault(args, rank, world)

    cfg = LayerConfig(hidden=args.hidden, heads=args.heads, ffn=4 * args.hidden, seq=args.seq, batch=args.batch)
    cfg.check(world)
    ref, x, dy, emb, ids = build_reference(cfg, args.seed, device)
    result = {
        "rank": rank,
        "world_size": world,
        "backend": backend,
        "device": str(device),
        "config": cfg.__dict__,
        **_layer_check(ref, x, dy, rank, world, device, use_cuda),
        "embedding": _embedding_check(emb, ids, rank, world, device),
        "torch": torch.__version__,
    }
    _write_result(args.out, rank, result)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The result is on disk and the process group is closed; skip the interpreter's teardown of
    # torch (about a second on a busy 2-core machine) that torchrun would otherwise wait for.
    os._exit(code)
