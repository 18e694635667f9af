"""Pipeline schedules as timelines: GPipe, 1F1B (PipeDream-Flush) and interleaved 1F1B.

Narayanan et al. 2021 (arXiv 2104.04473), section 2.2. Each device runs its operations in the
order its schedule prescribes; an operation starts when the device is free and its inputs exist
(forward of micro-batch j on stage k needs stage k-1's forward of j; backward needs stage k+1's
backward). Communication is taken as free, so the idle time measured on the drawing is exactly the
pipeline bubble, and it can be checked against the paper's (p-1)/m and (p-1)/(v m).
No torch: a timeline is plain numbers; the formula it is checked against is in formulas.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.megatron.formulas import BUBBLE, latex
from core.megatron.formulas import BUBBLE_INTERLEAVED as _BUBBLE

SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass
class Op:
    device: int
    kind: str  # "F" or "B"
    microbatch: int
    chunk: int  # model chunk on this device (0 unless interleaved)
    stage: int  # virtual stage = chunk * p + device
    start: float
    end: float


def _orders(schedule: str, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    orders = []
    for d in range(p):
        if schedule == "gpipe":
            ops = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
        elif schedule == "1f1b":
            warm = min(p - d - 1, m)
            ops = [("F", j, 0) for j in range(warm)]
            for i in range(m - warm):
                ops += [("F", warm + i, 0), ("B", i, 0)]
            ops += [("B", j, 0) for j in range(m - warm, m)]
        else:
            # Megatron-LM's interleaved schedule: micro-batches advance in groups of p through
            # the v chunks; the k-th forward on a device is micro-batch (k // pv) p + k % p of
            # chunk (k mod pv) // p; backwards walk the chunks in reverse.
            total = m * v

            def item(k, forward):
                chunk = (k % (p * v)) // p
                return ((k // (p * v)) * p + k % p, chunk if forward else v - 1 - chunk)

            warm = min((p - d - 1) * 2 + (v - 1) * p, total)
            ops = [("F", *item(k, True)) for k in range(warm)]
            for i in range(total - warm):
                ops += [("F", *item(warm + i, True)), ("B", *item(i, False))]
            ops += [("B", *item(k, False)) for k in range(total - warm, total)]
        orders.append(ops)
    return orders


def timeline(schedule: str, p: int, m: int, v: int = 1, t_f: float = 1.0, t_b: float = 2.0) -> dict:
    """Simulate a schedule. t_f and t_b are one device's forward/backward time for one micro-batch
    over all its layers; with v chunks each chunk takes t_f / v and t_b / v."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    for name, val in (("p", p), ("m", m), ("v", v)):
        if not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    if schedule != "interleaved" and v != 1:
        raise ValueError("v > 1 only applies to the interleaved schedule")
    if schedule == "interleaved" and m % p:
        raise ValueError(f"the interleaved schedule needs m to be a multiple of p (m={m}, p={p})")
    stages = p * v
    dur = {"F": t_f / v, "B": t_b / v}
    orders = _orders(schedule, p, m, v)
    done: dict[tuple[str, int, int], float] = {}  # (kind, stage, microbatch) -> end time
    nxt, free = [0] * p, [0.0] * p
    ops: list[Op] = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for d in range(p):
            while nxt[d] < len(orders[d]):
                kind, j, c = orders[d][nxt[d]]
                stage = c * p + d
                if kind == "F":
                    deps = [("F", stage - 1, j)] if stage > 0 else []
                else:
                    deps = [("F", stage, j)] + ([("B", stage + 1, j)] if stage < stages - 1 else [])
                if any(dep not in done for dep in deps):
                    break
                start = max([free[d]] + [done[dep] for dep in deps])
                end = start + dur[kind]
                done[(kind, stage, j)] = end
                free[d] = end
                ops.append(Op(d, kind, j, c, stage, start, end))
                nxt[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("schedule deadlocked")  # would be a bug in _orders
    makespan = max(o.end for o in ops)
    busy = m * (t_f + t_b)  # every device's useful work
    idle = makespan - busy
    return {
        "schedule": schedule,
        "p": p,
        "m": m,
        "v": v,
        "t_f": t_f,
        "t_b": t_b,
        "ops": [asdict(o) for o in ops],
        "makespan": makespan,
        "ideal": busy,
        "bubble_time": idle,
        "measured_bubble_fraction": idle / busy,  # the paper's bubble: idle / ideal time
        "formula_bubble_fraction": _BUBBLE(p=p, m=m, v=v),  # (p - 1)/(v m), formulas.py
        "formula_latex": latex(_BUBBLE if v > 1 else BUBBLE),
        "idle_share_of_iteration": idle / makespan,
        # activations in flight at the peak on device 0: GPipe keeps m, 1F1B keeps p
        "peak_in_flight": _peak_in_flight(ops, 0),
    }


def _peak_in_flight(ops: list[Op], device: int) -> int:
    events = sorted(
        ((o.end, 1 if o.kind == "F" else -1) for o in ops if o.device == device), key=lambda e: (e[0], e[1])
    )
    live = peak = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak
