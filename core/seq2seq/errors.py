"""Typed errors for checkpoints and the manifest: a code and its parameters, no language.

The app maps `code` to a translated message (ui/errors.py); the command line prints `str()`.
Every error carries `command`, the exact command that makes the missing file again.
"""

from __future__ import annotations


def retrain_command(task: str | None = None, attention: str | None = None) -> str:
    if task and attention:
        return f"python -m core.seq2seq train --task {task} --attention {attention}"
    return "git checkout -- core/seq2seq/checkpoints"


class CheckpointError(Exception):
    """codes: manifest_missing, manifest_empty, manifest_invalid, checkpoint_missing,
    checkpoint_corrupt, disk_full."""

    def __init__(self, code: str, **params):
        self.code = code
        self.params = params
        detail = ", ".join(f"{k}={v}" for k, v in params.items())
        super().__init__(f"{code}: {detail}" if detail else code)
