"""The conjugate communication operators f and g of Megatron-LM, plus a log of every collective.

Shoeybi et al. 2019 (arXiv 1909.08053), Fig. 3: "f and g are conjugate. f is an identity operator in
the forward pass and all reduce in the backward pass while g is an all reduce in the forward pass and
identity in the backward pass." The names below are Megatron-LM's own
(megatron/core/tensor_parallel/mappings.py), so a student who reads ours can read theirs.

Every collective that f or g issues is appended to COLLECTIVE_LOG with where it happened (the
operator, the pass, the module that called it), the tensor shape and the bytes on the wire.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist


@dataclass
class Collective:
    op: str  # "all_reduce"
    operator: str  # "f" or "g"
    direction: str  # "forward" or "backward"
    site: str  # which module called it, e.g. "attention.g"
    shape: list[int]
    dtype: str
    bytes: int  # numel * element size: the payload each rank contributes
    skipped: bool  # True at world size 1: Megatron-LM returns the input untouched there

    def to_dict(self) -> dict:
        return asdict(self)


COLLECTIVE_LOG: list[Collective] = []


def clear_log() -> None:
    COLLECTIVE_LOG.clear()


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _all_reduce(x: torch.Tensor, operator: str, direction: str, site: str) -> torch.Tensor:
    world = _world_size()
    COLLECTIVE_LOG.append(
        Collective(
            op="all_reduce",
            operator=operator,
            direction=direction,
            site=site,
            shape=list(x.shape),
            dtype=str(x.dtype).replace("torch.", ""),
            bytes=x.numel() * x.element_size(),
            skipped=world == 1,
        )
    )
    if world == 1:
        return x
    x = x.contiguous()
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x


class _CopyToModelParallelRegion(torch.autograd.Function):
    """f: identity forward, all-reduce backward (Shoeybi et al. 2019, Code 1)."""

    @staticmethod
    def forward(ctx, x, site):
        ctx.site = site
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        # Each rank only saw the gradient through its own slice of the weights; the input's
        # full gradient is the sum over ranks.
        return _all_reduce(grad.clone(), "f", "backward", ctx.site), None


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    """g: all-reduce forward, identity backward (Shoeybi et al. 2019, Fig. 3)."""

    @staticmethod
    def forward(ctx, x, site):
        # Each rank holds a partial sum X_i A_i; the layer output is sum_i X_i A_i (eq. 2 split by rows).
        return _all_reduce(x.clone(), "g", "forward", site)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_tensor_model_parallel_region(x: torch.Tensor, site: str = "f") -> torch.Tensor:
    return _CopyToModelParallelRegion.apply(x, site)


def reduce_from_tensor_model_parallel_region(x: torch.Tensor, site: str = "g") -> torch.Tensor:
    return _ReduceFromModelParallelRegion.apply(x, site)
