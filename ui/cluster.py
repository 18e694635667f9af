"""A lecture hall on one machine: N app replicas behind nginx with sticky sessions.

    python -m ui.cluster --replicas 4 --port 8500 [--address 0.0.0.0] [-- streamlit options]

Streamlit keeps each session's state (widgets, the websocket) inside one process, so replicas need
a balancer that proxies websockets and sends a browser back to the same replica every time. Each
replica is ``python -m ui.serve`` (what ``make run`` starts) on a free localhost port; nginx
(Debian's package; ``scripts/ensure-nginx.sh`` installs it) listens on --port and picks the replica
by consistent hash of a cookie that it sets on the first response. When a replica dies, nginx
tries the next one: new sessions and reconnecting browsers land on a survivor (Streamlit's client
reconnects and reruns the page there; the old session's widget values are gone). The response
header X-Attention-Lab-Replica names the replica that answered.

When every replica and nginx answer /_stcore/health, one JSON line is printed:
``{"balancer": P, "replicas": [ports], "pids": [pids], "nginx": pid}``. Ctrl+C (or SIGTERM) stops
all of it; the nginx configuration lives in a temporary directory removed at exit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COOKIE = "attnlab_replica"

NGINX_CONF = """\
worker_processes 1;
pid {tmp}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;

    # websockets: pass the upgrade through (Streamlit's /_stcore/stream)
    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    # sticky sessions: the cookie names the hash key; a browser without it gets a fresh key
    map $cookie_{cookie} $replica_key {{ "" $request_id; default $cookie_{cookie}; }}
    map $cookie_{cookie} $replica_cookie {{ "" "{cookie}=$request_id; Path=/; HttpOnly; SameSite=Lax"; default ""; }}

    upstream attention_lab {{
        hash $replica_key consistent;
{servers}
    }}

    server {{
        listen {address}:{port};
        location / {{
            proxy_pass http://attention_lab;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;          # Streamlit compares Origin with Host
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_connect_timeout 2s;
            proxy_read_timeout 3600s;                  # a class keeps its websocket for the lesson
            proxy_send_timeout 3600s;
            proxy_next_upstream error timeout http_502 http_503;
            add_header Set-Cookie $replica_cookie always;
            add_header X-Attention-Lab-Replica $upstream_addr always;  # which replica answered
        }}
    }}
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if not found:
        raise SystemExit("nginx is not installed: run `bash scripts/ensure-nginx.sh` (or `make nginx`)")
    return found


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def serve_command(port: int, extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The command line of one headless app server on 127.0.0.1:``port`` (a replica, or a test's server)."""
    return [
        sys.executable,
        "-m",
        "ui.serve",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        *extra,
    ]


def nginx_conf(tmp: Path, port: int, replicas: list[int], address: str = "127.0.0.1") -> str:
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;" for p in replicas)
    return NGINX_CONF.format(tmp=tmp, port=port, address=address, servers=servers, cookie=COOKIE)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class Cluster:
    def __init__(self, replicas: int, port: int, address: str = "127.0.0.1", extra: list[str] | None = None):
        self.n, self.port, self.address, self.extra = replicas, port, address, extra or []
        self.tmp = Path(tempfile.mkdtemp(prefix="attention-lab-cluster-"))
        self.tmp.chmod(0o755)  # nginx's workers (user nobody when started as root) read below it
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen] = []
        self.nginx: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> dict:
        binary = nginx_binary()
        for i in range(self.n):
            port = free_port()
            log = open(self.tmp / f"replica-{i}.log", "wb")
            cmd = serve_command(port, self.extra)
            self.procs.append(
                subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            )
            self.ports.append(port)
        conf = self.tmp / "nginx.conf"
        conf.write_text(nginx_conf(self.tmp, self.port, self.ports, self.address))
        self.nginx = subprocess.Popen(
            [binary, "-p", str(self.tmp), "-c", str(conf), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=open(self.tmp / "nginx.log", "wb"),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        pending = [f"http://127.0.0.1:{p}" for p in self.ports] + [f"http://127.0.0.1:{self.port}"]
        while pending:
            for name, proc in [("nginx", self.nginx)] + [(f"replica {i}", p) for i, p in enumerate(self.procs)]:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")
            pending = [u for u in pending if not healthy(u)]
            if time.monotonic() > deadline:
                raise TimeoutError(f"not healthy after {timeout:.0f} s: {pending}")
            time.sleep(0.2)
        return {
            "balancer": self.port,
            "replicas": self.ports,
            "pids": [p.pid for p in self.procs],
            "nginx": self.nginx.pid,
        }

    def log_tail(self, name: str) -> str:
        f = self.tmp / ("nginx.log" if name == "nginx" else f"replica-{name.split()[-1]}.log")
        try:
            return f.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        procs = ([self.nginx] if self.nginx else []) + self.procs
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ui.cluster", description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--port", type=int, default=8500, help="the balancer's port")
    ap.add_argument(
        "--address", default="127.0.0.1", help="where the balancer listens; 0.0.0.0 opens it to the classroom network"
    )
    ap.add_argument("extra", nargs="*", help="options passed to every replica (after --)")
    args = ap.parse_args(argv)
    if args.replicas < 1:
        ap.error("--replicas must be at least 1")
    cluster = Cluster(args.replicas, args.port, args.address, args.extra)

    def _stop(signum, frame):
        raise KeyboardInterrupt

    # SIGINT too: a shell starting us in the background hands SIGINT down ignored
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
    try:
        info = cluster.start()
        print(json.dumps(info), flush=True)
        while cluster.nginx.poll() is None:
            for i, p in enumerate(cluster.procs):
                if p.poll() is not None and not getattr(p, "_reported", False):
                    p._reported = True
                    print(
                        f"replica {i} (port {cluster.ports[i]}) exited with {p.returncode}; "
                        f"nginx sends its sessions to the others",
                        file=sys.stderr,
                        flush=True,
                    )
            time.sleep(0.5)
        print(f"nginx exited with {cluster.nginx.returncode}:\n{cluster.log_tail('nginx')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except (RuntimeError, TimeoutError) as e:
        print(f"cluster failed to start: {e}", file=sys.stderr)
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl+C must not cut the clean-up short
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
