"""The papers' formulas, each written once as a sympy expression: the calculators evaluate it, the
page prints it (:func:`latex`), exports and hovers show it as text (:func:`text`).

Sources: Narayanan et al. 2021 (arXiv 2104.04473) eq. (2)-(4) and section 2.2; Rajbhandari et al.
2019 (arXiv 1910.02054) section 5 / Figure 1; Korthikanti et al. 2022 (arXiv 2205.05198) Table 2 and
eq. (1)-(6). Expressions are built unevaluated so that they print in the papers' arrangement.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import sympy as sp

l, h, V, s, B, b, a, t = sp.symbols("l h V s B b a t", positive=True)
T, P, n, X = sp.symbols("T P n X", positive=True)
Psi, K, N_d = sp.symbols("Psi K N_d", positive=True)
p, m, v = sp.symbols("p m v", positive=True)


def _sum(*terms) -> sp.Expr:
    return sp.Add(*terms, evaluate=False)


def _prod(*factors) -> sp.Expr:
    return sp.Mul(*factors, evaluate=False)


def _frac(num, den) -> sp.Expr:
    return _prod(num, sp.Pow(den, -1, evaluate=False))


@dataclass(frozen=True)
class Formula:
    lhs: str  # what the formula computes, in LaTeX ("P", "F", ...)
    expr: sp.Expr
    source: str  # paper and equation

    @functools.cached_property
    def symbols(self) -> tuple[sp.Symbol, ...]:
        return tuple(sorted(self.expr.free_symbols, key=lambda x: x.name))

    @functools.cached_property
    def _fn(self):
        return sp.lambdify(self.symbols, self.expr, modules="math")

    def __call__(self, **values: float) -> float:
        """Evaluate with plain floats, e.g. ``PARAMS(l=24, h=1024, V=30522, s=512)``."""
        missing = {x.name for x in self.symbols} - set(values)
        if missing:
            raise TypeError(f"{self.lhs}: missing {', '.join(sorted(missing))}")
        return float(self._fn(*(values[x.name] for x in self.symbols)))


def latex(formula: Formula, lhs: str | None = None) -> str:
    """``lhs = expression`` in LaTeX, for ``st.latex``; ``lhs`` overrides the formula's own left side
    (a translated label, already LaTeX-safe)."""
    return f"{formula.lhs if lhs is None else lhs} = {sp.latex(formula.expr, order='none')}"


def text(formula: Formula) -> str:
    """The expression as one line of plain text: ``s b h (34/t)``, ``(p - 1)/m``."""
    out = sp.sstr(formula.expr, order="none").replace("**", "^")
    out = re.sub(r"^\(([^()+]*)\)\*", r"\1*", out)  # (s*b*h)*(...) -> s*b*h*(...)
    out = re.sub(r"\(\(([^()]*)\)\)", r"(\1)", out)  # x/((h*t)) -> x/(h*t)
    return out.replace("*", " ")


# ---- Narayanan et al. 2021 -------------------------------------------------------------------
PARAMS = Formula(
    "P",
    _prod(12, l, h**2, _sum(1, _frac(13, _prod(12, h)), _frac(_sum(V, s), _prod(12, l, h)))),
    "Narayanan et al. 2021, eq. (2)",
)
FLOPS = Formula(
    "F",
    _prod(96, B, s, l, h**2, _sum(1, _frac(s, _prod(6, h)), _frac(V, _prod(16, l, h)))),
    "Narayanan et al. 2021, eq. (3)",
)
TRAINING_SECONDS = Formula(r"\text{time}", _frac(_prod(8, T, P), _prod(n, X)), "Narayanan et al. 2021, eq. (4)")
BUBBLE = Formula(r"\frac{t_{pb}}{t_{id}}", _frac(_sum(p, -1), m), "Narayanan et al. 2021, section 2.2")
BUBBLE_INTERLEAVED = Formula(
    r"\frac{t_{pb}}{t_{id}}", _frac(_sum(p, -1), _prod(v, m)), "Narayanan et al. 2021, section 2.2.2"
)

# ---- Rajbhandari et al. 2019: model states per device, by ZeRO stage --------------------------
# Each stage is the sum of its three parts: fp16 parameters, fp16 gradients, optimizer states.
ZERO_PARTS = {
    0: (_prod(2, Psi), _prod(2, Psi), _prod(K, Psi)),
    1: (_prod(2, Psi), _prod(2, Psi), _frac(_prod(K, Psi), N_d)),
    2: (_prod(2, Psi), _frac(_prod(2, Psi), N_d), _frac(_prod(K, Psi), N_d)),
    3: (_frac(_prod(2, Psi), N_d), _frac(_prod(2, Psi), N_d), _frac(_prod(K, Psi), N_d)),
}
ZERO_PART_NAMES = ("parameters_fp16", "gradients_fp16", "optimizer_states")
ZERO = {
    stage: Formula(r"\text{bytes}", _sum(*parts), "Rajbhandari et al. 2019, section 5 and Figure 1")
    for stage, parts in ZERO_PARTS.items()
}
ZERO_PART_FORMULAS = {
    stage: {
        name: Formula(name, part, "Rajbhandari et al. 2019, section 5") for name, part in zip(ZERO_PART_NAMES, parts)
    }
    for stage, parts in ZERO_PARTS.items()
}

# ---- Korthikanti et al. 2022: activation bytes per transformer layer --------------------------
_SCORES = _frac(_prod(5, a, s), _prod(h, t))
ACTIVATIONS = {  # (recompute, sequence parallel) -> formula
    ("none", False): Formula("A", _prod(s, b, h, _sum(10, _frac(24, t), _SCORES)), "Korthikanti et al. 2022, eq. (2)"),
    ("none", True): Formula("A", _prod(s, b, h, _sum(_frac(34, t), _SCORES)), "Korthikanti et al. 2022, eq. (4)"),
    ("selective", False): Formula("A", _prod(s, b, h, _sum(10, _frac(24, t))), "Korthikanti et al. 2022, Table 2"),
    ("selective", True): Formula("A", _prod(s, b, h, _frac(34, t)), "Korthikanti et al. 2022, eq. (6)"),
    ("full", False): Formula("A", _prod(2, s, b, h), "Korthikanti et al. 2022, Table 2"),
}
ACTIVATIONS[("full", True)] = ACTIVATIONS[("full", False)]
