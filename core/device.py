"""The one place that decides where tensors live: CUDA when available, else the CPU.

torch is imported inside the functions so that importing this module stays free; the home page
and lesson 1 must not pay for torch.
"""

from __future__ import annotations

import sys


def pick_device():
    """Return ``torch.device("cuda")`` when a CUDA GPU is usable, else ``torch.device("cpu")``."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe(probe: bool = True) -> dict | None:
    """A small, JSON-friendly description of the device in use.

    With ``probe=False`` it answers only if torch is already imported (so a page that has not
    needed torch yet does not pay for it) and returns None otherwise.
    """
    if not probe and "torch" not in sys.modules:
        return None
    import torch

    dev = pick_device()
    info = {"type": dev.type, "name": "CPU", "torch": torch.__version__, "threads": torch.get_num_threads()}
    if dev.type == "cuda":
        info["name"] = torch.cuda.get_device_name(dev)
    return info


if __name__ == "__main__":  # python -m core.device
    import json

    print(json.dumps(describe(), indent=2))
