"""The layering rule, read from the source: core/ computes and never imports streamlit or ui/;
pages/ lay out and never import torch themselves (they go through core/ and ui/)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BANNED = {"core": ("streamlit", "ui"), "pages": ("torch",)}


def imported_modules(source: str) -> list[tuple[int, str]]:
    """Every module an import statement names (top level or nested), with its line."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append((node.lineno, node.args[0].value))
    return out


def violations(layer: str, root: Path = ROOT) -> list[str]:
    banned = BANNED[layer]
    found = []
    for path in sorted((root / layer).rglob("*.py")):
        for line, module in imported_modules(path.read_text(encoding="utf-8")):
            top = module.split(".")[0]
            if top in banned:
                found.append(f"{path.relative_to(root)}:{line}: imports {module}")
    return found


@pytest.mark.parametrize("layer", sorted(BANNED))
def test_layer_imports(layer):
    assert violations(layer) == []


def test_rule_catches_each_form_of_import(tmp_path):
    """The checker itself: each way of importing a banned module is caught, look-alikes are not."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "bad.py").write_text(
        "import streamlit as st\n"
        "def f():\n    from ui.i18n import t\n"
        "mod = __import__('streamlit.components.v1')\n"
        "import streamlit_like\nfrom .ui import x\n",
        encoding="utf-8",
    )
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "p.py").write_text("import torch.nn\nimport torchvision_like\n", encoding="utf-8")
    assert violations("core", tmp_path) == [
        "core/bad.py:1: imports streamlit",
        "core/bad.py:3: imports ui.i18n",
        "core/bad.py:4: imports streamlit.components.v1",
    ]
    assert violations("pages", tmp_path) == ["pages/p.py:1: imports torch.nn"]


def softmax_calls(path: Path) -> list[int]:
    """Lines where a softmax is called (torch.softmax, x.softmax, F.softmax, nn.Softmax)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("softmax", "Softmax"):
                lines.append(node.lineno)
    return lines


def test_one_attention_kernel():
    """Attention weights are computed in core/attention/kernel.py only: the glass box, the Megatron
    layers and the bertviz neuron check call scaled_dot_product_attention instead of a softmax."""
    users = [
        *sorted((ROOT / "core" / "attention").glob("*.py")),
        ROOT / "core" / "megatron" / "layers.py",
        ROOT / "core" / "bertviz_views.py",
    ]
    found = {str(p.relative_to(ROOT)): softmax_calls(p) for p in users if softmax_calls(p)}
    assert list(found) == ["core/attention/kernel.py"], found
    for path in users[-2:]:
        assert "scaled_dot_product_attention(" in path.read_text(encoding="utf-8"), path
