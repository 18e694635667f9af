"""Launch the tensor-parallel demo: N torchrun workers, one transformer layer, checked against the
unsharded layer. This module imports no torch: the workers do, in their own processes.

Workers are started with `python -m torch.distributed.run --standalone` as a subprocess. Starting
them with multiprocessing from inside Streamlit or pytest fails (spawn re-runs the parent's main
module). gloo on CPU; nccl with one GPU per rank when CUDA is there (the worker decides from
torch.cuda and LOCAL_RANK), so the same command runs unchanged on a GPU machine.

Nothing is left behind:
  * torchrun and every worker are started through this module (`--as-torchrun`, `--as-worker`),
    which first asks Linux to SIGKILL the process when its parent dies (PR_SET_PDEATHSIG): if
    the app dies mid-run, torchrun dies, and with it its workers;
  * a run's folder is named after the process that started it; at start-up, runs whose starter
    is gone are reaped (processes killed, folder removed), for systems without PDEATHSIG;
  * torchrun's logs and its temporary files (TMPDIR, so no /tmp/torchelastic_*) go into the
    run's folder, which the demo removes.
Failures come back with a `code` and `params` (no language: ui/errors.py words them), the
technical `detail`, and an English `error` for the server log and the command line.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ALLOWED_RANKS = (1, 2, 4)
TOLERANCE = 1e-4  # float32, summed in a different order on each rank
RUN_PREFIX = "megatron-demo-"
PARENT_ENV = "MEGATRON_DEMO_PARENT"


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


# ---------------------------------------------------------------- processes of one run


def _owner_tag() -> str:
    """<pid>-<start time>: a recycled pid never passes for the starter of an old run."""
    import psutil

    me = psutil.Process()
    return f"{me.pid}-{int(me.create_time())}"


def _owner_alive(tag: str) -> bool:
    import psutil

    try:
        pid, started = (int(x) for x in tag.split("-")[:2])
        return int(psutil.Process(pid).create_time()) == started
    except (ValueError, psutil.Error):
        return False


def _run_processes(run_dir: str) -> list:
    """Every live process whose command line names this run's folder (torchrun and its workers)."""
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.pid != os.getpid() and any(run_dir in part for part in (p.info["cmdline"] or [])):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _kill_all(procs: list) -> None:
    import psutil

    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)


def _kill_tree(proc: subprocess.Popen, run_dir: Path) -> None:
    """Kill torchrun and every worker of this run: torchrun's descendants (the workers run in
    their own sessions, so a process group kill would miss them) and anything else naming the
    run's folder. Freeze torchrun first so it cannot start another worker meanwhile."""
    import psutil

    procs = []
    try:
        root = psutil.Process(proc.pid)
        root.suspend()
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        pass
    known = {p.pid for p in procs}
    procs += [p for p in _run_processes(str(run_dir)) if p.pid not in known]
    _kill_all(procs)
    proc.wait()


def reap_orphans(tmp: Path | None = None) -> list[str]:
    """Kill the processes and remove the folders of runs whose starter is gone. Returns the
    folders removed."""
    tmp = Path(tmp or tempfile.gettempdir())
    removed = []
    for run_dir in tmp.glob(f"{RUN_PREFIX}*"):
        tag = run_dir.name[len(RUN_PREFIX) :]
        if _owner_alive(tag):
            continue
        _kill_all(_run_processes(str(run_dir)))
        shutil.rmtree(run_dir, ignore_errors=True)
        removed.append(str(run_dir))
    return removed


def _listening_port(pid: int) -> int | None:
    """The rendezvous port torchrun --standalone picked (its TCP store listens on it)."""
    import psutil

    try:
        for c in psutil.Process(pid).net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr:
                return int(c.laddr.port)
    except psutil.Error:
        pass
    return None


# ---------------------------------------------------------------- why a run failed


def _signal_name(exitcode: int) -> str:
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def diagnose(stderr: str, run_dir: Path, returncode: int | None) -> tuple[str, dict, str]:
    """(code, params, English reason) for a failed run, from the ranks' own error files and
    torchrun's report ("rank : 1", "exitcode : -9 (pid: N)"), which torchrun writes to stderr."""
    errors = [f.read_text(errors="replace").strip() for f in sorted(run_dir.glob("error*.txt"))]
    text = "\n".join(errors) + "\n" + stderr
    if re.search(r"No space left on device|\[Errno 28\]|ENOSPC", text):
        return "demo_disk_full", {"folder": tempfile.gettempdir()}, "the disk is full"
    # A rank killed by a signal writes no error file, and its peers then fail with "connection
    # reset by peer": the signalled rank in torchrun's report is the story.
    root = stderr[stderr.rfind("Root Cause") :] if "Root Cause" in stderr else ""
    pattern = re.compile(r"^\s*rank\s*:\s*(\d+)[^\n]*\n\s*exitcode\s*:\s*(-?\d+)", re.M)
    # torchrun SIGTERMs the survivors of a failure itself: only the root cause, or another signal, counts
    pairs = pattern.findall(root)[:1] or [(r, c) for r, c in pattern.findall(stderr) if int(c) != -signal.SIGTERM]
    for rank, exitcode in pairs:
        if int(exitcode) < 0:
            sig = _signal_name(int(exitcode))
            return "demo_worker_killed", {"rank": rank, "signal": sig}, f"rank {rank} was killed by {sig}"
    if errors:
        errors.sort(key=lambda e: "peer" in e)  # a rank that lost its peer is not the story
        first = errors[0]
        m = re.match(r"rank (\d+): (.*)", first, re.S)
        rank, reason = (m.group(1), m.group(2)) if m else ("?", first)
        return "demo_worker_failed", {"rank": rank, "reason": reason[:200]}, "; ".join(e[:300] for e in errors)
    rank = re.search(r"rank\s*:\s*(\d+)", stderr[stderr.rfind("Root Cause") :] if "Root Cause" in stderr else stderr)
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    reason = next((ln for ln in reversed(lines) if "Error" in ln or "error" in ln), lines[-1] if lines else "")
    r = rank.group(1) if rank else "?"
    return (
        "demo_worker_failed",
        {"rank": r, "reason": (reason or f"exit code {returncode}")[:200]},
        (reason or f"exit code {returncode}")[:400],
    )


def _failure(base: dict, started: float, code: str, params: dict, error: str, detail: str = "", **extra) -> dict:
    return {
        **base,
        "ok": False,
        "code": code,
        "params": params,
        "error": error,
        "detail": detail,
        "wall_s": time.perf_counter() - started,
        **extra,
    }


# ---------------------------------------------------------------- the demo


class _Failed(Exception):
    """Carries a failed run's result (from _failure) out of the step that found the failure."""

    def __init__(self, result: dict):
        super().__init__(result["error"])
        self.result = result


def _new_run_dir(ranks: int, started: float) -> Path:
    """A private folder for the run, with a tmp/ of its own."""
    try:
        run_dir = Path(tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{_owner_tag()}-"))
        (run_dir / "tmp").mkdir()
    except OSError as exc:
        code = "demo_disk_full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "demo_start_failed"
        raise _Failed(
            _failure(
                {"ranks": ranks},
                started,
                code,
                {"folder": tempfile.gettempdir(), "reason": exc.strerror},
                f"could not create the demo's folder ({exc})",
                timed_out=False,
            )
        ) from exc
    return run_dir


def _torchrun_command(
    python: str | None, run_dir: Path, ranks: int, seed: int, fault: str, fault_rank: int
) -> list[str]:
    """This module as torchrun, starting ``ranks`` copies of this module as workers."""
    me = [python or sys.executable, "-m", "core.megatron.demo"]
    return me + [
        "--as-torchrun",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={ranks}",
        "--max-restarts=0",
        "--monitor-interval=0.05",
        f"--log-dir={run_dir / 'logs'}",
        "-m",
        "core.megatron.demo",
        "--as-worker",
        "--out",
        str(run_dir),
        "--seed",
        str(seed),
        "--fault",
        fault,
        "--fault-rank",
        str(fault_rank),
    ]


def _worker_env(run_dir: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    env["TMPDIR"] = str(run_dir / "tmp")  # torchelastic_* and any other temporary file
    env[PARENT_ENV] = str(os.getpid())
    return env


def _start(cmd: list[str], env: dict, base: dict, started: float) -> subprocess.Popen:
    # stderr through a pipe, not a file: on a full disk it is the only place the reason survives
    try:
        return subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
    except OSError as exc:
        raise _Failed(
            _failure(
                base,
                started,
                "demo_start_failed",
                {"reason": exc.strerror or str(exc)},
                f"could not start torchrun ({exc})",
                timed_out=False,
            )
        ) from exc


def _wait(proc: subprocess.Popen, run_dir: Path, base: dict, started: float, timeout: float) -> str:
    """torchrun's stderr once it exits; past ``timeout`` every process of the run is killed.
    Records the rendezvous port in ``base`` (0 where none was seen)."""
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    port, deadline = None, time.monotonic() + timeout
    while proc.poll() is None:
        if port is None:
            port = _listening_port(proc.pid)
        if time.monotonic() > deadline:
            _kill_tree(proc, run_dir)
            reader.join(5)
            base.update(port=port or 0, port_free=port is None or port_is_free(port))
            raise _Failed(
                _failure(
                    base,
                    started,
                    "demo_timeout",
                    {"timeout": f"{timeout:g}", "ranks": base["ranks"]},
                    f"the workers did not finish within {timeout:g} s (a rank hung or is "
                    f"waiting for a peer); all {base['ranks']} worker(s) and torchrun were killed",
                    timed_out=True,
                )
            )
        time.sleep(0.02)
    reader.join(5)
    base.update(port=port or 0)
    return b"".join(chunks).decode(errors="replace")


def _rank_results(proc: subprocess.Popen, stderr: str, run_dir: Path, base: dict, started: float) -> list[dict]:
    """Every rank's result file, or the failure: a worker that failed, or a file that cannot be read."""
    port = base["port"] or None
    files = sorted(run_dir.glob("rank*.json"), key=lambda p: int(p.stem[4:]))
    if proc.returncode != 0 or len(files) != base["ranks"]:
        _kill_tree(proc, run_dir)
        code, params, reason = diagnose(stderr, run_dir, proc.returncode)
        base.update(port_free=port is None or port_is_free(port))
        raise _Failed(
            _failure(
                base,
                started,
                code,
                params,
                f"a worker failed (torchrun exit code {proc.returncode}): {reason}",
                detail=stderr[-2000:],
                timed_out=False,
                returncode=proc.returncode,
                stderr_tail=stderr[-2000:],
            )
        )
    try:
        return [json.loads(f.read_text()) for f in files]
    except (OSError, ValueError) as exc:
        raise _Failed(
            _failure(
                base,
                started,
                "demo_worker_failed",
                {"rank": "?", "reason": type(exc).__name__},
                f"a worker's result could not be read ({exc})",
                timed_out=False,
            )
        ) from exc


def run_demo(
    ranks: int = 2,
    timeout: float = 60.0,
    seed: int = 0,
    fault: str = "none",
    fault_rank: int = 1,
    python: str | None = None,
) -> dict:
    """Run the demo and return the merged result (never raises for worker failures)."""
    started = time.perf_counter()
    if ranks not in ALLOWED_RANKS:
        return _failure(
            {"ranks": ranks},
            started,
            "demo_bad_ranks",
            {"ranks": ranks},
            f"ranks must be one of {ALLOWED_RANKS}, got {ranks}",
            timed_out=False,
        )
    reap_orphans()
    try:
        run_dir = _new_run_dir(ranks, started)
    except _Failed as failed:
        return failed.result
    cmd = _torchrun_command(python, run_dir, ranks, seed, fault, fault_rank)
    base = {"ranks": ranks, "command": "torchrun " + " ".join(cmd[4:])}
    try:
        proc = _start(cmd, _worker_env(run_dir), base, started)
        stderr = _wait(proc, run_dir, base, started, timeout)
        per_rank = _rank_results(proc, stderr, run_dir, base, started)
    except _Failed as failed:
        return failed.result
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    port = base["port"] or None
    result = merge(per_rank)
    if not result["ok"]:
        worst = max(list(result["max_abs_diff"].values()) + list(result["embedding"]["max_abs_diff"].values()))
        result.update(code="demo_mismatch", params={"diff": f"{worst:.2e}"})
    result.update(base, wall_s=time.perf_counter() - started, port_free=port is None or port_is_free(port))
    return result


def merge(per_rank: list[dict]) -> dict:
    """One report from the ranks' files: worst difference per tensor, the log, the joins."""
    r0 = per_rank[0]
    names = list(r0["max_abs_diff"])
    max_diff = {n: max(r["max_abs_diff"][n] for r in per_rank) for n in names}
    log = r0["collectives"]
    live = [c for c in log if not c["skipped"]]
    counts = {d: sum(1 for c in log if c["direction"] == d) for d in ("forward", "backward")}
    same_log = all(
        [(c["site"], c["direction"], c["shape"]) for c in r["collectives"]]
        == [(c["site"], c["direction"], c["shape"]) for c in log]
        for r in per_rank
    )
    joins = {}
    for site in r0["partials"]:
        parts = [r["partials"][site]["partial"] for r in per_rank]
        reduced = r0["partials"][site]["reduced"]
        summed = [sum(p["first"][i] for p in parts) for i in range(len(reduced["first"]))]
        joins[site] = {
            "partials_first": [p["first"] for p in parts],
            "partials_norm": [p["norm"] for p in parts],
            "sum_of_partials_first": summed,
            "reduced_first": reduced["first"],
            "max_abs_diff": max(abs(a - b) for a, b in zip(summed, reduced["first"])),
        }
    emb_diff = {k: max(r["embedding"]["max_abs_diff"][k] for r in per_rank) for k in r0["embedding"]["max_abs_diff"]}
    ok = max(max_diff.values()) < TOLERANCE and max(emb_diff.values()) < TOLERANCE
    return {
        "ok": ok,
        "backend": r0["backend"],
        "world_size": r0["world_size"],
        "devices": [r["device"] for r in per_rank],
        "config": r0["config"],
        "tolerance": TOLERANCE,
        "max_abs_diff": max_diff,
        "all_reduces": counts,
        "all_reduce_bytes": sum(c["bytes"] for c in live),
        "collectives": log,
        "same_log_on_every_rank": same_log,
        "joins": joins,
        "shards": {str(r["rank"]): r["shards"] for r in per_rank},
        "step_ms": [r["step_ms"] for r in per_rank],
        "embedding": {
            "max_abs_diff": emb_diff,
            "vocab_ranges": [r["embedding"]["vocab_range"] for r in per_rank],
            "tokens_per_rank": [r["embedding"]["tokens_here"] for r in per_rank],
            "collectives": r0["embedding"]["collectives"],
        },
        "output": r0["output"],
        **({} if ok else {"error": "the sharded layer does not match the unsharded one"}),
    }


# ---------------------------------------------------------------- the two roles of this module


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux), and exit now if it already has."""
    expected = int(os.environ.get(PARENT_ENV, "0") or 0)
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if expected and os.getppid() != expected:
        os._exit(1)  # the parent died before prctl took effect


def _main(argv: list[str]) -> None:
    role, rest = argv[0], argv[1:]
    _die_with_parent()
    os.environ[PARENT_ENV] = str(os.getpid())  # this process is its children's parent
    if role == "--as-torchrun":
        from torch.distributed.run import main as torchrun

        sys.argv = ["torchrun"] + rest
        torchrun()
    elif role == "--as-worker":
        import runpy

        sys.argv = ["core.megatron.worker"] + rest
        runpy.run_module("core.megatron.worker", run_name="__main__", alter_sys=True)
    else:
        raise SystemExit(f"usage: python -m core.megatron.demo --as-torchrun|--as-worker ... (got {role!r})")


if __name__ == "__main__":
    _main(sys.argv[1:])
