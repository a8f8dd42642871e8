"""Maps against SciPy/NumPy references, orthogonality in float32, gradients, jit/vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.test_util import check_grads

from lvf_jax import geometry as g
import tolerances as tol


def random_skew(n, seed, norm=None, dtype=np.float32):
  m = np.random.default_rng(seed).standard_normal((n, n))
  a = m - m.T
  if norm is not None:
    a = a / np.linalg.norm(a, 2) * norm
  return a.astype(dtype)


def np_scaled_cayley(a, rho):
  n = len(a)
  d = np.diag([1.0] * (n - rho) + [-1.0] * rho)
  return np.linalg.solve(np.eye(n) + a, np.eye(n) - a) @ d


sizes = st.sampled_from([2, 5, 16, 48])  # few shapes: each new shape recompiles
seeds = st.integers(min_value=0, max_value=2**31 - 1)
norms = st.floats(min_value=1e-3, max_value=1e2)


@settings(max_examples=12)  # eager maps, one dispatch per op: the slowest property tests
@given(sizes, seeds, norms)
def test_orthogonality_float32_over_norms(n, seed, norm):
  a = jnp.asarray(random_skew(n, seed, norm))
  rho = seed % (n + 1)
  for w in (g.expm(a), g.cayley(a), g.scaled_cayley(a, rho)):
    assert w.dtype == jnp.float32
    # ||A|| up to 1e2: expm's 6 squarings each double the error of its 6 products (13 products
    # of n = 48 terms with W^T W: 624 terms, past F32's 400); Cayley's solve has condition
    # sqrt(1 + ||A||^2) = 1e2
    assert float(g.orthogonality_error(w)) <= tol.F32_LONG["atol"]


@settings(max_examples=12)
@given(st.sampled_from([2, 3, 9, 16]), seeds, st.floats(1e-2, 5.0))
def test_maps_match_scipy(n, seed, norm):
  a = random_skew(n, seed, norm, np.float64)
  a32 = jnp.asarray(a.astype(np.float32))
  # A's float32 rounding moves exp(A) and the Cayley map by up to their condition number
  # 1 + ||A|| times F32 (the maps' chains: 8 products or an LU solve of n <= 16)
  atol = tol.F32["atol"] * (1 + norm)
  np.testing.assert_allclose(g.expm(a32), scipy.linalg.expm(a), atol=atol)
  np.testing.assert_allclose(g.cayley(a32), np_scaled_cayley(a, 0), atol=atol)
  rho = seed % (n + 1)
  np.testing.assert_allclose(g.scaled_cayley(a32, rho), np_scaled_cayley(a, rho), atol=atol)
  gen = np.random.default_rng(seed).standard_normal((n, n))
  tau = 0.3
  gen32 = jnp.asarray(gen.astype(np.float32))
  np.testing.assert_allclose(g.euler(gen32, tau), np.eye(n) - tau * gen, atol=tol.F32["atol"])
  want_mid = np.linalg.solve(np.eye(n) + tau / 2 * gen, np.eye(n) - tau / 2 * gen)
  # a solve: F32's chain times the condition number of the non-normal I + tau/2 G
  cond = np.linalg.cond(np.eye(n) + tau / 2 * gen)
  np.testing.assert_allclose(g.midpoint(gen32, tau), want_mid,
                             atol=tol.F32["atol"] * cond * np.abs(want_mid).max())
  np.testing.assert_allclose(g.exponential(gen32, tau), scipy.linalg.expm(-tau * gen),
                             atol=tol.F32_LONG["atol"])  # non-normal G: exp's condition > ||tau G||


def test_scaled_cayley_d_multiplies_columns_on_the_right():
  # W = (I + A)^{-1}(I - A) D: the last rho *columns* flip sign, not rows.
  a = jnp.asarray(random_skew(5, 0, 1.0))
  c, w = np.asarray(g.cayley(a)), np.asarray(g.scaled_cayley(a, 2))
  np.testing.assert_allclose(w[:, :3], c[:, :3], atol=tol.F32_SHORT["atol"])
  np.testing.assert_allclose(w[:, 3:], -c[:, 3:], atol=tol.F32_SHORT["atol"])
  assert np.allclose(np.asarray(g.scaling_diagonal(5, 2)), [1, 1, 1, -1, -1])


@pytest.mark.parametrize("n,rho", [(4, 4), (5, 1), (6, 3)])
def test_scaled_cayley_reaches_minus_one_eigenvalues(n, rho):
  # Orthogonal W with eigenvalue -1: Cayley cannot produce it (I + cayley(A) = 2 (I + A)^{-1}
  # is invertible), the scaled Cayley map with suitable rho can.
  q = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))[0]
  d = np.diag([1.0] * (n - rho) + [-1.0] * rho)
  w_target = q @ d @ q.T if rho == n else None
  if w_target is None:
    # W = C(A0) D for a random skew A0: det W = (-1)^rho, so W has eigenvalue -1 for odd rho.
    w_target = np_scaled_cayley(random_skew(n, n + 1, 0.5, np.float64), rho)
  eig = np.linalg.eigvals(w_target)
  if rho % 2 or rho == n:
    assert np.min(np.abs(eig + 1)) < tol.F64["atol"]  # float64, orthogonal: eigenvalues to u
  a = g.inverse_scaled_cayley(jnp.asarray(w_target.astype(np.float32)), rho)
  np.testing.assert_allclose(a + a.T, np.zeros((n, n)), atol=tol.F32["atol"])
  np.testing.assert_allclose(g.scaled_cayley(a, rho), w_target, atol=tol.F32["atol"])
  assert round(float(np.linalg.det(np.asarray(g.scaled_cayley(a, rho), np.float64)))) == (-1) ** rho


@given(st.sampled_from([2, 3, 8, 12]), seeds, norms)
def test_cayley_never_has_minus_one_eigenvalue(n, seed, norm):
  w = np.asarray(g.cayley(jnp.asarray(random_skew(n, seed, norm))), np.float64)
  # exactly |(1 - i l) / (1 + i l) + 1| = 2 / sqrt(1 + l^2) >= 2 / (1 + norm) for A's eigenvalues
  # i l: 1e-4 / (1 + norm) is far below it and far above float32 rounding
  assert np.min(np.abs(np.linalg.eigvals(w) + 1)) > 1e-4 / (1 + norm)


def test_midpoint_of_skew_is_cayley_and_orthogonal():
  a = jnp.asarray(random_skew(8, 3, 2.0))
  np.testing.assert_allclose(g.midpoint(a, 0.5), g.cayley(0.25 * a), atol=tol.F32_SHORT["atol"])
  assert float(g.orthogonality_error(g.midpoint(a, 0.5))) < tol.F32["atol"]


def test_integrator_registry():
  assert set(g.INTEGRATORS) == {"euler", "midpoint", "exp"}
  assert g.get_integrator("midpoint") is g.midpoint
  with pytest.raises(ValueError, match="get_integrator: argument 'name' must be one of"):
    g.get_integrator("rk4")


def test_float32_exponential_maps_call_no_lapack():
  # Inside a CPU training step LAPACK calls run on OpenBLAS threads that contend with XLA's
  # (docs/RESULTS.md, 'Performance notes'): in float32 expm and the lvfRNN's exp integrator, forward
  # and backward, are matrix products only; jax.scipy's Pade expm is not.
  a = jnp.asarray(random_skew(6, 0, 3.0)) + 0.1 * jnp.eye(6, dtype=jnp.float32)

  def lapack_calls(f):
    hlo = jax.jit(jax.value_and_grad(lambda m: jnp.sum(f(m)))).lower(a).compile().as_text()
    return hlo.count('custom_call_target="lapack')

  assert lapack_calls(jax.scipy.linalg.expm) > 0
  assert lapack_calls(g.expm) == lapack_calls(lambda m: g.exponential(m, 0.5)) == 0
  np.testing.assert_allclose(g.exponential(a, 0.5), scipy.linalg.expm(-0.5 * np.asarray(a, np.float64)),
                             atol=tol.F32["atol"])  # 6 products of 6 terms and the Taylor sum


def test_euler_tends_to_identity():
  gen = jnp.asarray(np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32))
  errs = [float(jnp.abs(g.euler(gen, tau) - jnp.eye(6)).max()) for tau in (1e-1, 1e-2, 1e-3)]
  assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-2


MAPS = {
    "expm": g.expm,
    "cayley": g.cayley,
    "scaled_cayley": lambda a: g.scaled_cayley(a, 1),
    "euler": lambda a: g.euler(a, 0.7),
    "midpoint": lambda a: g.midpoint(a, 0.7),
    "exponential": lambda a: g.exponential(a, 0.7),
    "directional_derivative": g.directional_derivative,
    "project_divergence_free": g.project_divergence_free,
    "antisymmetric_diffusion": lambda a: g.antisymmetric_diffusion(a, 0.1),
    "cayley_inverse": g.cayley_inverse,
}


@pytest.mark.parametrize("name", sorted(MAPS))
def test_check_grads(name, x64):
  a = jnp.asarray(random_skew(4, 11, 0.8, np.float64)) + 0.1 * jnp.asarray(
      np.random.default_rng(2).standard_normal((4, 4)))
  check_grads(jax.jit(MAPS[name]), (a,), order=2 if name == "cayley" else 1, modes=("fwd", "rev"))


def test_cayley_derivatives_equal_those_of_the_solve_formula_x64(x64):
  """The inverse's product-form derivative (custom JVP) against autodiff of
  ``solve(I + A, I - A)``: batched, non-skew A, reverse and forward mode."""
  rng = np.random.default_rng(5)
  a = jnp.asarray(0.4 * rng.standard_normal((3, 7, 7)))
  w = jnp.asarray(rng.standard_normal((3, 7, 7)))
  eye = jnp.eye(7)

  def by_solve(x):
    return jnp.linalg.solve(eye[None] + x, eye[None] - x)

  np.testing.assert_allclose(g.cayley(a), by_solve(a), **tol.F64)
  grad = lambda f: jax.grad(lambda x: jnp.sum(jnp.sin(f(x)) * w))(a)
  np.testing.assert_allclose(grad(g.cayley), grad(by_solve), **tol.F64_GRAD)
  t = jnp.asarray(rng.standard_normal((3, 7, 7)))
  np.testing.assert_allclose(jax.jvp(g.cayley, (a,), (t,))[1], jax.jvp(by_solve, (a,), (t,))[1],
                             **tol.F64_GRAD)


def test_check_grads_tau_and_neumann(x64):
  gen = jnp.asarray(np.random.default_rng(0).standard_normal((4, 4)))
  check_grads(jax.jit(lambda t: g.midpoint(gen, t)), (jnp.asarray(0.3),), order=1, modes=("rev",))
  check_grads(jax.jit(lambda t: g.euler(gen, t)), (jnp.asarray(0.3),), order=1, modes=("rev",))
  inv = g.cayley_inverse(jnp.asarray(random_skew(4, 1, 0.5, np.float64)))
  check_grads(jax.jit(lambda d: g.neumann_inverse_update(inv, d, 2)), (0.05 * gen,), order=1,
              modes=("fwd", "rev"))


@pytest.mark.parametrize("name", sorted(MAPS))
def test_jit_and_vmap_match_eager(name):
  fn = MAPS[name]
  batch = jnp.stack([jnp.asarray(random_skew(5, s, 1.0)) for s in range(3)])
  eager = jnp.stack([fn(x) for x in batch])
  np.testing.assert_allclose(jax.jit(fn)(batch[0]), eager[0], atol=tol.F32["atol"])
  np.testing.assert_allclose(jax.vmap(fn)(batch), eager, atol=tol.F32["atol"])
  np.testing.assert_allclose(fn(batch), eager, atol=tol.F32["atol"])  # leading batch dims


def test_maps_preserve_dtype(x64):
  a = jnp.asarray(random_skew(4, 0, 1.0, np.float64))
  for fn in MAPS.values():
    assert fn(a).dtype == jnp.float64


def test_traced_tau_is_accepted():
  gen = jnp.asarray(np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32))
  out = jax.jit(g.euler)(gen, jnp.float32(0.5))
  np.testing.assert_allclose(out, g.euler(gen, 0.5), atol=tol.F32_SHORT["atol"])


# ------------------------------------------------------------------- expm_taylor


def np_expm_taylor_reference(a):
  """exp(A) by scaling and squaring of a long float64 Taylor series (independent of jax)."""
  a = np.asarray(a, np.float64)
  s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300) / 0.25))))
  x = a / 2.0 ** s
  term, out = np.eye(a.shape[0]), np.eye(a.shape[0])
  for k in range(1, 30):
    term = term @ x / k
    out = out + term
  for _ in range(s):
    out = out @ out
  return out


@pytest.mark.parametrize("scale", [1e-3, 0.5, 3.0, 40.0])
def test_expm_taylor_matches_series_and_is_orthogonal(scale, x64):
  a = np.random.default_rng(0).standard_normal((8, 8)) * scale / 4
  for m in (a, a - a.T):
    got = np.asarray(g.expm_taylor(jnp.asarray(m)))
    want = np_expm_taylor_reference(m)
    # exp's condition number grows with ||A|| (the squarings): F64 relative to scale and |exp|
    np.testing.assert_allclose(got, want, rtol=tol.F64["rtol"] * max(1.0, scale),
                               atol=tol.F64["atol"] * np.abs(want).max())
  with jax.enable_x64(False):
    skew = jnp.asarray(a - a.T, jnp.float32)
    q = g.expm_taylor(skew)
    assert q.dtype == jnp.float32
    # s ~ log2(scale) squarings, each doubling the orthogonality error: F32's chain times scale
    np.testing.assert_allclose(q @ q.T, np.eye(8), atol=tol.F32["atol"] * max(1.0, scale))


def test_expm_taylor_batched_matches_each_matrix():
  # Leading batch axes share one squaring count (from the largest norm): each matrix must
  # still match its own exponential, including a small one next to a large one.
  rng = np.random.default_rng(3)
  a = np.stack([random_skew(6, 1, 0.01), random_skew(6, 2, 20.0), rng.standard_normal((6, 6))])
  got = np.asarray(g.expm_taylor(jnp.asarray(a.astype(np.float32))))
  for i in range(3):
    # the 3 squarings of the norm-20 skew matrix, for all: 9 products of 6 terms, times exp's
    # condition number ||A|| = 20 for A's float32 rounding: 1,080 terms, F32_LONG's chain
    np.testing.assert_allclose(got[i], scipy.linalg.expm(a[i]),
                               atol=tol.F32_LONG["atol"] * np.abs(scipy.linalg.expm(a[i])).max())


def test_expm_taylor_reverse_mode_matches_finite_differences(x64):
  # 4 a takes three squarings in float64: the squarings' hand-written backward pass
  # (the Frechet derivative at M^T, recomputed forward) is what is checked there.
  # FD at FD_STEP: |exp(4 a)| <= 6.8 keeps the rounding u |f| / step at 1e-9, and the
  # truncation step^2 |f'''| / 6 stays within FD for |f'''| up to 6e6
  a = jnp.asarray(np.random.default_rng(1).standard_normal((5, 5)))
  check_grads(jax.jit(g.expm_taylor), (a,), order=1, modes=("rev",), eps=tol.FD_STEP, **tol.FD)
  check_grads(jax.jit(g.expm_taylor), (4.0 * a,), order=1, modes=("rev",), eps=tol.FD_STEP,
              **tol.FD)


def test_expm_taylor_pullback_is_the_unstored_one_under_vmap_and_nan(unstored_cotangent):
  """The backward pass stores the input's cotangent (``maps._cotangent_stored``: a loop of
  1 trip, 2 where the cotangent's first entry is NaN, of an identity); it hands on the
  cotangent the plain chain computes, batched, under vmap and with NaN."""
  a = jnp.asarray(np.stack([random_skew(6, s, 3.0) for s in range(3)]))
  c = np.random.default_rng(0).standard_normal((3, 6, 6)).astype(np.float32)
  c[1, 0, 0] = np.nan

  def pullbacks():
    one = lambda m, w: jax.vjp(g.expm_taylor, m)[1](w)[0]  # noqa: E731
    return (jax.jit(jax.vmap(one))(a, c), jax.jit(one)(a, c), jax.jit(one)(a[0], c[0]))

  stored = pullbacks()
  with unstored_cotangent():
    plain = pullbacks()
  assert np.isnan(np.asarray(stored[0][1])).all() and not np.isnan(np.asarray(stored[0][0])).any()
  for got, want in zip(stored, plain, strict=True):
    # the same products and sums; only where XLA fuses them (and so contracts a product and
    # a sum into one rounding) may differ: the F32 chain of expm's float32 pullback
    np.testing.assert_allclose(got, want, **tol.F32)


def test_the_stored_barrier_is_a_loop_on_the_cpu_and_an_identity_elsewhere():
  """``_util.stored`` keeps its loop where XLA:CPU would fuse through it, and lowers to no
  loop for a GPU, where the loop cost time (docs/GPU.md); the value is ``x`` on both."""
  from lvf_jax.geometry import _util
  x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 4, 4)), jnp.float32)
  loops = {p: jax.export.export(jax.jit(_util.stored), platforms=[p])(x).mlir_module()
           .count("stablehlo.while") for p in ("cpu", "cuda")}
  assert loops == {"cpu": 1, "cuda": 0}
  np.testing.assert_array_equal(jax.jit(jax.vmap(_util.stored))(x), x)


def test_expm_taylor_gradient_memory_does_not_grow_with_max_squarings():
  # Stored squarings (one matrix per possible squaring) made the n = 512 training step's
  # temporary buffer exceed glibc's mmap threshold: every call faulted its pages anew.
  from lvf_jax.geometry import maps
  a = jnp.asarray(random_skew(64, 5, 30.0).astype(np.float32))
  w = jnp.ones((64, 64), jnp.float32)

  def temp_bytes(max_squarings):
    f = jax.grad(lambda m: jnp.sum(maps._expm_taylor(m, max_squarings) * w))
    return jax.jit(f).lower(a).compile().memory_analysis().temp_size_in_bytes

  assert temp_bytes(16) <= temp_bytes(2) + 2 * a.nbytes


def test_expm_taylor_squaring_count_follows_alpha3_not_the_1_norm():
  # Al-Mohy & Higham's alpha_3 = max(||A^3||_1^(1/3), ||A^4||_1^(1/4)), in NumPy float64:
  # for this dense skew matrix log2(alpha_3 / 2.5) = 3.49 (4 squarings), away from an
  # integer, while the 1-norm asks 5.
  from lvf_jax.geometry import maps
  a = random_skew(64, 0, 20.0, np.float64)
  norm1 = lambda m: np.abs(m).sum(axis=0).max()
  alpha = max(norm1(np.linalg.matrix_power(a, 3)) ** (1 / 3),
              norm1(np.linalg.matrix_power(a, 4)) ** (1 / 4))
  assert 3.2 < np.log2(alpha / 2.5) < 3.8 and np.log2(norm1(a) / 2.5) > 4.5
  assert int(maps._squaring_count(jnp.asarray(a.astype(np.float32)))) == 4
  # Batched: the largest alpha_3 decides for all.
  both = jnp.asarray(np.stack([a / 100, a]).astype(np.float32))
  assert int(maps._squaring_count(both)) == 4


def test_expm_taylor_rescaled_powers_of_nonnormal_matrices():
  # Strictly upper triangular: A^3 = 0 for n = 3, so alpha_3 = 0 and no squaring is needed
  # however large A is (exp(A) = I + A + A^2 / 2); for n = 6 alpha_3 > 0 and the powers
  # computed at the 1-norm count (4 squarings for this draw) are rescaled to 2.
  from lvf_jax.geometry import maps
  rng = np.random.default_rng(0)
  a = np.triu(100.0 * rng.standard_normal((3, 3)), 1)
  assert int(maps._squaring_count(jnp.asarray(a, jnp.float32))) == 0
  want = np.eye(3) + a + a @ a / 2
  np.testing.assert_allclose(g.expm_taylor(jnp.asarray(a, jnp.float32)), want,
                             atol=tol.F32_SHORT["atol"] * np.abs(want).max())  # 3 terms, 1 product
  a = np.triu(8.0 * rng.standard_normal((6, 6)), 1)
  want = scipy.linalg.expm(a)
  assert int(maps._squaring_count(jnp.asarray(a, jnp.float32))) < np.ceil(
      np.log2(np.abs(a).sum(axis=0).max() / 2.5))
  np.testing.assert_allclose(g.expm_taylor(jnp.asarray(a, jnp.float32)), want,
                             atol=tol.F32["atol"] * np.abs(want).max())  # 8 products of 6 terms


def test_expm_taylor_float16_keeps_the_1_norm_count():
  # No exponent-only rescaling in float16 (range too narrow): the 1-norm count, and a
  # result close to the float64 exponential.
  from lvf_jax.geometry import maps
  a = random_skew(8, 2, 6.0, np.float64)
  a16 = jnp.asarray(a.astype(np.float16))
  s = int(maps._squaring_count(a16))
  assert s == int(np.ceil(np.log2(float(jnp.max(jnp.sum(jnp.abs(a16), axis=0))) / 2.5)))
  q = g.expm_taylor(a16)
  assert q.dtype == jnp.float16
  # float16 rounding of 6 products and s squarings of n = 8 terms
  np.testing.assert_allclose(np.asarray(q, np.float64), scipy.linalg.expm(a),
                             atol=tol.probabilistic((6 + s) * len(a), tol.FLOAT16_EPS))


def test_expm_taylor_eager_calls_reuse_one_compilation():
  """Eager calls of one shape and dtype share one compilation, whatever their squaring count
  (a recompilation per call exhausts LLVM's memory in a loop of a few hundred). The first
  call compiles unless an earlier test in the same process already did."""
  from lvf_jax.geometry import maps
  a = random_skew(7, 11, 3.0)
  g.expm_taylor(jnp.asarray(a))
  compiled = maps._expm_taylor._cache_size()
  for scale in (1.0, 2.0, 30.0):
    g.expm_taylor(jnp.asarray(scale * a))
  assert maps._expm_taylor._cache_size() == compiled


def test_expm_methods_agree_and_auto_picks_by_dtype(x64):
  a = random_skew(12, 4, 2.0, np.float64)
  want = scipy.linalg.expm(a)
  pade64 = np.asarray(g.expm(jnp.asarray(a), method="pade"))
  np.testing.assert_array_equal(np.asarray(g.expm(jnp.asarray(a))), pade64)
  np.testing.assert_allclose(pade64, want, atol=tol.F64["atol"])
  a32 = jnp.asarray(a.astype(np.float32))
  taylor32 = np.asarray(g.expm(a32, method="taylor"))
  np.testing.assert_array_equal(np.asarray(g.expm(a32)), taylor32)
  np.testing.assert_allclose(taylor32, want, atol=tol.F32["atol"])
  np.testing.assert_allclose(np.asarray(g.expm(a32, method="pade")), want, atol=tol.F32["atol"])


def test_expm_errors():
  with pytest.raises(ValueError, match="expm_taylor: argument 'a'"):
    g.expm_taylor(jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match="expm_taylor: argument 'a'"):
    g.expm_taylor(jnp.zeros((3, 3), jnp.int32))
  with pytest.raises(ValueError, match=r"expm_taylor: argument 'max_squarings'.*got -1"):
    g.expm_taylor(jnp.zeros((3, 3)), max_squarings=-1)
  with pytest.raises(ValueError, match=r"expm: argument 'method'.*got 'scipy'"):
    g.expm(jnp.zeros((3, 3)), method="scipy")
