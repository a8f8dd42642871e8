"""The shared tolerances of the numerical tests (``tests/tolerances.py``)."""

import tolerances as tol


def test_the_shared_tolerances_cover_the_chains_they_name():
  """tests/tolerances.py: each named tolerance holds the probabilistic rounding bound of the
  chain it is stated for, and covered_terms inverts that bound."""
  assert tol.probabilistic(tol.F32_TERMS) <= tol.F32["rtol"]
  assert 10 * tol.probabilistic(tol.F32_GRAD_TERMS) <= tol.F32_GRAD["rtol"]
  assert tol.probabilistic(tol.F32_GRAD_TERMS) <= tol.F32_GRAD["atol"]
  assert tol.probabilistic(tol.F64_TERMS, tol.EPS64) <= tol.F64["rtol"]
  assert 100 * tol.probabilistic(tol.F64_TERMS, tol.EPS64) <= tol.F64_GRAD["rtol"]
  for tolerance in (1e-6, 1e-5, 1e-4):
    n = tol.covered_terms(tolerance)
    assert tol.probabilistic(n) <= tolerance < tol.probabilistic(n + 1)
  assert tol.worst_case(1000) > tol.probabilistic(1000)  # n u against sqrt(n) u
