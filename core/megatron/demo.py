"""Launch the tensor-parallel demo: N torchrun workers, one transformer layer, checked against the
unsharded layer. This module imports no torch: the workers do, in their own processes.

Workers are started with `python -m torch.distributed.run` as a subprocess. Starting them with
multiprocessing from inside Streamlit or pytest fails (spawn re-runs the parent's main module).
gloo on CPU; nccl with one GPU per rank when CUDA is there (the worker decides from
torch.cuda and LOCAL_RANK), so the same command runs unchanged on a GPU machine.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ALLOWED_RANKS = (1, 2, 4)
TOLERANCE = 1e-4   # float32, summed in a different order on each rank


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Nothing listens on the port any more (connections left in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _children(pid: int) -> list[int]:
    """Direct children of pid, from /proc (Linux); empty elsewhere."""
    kids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may contain spaces: the ppid is the 2nd field after the last ')'
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            kids.append(int(entry.name))
    return kids


def _mentioning(text: str) -> list[int]:
    """Processes whose command line contains text: the run's unique temporary folder."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if text.encode() in (entry / "cmdline").read_bytes() and int(entry.name) != os.getpid():
                found.append(int(entry.name))
        except (OSError, ValueError):
            pass
    return found


def _kill_tree(proc: subprocess.Popen, pid_dir: Path) -> None:
    """Kill torchrun and every worker of this run. Workers run in their own sessions (torchrun
    starts them with start_new_session), so killing torchrun's process group alone would leave
    them behind. Only processes whose command line names this run's unique folder are touched,
    so a recycled pid can never be hit."""
    alive = proc.poll() is None
    if alive:
        try:
            os.kill(proc.pid, signal.SIGSTOP)   # freeze torchrun so it cannot start another worker
        except (ProcessLookupError, PermissionError):
            alive = False
    candidates = set(_children(proc.pid)) if alive else set()
    for f in pid_dir.glob("pid*"):
        try:
            candidates.add(int(f.read_text()))
        except (OSError, ValueError):
            pass
    mine = set(_mentioning(str(pid_dir)))
    pids = (candidates | mine) & mine - {proc.pid}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if alive:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
    for pid in pids:   # not our children to reap; wait until they are gone (or zombies)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
                break
            time.sleep(0.02)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def _failure_reason(stderr: str, out_dir: Path) -> str:
    errors = [f.read_text(errors="replace") for f in sorted(out_dir.glob("error*.txt"))]
    if errors:
        # a rank that lost its peer says so; the rank that failed first is the story
        errors.sort(key=lambda e: "peer" in e)
        return "; ".join(e.strip()[:300] for e in errors)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln:
            return ln.strip()[:400]
    return lines[-1].strip()[:400] if lines else "no output"


def run_demo(ranks: int = 2, timeout: float = 60.0, seed: int = 0, fault: str = "none",
             fault_rank: int = 1, python: str | None = None) -> dict:
    """Run the demo and return the merged result (never raises for worker failures)."""
    if ranks not in ALLOWED_RANKS:
        return {"ok": False, "error": f"ranks must be one of {ALLOWED_RANKS}, got {ranks}",
                "ranks": ranks}
    started = time.perf_counter()
    port = free_port()
    out_dir = Path(tempfile.mkdtemp(prefix="megatron-demo-"))
    cmd = [python or sys.executable, "-m", "torch.distributed.run",
           "--nnodes=1", f"--nproc-per-node={ranks}", "--max-restarts=0",
           "--master-addr=127.0.0.1", f"--master-port={port}", "--monitor-interval=0.05",
           "-m", "core.megatron.worker", "--out", str(out_dir), "--seed", str(seed),
           "--fault", fault, "--fault-rank", str(fault_rank)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    base = {"ranks": ranks, "port": port, "command": " ".join(cmd[1:3] + cmd[3:])}
    try:
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc, out_dir)
            return {**base, "ok": False, "timed_out": True,
                    "wall_s": time.perf_counter() - started,
                    "port_free": port_is_free(port),
                    "error": (f"the workers did not finish within {timeout:g} s (a rank hung or "
                              f"is waiting for a peer); all {ranks} worker(s) and torchrun were "
                              "killed")}
        files = sorted(out_dir.glob("rank*.json"), key=lambda p: int(p.stem[4:]))
        if proc.returncode != 0 or len(files) != ranks:
            _kill_tree(proc, out_dir)
            return {**base, "ok": False, "timed_out": False, "returncode": proc.returncode,
                    "wall_s": time.perf_counter() - started, "port_free": port_is_free(port),
                    "error": f"a worker failed (torchrun exit code {proc.returncode}): "
                             f"{_failure_reason(stderr, out_dir)}",
                    "stderr_tail": stderr[-2000:]}
        per_rank = [json.loads(f.read_text()) for f in files]
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    result = merge(per_rank)
    result.update(base, wall_s=time.perf_counter() - started, port_free=port_is_free(port))
    return result


def merge(per_rank: list[dict]) -> dict:
    """One report from the ranks' files: worst difference per tensor, the log, the joins."""
    r0 = per_rank[0]
    names = list(r0["max_abs_diff"])
    max_diff = {n: max(r["max_abs_diff"][n] for r in per_rank) for n in names}
    log = r0["collectives"]
    live = [c for c in log if not c["skipped"]]
    counts = {d: sum(1 for c in log if c["direction"] == d) for d in ("forward", "backward")}
    same_log = all([(c["site"], c["direction"], c["shape"]) for c in r["collectives"]]
                   == [(c["site"], c["direction"], c["shape"]) for c in log] for r in per_rank)
    joins = {}
    for site in r0["partials"]:
        parts = [r["partials"][site]["partial"] for r in per_rank]
        reduced = r0["partials"][site]["reduced"]
        summed = [sum(p["first"][i] for p in parts) for i in range(len(reduced["first"]))]
        joins[site] = {"partials_first": [p["first"] for p in parts],
                       "partials_norm": [p["norm"] for p in parts],
                       "sum_of_partials_first": summed, "reduced_first": reduced["first"],
                       "max_abs_diff": max(abs(a - b) for a, b in zip(summed, reduced["first"]))}
    emb_diff = {k: max(r["embedding"]["max_abs_diff"][k] for r in per_rank)
                for k in r0["embedding"]["max_abs_diff"]}
    ok = max(max_diff.values()) < TOLERANCE and max(emb_diff.values()) < TOLERANCE
    return {
        "ok": ok, "backend": r0["backend"], "world_size": r0["world_size"],
        "devices": [r["device"] for r in per_rank], "config": r0["config"], "tolerance": TOLERANCE,
        "max_abs_diff": max_diff, "all_reduces": counts,
        "all_reduce_bytes": sum(c["bytes"] for c in live), "collectives": log,
        "same_log_on_every_rank": same_log, "joins": joins,
        "shards": {str(r["rank"]): r["shards"] for r in per_rank},
        "step_ms": [r["step_ms"] for r in per_rank],
        "embedding": {"max_abs_diff": emb_diff,
                      "vocab_ranges": [r["embedding"]["vocab_range"] for r in per_rank],
                      "tokens_per_rank": [r["embedding"]["tokens_here"] for r in per_rank],
                      "collectives": r0["embedding"]["collectives"]},
        "output": r0["output"],
        **({} if ok else {"error": "the sharded layer does not match the unsharded one"}),
    }
