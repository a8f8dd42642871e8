"""The shared tolerances of the numerical tests, and where they come from.

Two computations of the same quantity that add the same terms in another order (a NumPy
float64 reference, another BLAS kernel, CPU kind or thread count, a Python loop against a
scan, a hand-written VJP against autodiff) differ by rounding alone. For a sum or dot product
of ``n`` terms the rounding error is at most ``gamma_n = n u / (1 - n u)`` times the sum of
the terms' magnitudes (Higham 2002, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed., Sec. 3.1, eq. 3.5), ``u = eps / 2`` the unit roundoff. Rounding errors of independent
sign add like a random walk: the error is below about ``lam sqrt(n) u`` times the same sum
with probability at least ``1 - 2 n exp(-lam^2 (1 - u)^2 / 2)`` (Higham and Mary 2019, "A
New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), the
inner-product bound); with ``lam = 8`` that is ``1 - 2.5e-14 n``. A recurrence of ``T``
steps whose Jacobians have norm about one adds the errors of its steps, so ``n`` counts the
terms of the whole chain (``T`` times the width).

The named tolerances are that probabilistic bound evaluated at the largest chain the tests
that use them compare, rounded up (``tests/test_tolerances.py`` checks each against its
chain); they do not depend on the machine that runs them.
"""

import math

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 2 u of float32, 1.19e-7
EPS64 = float(np.finfo(np.float64).eps)  # 2 u of float64, 2.2e-16
LAMBDA = 8.0  # the probabilistic bound's lam: it fails with probability <= 2.5e-14 n


def worst_case(terms: int, eps: float = EPS32) -> float:
  """``gamma_n`` of ``terms`` rounded additions (Higham 2002, eq. 3.5), relative to the sum
  of the terms' magnitudes."""
  nu = terms * eps / 2
  return nu / (1 - nu)


def probabilistic(terms: int, eps: float = EPS32, lam: float = LAMBDA) -> float:
  """``lam sqrt(n) u`` (Higham and Mary 2019), relative to the sum of the terms'
  magnitudes."""
  return lam * math.sqrt(terms) * eps / 2


def covered_terms(tolerance: float, eps: float = EPS32, lam: float = LAMBDA) -> int:
  """The longest chain whose probabilistic rounding bound stays within ``tolerance``: how
  to read a literal tolerance of a test (float32: ``1e-6`` covers 4 terms, ``1e-5`` 439,
  ``1e-4`` 43,980; float64: ``1e-12`` 1,267,650)."""
  return int((2 * tolerance / (lam * eps)) ** 2)


def recurrence(steps: int, width: int, scale: float = 1.0, eps: float = EPS32) -> float:
  """A bound on the rounding of ``steps`` chained ``width``-term products at magnitude
  ``scale`` (at least 1), forward or backward: 16 times ``steps * width * eps``, the
  worst-case ``gamma`` of the whole chain with room for the activation's and the VJP's own
  roundings."""
  return 16 * steps * width * eps * max(1.0, scale)


# Float32 against a float64 reference or another float32 order: one cell step or a short
# scan, chains of at most 400 terms (the cell tests: width <= 16, T <= 8 plus the input
# projection).
F32_TERMS = 400
F32 = dict(rtol=1e-5, atol=1e-5)
# Float32 gradients through a scan: the weight gradient sums T B n terms (the fused-scan
# tests: T <= 12, B <= 4, n <= 16, so <= 1,000) and cancels; rtol allows a cancellation of
# ten in the summed terms, atol the entries that cancel to zero.
F32_GRAD_TERMS = 1000
F32_GRAD = dict(rtol=2e-4, atol=2e-5)
# Float64 against a float64 reference: chains of at most 10,000 terms.
F64_TERMS = 10_000
F64 = dict(rtol=1e-12, atol=1e-12)
# Float64 gradients: the F64 chain with a cancellation of 100.
F64_GRAD = dict(rtol=1e-10, atol=1e-10)

# Float32, chains of at most 4 terms: two formulas of one elementwise quantity, an optimizer's
# update, a rescale (each transcendental function adds a few units of roundoff; covered_terms
# says 1e-6 holds 4 terms).
F32_SHORT_TERMS = 4
F32_SHORT = dict(rtol=1e-6, atol=1e-6)
# Float32, chains of at most 40,000 terms: a scan of T steps at width n with T n <= 40,000, a
# whole model's loss, a matrix function of a 128-wide matrix.
F32_LONG_TERMS = 40_000
F32_LONG = dict(rtol=1e-4, atol=1e-4)
# Float64 with a condition number of at most 1e3 on the F64 chain: a linear solve, a least
# squares fit or a matrix function against an independent NumPy or SciPy algorithm.
F64_CONDITIONED = dict(rtol=1e-9, atol=1e-9)
F64_CONDITION = 1e3

# Central finite differences (``jax.test_util.check_grads``) in float64: the truncation error
# is step^2 |f'''| / 6 and the rounding error u |f| / step (Higham 2002, Sec. 1.14); FD holds
# both for |f| and |f'''| up to FD_SCALE, at the step FD_STEP that some tests pass and at
# check_grads' own default step FD_DEFAULT_STEP.
FD_STEP = 1e-6
FD_DEFAULT_STEP = 1e-4
FD_SCALE = 500.0
FD = dict(rtol=1e-6, atol=1e-6)


def finite_difference(step: float = FD_STEP, scale: float = FD_SCALE,
                      eps: float = EPS64) -> float:
  """The error of a central difference at ``step`` for a function whose value and third
  derivative are at most ``scale``: truncation ``step^2 scale / 6`` plus rounding
  ``u scale / step`` (Higham 2002, Sec. 1.14)."""
  return step ** 2 * scale / 6 + eps / 2 * scale / step


BFLOAT16_EPS = 2.0 ** -7  # bfloat16 keeps 8 significant bits: 2 u = 7.8e-3
FLOAT16_EPS = 2.0 ** -10  # float16 keeps 11 significant bits: 2 u = 9.8e-4


def grad(terms: int) -> dict:
  """``F32_GRAD``, or for a float32 gradient chain longer than ``F32_GRAD_TERMS`` its
  derivation at ``terms``: rtol ten times the probabilistic bound (a cancellation of ten),
  atol the bound itself (to be scaled by the leaf's magnitude)."""
  return dict(rtol=max(F32_GRAD["rtol"], 10 * probabilistic(terms)),
              atol=max(F32_GRAD["atol"], probabilistic(terms)))
