"""The shared tolerances of the numerical tests (``tests/tolerances.py``), and the rule that a
test's tolerance says where it comes from."""

import io
import pathlib
import tokenize

import tolerances as tol

TESTS = pathlib.Path(__file__).resolve().parent


def test_the_shared_tolerances_cover_the_chains_they_name():
  """tests/tolerances.py: each named tolerance holds the probabilistic rounding bound of the
  chain it is stated for, and covered_terms inverts that bound."""
  assert tol.probabilistic(tol.F32_SHORT_TERMS) <= tol.F32_SHORT["rtol"]
  assert tol.probabilistic(tol.F32_TERMS) <= tol.F32["rtol"]
  assert tol.probabilistic(tol.F32_LONG_TERMS) <= tol.F32_LONG["rtol"]
  assert 10 * tol.probabilistic(tol.F32_GRAD_TERMS) <= tol.F32_GRAD["rtol"]
  assert tol.probabilistic(tol.F32_GRAD_TERMS) <= tol.F32_GRAD["atol"]
  assert tol.probabilistic(tol.F64_TERMS, tol.EPS64) <= tol.F64["rtol"]
  assert 100 * tol.probabilistic(tol.F64_TERMS, tol.EPS64) <= tol.F64_GRAD["rtol"]
  assert (tol.F64_CONDITION * tol.probabilistic(tol.F64_TERMS, tol.EPS64)
          <= tol.F64_CONDITIONED["rtol"])
  assert tol.finite_difference(tol.FD_STEP) <= tol.FD["atol"]
  assert tol.finite_difference(tol.FD_DEFAULT_STEP) <= tol.FD["atol"]
  assert tol.grad(tol.F32_GRAD_TERMS) == tol.F32_GRAD
  assert tol.grad(10 ** 6)['rtol'] == 10 * tol.probabilistic(10 ** 6) > tol.F32_GRAD['rtol']
  for tolerance in (1e-6, 1e-5, 1e-4):
    n = tol.covered_terms(tolerance)
    assert tol.probabilistic(n) <= tolerance < tol.probabilistic(n + 1)
  assert tol.worst_case(1000) > tol.probabilistic(1000)  # n u against sqrt(n) u


def literal_tolerances(source: str) -> list[int]:
  """The lines of ``source`` where an ``rtol=`` or ``atol=`` keyword is given a number
  literal with no comment on its line or the line above it to say where it comes from."""
  tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
  commented = {t.start[0] for t in tokens if t.type == tokenize.COMMENT}
  lines = []
  for i, t in enumerate(tokens[:-3]):
    if t.type == tokenize.NAME and t.string in ("rtol", "atol") and tokens[i + 1].string == "=":
      value = tokens[i + 2]
      if value.string == "-":
        value = tokens[i + 3]
      row = t.start[0]
      if value.type == tokenize.NUMBER and not {row, row - 1} & commented:
        lines.append(row)
  return lines


def test_literal_tolerances_are_found_and_a_comment_or_a_name_answers_them():
  """The rule's own check can fail: a bare literal is found, a commented or named one is not."""
  assert literal_tolerances("f(a, b, rtol=1e-5)\n") == [1]
  assert literal_tolerances("f(a, b,\n  atol=2e-3)\n") == [2]
  assert literal_tolerances("f(a, b, atol=2e-3)  # the step's truncation\n") == []
  assert literal_tolerances("# sampling error of 1e4 draws\nf(a, b, atol=5e-2)\n") == []
  assert literal_tolerances("f(a, b, **tol.F32)\nf(a, b, atol=tol.F32['atol'] * n)\n") == []


def test_every_numerical_tolerance_of_the_tests_says_where_it_comes_from():
  """A literal rtol/atol in a test is a named tolerance of tests/tolerances.py, or carries a
  comment that derives it (a truncation order, a sampling error, a reduced precision)."""
  found = {p.name: literal_tolerances(p.read_text()) for p in sorted(TESTS.glob("*.py"))
           if p.name != "tolerances.py"}
  assert {name: rows for name, rows in found.items() if rows} == {}
