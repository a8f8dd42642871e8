"""lvf_jax.diagnostics against the equations: the Fisher memory curve (nnRNN SM B eq. 7)
by a NumPy loop, the delay line's closed form (Ganguli et al. 2008), and the argument checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import diagnostics
import tolerances as tol


def np_fmc(theta, steps, terms=400):
  """eq. 7 written out: C = sum_k Theta^k (Theta^k)^T, J(k) = u^T (Theta^k)^T C^-1 Theta^k u."""
  n = theta.shape[0]
  c, p = np.zeros((n, n)), np.eye(n)
  for _ in range(terms):
    c += p @ p.T
    p = theta @ p
  u = np.eye(n)[0]
  out, v = [], u
  for _ in range(steps):
    out.append(v @ np.linalg.solve(c, v))
    v = theta @ v
  return np.array(out)


def test_fmc_matches_numpy_loop_of_eq7(x64):
  rng = np.random.RandomState(0)
  q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
  theta = 0.6 * q + 0.1 * np.tril(rng.normal(size=(12, 12)), -1)
  got = diagnostics.fisher_memory_curve(jnp.asarray(theta), 30, doublings=10)
  # float64, ten doublings against a loop of 1024 terms, then a 12-wide solve: the terms
  # shrink as rho(theta)^2k = 0.46^k (12,288 nominal, far fewer that count), cond(C) = 2.3
  np.testing.assert_allclose(got, np_fmc(theta, 30, terms=1024),
                             rtol=tol.F64_CONDITIONED["rtol"], atol=tol.F64["atol"])
  total = diagnostics.fisher_memory_total(jnp.asarray(theta), 30, doublings=10)
  np.testing.assert_allclose(total, np_fmc(theta, 30, terms=1024).sum(),
                             rtol=tol.F64_CONDITIONED["rtol"])


@pytest.mark.parametrize("alpha", [0.9, 1.0, 1.1])
def test_delay_line_has_the_closed_form_of_ganguli_et_al(alpha, x64):
  """sqrt(alpha) on the sub-diagonal: J(k) = alpha^k (alpha - 1) / (alpha^(k+1) - 1) for
  k < n (1 / (k + 1) at alpha = 1), then 0 (the chain is nilpotent)."""
  n = 20
  theta = diagnostics.schur_chain(n, np.sqrt(alpha), dtype=jnp.float64)
  got = np.asarray(diagnostics.fisher_memory_curve(theta, n + 5))
  k = np.arange(n)
  want = 1.0 / (k + 1) if alpha == 1.0 else alpha ** k * (alpha - 1) / (alpha ** (k + 1) - 1)
  # float64: C is diagonal, C_kk a sum of <= n = 20 powers of alpha
  np.testing.assert_allclose(got[:n], want, rtol=tol.F64["rtol"])
  np.testing.assert_allclose(got[n:], 0.0, atol=tol.F64["atol"])  # Theta^n = 0 exactly


def test_schur_chain_structure_and_dtype():
  t = diagnostics.schur_chain(5, 1.5, 0.25, 0.5)
  assert t.dtype == jnp.float32 and t.shape == (5, 5)
  want = np.tril(np.full((5, 5), 0.25), -2) + np.diag(np.full(4, 1.5), -1) + 0.5 * np.eye(5)
  np.testing.assert_array_equal(np.asarray(t), want.astype(np.float32))


def test_jit_vmap_and_dtype():
  thetas = jnp.stack([diagnostics.schur_chain(6, a, 0.1, 0.2) for a in (0.5, 0.8)])
  f = jax.jit(jax.vmap(lambda t: diagnostics.fisher_memory_curve(t, 8)))
  out = f(thetas)
  assert out.shape == (2, 8) and out.dtype == jnp.float32
  for i in range(2):
    # float32, 16 doublings of 6-wide products and a 6-wide solve: about 200 terms
    np.testing.assert_allclose(out[i], diagnostics.fisher_memory_curve(thetas[i], 8),
                               rtol=tol.F32["rtol"])
  assert np.all(np.asarray(out) >= -1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: diagnostics.fisher_memory_curve(jnp.zeros((3, 4)), 5), "'theta'"),
    (lambda: diagnostics.fisher_memory_curve(jnp.eye(3), 0), "'steps'"),
    (lambda: diagnostics.fisher_memory_curve(jnp.eye(3), 2, jnp.ones(4)), "'source'"),
    (lambda: diagnostics.noise_covariance(jnp.eye(3), "some"), "'source'"),
    (lambda: diagnostics.noise_covariance(jnp.eye(3), doublings=0), "'doublings'"),
    (lambda: diagnostics.schur_chain(0, 1.0), "'n'"),
])
def test_errors_name_the_argument(call, match):
  with pytest.raises(ValueError, match=match):
    call()


# ------------------------------------------------------------------ transition matrices


def _layer_params(cell, x):
  from lvf_jax import layers  # pylint: disable=g-import-not-at-top
  variables = layers.Recurrent(cell, fused=False).init(jax.random.key(0), x)
  leaves, tree = jax.tree_util.tree_flatten(variables["params"]["cell"])
  keys = jax.random.split(jax.random.key(3), len(leaves))
  # away from the initialisation (divergence-free V, orthogonal starts)
  return tree.unflatten([p + 0.2 * jax.random.normal(k, p.shape, p.dtype)
                         for p, k in zip(leaves, keys)])


def test_lvf_transition_matrix_is_numpy_euler_map_of_eqs_9_to_15():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  x = jnp.ones((2, 3, 2))
  cell = cells.LVFRNNCell(5, integrator="euler", tau=0.7, parametrization="paper")
  params = _layer_params(cell, x)
  v = np.asarray(params["vector_field"], np.float64)
  n = v.shape[0]
  d = np.zeros((n, n))  # (D_V h)_i = sum_j (V_ij - V_ji)(h_i - h_j), eq. 15
  for i in range(n):
    for j in range(n):
      d[i, i] += v[i, j] - v[j, i]
      d[i, j] -= v[i, j] - v[j, i]
  got = diagnostics.transition_matrices(cell, params)["recurrent"]
  # float32 against float64: each entry sums 2 n = 10 terms, each norm n sums of them
  np.testing.assert_allclose(got, np.eye(n) - 0.7 * d, atol=tol.F32["atol"])
  s = diagnostics.vector_field_summary(params["vector_field"])
  div = v.sum(0) - v.sum(1)
  np.testing.assert_allclose(s["divergence_norm"], np.linalg.norm(div), rtol=tol.F32["rtol"])
  np.testing.assert_allclose(s["flux_norm"], np.linalg.norm(div), rtol=tol.F32["rtol"])
  np.testing.assert_allclose(s["rotation_norm"], np.linalg.norm(v.T - v), rtol=tol.F32["rtol"])


@pytest.mark.parametrize("name", ["rnn", "exprnn", "scornn", "nnrnn", "antisymmetric"])
def test_transition_matrix_is_the_finite_difference_jacobian_of_a_step(name):
  """d h_1 / d h_0 = diag(sigma'(z)) M (tanh) -- measured by central differences."""
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  kw = {"activation": "tanh"} if name in ("exprnn", "scornn", "nnrnn") else {}
  cell = cells.make_cell(name, 4, **kw)
  x = jax.random.normal(jax.random.key(1), (1, 1, 3))
  params = _layer_params(cell, x)
  h0 = np.asarray(jax.random.normal(jax.random.key(2), (4,)), np.float64)
  step = jax.jit(lambda h: cell.apply({"params": params}, h[None], x[:, 0])[0][0])
  eps = 1e-2
  fd = np.stack([(np.asarray(step(jnp.asarray(h0 + eps * e, jnp.float32)), np.float64)
                  - np.asarray(step(jnp.asarray(h0 - eps * e, jnp.float32)), np.float64))
                 / (2 * eps) for e in np.eye(4)], axis=1)
  m = np.asarray(diagnostics.transition_matrices(cell, params)["recurrent"], np.float64)
  h1 = np.asarray(step(jnp.asarray(h0, jnp.float32)), np.float64)
  if name == "antisymmetric":  # h' = h + eps tanh((W - W^T - gamma I) h + ...)
    slope = (h1 - h0) / cell.epsilon
    expected = np.eye(4) + cell.epsilon * (1 - slope ** 2)[:, None] * m
  else:
    expected = (1 - h1 ** 2)[:, None] * m
  # central differences at eps = 1e-2 of a float32 step: truncation eps^2 / 6 max|tanh'''| (2)
  # |M_ij|^3 = 3.3e-5 |M_ij|^3 plus rounding 2 u / (2 eps) = 6e-6; 2e-3 holds |M_ij| <= 3.9
  # (here |M_ij| <= 1.5: at most 1.2e-4)
  np.testing.assert_allclose(fd, expected, atol=2e-3)


def test_gated_cells_name_one_matrix_per_gate():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  x = jnp.ones((2, 3, 2))
  expect = {"lstm": {"i", "f", "g", "o"}, "gru": {"r", "z", "n"}, "ncgru": {"r", "u", "c"},
            "goru": {"r", "z", "c"}}
  for name, gates in expect.items():
    cell = cells.make_cell(name, 4)
    params = _layer_params(cell, x)
    mats = diagnostics.transition_matrices(cell, params)
    assert set(mats) == gates, name
  gru = cells.make_cell("gru", 4)
  params = _layer_params(gru, x)
  np.testing.assert_allclose(diagnostics.transition_matrices(gru, params)["r"],
                             np.asarray(params["hr"]["kernel"]).T)


def test_spectrum_matches_numpy_and_is_jit_safe():
  rng = np.random.RandomState(0)
  m = rng.normal(size=(6, 6)).astype(np.float32)
  s = jax.jit(diagnostics.spectrum)(jnp.asarray(m))
  # float32 eigenvalues of a non-normal 6 x 6 matrix: the QR iteration's rounding times
  # kappa(lambda) ||m||_2 = 2.2 x 4.7 = 10: 10 times a 400-term chain is F32_LONG's
  np.testing.assert_allclose(np.sort_complex(np.asarray(s["eigenvalues"])),
                             np.sort_complex(np.linalg.eigvals(m)), atol=tol.F32_LONG["atol"])
  # float32 SVD: each sigma_i moves by the rounding of the m.size-term chain times ||m||_2
  # (Weyl), relative to the smallest cond(m) = 9.4 times that
  np.testing.assert_allclose(s["singular_values"], np.linalg.svd(m, compute_uv=False),
                             rtol=tol.probabilistic(m.size) * np.linalg.cond(m))
  # the same np.linalg.eigvals of the same float32 matrix on both sides
  np.testing.assert_allclose(s["spectral_radius"], np.abs(np.linalg.eigvals(m)).max(),
                             rtol=tol.F32["rtol"])
  # float32 6-term products, then Frobenius norms of 36 entries
  np.testing.assert_allclose(s["orthogonality_error"], np.linalg.norm(m.T @ m - np.eye(6)),
                             rtol=tol.F32["rtol"])
  np.testing.assert_allclose(s["normality_error"],
                             np.linalg.norm(m @ m.T - m.T @ m) / np.sum(m * m),
                             rtol=tol.F32["rtol"])
  q = np.linalg.qr(m)[0]  # float32 Householder QR: orthogonal to the rounding of 6-term chains
  assert float(diagnostics.orthogonality_error(q)) < tol.F32["atol"]
  assert float(diagnostics.normality_error(q)) < tol.F32["atol"]
  assert float(diagnostics.normality_error(np.triu(m, 1) + np.eye(6))) > 0.1


# ------------------------------------------------------------------ gradient flow


def test_loss_gradient_norms_equal_finite_differences_of_a_state_perturbation():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  cell = cells.make_cell("rnn", 3)
  x = jax.random.normal(jax.random.key(0), (2, 6, 2))
  params = _layer_params(cell, x)
  loss = lambda h: jnp.sum(h[:, -1] ** 2) + 0.5 * jnp.sum(h[:, 2])
  norms = np.asarray(diagnostics.loss_gradient_norms(cell, params, x, loss))
  assert norms.shape == (6,)
  f = jax.jit(lambda e: loss(diagnostics.perturbed_states(cell, params, x, e)))
  zero = np.zeros((2, 6, 3), np.float32)
  eps = 1e-2
  for t in (0, 2, 5):
    g = np.zeros((2, 3))
    for b in range(2):
      for i in range(3):
        e = zero.copy()
        e[b, t, i] = eps
        g[b, i] = (float(f(jnp.asarray(e))) - float(f(jnp.asarray(-e)))) / (2 * eps)
    # central differences at eps = 1e-2 of the float32 loss (|L| = 3.6): rounding
    # ulp(L) / (2 eps) = 1.2e-5 per entry, truncation eps^2 |L'''| / 6 = 1.7e-5 |L'''|; over
    # sqrt(6) entries against the smallest norm (0.33), 2e-2 holds |L'''| up to 150
    np.testing.assert_allclose(norms[t], np.linalg.norm(g), rtol=2e-2)


def test_state_jacobian_norms_equal_the_full_jacobian():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  cell = cells.make_cell("lstm", 3)
  x = jax.random.normal(jax.random.key(0), (2, 5, 2))
  params = _layer_params(cell, x)
  norms = np.asarray(diagnostics.state_jacobian_norms(cell, params, x))
  e = jnp.zeros((2, 5, 3))
  jac = jax.jacrev(lambda e_: diagnostics.perturbed_states(cell, params, x, e_)[:, -1])(e)
  # jac[b, i, b', t, j]: per element b = b'
  per = np.stack([np.sqrt(np.sum(np.asarray(jac[b, :, b]) ** 2, axis=(0, 2)))
                  for b in range(2)])
  # float32 VJPs through T = 5 LSTM steps of 4 gates x 3 units: 60 terms
  np.testing.assert_allclose(norms, per.mean(0), rtol=tol.F32["rtol"])
  # d h_T / d h_T = I: exact ones, then one sum of 3, a sqrt and a mean of 2
  assert norms[-1] == pytest.approx(np.sqrt(3), rel=tol.F32_SHORT["rtol"])


def test_perturbed_states_without_perturbation_are_the_layer_outputs():
  from lvf_jax import cells, layers  # pylint: disable=g-import-not-at-top
  x = jax.random.normal(jax.random.key(0), (2, 7, 3))
  for name in ("lvf", "gru", "lstm", "urnn"):
    cell = cells.make_cell(name, 4)
    params = _layer_params(cell, x)
    ys = layers.Recurrent(cell).apply({"params": {"cell": params}}, x)
    zero = jnp.zeros(ys.shape, ys.dtype)
    # float32, two codings of T = 7 steps of <= 4 gates x 4 units: 112 terms
    np.testing.assert_allclose(diagnostics.perturbed_states(cell, params, x, zero), ys,
                               **tol.F32)


def test_hidden_pca_matches_numpy_svd():
  rng = np.random.RandomState(1)
  h = rng.normal(size=(3, 10, 5)) @ np.diag([3, 1, 0.5, 0.1, 0.01])
  proj, ratio = diagnostics.hidden_pca(jnp.asarray(h, jnp.float32), k=2)
  flat = h.reshape(-1, 5) - h.reshape(-1, 5).mean(0)
  _, s, vt = np.linalg.svd(flat, full_matrices=False)
  # float32 PCA of 30 x 5 rows against float64: a 150-term chain, sigma_1 / sigma_2 = 3.4
  # for the ratio and |proj| <= 6.2 for the projections: within the F32_LONG chain
  np.testing.assert_allclose(ratio, s[:2] ** 2 / np.sum(s ** 2), rtol=tol.F32_LONG["rtol"])
  np.testing.assert_allclose(np.abs(proj.reshape(-1, 2)), np.abs(flat @ vt[:2].T),
                             atol=tol.F32_LONG["atol"])


# ------------------------------------------------------------------ models, training, plots


def test_model_diagnostics_of_a_stack_and_in_training(tmp_path):
  from lvf_jax import cells, models, train  # pylint: disable=g-import-not-at-top
  from lvf_jax.train.config import make_config  # pylint: disable=g-import-not-at-top
  m = models.SequencePredictor(cells=[cells.LVFRNNCell(4), cells.GRUCell(4)], num_outputs=3)
  params = m.init(jax.random.key(0), jnp.ones((2, 5, 3)))["params"]
  d = diagnostics.model_diagnostics(m, params)
  assert set(d) == {"layer_0/recurrent/spectral_radius", "layer_0/recurrent/orthogonality_error",
                    "layer_0/divergence_norm"} | {f"layer_1/{g}/{k}" for g in "rzn" for k in (
                        "spectral_radius", "orthogonality_error")}
  c_v = diagnostics.transition_matrices(m.cells[0], params["rnn"]["layer_0"]["cell"])
  np.testing.assert_allclose(d["layer_0/recurrent/spectral_radius"],
                             np.abs(np.linalg.eigvals(np.asarray(c_v["recurrent"]))).max(),
                             rtol=tol.F32["rtol"])  # one np.linalg.eigvals on both sides
  c = make_config("copy", {"T": 5}, "exprnn", 6, train=dict(
      steps=4, batch_size=4, eval_every=2, eval_size=8, progress_bar=False, tensorboard=False))
  train.train_and_evaluate(c, str(tmp_path))
  import json  # pylint: disable=g-import-not-at-top
  rows = [json.loads(l) for l in open(tmp_path / "metrics.jsonl")]
  diag = [r for r in rows if r["split"] == "diagnostics"]
  assert [r["step"] for r in diag] == [2, 4]
  # expm(A) of a 6-wide skew-symmetric A in float32: a matrix function, the F32_LONG chain
  assert all(r["layer_0/recurrent/orthogonality_error"] < tol.F32_LONG["atol"] for r in diag)
  assert (tmp_path / "diagnostics.png").stat().st_size > 1000


def test_plots_return_axes_and_leave_pyplot_alone():
  import matplotlib  # pylint: disable=g-import-not-at-top
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  backend, figures = matplotlib.get_backend(), plt.get_fignums()
  ax = diagnostics.plot_spectrum(np.exp(1j * np.linspace(0, 6, 8)), label="C_V")
  assert len(ax.collections) == 1 and len(ax.lines) == 1
  ax = diagnostics.plot_gradient_flow({"rnn": np.arange(1, 5.0), "lvf": np.ones(4)})
  assert len(ax.lines) == 2
  fig = ax.figure
  ax2 = diagnostics.plot_pca(np.zeros((2, 6, 2)), ax=fig.add_subplot(2, 2, 4))
  assert ax2.figure is fig
  assert matplotlib.get_backend() == backend and plt.get_fignums() == figures


def test_nnrnn_schur_factors_rebuild_the_transition_matrix():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  cell = cells.NNRNNCell(6)
  params = _layer_params(cell, jnp.ones((2, 3, 2)))
  f = diagnostics.schur_factors(cell, params)
  p, lam, t = (np.asarray(f[k], np.float64) for k in ("P", "Lambda", "T"))
  # P = expm of a 6-wide skew matrix in float32: a few 6-term products
  np.testing.assert_allclose(p.T @ p, np.eye(6), atol=tol.F32["atol"])
  assert np.all(np.triu(t) == 0)
  g, th = np.asarray(f["gamma"]), np.asarray(f["theta"])
  np.testing.assert_allclose(lam[:2, :2], g[0] * np.array([[np.cos(th[0]), -np.sin(th[0])],
                                                          [np.sin(th[0]), np.cos(th[0])]]),
                             atol=tol.F32_SHORT["atol"])  # float32 gamma cos(theta): 2 roundings
  m = diagnostics.transition_matrices(cell, params)["recurrent"]
  # float32 V against float64 products of its float32 factors: two 6-term products
  np.testing.assert_allclose(m, p @ (lam + t) @ p.T, atol=tol.F32["atol"])
  with pytest.raises(ValueError, match="must be an nnRNN cell"):
    diagnostics.schur_factors(cells.LVFRNNCell(4), {})


def test_loss_gradients_are_per_example_step_and_unit_and_give_the_norms():
  from lvf_jax import cells  # pylint: disable=g-import-not-at-top
  cell = cells.make_cell("gru", 3)
  x = jax.random.normal(jax.random.key(0), (2, 5, 2))
  params = _layer_params(cell, x)
  loss = lambda h: jnp.sum(h[:, -1] ** 2)
  g = diagnostics.loss_gradients(cell, params, x, loss)
  assert g.shape == (2, 5, 3)
  h = diagnostics.perturbed_states(cell, params, x, jnp.zeros((2, 5, 3)))
  # dL/dh_T of sum h_T^2; float32, two compilations of T = 5 GRU steps of 3 gates x 3 units
  np.testing.assert_allclose(g[:, -1], 2 * h[:, -1], rtol=tol.F32["rtol"])
  np.testing.assert_allclose(diagnostics.loss_gradient_norms(cell, params, x, loss),
                             np.sqrt(np.sum(np.asarray(g) ** 2, axis=(0, 2))),
                             rtol=tol.F32["rtol"])  # float32 sums of 2 x 3 squares
