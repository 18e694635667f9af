"""How many lesson reruns compute at once in this process: a class that presses Enter together queues.

Streamlit runs every session's script in its own thread. Thirty reruns at once share one GIL: each
gets a 5 ms slice in turn, so all thirty finish near the end of the burst, and the switching costs
more on top (lesson 5, 30 edits at once on 2 cores, no limit: median ≈ p95 ≈ 3.3 s). With a slot
the reruns take turns instead: the first finish after one rerun's time, the last after the burst's, and the p95 is
that of a queue (docs/PERFORMANCE.md, "A burst").

``slot()`` is held by a lesson page while it draws (ui.lesson.LessonPage.render). A step that waits
for seconds on purpose (live training, the Megatron demo's torchrun) steps out with ``released()``
so that it never holds the others up.

ATTNLAB_SCRIPT_SLOTS sets the number. The default is one: the Python half of a rerun holds the GIL
whatever the cores, and on 2 cores one slot beat two (lesson 5, 30 at once, two runs each: p95
2.0–2.7 s with one, 2.6–3.8 s with two, 3.3–3.6 s with no limit). A machine with more cores runs more processes, one per core,
behind the balancer (ui.cluster, docs/DEPLOY.md).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

SLOTS = max(1, int(os.environ.get("ATTNLAB_SCRIPT_SLOTS") or 1))
_SEMAPHORE = threading.BoundedSemaphore(SLOTS)
_HELD = threading.local()  # this thread's depth of slot(): nested pages and fragments take one slot


@contextmanager
def slot():
    """Hold one of the SLOTS while the block runs (re-entrant within a thread)."""
    depth = getattr(_HELD, "depth", 0)
    if depth == 0:
        _SEMAPHORE.acquire()
    _HELD.depth = depth + 1
    try:
        yield
    finally:
        _HELD.depth -= 1
        if _HELD.depth == 0:
            _SEMAPHORE.release()


@contextmanager
def released():
    """Give this thread's slot back while the block runs (a long wait), then take one again."""
    depth = getattr(_HELD, "depth", 0)
    if depth:
        _HELD.depth = 0
        _SEMAPHORE.release()
    try:
        yield
    finally:
        if depth:
            _SEMAPHORE.acquire()
            _HELD.depth = depth
