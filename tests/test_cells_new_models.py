"""The soft orthogonal RNN (Vorontsov et al. 2017), KRU (Jose et al. 2018) and the
AntisymmetricRNN ablation model (Chang et al. 2019, Sec. 5.4): each layer against a Python
loop over time of its paper's equation in NumPy, penalties against NumPy, the spectral
margin, parameter counts, argument errors and a short training run of each preset.

Tolerances: the float64 comparisons (``x64``) use ``tolerances.F64``: each output depends on
a few hundred multiply-adds (``T n`` products of the recurrence, an ``n x n`` matrix
exponential in the skew mode), inside its 10,000-term chain, whatever the BLAS thread count;
the float64 gradients use ``F64_GRAD``. The float32 training runs check only that losses stay
finite.
"""

import os
import runpy

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

from lvf_jax import cells, geometry, layers, models, optim, regularization, train
from lvf_jax.cells.soft import kru_rows
from lvf_jax.train.config import cell_config, optim_config
import tolerances as tol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B, T, M = 3, 7, 2


def _np(x):
  return np.asarray(x, dtype=np.float64)


def _data(seed=0, dtype=jnp.float64):
  return jax.random.normal(jax.random.key(seed), (B, T, M), dtype)


def _layer(cell, fused):
  return layers.Recurrent(cell, fused=fused, return_carry=True)


def _perturb(params, seed=5, scale=0.3):
  """Every parameter moved off its initial value (biases off zero, factors off unitary)."""
  leaves, tree = jax.tree_util.tree_flatten(params)
  keys = jax.random.split(jax.random.key(seed), len(leaves))
  return jax.tree_util.tree_unflatten(tree, [
      a + scale * jax.random.normal(k, a.shape, a.dtype) for a, k in zip(leaves, keys)])


def _loop(step, h0, x):
  """The reference: ``h_t = step(h_{t-1}, x_t)`` in a Python loop, outputs ``(B, T, n)``."""
  hs, h = [], h0
  for t in range(x.shape[1]):
    h = step(h, x[:, t])
    hs.append(h)
  return h, np.stack(hs, axis=1)


def _run(cell, params, x, fused):
  carry, ys = _layer(cell, fused).apply({"params": params}, x)
  return _np(carry), _np(ys)


def _check_against(cell, step, n_state, seed=1):
  """Both scans of ``cell`` (perturbed parameters) against the NumPy loop ``step(p, h, x)``."""
  x = _data()
  params = _perturb(_layer(cell, True).init(jax.random.key(seed), x)["params"])
  p = jax.tree_util.tree_map(_np, params["cell"])
  want_carry, want = _loop(lambda h, xt: step(p, h, xt), np.zeros((B, n_state)), _np(x))
  for fused in (True, False):
    carry, ys = _run(cell, params, x, fused)
    np.testing.assert_allclose(ys, want, **tol.F64)
    np.testing.assert_allclose(carry, want_carry, **tol.F64)
  return params


# ------------------------------------------------------------------ math layer


@pytest.mark.parametrize("sizes", [(2, 3), (2, 2, 2), (3, 2, 4), (5,)])
@pytest.mark.parametrize("complex_valued", [False, True])
def test_kronecker_apply_is_numpys_kron_times_the_rows(sizes, complex_valued, x64):
  rng = np.random.default_rng(0)

  def draw(*shape):
    z = rng.normal(size=shape)
    return z + 1j * rng.normal(size=shape) if complex_valued else z

  factors = [draw(p, p) for p in sizes]
  n = int(np.prod(sizes))
  x = draw(4, 2, n)
  w = factors[0]
  for f in factors[1:]:
    w = np.kron(w, f)
  got = geometry.kronecker_apply([jnp.asarray(f) for f in factors], jnp.asarray(x))
  np.testing.assert_allclose(np.asarray(got), x @ w.T, **tol.F64)
  np.testing.assert_allclose(np.asarray(geometry.kronecker_matrix(
      [jnp.asarray(f) for f in factors])), w, **tol.F64)


def test_kronecker_sizes_split_n_into_factors_and_a_rest():
  assert geometry.kronecker_sizes(512, 2) == (2,) * 9
  assert geometry.kronecker_sizes(6, 2) == (2, 3)
  assert geometry.kronecker_sizes(5, 2) == (5,)
  assert geometry.kronecker_sizes(1, 2) == (1,)
  assert geometry.kronecker_sizes(48, 4) == (4, 4, 3)
  with pytest.raises(ValueError, match=r"kronecker_sizes: argument 'factor_size' must be an "
                                       r"int >= 2; got 1"):
    geometry.kronecker_sizes(8, 1)
  with pytest.raises(ValueError, match=r"kronecker_sizes: argument 'n' must be an int >= 1; "
                                       r"got 0"):
    geometry.kronecker_sizes(0, 2)
  with pytest.raises(ValueError, match=r"kronecker_apply: argument 'x' must have n = 6"):
    geometry.kronecker_apply([jnp.eye(2), jnp.eye(3)], jnp.ones((2, 5)))


@given(margin=st.floats(0.0, 2.0), seed=st.integers(0, 2 ** 31 - 1))
def test_singular_values_stay_within_the_spectral_margin(margin, seed):
  """W = U S V^T: its singular values are exactly |s|, each in [1 - m, 1 + m] (in [0, 1 + m]
  for m > 1, where s itself may turn negative), whatever p."""
  with jax.enable_x64(True):
    rng = np.random.default_rng(seed)
    n = 5
    u, v = (scipy.linalg.qr(rng.normal(size=(n, n)))[0] for _ in range(2))
    p = 10.0 * rng.normal(size=n)
    w = np.asarray(geometry.margin_matrix(jnp.asarray(u), jnp.asarray(p), jnp.asarray(v),
                                          margin))
    s = np.linalg.svd(w, compute_uv=False)
    want = np.abs(2 * margin * (1 / (1 + np.exp(-p)) - 0.5) + 1)
    np.testing.assert_allclose(np.sort(s), np.sort(want), **tol.F64)
    slack = tol.F64["atol"]
    assert np.all(s >= 1 - margin - slack) and np.all(s <= 1 + margin + slack)


def test_spectral_margin_preserves_dtype_and_rejects_a_negative_margin():
  p = jnp.zeros((3,), jnp.bfloat16)
  assert geometry.spectral_margin(p, 0.5).dtype == jnp.bfloat16
  with pytest.raises(ValueError, match=r"spectral_margin: argument 'margin' must be a finite "
                                       r"number >= 0; got -0.1"):
    geometry.spectral_margin(p, -0.1)
  with pytest.raises(ValueError, match=r"margin_matrix: argument 'p' must have n = 3"):
    geometry.margin_matrix(jnp.eye(3), jnp.zeros(4), jnp.eye(3), 0.1)


@pytest.mark.parametrize("complex_valued", [False, True])
def test_gram_penalty_is_the_squared_frobenius_defect(complex_valued, x64):
  rng = np.random.default_rng(2)
  w = rng.normal(size=(2, 4, 4)) + (1j * rng.normal(size=(2, 4, 4)) if complex_valued else 0)
  want = [np.sum(np.abs(m.conj().T @ m - np.eye(4)) ** 2) for m in w]
  np.testing.assert_allclose(np.asarray(geometry.gram_penalty(jnp.asarray(w))), want,
                             rtol=tol.F64["rtol"])


# --------------------------------------------------------- soft orthogonal RNN


def _softorth_matrix(p, cell):
  """Vorontsov et al. 2017: W itself, or U diag(2m(sigmoid(p) - 1/2) + 1) V^T."""
  if cell.margin is None:
    return p["recurrent"]
  if cell.orthogonal_param == "matrix":
    u, v = p["orthogonal_u"], p["orthogonal_v"]
  else:
    u, v = (scipy.linalg.expm(np.triu(a, 1) - np.triu(a, 1).T) for a in (p["skew_u"],
                                                                           p["skew_v"]))
  s = 2 * cell.margin * (1 / (1 + np.exp(-p["singular_logits"])) - 0.5) + 1
  return u @ np.diag(s) @ v.T


def _np_modrelu(z, b):
  return np.sign(z) * np.maximum(np.abs(z) + b, 0.0)


SOFTORTH = [dict(), dict(margin=0.3), dict(margin=0.0), dict(margin=0.5, orthogonal_param="skew"),
            dict(margin=0.2, activation="modrelu")]


@pytest.mark.parametrize("kw", SOFTORTH, ids=lambda kw: "-".join(f"{k}={v}" for k, v in
                                                                 kw.items()) or "penalty")
def test_soft_orthogonal_layer_is_the_papers_recurrence(kw, x64):
  """h_t = sigma(W h_{t-1} + V x_t + b), fused and plain scan against a NumPy loop."""
  n = 5
  cell = cells.SoftOrthogonalRNNCell(n, param_dtype=jnp.float64, **kw)

  def step(p, h, xt):
    z = h @ _softorth_matrix(p, cell).T + xt @ p["input"]["kernel"]
    if cell.activation == "tanh":
      return np.tanh(z + p["bias"])
    return _np_modrelu(z, p["bias"])

  _check_against(cell, step, n)


@pytest.mark.parametrize("margin", [None, 0.4])
def test_soft_orthogonality_penalty_is_lambda_times_the_gram_defect(margin, x64):
  n, lam = 5, 0.7
  cell = cells.SoftOrthogonalRNNCell(n, margin=margin, orthogonality_penalty=lam,
                                     param_dtype=jnp.float64)
  layer = _layer(cell, True)
  x = _data()
  params = _perturb(layer.init(jax.random.key(1), x)["params"])
  _, state = layer.apply({"params": params}, x, mutable=["losses"])
  terms = regularization.regularization_terms(state)
  w = _softorth_matrix(jax.tree_util.tree_map(_np, params["cell"]), cell)
  want = lam * np.sum((w.T @ w - np.eye(n)) ** 2)
  np.testing.assert_allclose(float(terms["cell/orthogonality_penalty"]), want,
                             rtol=tol.F64["rtol"])
  if margin is not None:  # with orthogonal U, V: sum_i (s_i^2 - 1)^2
    s = np.linalg.svd(w, compute_uv=False)
    # the Gram defect against NumPy's SVD of the 5 x 5 W
    np.testing.assert_allclose(want, lam * np.sum((s ** 2 - 1) ** 2),
                               rtol=tol.F64_CONDITIONED["rtol"])
  no_penalty = _layer(cells.SoftOrthogonalRNNCell(n, margin=margin, param_dtype=jnp.float64),
                      True)
  assert not regularization.regularization_terms(
      no_penalty.apply({"params": params}, x, mutable=["losses"])[1])


@pytest.mark.parametrize("kw", [dict(orthogonality_penalty=0.3),
                                dict(margin=0.5, orthogonality_penalty=0.3)])
def test_soft_orthogonal_gradients_of_the_fused_scan_equal_autodiff(kw, x64):
  """The fused scan's hand-written backward pass against autodiff of the plain scan, the
  penalty included."""
  cell = cells.SoftOrthogonalRNNCell(5, param_dtype=jnp.float64, **kw)
  x = _data()
  params = _perturb(_layer(cell, True).init(jax.random.key(1), x)["params"])

  def loss(fused, p, xx):
    (carry, ys), state = _layer(cell, fused).apply({"params": p}, xx, mutable=["losses"])
    return (jnp.sum(jnp.sin(ys)) + jnp.sum(carry ** 2)
            + regularization.regularization_loss(state, jnp.float64))

  g_fused = jax.grad(lambda p, xx: loss(True, p, xx), (0, 1))(params, x)
  g_plain = jax.grad(lambda p, xx: loss(False, p, xx), (0, 1))(params, x)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64_GRAD),
                         g_fused, g_plain)


def test_riemannian_training_keeps_the_singular_values_within_the_margin():
  """U, V by the multiplicative Cayley update (the paper's geodesic step) stay orthogonal, so
  W's singular values stay in [1 - m, 1 + m] while the penalty-free loss moves them."""
  n, margin = 6, 0.25
  cell = cells.SoftOrthogonalRNNCell(n, margin=margin)
  layer = _layer(cell, True)
  x = jax.random.normal(jax.random.key(0), (4, 9, M))
  params = layer.init(jax.random.key(1), x)["params"]
  tx = optim.make_optimizer({"optimizer": "adam", "learning_rate": 0.3,
                             "orthogonal_method": "multiplicative", "lr_orth": 0.1})
  state = tx.init(params)

  def loss(p):
    return -jnp.sum(layer.apply({"params": p}, x)[1] ** 2)  # pushes the spectrum outwards

  for _ in range(5):
    with jax.numpy_dtype_promotion("standard"):  # optax mixes Python scalars and int counts
      updates, state = tx.update(jax.grad(loss)(params), state, params)
    params = optax.apply_updates(params, updates)
  p = params["cell"]
  for name in ("orthogonal_u", "orthogonal_v"):  # 5 float32 Cayley steps of n = 6
    assert float(geometry.orthogonality_error(p[name])) < tol.F32["atol"]
  w = cell.apply({"params": p}, method=lambda c: c.recurrent_matrix())
  s = np.linalg.svd(np.asarray(w, np.float64), compute_uv=False)
  slack = tol.F32["atol"]  # the singular values of the float32 U S V^T
  assert np.all(s >= 1 - margin - slack) and np.all(s <= 1 + margin + slack)
  # they moved off 1 (the initial S = I): by 0.15 in this run, 0.05 is 5000 times the slack
  assert np.max(np.abs(s - 1)) > 0.05


# ------------------------------------------------------------------------ KRU


def _kru_factors(p, complex_valued):
  names = sorted((k for k in p if k.startswith("factor_")), key=lambda k: int(k[7:]))
  return [p[k][0] + 1j * p[k][1] if complex_valued else p[k] for k in names]


def _np_kron(factors):
  w = factors[0]
  for f in factors[1:]:
    w = np.kron(w, f)
  return w


@pytest.mark.parametrize("kw", [dict(), dict(factored=False), dict(factor_size=3),
                                dict(complex_valued=False, activation="tanh"),
                                dict(complex_valued=False, factored=False),
                                dict(block_size=1)],
                         ids=["complex", "complex-dense", "size3", "real-tanh", "real-dense",
                              "factor-by-factor"])
def test_kru_layer_is_the_papers_recurrence(kw, x64):
  """h_t = sigma(W h_{t-1} + V x_t, b) with W = W_0 (x) W_1 (x) ..., complex modReLU on a
  complex state, against a NumPy loop (complex arithmetic, np.kron)."""
  n = 6
  cell = cells.KRUCell(n, param_dtype=jnp.float64, **kw)

  def step(p, h, xt):
    w = _np_kron(_kru_factors(p, cell.complex_valued))
    u = xt @ p["input"]["kernel"]
    if not cell.complex_valued:
      z = h @ w.T + u
      return np.tanh(z + p["bias"]) if cell.activation == "tanh" else _np_modrelu(z, p["bias"])
    hc, uc = h[:, :n] + 1j * h[:, n:], u[:, :n] + 1j * u[:, n:]
    z = hc @ w.T + uc
    out = z / np.abs(z) * np.maximum(np.abs(z) + p["bias"], 0.0)
    return np.concatenate([out.real, out.imag], axis=-1)

  params = _check_against(cell, step, cell.state_size if cell.complex_valued else n)
  sizes = geometry.kronecker_sizes(n, cell.factor_size)
  shape = (lambda q: (2, q, q)) if cell.complex_valued else (lambda q: (q, q))
  assert [params["cell"][f"factor_{i}"].shape for i in range(len(sizes))] == \
      [shape(q) for q in sizes]


@pytest.mark.parametrize("complex_valued", [True, False])
@pytest.mark.parametrize("features, block_size", [(6, 1), (6, 32), (8, 4)],
                         ids=["factors", "one-block", "two-blocks"])
def test_factored_kru_gradients_equal_the_dense_kru(complex_valued, features, block_size, x64):
  """The factored scan (rnn_scan with kru_rows: transposed operator in the backward loop,
  one vector-Jacobian product for the factors), with the factors applied one by one or
  merged into Kronecker blocks, against autodiff of the dense W, masked."""
  kw = dict(features=features, complex_valued=complex_valued, param_dtype=jnp.float64,
            unitary_penalty=0.2, block_size=block_size)
  x = _data()
  lengths = jnp.array([T, 3, 5])
  dense = layers.Recurrent(cells.KRUCell(factored=False, **kw), fused=False,
                           return_carry=True)
  params = _perturb(dense.init(jax.random.key(1), x)["params"])

  def loss(layer, p, xx):
    (carry, ys), state = layer.apply({"params": p}, xx, seq_lengths=lengths,
                                     mutable=["losses"])
    return (jnp.sum(jnp.sin(ys)) + jnp.sum(carry ** 2)
            + regularization.regularization_loss(state, jnp.float64))

  want = jax.grad(lambda p, xx: loss(dense, p, xx), (0, 1))(params, x)
  for fused in (True, False):
    fact = layers.Recurrent(cells.KRUCell(**kw), fused=fused, return_carry=True)
    got = jax.grad(lambda p, xx: loss(fact, p, xx), (0, 1))(params, x)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64_GRAD),
                           got, want)
  assert np.all(np.asarray(want[0]["cell"]["factor_0"]) != 0)


def test_kronecker_blocks_merge_consecutive_factors_into_the_same_product(x64):
  rng = np.random.default_rng(7)
  factors = [rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2)) for _ in range(9)]
  blocks = geometry.kronecker_blocks(tuple(jnp.asarray(f) for f in factors), 32)
  assert [b.shape[0] for b in blocks] == [32, 16]
  np.testing.assert_allclose(np.asarray(geometry.kronecker_matrix(blocks)), _np_kron(factors),
                             **tol.F64)
  mixed = tuple(jnp.asarray(rng.normal(size=(q, q))) for q in (2, 5, 3, 2))
  assert [b.shape[0] for b in geometry.kronecker_blocks(mixed, 4)] == [2, 5, 3, 2]
  assert [b.shape[0] for b in geometry.kronecker_blocks(mixed, 10)] == [10, 6]
  assert geometry.kronecker_blocks(mixed, 1)[1] is mixed[1]  # a factor above max_size alone
  with pytest.raises(ValueError, match=r"kronecker_blocks: argument 'max_size' must be an int"):
    geometry.kronecker_blocks(mixed, 0)


def test_kru_rows_applies_the_real_embedding_of_w(x64):
  rng = np.random.default_rng(4)
  pairs = tuple(jnp.asarray(rng.normal(size=(2, q, q))) for q in (2, 3))
  h = jnp.asarray(rng.normal(size=(4, 12)))
  w = geometry.kronecker_matrix(tuple(geometry.complex_from_pair(f) for f in pairs))
  want = h @ geometry.complex_to_real_kernel(w)
  np.testing.assert_allclose(np.asarray(kru_rows(pairs, h)), np.asarray(want), **tol.F64)


def test_kru_unitary_penalty_is_lambda_times_the_factors_gram_defects(x64):
  lam = 0.05
  cell = cells.KRUCell(6, unitary_penalty=lam, param_dtype=jnp.float64)
  layer = _layer(cell, True)
  x = _data()
  params = _perturb(layer.init(jax.random.key(1), x)["params"])
  _, state = layer.apply({"params": params}, x, mutable=["losses"])
  factors = _kru_factors(jax.tree_util.tree_map(_np, params["cell"]), True)
  want = lam * sum(np.sum(np.abs(f.conj().T @ f - np.eye(len(f))) ** 2) for f in factors)
  got = regularization.regularization_terms(state)["cell/unitary_penalty"]
  np.testing.assert_allclose(float(got), want, rtol=tol.F64["rtol"])
  init = layer.init(jax.random.key(1), x)["params"]  # Haar-unitary factors: W unitary
  w = cell.apply({"params": init["cell"]}, method=lambda c: c.recurrent_matrix())
  np.testing.assert_allclose(np.asarray(w.conj().T @ w), np.eye(6), atol=tol.F64["atol"])


# ------------------------------------------------------------ ablation model


def test_ablation_layer_is_eq13_with_an_unstructured_matrix(x64):
  """Chang et al. 2019 Sec. 5.4: eq (13) with W - W^T replaced by an unstructured W (the
  diffusion gamma kept), fused and plain scan against a NumPy loop."""
  n, eps, gamma = 5, 0.3, 0.05
  cell = cells.GatedAntisymmetricRNNCell(n, epsilon=eps, gamma=gamma, unstructured=True,
                                         param_dtype=jnp.float64)

  def step(p, h, xt):
    a = p["recurrent"] - gamma * np.eye(n)
    u = xt @ p["input"]["kernel"] + p["input"]["bias"]
    z = 1 / (1 + np.exp(-(h @ a.T + u[:, n:])))
    return h + eps * z * np.tanh(h @ a.T + u[:, :n])

  params = _check_against(cell, step, n)
  assert set(params["cell"]) == {"recurrent", "input"}
  w = _np(params["cell"]["recurrent"])
  # not antisymmetric: W is perturbed by 0.3 N(0, 1) (|W + W^T| up to 1.8 here)
  assert np.abs(w + w.T).max() > 0.1


def test_unstructured_flag_applies_to_the_ungated_cell_too(x64):
  n, eps, gamma = 4, 0.2, 0.1
  cell = cells.AntisymmetricRNNCell(n, epsilon=eps, gamma=gamma, unstructured=True,
                                    param_dtype=jnp.float64)

  def step(p, h, xt):
    a = p["recurrent"] - gamma * np.eye(n)
    return h + eps * np.tanh(h @ a.T + xt @ p["input"]["kernel"] + p["input"]["bias"])

  _check_against(cell, step, n)


# ------------------------------------------------------- parameter counts


def _classifier_params(cell_name, hidden, inputs, classes=10, **cell_kw):
  """The cell's parameter shapes and the size of a ``classes``-way linear head on its state."""
  cell = cells.make_cell(cell_name, hidden, **cell_kw)
  v = jax.eval_shape(lambda: _layer(cell, True).init(jax.random.key(0),
                                                     jnp.zeros((1, 2, inputs))))["params"]
  width = cell.state_size if hasattr(cell, "state_size") else hidden
  return v, classes * (width + 1)


def test_parameter_counts_match_the_tables():
  """AntisymmetricRNN Table 1 / 2: soft orthogonal n=128 18k (pixel MNIST), ablation n=196
  42k (pixel CIFAR-10); KRU n=512 with complex 2 x 2 factors: 72 recurrent parameters
  (Jose et al.: 8 log2 n), 11,858 with the input map, bias and head (the table prints 11k)."""
  v, head = _classifier_params("softorth", 128, 1, margin=1.0)
  assert models.count_params(v, effective=True) + head == 17930  # U, V: n(n-1)/2 each
  v_pen, _ = _classifier_params("softorth", 128, 1)
  assert models.count_params(v_pen) == models.count_params(v, effective=True)
  v, head = _classifier_params("kru", 512, 1)
  assert sum(np.prod(a.shape) for k, a in v["cell"].items() if k.startswith("factor_")) == 72
  assert models.count_params(v) + head == 11858
  v, head = _classifier_params("gated_antisymmetric", 196, 3, unstructured=True)
  assert models.count_params(v) + head == 41954


# ------------------------------------------------------------- bad arguments


@pytest.mark.parametrize("cell, match", [
    (cells.SoftOrthogonalRNNCell(4, margin=-0.1),
     r"SoftOrthogonalRNNCell: argument 'margin' must be a finite number >= 0; got -0.1"),
    (cells.SoftOrthogonalRNNCell(4, margin=float("nan")), r"argument 'margin'"),
    (cells.SoftOrthogonalRNNCell(4, orthogonality_penalty=-1.0),
     r"SoftOrthogonalRNNCell: argument 'orthogonality_penalty' must be a finite number >= 0"),
    (cells.SoftOrthogonalRNNCell(4, orthogonal_param="skew"),
     r"argument 'orthogonal_param='skew'' needs a spectral margin \(argument 'margin'"),
    (cells.SoftOrthogonalRNNCell(4, margin=0.1, orthogonal_param="cayley"),
     r"argument 'orthogonal_param' must be one of \['matrix', 'skew'\]; got 'cayley'"),
    (cells.SoftOrthogonalRNNCell(4, activation="relu"),
     r"argument 'activation' must be one of \['modrelu', 'tanh'\]; got 'relu'"),
    (cells.KRUCell(4, factor_size=1),
     r"KRUCell: argument 'factor_size' must be an int >= 2; got 1"),
    (cells.KRUCell(4, block_size=0),
     r"KRUCell: argument 'block_size' must be an int >= 1; got 0"),
    (cells.KRUCell(4, unitary_penalty=-0.5),
     r"KRUCell: argument 'unitary_penalty' must be a finite number >= 0; got -0.5"),
    (cells.KRUCell(4, activation="tanh"),
     r"KRUCell: argument 'activation' must be one of \['modrelu'\]; got 'tanh'"),
    (cells.KRUCell(0), r"KRUCell: argument 'features' must be an int >= 1"),
])
def test_bad_arguments_raise_naming_argument_value_and_what_is_allowed(cell, match):
  x = jnp.zeros((2, 3, M))
  with pytest.raises(ValueError, match=match):
    layers.Recurrent(cell).init(jax.random.key(0), x)


def test_structure_flags_are_config_options():
  assert cells.cell_options("gated_antisymmetric")["unstructured"] == (bool, False)
  assert cells.cell_options("softorth")["margin"] == (float, None)
  assert cells.cell_options("kru")["factor_size"] == (int, 2)


# ------------------------------------------------------ training smoke runs


def _preset(file, name):
  return runpy.run_path(os.path.join(ROOT, "configs", file))["get_config"](name)


def _tiny_from_preset(file, name, tmp_hidden):
  """The preset's model and optimiser on the copy task at T = 8, 3 steps of batch 8."""
  p = _preset(file, name)
  c = train.base_config()
  c.task.name, c.task.options = "copy", {"T": 8}
  c.model.name, c.model.hidden = p.model.name, tmp_hidden
  c.model.cell = cell_config(p.model.name, p.model.cell.to_dict())
  c.optim = optim_config(p.optim.to_dict())
  for key, value in dict(steps=3, batch_size=8, eval_every=3, checkpoint_every=3, eval_size=16,
                         eval_batch_size=16, log_every=1, progress_bar=False, plot=False,
                         tensorboard=False).items():
    c.train[key] = value
  return c


@pytest.mark.parametrize("file, name, hidden", [("mnist.py", "softorth", 12),
                                                ("pmnist.py", "kru", 8),
                                                ("cifar10.py", "ablation", 12)])
def test_each_new_preset_trains_end_to_end(file, name, hidden, tmp_path):
  c = _tiny_from_preset(file, name, hidden)
  summary = train.train_and_evaluate(c, str(tmp_path))
  assert summary["steps"] == 3 and np.isfinite(summary["final_validation"]["loss"])
