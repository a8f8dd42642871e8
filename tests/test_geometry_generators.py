"""Generators against independent NumPy implementations of the papers' equations, and the
lvfRNN properties of Azencot et al. 2021 (Thm 1, Props 1-2, eq 13, App. B and C)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

from lvf_jax import geometry as g
import tolerances as tol


def np_field(n, seed):
  v = np.random.default_rng(seed).standard_normal((n, n))
  np.fill_diagonal(v, 0.0)
  return v


# ----- independent NumPy transcriptions, element by element, of lvfRNN eqs (7)-(10), (15)


def np_grad(h):
  n = len(h)
  return np.array([[h[i] - h[j] for j in range(n)] for i in range(n)])


def np_div(v):
  n = len(v)
  return np.array([sum(v[j, i] - v[i, j] for j in range(n)) for i in range(n)])


def np_dv(v):
  n = len(v)
  d = np_div(v)
  return np.array([[(v[j, i] - v[i, j]) if i != j else -d[i] for j in range(n)]
                   for i in range(n)])


def np_dv_apply(v, h):  # eq (15): (D_V h)_i = sum_j (V_ij - V_ji)(h_i - h_j)
  n = len(v)
  return np.array([sum((v[i, j] - v[j, i]) * (h[i] - h[j]) for j in range(n)) for i in range(n)])


sizes = st.sampled_from([2, 3, 4, 7, 12])  # few shapes: each new shape recompiles
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def eigenvalue_condition(m):
  """The largest condition number ``1 / |y^H x|`` of the eigenvalues of ``m`` (unit left and
  right eigenvectors ``y``, ``x``): a perturbation ``E`` moves an eigenvalue by about that
  times ``||E||``, so F32's rounding of a non-normal matrix is amplified by it."""
  _, left, right = scipy.linalg.eig(m, left=True, right=True)
  return float(np.max(1 / np.abs(np.sum(left.conj() * right, axis=0))))


@given(sizes, seeds)
def test_toolbox_matches_numpy(n, seed):
  v = np_field(n, seed)
  h = np.random.default_rng(seed + 1).standard_normal(n)
  # float32 sums of the 2 n <= 24 terms of div V; D_V h adds n terms at |(D_V)_ii| up to n
  np.testing.assert_allclose(g.grad(jnp.asarray(h)), np_grad(h), atol=tol.F32["atol"])
  np.testing.assert_allclose(g.divergence(jnp.asarray(v)), np_div(v), atol=tol.F32["atol"])
  dv = np.asarray(g.directional_derivative(jnp.asarray(v)))
  np.testing.assert_allclose(dv, np_dv(v), atol=tol.F32["atol"])
  np.testing.assert_allclose(dv @ h, np_dv_apply(v, h), atol=tol.F32_LONG["atol"])
  r, t = np.asarray(g.rotation(jnp.asarray(v))), np.asarray(g.flux(jnp.asarray(v)))
  np.testing.assert_allclose(r, v.T - v, **tol.F32_SHORT)  # V's float32 rounding, a subtraction
  np.testing.assert_allclose(t, np.diag(np_div(v)), atol=tol.F32["atol"])
  np.testing.assert_allclose(dv, r - t, atol=tol.F32["atol"])  # eq (10)
  assert g.div is g.divergence


@given(sizes, seeds)
def test_dv_annihilates_constants(n, seed):
  dv = g.directional_derivative(jnp.asarray(np_field(n, seed)))
  c = jnp.full((n,), 3.7, jnp.float32)
  # 3 n-term sums at 3.7 |(D_V)_ii| <= 3.7 n = 44: F32's chain at that magnitude
  np.testing.assert_allclose(dv @ c, np.zeros(n), atol=tol.F32_LONG["atol"])


@given(sizes, seeds)
def test_integration_by_parts_eq13(n, seed):
  v = np_field(n, seed)
  h = np.random.default_rng(seed + 7).standard_normal(n)
  lhs = np.sum(v * np.asarray(g.grad(jnp.asarray(h)))) + np.asarray(g.divergence(jnp.asarray(v))) @ h
  assert abs(lhs) < tol.F32_LONG["atol"] * (1 + np.abs(v).sum() * np.abs(h).max())


@given(sizes, seeds)
def test_divergence_always_sums_to_zero(n, seed):
  # Consequence: "(div V)_i <= 0 for all i" (Prop 2's hypothesis) forces div V = 0.
  d = g.divergence(jnp.asarray(np_field(n, seed)))
  assert abs(float(jnp.sum(d))) < tol.F32_LONG["atol"] * n  # n sums of 2 n float32 terms


@given(sizes, seeds)
def test_skew_iff_divergence_free(n, seed):
  v = jnp.asarray(np_field(n, seed))
  dv = g.directional_derivative(v)
  # Generic V: not divergence-free, D_V not skew.
  assert float(jnp.max(jnp.abs(g.divergence(v)))) > 1e-3
  assert float(jnp.max(jnp.abs(dv + dv.T))) > 1e-3
  # Divergence projected out: skew, and the projection is orthogonal and idempotent.
  p = g.project_divergence_free(v)
  # div, grad, div again: float32 chains of 4 n + 3 <= 51 terms at |div V| up to n
  np.testing.assert_allclose(g.divergence(p), np.zeros(n), atol=tol.F32_LONG["atol"])
  dp = g.directional_derivative(p)
  np.testing.assert_allclose(dp + dp.T, np.zeros((n, n)), atol=tol.F32_LONG["atol"])
  np.testing.assert_allclose(np.diag(p), np.zeros(n), atol=tol.F32_SHORT["atol"])  # exactly 0
  np.testing.assert_allclose(g.project_divergence_free(p), p, atol=tol.F32["atol"])
  resid = np.asarray(v - p)  # orthogonal to every divergence-free field
  q = np.asarray(g.project_divergence_free(jnp.asarray(np_field(n, seed + 3))))
  # exactly sum_i d_i (div q)_i / (2 n), d = div V: q's float32 divergence, F32's chain
  assert abs(np.sum(resid * q)) < tol.F32["atol"] * (1 + np.abs(resid).sum())
  # Conversely, a skew D_V comes from a divergence-free V: diag(D_V) = -div V.
  np.testing.assert_allclose(-np.diag(np.asarray(dp)), np.asarray(g.divergence(p)),
                             atol=tol.F32["atol"])


def test_doubly_stochastic_fields_are_divergence_free():
  v = g.doubly_stochastic()(jax.random.PRNGKey(0), (16, 16))
  # Sinkhorn stops at float32's floor (row and column sums of 16 terms); div V sums 32
  np.testing.assert_allclose(g.divergence(v), np.zeros(16), atol=tol.F32["atol"])


@given(sizes, seeds)
def test_prop1_divergence_free_is_normal_with_imaginary_spectrum(n, seed):
  dv = np.asarray(g.directional_derivative(g.project_divergence_free(jnp.asarray(np_field(n, seed)))),
                  np.float64)
  # D_V is skew up to its diagonal's F32 chain (div of the projection, 4 n + 3 terms), times
  # |D_V| <= n in the products; a normal matrix's eigenvalues move by no more than that
  np.testing.assert_allclose(dv.T @ dv, dv @ dv.T, atol=tol.F32_LONG["atol"])
  assert np.max(np.abs(np.linalg.eigvals(dv).real)) < tol.F32_LONG["atol"]


@given(sizes, seeds, st.floats(min_value=1e-3, max_value=20.0))
def test_prop2_stability_and_its_converse(n, seed, tau):
  v = jnp.asarray(np_field(n, seed))
  # Prop 2: div V <= 0 everywhere (i.e. div V = 0) => Re lambda(C_V) <= 1 for any tau >= 0.
  p = g.project_divergence_free(v)
  assert np.all(np.asarray(g.divergence(p)) <= tol.F32["atol"])
  c = np.asarray(g.euler(g.directional_derivative(p), tau), np.float64)
  assert np.max(np.linalg.eigvals(c).real) <= 1 + tol.F32_LONG["atol"] * (1 + tau)  # as above
  # Converse direction (trace D_V = -sum div V = 0, and D_V 1 = 0): a generic field with
  # nonzero divergence and n >= 4 has an eigenvalue of D_V with negative real part, hence
  # Re lambda(C_V) > 1 for every tau > 0: explicit Euler is then unstable. For n = 2 such a
  # D_V is nilpotent; for n = 3 its spectrum is {0, lambda, -lambda}.
  dv = np.asarray(g.directional_derivative(v), np.float64)
  if n == 2:
    # 2-term products of float32 D_V entries (2 roundings each) at |D_V|^2 up to 1e2
    np.testing.assert_allclose(dv @ dv, np.zeros((2, 2)), atol=tol.F32_LONG["atol"])
    return
  # D_V is not normal: its eigenvalues amplify the float32 rounding of D_V (F32) by their
  # condition number (up to 1e3 and more for some fields; for n = 3 near a nilpotent D_V)
  kappa = eigenvalue_condition(dv)
  if n == 3:
    eig = np.linalg.eigvals(dv)
    eig = eig[np.argsort(np.abs(eig))]
    assert abs(eig[0]) < tol.F32["atol"] * kappa
    assert abs(eig[1] + eig[2]) < tol.F32["atol"] * kappa
    return
  min_re = np.min(np.linalg.eigvals(dv).real)
  assert min_re < -1e-6
  c = np.asarray(g.euler(g.directional_derivative(v), tau), np.float64)
  # C_V = I - tau D_V has D_V's eigenvectors: the same condition number, at 1 + tau
  slack = tol.F32["atol"] * kappa * (1 + tau)
  assert np.max(np.linalg.eigvals(c).real) >= 1 - tau * min_re - slack


def test_appendix_b_commutator_is_not_a_directional_derivative():
  d_v = jnp.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], jnp.float32)
  d_u = jnp.array([[1, 1, -2], [-1, 0, 1], [2, -1, -1]], jnp.float32)
  # Both are directional derivatives of vector fields (built with our D_V from V = -triu part).
  for d in (d_v, d_u):
    v = -jnp.triu(d, 1)  # (D_V)_ij = V_ji - V_ij with V upper-triangular
    # small integers: exact
    np.testing.assert_allclose(g.directional_derivative(v), d, atol=tol.F32_SHORT["atol"])
  comm = d_u @ d_v - d_v @ d_u
  np.testing.assert_allclose(comm, [[0, 2, -2], [0, 0, 0], [-2, 2, 0]])
  # A D_W = R_W - T_W has a diagonal symmetric part; the commutator's symmetric part is
  # off-diagonal, so it is not in VF_3.
  sym = np.asarray((comm + comm.T) / 2)
  assert np.abs(sym - np.diag(np.diag(sym))).max() > 1.0


def test_appendix_c_leibniz_counterexample():
  v = jnp.array([[0.0, 1.0], [2.0, 0.0]])
  f, gg = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
  dv = g.directional_derivative(v)
  np.testing.assert_allclose(dv @ (f * gg), [0.0, 0.0])
  np.testing.assert_allclose((dv @ f) * gg + f * (dv @ gg), [1.0, -1.0])


def test_vf_dimension_and_redundancy():
  # dim VF_n = n(n-1)/2: D_V depends on V only through V^T - V.
  n = 7
  v = jnp.asarray(np_field(n, 0))
  s = jnp.asarray(np.random.default_rng(1).standard_normal((n, n)))
  sym = s + s.T
  np.testing.assert_allclose(g.directional_derivative(v + sym - jnp.diag(jnp.diag(sym))),
                             g.directional_derivative(v), atol=tol.F32["atol"])  # 2 n + 3 terms
  jac = jax.jacobian(lambda x: g.directional_derivative(x).reshape(-1))(v).reshape(n * n, n * n)
  assert np.linalg.matrix_rank(np.asarray(jac, np.float64), tol=1e-4) == g.num_skew_params(n)


@given(sizes, seeds)
def test_skew_constructions(n, seed):
  m = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
  # the same float32 subtraction, or none
  np.testing.assert_allclose(g.antisymmetrize(jnp.asarray(m)), m - m.T, atol=tol.F32_SHORT["atol"])
  u = np.triu(m, 1)
  np.testing.assert_allclose(g.skew_from_triu(jnp.asarray(m)), u - u.T, atol=tol.F32_SHORT["atol"])
  packed = g.packed_from_skew(jnp.asarray(u - u.T))
  assert packed.shape == (n * (n - 1) // 2,)
  np.testing.assert_allclose(g.skew_from_packed(packed, n), u - u.T, atol=tol.F32_SHORT["atol"])
  np.testing.assert_allclose(packed, m[np.triu_indices(n, 1)], atol=tol.F32_SHORT["atol"])


def test_packed_skew_indices_are_constants_of_the_trace():
  # The triangle's indices are known when tracing: a jitted step must not compute them
  # (jnp.triu_indices would add iota / cumsum ops evaluated in every call).
  for fn in (lambda v: g.skew_from_packed(v, 7), lambda v: g.packed_from_skew(
      g.skew_from_packed(v, 7))):
    text = str(jax.make_jaxpr(fn)(jnp.zeros(21)))  # with the nested jaxprs
    assert not re.search(r"= (iota|cumsum|scatter-add|sort)\b", text), text
  # batched packed vectors and gradients still follow the row-major triangle
  v = jnp.arange(2 * 21, dtype=jnp.float32).reshape(2, 21)
  rows, cols = np.triu_indices(7, 1)
  np.testing.assert_array_equal(g.skew_from_packed(v, 7)[:, rows, cols], v)
  grad = jax.grad(lambda x: jnp.sum(g.skew_from_packed(x, 7) * jnp.arange(49.0).reshape(7, 7)))
  np.testing.assert_array_equal(grad(v[0]), (rows * 7 + cols) - (cols * 7 + rows))


@pytest.mark.parametrize("gamma", [0.0, 0.1, 1.0])
def test_antisymmetric_diffusion_eq12(gamma):
  w = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
  out = g.antisymmetric_diffusion(jnp.asarray(w), gamma)
  np.testing.assert_allclose(out, w - w.T - gamma * np.eye(6), atol=tol.F32_SHORT["atol"])
  eig = np.linalg.eigvals(np.asarray(out, np.float64))
  # AntisymmetricRNN Sec. 3; a normal matrix: its eigenvalues move by the float32 gamma's rounding
  np.testing.assert_allclose(eig.real, -gamma * np.ones(6), atol=tol.F32["atol"])


def np_schur(p, gamma, theta, t):
  n = p.shape[0]
  lam = np.zeros((n, n))
  for i in range(n // 2):
    c, s = np.cos(theta[i]), np.sin(theta[i])
    lam[2 * i:2 * i + 2, 2 * i:2 * i + 2] = gamma[i] * np.array([[c, -s], [s, c]])
  return p @ (lam + np.tril(t, -1)) @ p.T


@given(st.integers(1, 6), seeds)
def test_schur_form_eq5(k, seed):
  n = 2 * k
  rng = np.random.default_rng(seed)
  p = np.linalg.qr(rng.standard_normal((n, n)))[0].astype(np.float32)
  gamma = rng.uniform(0.5, 1.5, k).astype(np.float32)
  theta = rng.uniform(0, 2 * np.pi, k).astype(np.float32)
  t = rng.standard_normal((n, n)).astype(np.float32)
  out = g.schur_form(*map(jnp.asarray, (p, gamma, theta, t)))
  # two products of n <= 12 terms, at |T| entries up to 4
  np.testing.assert_allclose(out, np_schur(p, gamma, theta, t), atol=tol.F32_LONG["atol"])
  # Eigenvalues of V are gamma_i e^{+-i theta_i} when T is strictly *block*-lower (the real
  # Schur form); the entries t_{2i+1,2i} inside a 2x2 block (allowed by eq 5) move them.
  t_block = np.tril(t, -1)
  t_block[np.arange(1, n, 2), np.arange(0, n, 2)] = 0
  out = g.schur_form(*map(jnp.asarray, (p, gamma, theta, t_block)))
  out = np.asarray(out, np.float64)
  eig = np.linalg.eigvals(out)
  want = np.concatenate([gamma * np.exp(1j * theta), gamma * np.exp(-1j * theta)])
  # V is not normal (T): its eigenvalues amplify the float32 rounding of V (two products, F32)
  # by their condition number, up to 5e3 for some draws
  assert max(np.min(np.abs(want - e)) for e in eig) < tol.F32["atol"] * eigenvalue_condition(out)


def test_schur_form_orthogonal_when_unit_moduli_and_no_t():
  n = 8
  p = g.haar_orthogonal()(jax.random.PRNGKey(3), (n, n))
  theta = g.uniform_angle()(jax.random.PRNGKey(4), (n // 2,))
  v = g.schur_form(p, jnp.ones((n // 2,)), theta, jnp.zeros((n, n)))
  assert float(g.orthogonality_error(v)) < tol.F32["atol"]  # 3 products of 8 terms, and P's QR


def test_generators_batch_and_preserve_dtype():
  v = jax.random.normal(jax.random.PRNGKey(0), (3, 5, 5), jnp.bfloat16)
  for fn in (g.divergence, g.rotation, g.flux, g.directional_derivative,
             g.project_divergence_free, g.antisymmetrize, g.skew_from_triu):
    out = fn(v)
    assert out.dtype == jnp.bfloat16
    single = fn(v[1])
    np.testing.assert_allclose(np.asarray(out[1], np.float32), np.asarray(single, np.float32))


def test_generators_jit_and_vmap_match_eager():
  v = jax.random.normal(jax.random.PRNGKey(1), (4, 6, 6))
  for fn in (g.directional_derivative, g.project_divergence_free, g.flux):
    eager = jnp.stack([fn(x) for x in v])
    # fused or op by op: sums of up to 4 n + 3 = 27 terms in another order
    np.testing.assert_allclose(jax.jit(fn)(v), eager, atol=tol.F32["atol"])
    np.testing.assert_allclose(jax.vmap(fn)(v), eager, atol=tol.F32["atol"])


@given(sizes, seeds)
def test_with_divergence_sets_eq8_divergence_and_keeps_the_divergence_free_part(n, seed):
  v = np_field(n, seed)
  a = np.random.default_rng(seed + 1).standard_normal(n)
  w = np.asarray(g.with_divergence(jnp.asarray(v), jnp.asarray(a, jnp.float32)), np.float64)
  np_div = w.sum(axis=0) - w.sum(axis=1)  # eq. 8 in NumPy
  # float32 sums of n entries of size <= max|a|/n + max|v|: n ulps of the largest term
  bound = 4 * n * tol.EPS32 * (1 + np.abs(a).max() + np.abs(v).max())
  np.testing.assert_allclose(np_div, a - a.mean(), atol=bound)
  np.testing.assert_allclose(np.diag(w), 0.0, atol=bound)
  np.testing.assert_allclose(g.project_divergence_free(jnp.asarray(w, jnp.float32)),
                             g.project_divergence_free(jnp.asarray(v)), atol=bound)
  # (v, div v) gives v back: every field is reached
  back = g.with_divergence(jnp.asarray(v), g.divergence(jnp.asarray(v)))
  np.testing.assert_allclose(back, v * (1 - np.eye(n)), atol=bound)


@given(sizes, seeds, st.floats(min_value=0.1, max_value=20.0))
def test_midpoint_radius_is_bounded_by_the_largest_divergence(n, seed, tau):
  """Bendixson: Re lambda(D_V) >= -max_i (div V)_i, so the midpoint map's spectral radius is
  at most (1 + tau m / 2) / (1 - tau m / 2), m = max_i |(div V)_i|, while tau m < 2."""
  v = np_field(n, seed)
  v = np.asarray(g.with_divergence(jnp.asarray(v), jnp.asarray(
      np.random.default_rng(seed).standard_normal(n) * 0.5 / (tau * n), jnp.float32)),
      np.float64)
  div = v.sum(axis=0) - v.sum(axis=1)
  d = (v.T - v) - np.diag(div)
  m = np.abs(div).max()
  eye = np.eye(n)
  c = np.linalg.solve(eye + tau / 2 * d, eye - tau / 2 * d)
  radius = np.abs(np.linalg.eigvals(c)).max()
  # float64 solve and eigenvalues against the exact bound
  assert radius <= (1 + tau * m / 2) / (1 - tau * m / 2) * (1 + tol.F64_CONDITIONED["rtol"])
