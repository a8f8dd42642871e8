"""Full-capacity uRNN (Wisdom et al. 2016): the unitary initialisers, the [Re W, Im W]
storage, the complex multiplicative Cayley step against NumPy of eqs 9-10, the optimiser
routing of the 'unitary' label, and the cell's step against NumPy of its equation.
(Layer == loop == nn.RNN and fused == plain run in test_cells_unitary.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lvf_jax import cells, geometry, layers, models, optim
from np_reference import B, M, _np, init_apply
import tolerances as tol

from test_cells_unitary import np_complex_modrelu, np_urnn, split


def unitary_error(p):
  w = _np(p[0]) + 1j * _np(p[1])
  return np.max(np.abs(w.conj().T @ w - np.eye(w.shape[0])))


def np_pair(w):
  return np.stack([w.real, w.imag])


# ------------------------------------------------------------------ geometry


def test_pair_round_trip_and_bad_shape():
  rng = np.random.default_rng(0)
  w = rng.normal(size=(3, 4, 4)) + 1j * rng.normal(size=(3, 4, 4))
  pair = geometry.pair_from_complex(jnp.asarray(w, jnp.complex64))
  assert pair.shape == (3, 2, 4, 4) and pair.dtype == jnp.float32
  back = geometry.complex_from_pair(pair)
  assert back.dtype == jnp.complex64
  np.testing.assert_allclose(np.asarray(back), w, rtol=tol.F32_SHORT["rtol"])  # one rounding
  assert geometry.complex_from_pair(pair.astype(jnp.bfloat16)).dtype == jnp.complex64
  with pytest.raises(ValueError, match=r"complex_from_pair: argument 'p' must have shape "
                                       r"\(\.\.\., 2, n, m\).*got \(3, 4, 4\)"):
    geometry.complex_from_pair(jnp.zeros((3, 4, 4)))


def test_urnn_unitary_is_the_urnn_product_of_its_draws():
  """Documented draws: theta (3, n) U(-pi, pi) from the first split key, reflections
  (2, 2, n) U(-1, 1) from the second, permutation RandomState(seed)."""
  n, seed = 6, 5
  key = jax.random.key(3)
  p = geometry.urnn_unitary(seed)(key, (2, n, n))
  k_theta, k_refl = jax.random.split(key)
  theta = _np(jax.random.uniform(k_theta, (3, n), jnp.float32, -np.pi, np.pi))
  refl = _np(jax.random.uniform(k_refl, (2, 2, n), jnp.float32, -1.0, 1.0))
  want = np_urnn(theta, refl, np.random.RandomState(seed).permutation(n))
  # float32 W = D3 R2 F^-1 D2 Pi R1 F D1: four n = 6-term factors (DFTs, reflections) and
  # the phases, entries of magnitude <= 1
  np.testing.assert_allclose(_np(p[0]) + 1j * _np(p[1]), want, **tol.F32)
  assert p.dtype == jnp.float32 and unitary_error(p) < tol.F32["atol"]


def test_haar_unitary_is_unitary_and_haar_distributed():
  """E |tr W|^2 = 1 under Haar measure on U(n) (Diaconis-Shahshahani); QR without the
  phase fix of diag(R) gives a different law (E tr W != 0)."""
  n, count = 4, 4000
  init = geometry.haar_unitary()
  ps = jax.vmap(lambda k: init(k, (2, n, n)))(jax.random.split(jax.random.key(0), count))
  w = _np(ps[:, 0]) + 1j * _np(ps[:, 1])
  eye = np.eye(n)
  assert np.max(np.abs(np.einsum("bji,bjk->bik", w.conj(), w) - eye)) < tol.F32["atol"]
  tr = np.trace(w, axis1=1, axis2=2)
  # sampling errors of means of count = 4000 draws: Var |tr W|^2 = E|tr W|^4 - 1 = 2 - 1
  # (Diaconis-Shahshahani), sd 1 / sqrt(4000) = 0.016, so 0.1 is 6 sigma; tr W has
  # E|tr W|^2 = 1, sd 0.011 per component of its mean, so 0.08 is 7 sigma; W_00 has
  # E|W_00|^2 = 1 / n, sd 0.0056 per component, so 0.05 is 9 sigma
  assert abs(np.mean(np.abs(tr) ** 2) - 1.0) < 0.1
  assert abs(np.mean(tr)) < 0.08
  assert abs(np.mean(w[:, 0, 0])) < 0.05
  with pytest.raises(ValueError, match=r"haar_unitary: argument 'shape' must be \(2, n, n\)"):
    init(jax.random.key(0), (4, 4))
  with pytest.raises(ValueError, match=r"urnn_unitary: argument 'shape' must be \(2, n, n\)"):
    geometry.urnn_unitary()(jax.random.key(0), (2, 3, 4))


# ------------------------------------------------------- complex multiplicative Cayley


def test_unitary_multiplicative_matches_numpy(x64):
  """Wisdom et al. (2016) eqs 9-10: G = dL/dRe W + i dL/dIm W, A = G W^H - W G^H,
  W <- (I + lr/2 A)^{-1} (I - lr/2 A) W, in complex128 NumPy; stays unitary."""
  n, lr = 5, 0.3
  rng = np.random.default_rng(1)
  p = geometry.haar_unitary()(jax.random.key(1), (2, n, n), jnp.float64)
  w = _np(p[0]) + 1j * _np(p[1])
  tx = optim.multiplicative_cayley(lr, unitary=True)
  s = tx.init(p)
  for _ in range(4):
    gpair = rng.standard_normal((2, n, n))
    gmat = gpair[0] + 1j * gpair[1]
    a = gmat @ w.conj().T - w @ gmat.conj().T
    eye = np.eye(n)
    w = np.linalg.inv(eye + lr / 2 * a) @ (eye - lr / 2 * a) @ w
    u, s = tx.update(jnp.asarray(gpair), s, p)
    p = p + u
    assert p.dtype == jnp.float64
    # float64, 5 x 5 solves of I + lr / 2 A, A skew-Hermitian: condition number < 2
    np.testing.assert_allclose(_np(p), np_pair(w), **tol.F64)
  assert unitary_error(p) < tol.F64["atol"]


def test_unitary_multiplicative_small_step_follows_the_riemannian_gradient(x64):
  """(W_new - W) / lr -> -(G - W G^H W) as lr -> 0 (canonical-metric gradient on U(n))."""
  n, lr = 4, 1e-7
  rng = np.random.default_rng(2)
  p = geometry.haar_unitary()(jax.random.key(2), (2, n, n), jnp.float64)
  w = _np(p[0]) + 1j * _np(p[1])
  gpair = rng.standard_normal((2, n, n))
  gmat = gpair[0] + 1j * gpair[1]
  tx = optim.multiplicative_cayley(lr, unitary=True)
  u, _ = tx.update(jnp.asarray(gpair), tx.init(p), p)
  step = (_np(u[0]) + 1j * _np(u[1])) / lr
  # the Cayley step's truncation: (W_new - W) / lr = -A W + O(lr ||A||^2), lr / 2 ||A||_2^2 =
  # 2.7e-6 for this draw (||A||_2 = 7.3); the rounding of W_new - W, u / lr = 1e-9, is far below
  np.testing.assert_allclose(step, -(gmat - w @ gmat.conj().T @ w), atol=1e-5)


def test_unitary_multiplicative_descends_and_reorthonormalizes():
  n = 6
  x = jax.random.normal(jax.random.key(0), (2, n, 3))
  y = jax.random.normal(jax.random.key(1), (2, n, 3))

  def loss(p):  # || W X - Y ||^2 in complex arithmetic
    w = geometry.complex_from_pair(p)
    return jnp.sum(jnp.abs(w @ geometry.complex_from_pair(x) - geometry.complex_from_pair(y)) ** 2)

  for method in ("polar", "qr"):
    tx = optim.multiplicative_cayley(2e-2, reorthonormalize_every=5, method=method, unitary=True)
    p = geometry.urnn_unitary()(jax.random.key(3), (2, n, n))

    def run(p, tx=tx):
      def body(carry, _):
        p, s = carry
        u, s = tx.update(jax.grad(loss)(p), s, p)
        return (p + u, s), loss(p)
      return jax.lax.scan(body, (p, tx.init(p)), length=25)

    (p, _), losses = jax.jit(run)(p)
    assert losses[-1] < losses[0] - 1.0
    # 25 float32 Cayley steps of 6 x 6 complex solves and products (3e-7 with or without
    # the reorthonormalisations)
    assert unitary_error(p) < tol.F32["atol"]


@pytest.mark.parametrize("method", ["polar", "qr"])
def test_orthonormalize_complex(x64, method):
  rng = np.random.default_rng(4)
  m = rng.normal(size=(5, 5)) + 1j * rng.normal(size=(5, 5))
  q = np.asarray(optim.orthonormalize(jnp.asarray(m), method))
  assert np.max(np.abs(q.conj().T @ q - np.eye(5))) < tol.F64["atol"]
  if method == "polar":
    uu, _, vh = np.linalg.svd(m)
    # the polar factor against NumPy's SVD: condition number of m 8.9
    np.testing.assert_allclose(q, uu @ vh, atol=tol.F64_CONDITIONED["atol"])
  else:  # M = Q R with R upper triangular, real positive diagonal
    r = q.conj().T @ m
    np.testing.assert_allclose(np.tril(r, -1), 0.0, atol=tol.F64["atol"])
    np.testing.assert_allclose(np.diag(r).imag, 0.0, atol=tol.F64["atol"])
    assert np.all(np.diag(r).real > 0)


def test_unitary_multiplicative_bad_input():
  tx = optim.multiplicative_cayley(0.1, unitary=True)
  with pytest.raises(ValueError, match=r"multiplicative_cayley: every leaf of 'params' must be "
                                       r"a pair \[Re W, Im W\] of shape \(\.\.\., 2, n, n\).*"
                                       r"\(4, 4\)"):
    tx.init({"unitary": jnp.eye(4)})
  with pytest.raises(ValueError, match="multiplicative_cayley: argument 'unitary' must be a bool"):
    optim.multiplicative_cayley(0.1, unitary="yes")


# ------------------------------------------------------------------ the cell


def test_fcurnn_step_equals_numpy_equation():
  cell = cells.FullCapacityURNNCell(5)
  variables, h, x, out = init_apply(cell)
  p = variables["params"]
  assert h.shape == (B, 10) and out.shape == (B, 10)
  w = _np(p["unitary"][0]) + 1j * _np(p["unitary"][1])  # column form: h' = W h
  kernel = _np(p["input"]["kernel"])
  pre = (w @ split(h).T).T + _np(x) @ (kernel[:, :5] + 1j * kernel[:, 5:])
  # one complex step: n + M = 8 complex terms
  np.testing.assert_allclose(split(out), np_complex_modrelu(pre, _np(p["bias"])), **tol.F32)
  assert unitary_error(p["unitary"]) < tol.F32["atol"]


def test_fcurnn_parameters_labels_and_counts():
  n = 4
  model = models.SequenceClassifier([cells.FullCapacityURNNCell(n)], num_outputs=3)
  variables = model.init(jax.random.key(0), jnp.ones((2, 5, M)))
  cell = variables["params"]["rnn"]["layer_0"]["cell"]
  assert cell["unitary"].shape == (2, n, n)
  labels = optim.param_labels(cell)
  assert labels["unitary"] == "unitary" and labels["bias"] == "default"
  assert models.count_params(cell) == 2 * n * n + n + M * 2 * n
  assert models.count_params(cell, effective=True) == n * n + n + M * 2 * n  # dim U(n) = n^2


def test_make_optimizer_trains_w_on_the_unitary_group():
  """make_optimizer sends 'unitary' to the complex multiplicative Cayley step at lr_orth
  (with any orthogonal_method), the rest to the Euclidean optimiser: the loss falls and W
  stays unitary; the unitary update equals the transform applied to the clipped gradient."""
  layer = layers.Recurrent(cells.FullCapacityURNNCell(6))
  x = jax.random.normal(jax.random.key(0), (4, 9, M))
  target = jax.random.normal(jax.random.key(1), (4, 9, 12))
  params = layer.init(jax.random.key(2), x)["params"]

  def loss(p):
    return jnp.mean((layer.apply({"params": p}, x) - target) ** 2)

  config = {"optimizer": "rmsprop", "learning_rate": 1e-2, "lr_orth": 0.5, "clip_norm": 1.0,
            "orthogonal_method": "scornn"}
  tx = optim.make_optimizer(config)
  state = tx.init(params)
  ref = optim.multiplicative_cayley(0.5, reorthonormalize_every=100, unitary=True)
  value_and_grad = jax.jit(jax.value_and_grad(loss))
  update = jax.jit(tx.update)

  @jax.jit
  def reference_update(g, w):
    clipped, _ = optax.clip_by_global_norm(1.0).update(g, optax.EmptyState())
    return ref.update(clipped["cell"]["unitary"], ref.init(w), w)[0]

  g = value_and_grad(params)[1]
  np.testing.assert_allclose(update(g, state, params)[0]["cell"]["unitary"],
                             reference_update(g, params["cell"]["unitary"]), **tol.F32_SHORT)
  losses = []
  for _ in range(30):
    value, g = value_and_grad(params)
    losses.append(float(value))
    u, state = update(g, state, params)
    params = optax.apply_updates(params, u)
  assert losses[-1] < 0.8 * losses[0]
  # 30 float32 Cayley steps of 6 x 6 complex products: 30 * 12 = 360 real terms
  assert unitary_error(params["cell"]["unitary"]) < tol.F32["atol"]


@pytest.mark.parametrize("kw, match", [
    ({"activation": "tanh"}, r"FullCapacityURNNCell: argument 'activation' must be one of \['modrelu'\]"),
    ({"features": 0}, "FullCapacityURNNCell: argument 'features' must be an int >= 1"),
])
def test_fcurnn_bad_arguments_raise(kw, match):
  cell = cells.FullCapacityURNNCell(**{"features": 4, **kw})
  with pytest.raises(ValueError, match=match):
    cell.init(jax.random.key(0), jnp.zeros((2, 8)), jnp.zeros((2, M)))
