"""Riemannian optax transforms (lvf_jax.optim): scoRNN, Neumann-Cayley (NC-GRU Alg. 1),
multiplicative Cayley (Wisdom et al.), re-orthonormalisation.

References are independent NumPy transcriptions of the papers' update equations and autodiff
through the scaled Cayley map. optax's Adam/RMSprop do not run under strict dtype promotion,
so calls into them are traced under a local ``jax.numpy_dtype_promotion('standard')``.
"""


import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lvf_jax import geometry as g
from lvf_jax import optim
from optim_helpers import orthogonal_start, standard
import tolerances as tol

N, RHO = 12, 3
STEPS = 10_000
RESET = 64  # updates between two exact inverses or re-orthonormalisations
# The N-term products per update whose float32 rounding W carries to the next update: up to 4
# (order 3's series: 3 with X and one with Ainv; the multiplicative step's solve and product).
PRODUCTS_PER_UPDATE = 4
# W's orthogonality error after the RESET updates from one reset to the next: 3,072 terms.
ORTHOGONAL_10K = tol.probabilistic(RESET * PRODUCTS_PER_UPDATE * N)


def w0(n=N, rho=RHO, seed=0, dtype=jnp.float32):
  return orthogonal_start(n, rho, seed, dtype)


def np_d(n, rho):
  return np.diag(np.concatenate([np.ones(n - rho), -np.ones(rho)]))


# ------------------------------------------------------------------ 10k random updates

RIEMANNIAN = {
    "scornn_adam": lambda: optim.scornn(optax.adam(1e-2), RHO),
    # reset_every does not divide 10,000: the last 16 updates are Neumann steps.
    "neumann1": lambda: optim.neumann_cayley(optax.adam(1e-4), RHO, order=1, reset_every=RESET),
    "neumann2": lambda: optim.neumann_cayley(optax.adam(1e-3), RHO, order=2, reset_every=RESET),
    "neumann3": lambda: optim.neumann_cayley(optax.adam(1e-3), RHO, order=3, reset_every=RESET),
    "multiplicative": lambda: optim.multiplicative_cayley(1e-2, reorthonormalize_every=RESET),
}


@pytest.mark.parametrize("name", sorted(RIEMANNIAN))
def test_10k_random_updates_stay_orthogonal(name):
  tx = RIEMANNIAN[name]()
  params = {"cell": {"orthogonal": w0()}}

  @jax.jit
  @standard
  def run(params):
    def body(i, carry):
      p, s, worst = carry
      grads = jax.tree.map(
          lambda w: jax.random.normal(jax.random.fold_in(jax.random.key(1), i), w.shape), p)
      u, s = tx.update(grads, s, p)
      p = optax.apply_updates(p, u)
      return p, s, jnp.maximum(worst, g.orthogonality_error(p["cell"]["orthogonal"]))

    return jax.lax.fori_loop(0, STEPS, body, (params, tx.init(params), jnp.float32(0)))

  p, s, worst = run(params)
  w = np.asarray(p["cell"]["orthogonal"])
  assert np.all(np.isfinite(w))
  assert jax.tree.all(jax.tree.map(lambda x: bool(np.all(np.isfinite(x))), s))
  err = np.max(np.abs(w.T @ w - np.eye(N)))
  assert err <= ORTHOGONAL_10K, err
  assert float(worst) <= ORTHOGONAL_10K, float(worst)  # over the whole trajectory, not the end
  # it moved: some entry by more than 1e-2, far beyond rounding (3.5e-2 at the least, neumann1)
  assert not np.allclose(w, np.asarray(params["cell"]["orthogonal"]), atol=1e-2)


def test_multiplicative_without_reorthonormalisation_drifts():
  """The stabilisation is needed: without it float32 rounding accumulates (a sanity check
  that the 10k test above can fail)."""
  tx = optim.multiplicative_cayley(1e-2)
  params = w0()

  @jax.jit
  def run(p):
    def body(i, carry):
      p, s = carry
      u, s = tx.update(jax.random.normal(jax.random.fold_in(jax.random.key(1), i), p.shape),
                       s, p)
      return p + u, s

    return jax.lax.fori_loop(0, STEPS, body, (p, tx.init(p)))[0]

  assert float(g.orthogonality_error(run(params))) > ORTHOGONAL_10K  # 10k updates' rounding


# ------------------------------------------------------------------ scoRNN

def np_scornn(w, a, grads, lr, rho):
  """scoRNN eqs (3)-(6) with plain SGD, transcribed in NumPy (float64)."""
  n = len(w)
  d, eye = np_d(n, rho), np.eye(n)
  out = []
  for gmat in grads:
    v = np.linalg.inv(eye + a).T @ gmat @ (d + w.T)
    a = a - lr * (v.T - v)
    w = np.linalg.solve(eye + a, eye - a) @ d
    out.append(w)
  return out


def test_scornn_matches_numpy_transcription(x64):
  rng = np.random.default_rng(0)
  a0 = np.asarray(g.cayley_init()(jax.random.key(3), (N, N), jnp.float64))
  w = np.linalg.solve(np.eye(N) + a0, np.eye(N) - a0) @ np_d(N, RHO)
  grads = rng.standard_normal((20, N, N))
  ref = np_scornn(w, a0, grads, 0.05, RHO)
  tx = optim.scornn(optax.sgd(0.05), RHO)
  p = jnp.asarray(w)
  s = tx.init(p)
  np.testing.assert_allclose(np.asarray(s.skew), a0, atol=tol.F64["atol"])  # A recovered from W
  update = jax.jit(tx.update)
  for k, gmat in enumerate(grads):
    u, s = update(jnp.asarray(gmat), s, p)
    p = p + u
    # float64: 20 updates of a solve and 3 products of N terms, F64's chain
    np.testing.assert_allclose(np.asarray(p), ref[k], atol=tol.F64["atol"])


def quadratic_loss(w, x, y):
  """A fixed non-trivial loss of the column-form matrix ``W``."""
  return 0.5 * jnp.sum(jnp.square(w @ x - y)) + jnp.sum(jnp.sin(w))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_scornn_equals_autodiff_through_scaled_cayley(x64, dtype):
  """Same inner Adam on (a) the triu parameter of ``scaled_cayley(skew_from_triu(B))`` by
  autodiff, and (b) ``W`` itself by the scoRNN transform: the W trajectories coincide."""
  key = jax.random.key(7)
  x = jax.random.normal(key, (N, 5), dtype)
  y = jax.random.normal(jax.random.fold_in(key, 1), (N, 5), dtype)
  b = jnp.triu(g.cayley_init()(jax.random.key(4), (N, N), dtype), k=1)
  cell = lambda b: g.scaled_cayley(g.skew_from_triu(b), RHO)
  inner = optax.adam(3e-2)
  tx = optim.scornn(inner, RHO)

  @jax.jit
  @standard
  def step_autodiff(b, s):
    grad = jax.grad(lambda b: quadratic_loss(cell(b), x, y))(b)
    u, s = inner.update(grad, s, b)
    return b + u, s

  @jax.jit
  @standard
  def step_riemannian(w, s):
    u, s = tx.update(jax.grad(quadratic_loss)(w, x, y), s, w)
    return w + u, s

  w = cell(b)
  sb = standard(inner.init)(b)
  sw = standard(tx.init)(w)
  steps = 25
  # two gradient computations through `steps` updates of N-wide products, forward and backward
  atol = tol.recurrence(steps, N, eps=float(jnp.finfo(dtype).eps))
  for _ in range(steps):
    b, sb = step_autodiff(b, sb)
    w, sw = step_riemannian(w, sw)
    np.testing.assert_allclose(np.asarray(w), np.asarray(cell(b)), atol=atol)
  assert w.dtype == dtype
  # The trajectory really moved and decreased the loss.
  assert float(quadratic_loss(w, x, y)) < float(quadratic_loss(cell(jnp.triu(
      g.cayley_init()(jax.random.key(4), (N, N), dtype), k=1)), x, y)) - 1.0


# ------------------------------------------------------------------ Neumann-Cayley

def np_nc_gru(w, a, grads, lr, rho, order, reset_every):
  """NC-GRU Alg. 1 with plain SGD (so dA = lr * grad), transcribed in NumPy (float64)."""
  n = len(w)
  d, eye = np_d(n, rho), np.eye(n)
  a_t = np.linalg.inv(eye + a)  # line 2
  out = []
  for k, gmat in enumerate(grads, start=1):
    v = a_t.T @ gmat @ (d + w.T)  # line 4
    delta = lr * (v.T - v)  # line 5
    a = a - delta  # line 6
    if reset_every and k % reset_every == 0:
      a_t = np.linalg.inv(eye + a)
    else:
      x = a_t @ delta
      a_t = sum(np.linalg.matrix_power(x, i) for i in range(order + 1)) @ a_t  # line 7
    w = a_t @ (eye - a) @ d  # line 8
    out.append((w, a_t))
  return out


@pytest.mark.parametrize("order", [1, 2, 3])
def test_neumann_cayley_matches_numpy_algorithm_1(x64, order):
  rng = np.random.default_rng(order)
  a0 = np.asarray(g.cayley_init()(jax.random.key(5), (N, N), jnp.float64))
  w = np.linalg.solve(np.eye(N) + a0, np.eye(N) - a0) @ np_d(N, RHO)
  grads = rng.standard_normal((25, N, N))
  ref = np_nc_gru(w, a0, grads, 0.01, RHO, order, reset_every=10)
  tx = optim.neumann_cayley(optax.sgd(0.01), RHO, order=order, reset_every=10, threshold=1.0)
  update = jax.jit(tx.update)
  p, s = jnp.asarray(w), tx.init(jnp.asarray(w))
  for k, gmat in enumerate(grads):
    u, s = update(jnp.asarray(gmat), s, p)
    p = p + u
    # float64: 25 updates of up to order + 2 = 5 products of N terms (1,500), F64's chain
    np.testing.assert_allclose(np.asarray(p), ref[k][0], atol=tol.F64["atol"])
    np.testing.assert_allclose(np.asarray(s.inverse), ref[k][1], atol=tol.F64["atol"])
  assert int(s.num_resets) == 2 and int(s.num_invalid) == 0


def test_neumann_tracks_exact_inverse_within_bound(x64):
  """Order 2 with resets every 8 updates and an *Adam* inner optimiser: the carried inverse
  stays within the first-order error recursion of the truncated series,
  ``e_k <= (1 + 2y + 3y^2) e_{k-1} + ||X||^3 / (1 - ||X||) ||Ainv||``, ``y = ||dA|| ||Ainv||``
  (the series remainder of eq 18 plus the propagated error), and returns to the exact
  inverse at each reset."""
  tx = optim.neumann_cayley(optax.adam(2e-2), RHO, order=2, reset_every=8, threshold=1.0)
  p = w0(dtype=jnp.float64)
  s = standard(tx.init)(p)
  update = jax.jit(standard(tx.update))
  bound, worst_ratio, errors = 0.0, 0.0, []
  for k in range(1, 41):
    a_prev, inv_prev = np.asarray(s.skew), np.asarray(s.inverse)
    u, s = update(jax.random.normal(jax.random.key(k), p.shape, p.dtype), s, p)
    p = p + u
    a = np.asarray(s.skew)
    exact = np.linalg.inv(np.eye(N) + a)
    err = np.linalg.norm(np.asarray(s.inverse) - exact, 2)
    errors.append(err)
    delta = a_prev - a
    x = np.linalg.norm(inv_prev @ delta, "fro")
    # a float64 product and Frobenius norm of N x N; delta = A_prev - A cancels |A| / |dA| ~ 50
    np.testing.assert_allclose(float(s.residual_norm), x, rtol=tol.F64["rtol"])
    if k % 8 == 0:
      assert err < tol.F64["atol"]  # the exact inverse: float64 solves of N x N
      bound = 0.0
    else:
      y = np.linalg.norm(delta, 2) * np.linalg.norm(inv_prev, 2)
      bound = (1 + 2 * y + 3 * y * y) * bound + x ** 3 / (1 - x) * np.linalg.norm(inv_prev, 2)
      assert err <= bound + tol.F64["atol"], (k, err, bound)  # and the exact inverse's rounding
      worst_ratio = max(worst_ratio, err / bound)
  assert max(errors) > 1e-9  # the approximation is really used (not exact every step)
  assert worst_ratio > 1e-3  # and the bound is not vacuous
  assert int(s.num_resets) == 5


def test_neumann_uses_the_actual_adam_step(x64):
  """The series is applied to the step Adam actually took, dA = A_prev - A_new (the
  reference code used lr * grad, which is wrong for Adam): check line 7 of Alg. 1 in NumPy
  from the states, and that lr * (V^T - V) would *not* reproduce it."""
  tx = optim.neumann_cayley(optax.adam(1e-2), RHO, order=2, reset_every=None)
  p = w0(dtype=jnp.float64)
  s = standard(tx.init)(p)
  update = jax.jit(standard(tx.update))
  for k in range(3):
    gmat = jax.random.normal(jax.random.key(k), p.shape, p.dtype)
    a_prev, inv_prev, w_prev = np.asarray(s.skew), np.asarray(s.inverse), np.asarray(p)
    u, s = update(gmat, s, p)
    p = p + u
    delta = a_prev - np.asarray(s.skew)
    x = inv_prev @ delta
    np.testing.assert_allclose(np.asarray(s.inverse), (np.eye(N) + x + x @ x) @ inv_prev,
                               atol=tol.F64["atol"])  # 3 products of N terms
    v = inv_prev.T @ np.asarray(gmat) @ (np_d(N, RHO) + w_prev.T)
    assert np.max(np.abs(delta - 1e-2 * (v.T - v))) > 1e-3  # Adam's step is not SGD's


def test_neumann_sgd_series_is_the_released_codes_update_with_adam(x64):
  """With ``sgd_series_lr`` the series takes lr * (V^T - V) while Adam moves A (the authors'
  released ``makeW``), transcribed in NumPy from the states' A: W leaves the orthogonal group
  between exact resets and returns to it at each."""
  lr, every = 1e-2, 4
  tx = optim.neumann_cayley(optax.adam(lr), RHO, order=2, reset_every=every, threshold=1.0,
                            sgd_series_lr=lr)
  p = w0(dtype=jnp.float64)
  s = standard(tx.init)(p)
  update = jax.jit(standard(tx.update))
  d, eye = np_d(N, RHO), np.eye(N)
  inv, w, drift = np.asarray(s.inverse), np.asarray(p), []
  for k in range(1, 9):
    gmat = np.asarray(jax.random.normal(jax.random.key(k), p.shape, p.dtype))
    u, s = update(jnp.asarray(gmat), s, p)
    p = p + u
    a = np.asarray(s.skew)
    v = inv.T @ gmat @ (d + w.T)
    x = inv @ (lr * (v.T - v))
    inv = np.linalg.inv(eye + a) if k % every == 0 else (eye + x + x @ x) @ inv
    w = inv @ (eye - a) @ d
    # a chain of k updates of a few N-term float64 products
    np.testing.assert_allclose(np.asarray(p), w, atol=tol.F64["atol"])
    drift.append(np.linalg.norm(w.T @ w - eye, 2))
  assert drift[every - 1] < tol.F64["atol"] and drift[-1] < tol.F64["atol"]  # exact resets
  assert min(drift[:every - 1]) > 1e-3  # Adam's step is not the series': W is not orthogonal
  with pytest.raises(ValueError, match="neumann_cayley: argument 'sgd_series_lr'"):
    optim.neumann_cayley(optax.adam(lr), RHO, sgd_series_lr=-1.0)


def test_released_two_kernel_update_is_the_released_codes_update_of_uc_and_ur(x64):
  """``two_kernel_update='released'``, transcribed in NumPy from the released loop
  (emucllari1/NC-GRU ``denoise_task.py``) with the states' A: U_c's skew gradient from U_r's
  G, U_r's series from U_c's new inverse; U_c's own gradient never enters."""
  lr, every = 1e-2, 4
  tx = optim.neumann_cayley(optax.adam(lr), RHO, order=2, reset_every=every, threshold=1.0,
                            sgd_series_lr=lr, two_kernel_update="released")
  p = {"cell": {"orthogonal_c": w0(dtype=jnp.float64),
                "orthogonal_r": w0(seed=1, dtype=jnp.float64)}}
  s = standard(tx.init)(p)
  update = jax.jit(standard(tx.update))
  d, eye = np_d(N, RHO), np.eye(N)
  inv = {k: np.asarray(v) for k, v in s.inverse["cell"].items()}
  w = {k: np.asarray(v) for k, v in p["cell"].items()}

  def skew_grad(g, k):
    v = inv[k].T @ g @ (d + w[k].T)
    return v.T - v

  for k in range(1, 9):
    gc, gr = (np.asarray(jax.random.normal(jax.random.key(10 * k + i), (N, N), jnp.float64))
              for i in range(2))
    without_gc, _ = update({"cell": {"orthogonal_c": jnp.zeros((N, N), jnp.float64),
                                     "orthogonal_r": jnp.asarray(gr)}}, s, p)
    u, s = update({"cell": {"orthogonal_c": jnp.asarray(gc),
                            "orthogonal_r": jnp.asarray(gr)}}, s, p)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), u, without_gc))
    p = jax.tree.map(lambda a, b: a + b, p, u)
    a = {key: np.asarray(v) for key, v in s.skew["cell"].items()}
    reset = k % every == 0
    dfa_c, dfa_r = skew_grad(gr, "orthogonal_c"), skew_grad(gr, "orthogonal_r")
    x = inv["orthogonal_c"] @ (lr * dfa_c)
    inv["orthogonal_c"] = (np.linalg.inv(eye + a["orthogonal_c"]) if reset
                           else (eye + x + x @ x) @ inv["orthogonal_c"])
    x = inv["orthogonal_c"] @ (lr * dfa_r)
    inv["orthogonal_r"] = (np.linalg.inv(eye + a["orthogonal_r"]) if reset
                           else (eye + x + x @ x) @ inv["orthogonal_c"])
    for key in w:
      w[key] = inv[key] @ (eye - a[key]) @ d
      # a chain of k updates of a few N-term float64 products
      np.testing.assert_allclose(np.asarray(p["cell"][key]), w[key], atol=tol.F64["atol"])
  drift = np.linalg.norm(w["orthogonal_r"].T @ w["orthogonal_r"] - eye, 2)
  assert drift < tol.F64["atol"]  # the last update (k = 8) was an exact reset
  with pytest.raises(ValueError, match="neumann_cayley: argument 'two_kernel_update'"):
    tx.init({"cell": {"orthogonal_c": w0()}})  # NC-GRU(U_c): no U_r to pair


def test_neumann_error_decreases_with_order(x64):
  """Without resets, on the same gradient sequence, the inverse error ordering is
  order 1 > order 2 > order 3 (the remainder is O(||X||^{order+1}))."""
  errs = {}
  for order in (1, 2, 3):
    tx = optim.neumann_cayley(optax.sgd(1e-3), RHO, order=order, reset_every=None)
    p = w0(dtype=jnp.float64)
    s = tx.init(p)
    update = jax.jit(tx.update)
    for k in range(10):
      u, s = update(jax.random.normal(jax.random.key(k), p.shape, p.dtype), s, p)
      p = p + u
    errs[order] = np.max(np.abs(np.asarray(s.inverse) - np.linalg.inv(
        np.eye(N) + np.asarray(s.skew))))
    assert int(s.num_resets) == 0
  assert errs[1] > 10 * errs[2] > 100 * errs[3] > 0, errs


def test_validity_check_forces_reset():
  tx = optim.neumann_cayley(optax.sgd(1.0), RHO, order=2, reset_every=None, threshold=0.5)
  p = w0()
  s = tx.init(p)
  # A small step: no reset.
  u, s = tx.update(1e-4 * jnp.ones_like(p), s, p)
  p = p + u
  assert int(s.num_resets) == 0 and float(s.residual_norm) < 0.5
  # A huge step: ||Ainv dA||_F >= 0.5, the series is invalid, the exact inverse is used.
  big = 50.0 * jax.random.normal(jax.random.key(0), p.shape)
  u, s = jax.jit(tx.update)(big, s, p)
  p = p + u
  assert float(s.residual_norm) >= 0.5
  assert int(s.num_invalid) == 1 and int(s.num_resets) == 1
  exact = np.linalg.inv(np.eye(N) + np.asarray(s.skew, np.float64))
  # float32 solve of N x N against float64, and W's product
  np.testing.assert_allclose(np.asarray(s.inverse), exact, atol=tol.F32["atol"])
  assert float(g.orthogonality_error(p)) < tol.F32["atol"]
  # The same huge step with the check disabled (threshold 1, order 1) breaks orthogonality:
  # the check is what saves it.
  tx_bad = optim.neumann_cayley(optax.sgd(1.0), RHO, order=1, reset_every=None, threshold=1.0)
  q = w0()
  sb = tx_bad.init(q)
  small = 0.02 * jax.random.normal(jax.random.key(0), q.shape)
  u, sb = tx_bad.update(small, sb, q)
  assert float(sb.residual_norm) < 1.0 and int(sb.num_resets) == 0
  assert float(g.orthogonality_error(q + u)) > 1e-3


def test_neumann_batched_leaf_and_masked_tree():
  """Leading batch dimensions (stacked layers) and optax.MaskedNode holes are supported;
  one invalid matrix resets the whole leaf."""
  ws = jnp.stack([w0(seed=0), w0(seed=1)])
  tx = optim.neumann_cayley(optax.sgd(0.05), RHO, reset_every=None)
  s = tx.init(ws)
  grads = jnp.stack([1e-5 * jnp.ones((N, N)), jax.random.normal(jax.random.key(0), (N, N))])
  u, s = tx.update(grads, s, ws)
  assert int(s.num_invalid) == 1
  # one update: a float32 series or solve of N x N
  np.testing.assert_allclose(np.asarray(s.inverse), np.linalg.inv(
      np.eye(N)[None] + np.asarray(s.skew)), atol=tol.F32["atol"])
  assert float(jnp.max(g.orthogonality_error(ws + u))) < tol.F32["atol"]
  masked = optax.masked(optim.scornn(optax.sgd(0.1), RHO), {"o": True, "b": False})
  params = {"o": w0(), "b": jnp.ones((3,))}
  st = masked.init(params)
  u, st = masked.update({"o": jnp.ones((N, N)), "b": jnp.ones((3,))}, st, params)
  assert float(g.orthogonality_error(params["o"] + u["o"])) < tol.F32["atol"]
  np.testing.assert_array_equal(np.asarray(u["b"]), np.ones(3))


# ------------------------------------------------------------------ multiplicative Cayley

def test_multiplicative_matches_numpy(x64):
  """Wisdom et al. (2016) eq (10): A = G W^T - W G^T, W <- (I + lr/2 A)^{-1}(I - lr/2 A) W."""
  rng = np.random.default_rng(1)
  w = np.asarray(w0(dtype=jnp.float64))
  tx = optim.multiplicative_cayley(0.1)
  p, s = jnp.asarray(w), tx.init(jnp.asarray(w))
  for _ in range(5):
    gmat = rng.standard_normal((N, N))
    a = gmat @ w.T - w @ gmat.T
    w = np.linalg.inv(np.eye(N) + 0.05 * a) @ (np.eye(N) - 0.05 * a) @ w
    u, s = tx.update(jnp.asarray(gmat), s, p)
    p = p + u
    np.testing.assert_allclose(np.asarray(p), w, atol=tol.F64["atol"])  # 5 solves and products


def test_multiplicative_descends():
  """A small step along -(G - W G^T W) decreases a smooth loss."""
  x = jax.random.normal(jax.random.key(0), (N, 4))
  y = jax.random.normal(jax.random.key(1), (N, 4))
  tx = optim.multiplicative_cayley(1e-2)
  w = w0()
  s = tx.init(w)

  @jax.jit
  def step(w, s):
    u, s = tx.update(jax.grad(quadratic_loss)(w, x, y), s, w)
    return w + u, s

  losses = []
  for _ in range(20):
    losses.append(float(quadratic_loss(w, x, y)))
    w, s = step(w, s)
  assert losses[-1] < losses[0] - 0.5
  # no re-orthonormalisation: the rounding of every update stays in W
  assert float(g.orthogonality_error(w)) < tol.probabilistic(len(losses) * PRODUCTS_PER_UPDATE * N)


@pytest.mark.parametrize("method", ["polar", "qr"])
def test_orthonormalize_and_reorthonormalize(x64, method):
  rng = np.random.default_rng(2)
  m = np.asarray(w0(dtype=jnp.float64)) + 1e-3 * rng.standard_normal((N, N))
  q = np.asarray(optim.orthonormalize(jnp.asarray(m), method))
  # float64 factorisations of N x N, at distance 1e-3 from orthogonal: well conditioned
  assert np.max(np.abs(q.T @ q - np.eye(N))) < tol.F64["atol"]
  if method == "polar":  # U V^T from NumPy's SVD
    uu, _, vt = np.linalg.svd(m)
    np.testing.assert_allclose(q, uu @ vt, atol=tol.F64["atol"])
  else:  # Q R with positive diag(R)
    r = q.T @ m
    np.testing.assert_allclose(np.tril(r, -1), 0.0, atol=tol.F64["atol"])
    assert np.all(np.diag(r) > 0)
  tx = optax.chain(optax.sgd(1e-2), optim.reorthonormalize(2, method))
  p = jnp.asarray(np.asarray(w0(dtype=jnp.float64)))
  s = tx.init(p)
  grad = jnp.asarray(rng.standard_normal((N, N)))
  u, s = tx.update(grad, s, p)  # update 1: passes the sgd step through
  # one float64 multiplication
  np.testing.assert_allclose(np.asarray(u), -1e-2 * np.asarray(grad), rtol=tol.F64["rtol"])
  u, s = tx.update(grad, s, p)  # update 2: projects W + u
  assert float(g.orthogonality_error(p + u)) < tol.F64["atol"]




@pytest.mark.parametrize("make, unitary", [
    (lambda: optim.scornn(optax.sgd(0.1), 1), False),
    (lambda: optim.neumann_cayley(optax.sgd(0.1), 1), False),
    (lambda: optim.multiplicative_cayley(0.1), False),
    (lambda: optim.multiplicative_cayley(0.1, unitary=True), True),
], ids=["scornn", "neumann_cayley", "multiplicative", "multiplicative_unitary"])
def test_riemannian_updates_refuse_a_start_off_the_manifold(make, unitary):
  n = 5
  q = np.linalg.qr(np.random.RandomState(0).randn(n, n))[0]
  good = np.stack([q, np.zeros_like(q)]) if unitary else q
  tx = make()
  tx.init({"w": jnp.asarray(good, jnp.float32)})  # on the manifold: accepted
  bad = good * 1.01
  with pytest.raises(ValueError, match=r"leaf \['w'\] of 'params' must be "
                                       + ("unitary" if unitary else "orthogonal")
                                       + r" to start with.*max \|W\^H W - I\| = 0.0201"):
    tx.init({"w": jnp.asarray(bad, jnp.float32)})
  jax.eval_shape(tx.init, {"w": jnp.asarray(bad, jnp.float32)})  # traced: not checked
