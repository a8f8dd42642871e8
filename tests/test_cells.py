"""lvfRNN, expRNN and scoRNN cells against their papers' equations, written independently
in NumPy (column form; see np_reference.py).

Row-vector convention pinned here: every cell computes ``h' = f(h @ K + ...)`` with
``K = M.T`` for the paper's column-form ``M`` (``M @ h``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from lvf_jax import cells, geometry, layers
from np_reference import (B, M, N, _np, init_apply, kernel_of, np_directional_derivative,
                          np_lvf_matrix, np_modrelu, np_skew_from_triu,
                          replace_param)
import tolerances as tol

# --------------------------------------------------------------------- lvfRNN


@pytest.mark.parametrize("integrator", ["euler", "midpoint", "exp"])
@pytest.mark.parametrize("activation", ["tanh", "modrelu"])
def test_lvf_step_matches_eq6(integrator, activation):
  tau = 0.7
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator=integrator, tau=tau, activation=activation)
  variables, _, _, _ = init_apply(cell)
  rng = np.random.default_rng(0)
  v = rng.uniform(size=(N, N))  # a general field (non-zero divergence and diagonal)
  variables = replace_param(variables, "vector_field", v)
  variables = replace_param(variables, "bias", rng.normal(size=N) * 0.1)
  _, h, x, out = init_apply(cell, key=3)
  out = cell.apply(variables, h, x)[0]
  p = variables["params"]
  c = np_lvf_matrix(_np(p["vector_field"]), integrator, tau)
  u_col = _np(p["input"]["kernel"]).T  # U acting on column x
  b = _np(p["bias"])
  for i in range(B):
    z = c @ _np(h[i]) + u_col @ _np(x[i])
    want = np.tanh(z + b) if activation == "tanh" else np_modrelu(z, b)
    # one step: the 6 x 6 map C of -tau D_V (Euler, a solve, a Taylor sum), z of N + M terms
    np.testing.assert_allclose(np.asarray(out[i]), want, **tol.F32)


def test_lvf_vector_field_dof():
  """D_V depends only on V^T - V: the diagonal and the symmetric part are ignored."""
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator="midpoint", tau=0.5)
  variables, _, _, _ = init_apply(cell)
  rng = np.random.default_rng(1)
  v = rng.normal(size=(N, N))
  s = rng.normal(size=(N, N))
  k1 = cell.apply(replace_param(variables, "vector_field", v), method=lambda c: c.prepare())
  k2 = cell.apply(replace_param(variables, "vector_field", v + s + s.T + np.diag(rng.normal(size=N))),
                  method=lambda c: c.prepare())
  # v + s + s^T is rounded to float32 (entries up to 4), then the same 6 x 6 solve
  np.testing.assert_allclose(k1["kernel"], k2["kernel"], **tol.F32)
  g = jax.grad(lambda vv: jnp.sum(cell.apply(replace_param(variables, "vector_field", vv),
                                             method=lambda c: c.prepare())["kernel"] ** 3))(
                                                 jnp.asarray(v, jnp.float32))
  # each g_ab sums the V^T - V term and two divergence terms, at |g| up to 1.2e3 here: the
  # diagonal and g + g^T cancel them, up to F32_SHORT's rounding of those terms
  scale = float(np.max(np.abs(g)))
  np.testing.assert_allclose(np.diag(g), 0.0, atol=tol.F32_SHORT["atol"] * scale)
  # the gradient lies in the skew directions
  np.testing.assert_allclose(g + g.T, 0.0, atol=tol.F32_SHORT["atol"] * scale)


def test_lvf_divergence_free_midpoint_is_orthogonal_cayley():
  tau = 1.3
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator="midpoint", tau=tau, divergence_free=True)
  variables, _, _, _ = init_apply(cell)
  rng = np.random.default_rng(2)
  v = rng.uniform(size=(N, N)) * (1 - np.eye(N))
  variables = replace_param(variables, "vector_field", v)
  k = _np(kernel_of(cell, variables)["kernel"])
  np.testing.assert_allclose(k.T @ k, np.eye(N), atol=tol.F32["atol"])
  # Independent projection onto {div V = 0} (zero diagonal kept) by least squares.
  idx = [(i, j) for i in range(N) for j in range(N) if i != j]
  lmat = np.zeros((N, len(idx)))
  for col, (i, j) in enumerate(idx):  # div_a = sum_j V_ja - V_aj
    lmat[j, col] += 1.0
    lmat[i, col] -= 1.0
  vec = np.array([v[i, j] for i, j in idx])
  proj = vec - lmat.T @ np.linalg.lstsq(lmat @ lmat.T, lmat @ vec, rcond=None)[0]
  v_free = np.zeros((N, N))
  for col, (i, j) in enumerate(idx):
    v_free[i, j] = proj[col]
  d, div = np_directional_derivative(v_free)
  # float64 least squares on the 30 off-diagonal entries; L L^T = 2 N I - 2 1 1^T has its
  # nonzero eigenvalues all equal (condition number 1 on the fitted space)
  np.testing.assert_allclose(div, 0.0, atol=tol.F64_CONDITIONED["atol"])
  np.testing.assert_allclose(d, -d.T, atol=tol.F64_CONDITIONED["atol"])
  eye = np.eye(N)
  cay = np.linalg.solve(eye + tau / 2 * d, eye - tau / 2 * d)
  np.testing.assert_allclose(k, cay.T, **tol.F32)


def test_lvf_separate_divergence_is_the_midpoint_map_of_its_field():
  """With ``separate_divergence`` the kernel is eq. 16 of the field whose divergence-free
  part is ``vector_field``'s and whose eq. 8 divergence is the parameter (mean removed)."""
  tau = 1.3
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator="midpoint", tau=tau, separate_divergence=True)
  variables, _, _, _ = init_apply(cell)
  assert variables["params"]["vector_field_divergence"].shape == (N,)
  rng = np.random.default_rng(5)
  v = rng.uniform(size=(N, N)) * (1 - np.eye(N))
  a = 0.05 * rng.standard_normal(N)
  variables = replace_param(replace_param(variables, "vector_field", v),
                            "vector_field_divergence", a)
  k = _np(kernel_of(cell, variables)["kernel"])
  # independent construction: v's divergence-free part by the closed form of the projection
  # (V + grad(div V) / 2n), then the gradient field of divergence a - mean(a)
  _, div_v = np_directional_derivative(v)
  ac = a - a.mean()
  field = v + (div_v[:, None] - div_v[None, :]) / (2 * N) - (ac[:, None] - ac[None, :]) / (2 * N)
  d, div = np_directional_derivative(field)
  np.testing.assert_allclose(div, ac, **tol.F64)
  eye = np.eye(N)
  np.testing.assert_allclose(k, np.linalg.solve(eye + tau / 2 * d, eye - tau / 2 * d).T,
                             **tol.F32)
  # a non-zero divergence: not orthogonal. |a - mean(a)| <= 0.07 at tau = 1.3 moves k^T k
  # about 0.1 from I (0.16 for this draw), 1e-3 is 100 times F32's rounding
  assert np.abs(k.T @ k - eye).max() > 1e-3
  with pytest.raises(ValueError, match="'separate_divergence' and 'divergence_free'"):
    init_apply(cells.LVFRNNCell(N, separate_divergence=True, divergence_free=True))


def test_lvf_fixes_constants_and_centred_input_init_keeps_the_mean_state_at_zero():
  """``D_V 1 = 0`` (eq. 15), so ``C_V 1 = 1``: a linear recurrence adds the inputs' mean
  drive at every step (NumPy loop), unless ``U`` starts centred over the hidden units."""
  n, m, steps = 16, 3, 50
  x = np.ones(m)  # a constant input, as the copy task's blank
  for centred in (False, True):
    cell = cells.LVFRNNCell(n, integrator="midpoint", tau=2.0, divergence_free=True,
                            center_input_init=centred)
    variables = cell.init(jax.random.key(1), jnp.zeros((1, n)), jnp.zeros((1, m)))
    u_kernel = _np(variables["params"]["input"]["kernel"])  # row form (m, n)
    c = _np(kernel_of(cell, variables)["kernel"]).T  # column form C_V
    np.testing.assert_allclose(c @ np.ones(n), np.ones(n), **tol.F32)
    h, scale = np.zeros(n), 1.0
    for _ in range(steps):
      h = c @ h + x @ u_kernel
      scale = max(scale, float(np.max(np.abs(h))))
    mean_drive = (x @ u_kernel).mean()
    # 1^T C = 1^T holds to C's float32 rounding (16-term column sums): a chain of steps * n
    # = 800 terms, at the magnitude of h (up to 33 here) that it multiplies
    np.testing.assert_allclose(h.mean(), steps * mean_drive, rtol=tol.F32_LONG["rtol"],
                               atol=tol.F32_LONG["atol"] * scale)
    if centred:
      np.testing.assert_allclose(u_kernel.mean(axis=1), 0.0, atol=tol.F32["atol"])
      assert abs(h.mean()) < tol.F32_LONG["atol"] * scale
    else:
      assert abs(mean_drive) > 1e-3


@pytest.mark.parametrize("make", [
    lambda: cells.LVFRNNCell(N, integrator="midpoint", tau=2.0, activation="modrelu",
                             divergence_free=True, nonnegative_modrelu_bias=True),
    lambda: cells.ExpRNNCell(N, nonnegative_modrelu_bias=True)], ids=["lvf", "exprnn"])
def test_nonnegative_modrelu_bias_steps_with_abs_b_and_keeps_the_gradient_norm(make):
  """With ``|b|`` as modReLU's bias, a T-step NumPy loop of eq. (6) with ``|b|`` matches the
  fused layer; with an orthogonal map no unit is dead, so ||dh_T/dh_1|| = ||I|| = sqrt(n),
  while the same negative ``b`` used as is kills units and the gradient."""
  cell = make()
  steps = 40
  variables, _, _, _ = init_apply(cell)
  b = -np.linspace(0.2, 1.0, N)  # negative: modReLU's dead zone |z| < -b
  variables = replace_param(variables, "bias", b)
  p = variables["params"]
  k = _np(kernel_of(cell, variables)["kernel"])  # row form K = M^T
  np.testing.assert_allclose(k @ k.T, np.eye(N), atol=tol.F32["atol"])
  x = 0.3 * np.random.default_rng(4).normal(size=(2, steps, M))
  h, want = np.zeros((2, N)), []
  for t in range(steps):
    h = np_modrelu(h @ k + x[:, t] @ _np(p["input"]["kernel"]), np.abs(b))
    want.append(h)
  layer = layers.Recurrent(cell)
  got = layer.apply({"params": {"cell": p}}, jnp.asarray(x, jnp.float32))
  # steps = 40 of N + M = 9 terms, at |h| up to 48
  np.testing.assert_allclose(np.asarray(got), np.stack(want, 1), **tol.F32_LONG)

  from lvf_jax import diagnostics
  xs = jnp.asarray(x, jnp.float32)
  kept = np.asarray(diagnostics.state_jacobian_norms(cell, p, xs))
  # a product of steps = 40 float32 orthogonal 6 x 6 kernels (each orthogonal to F32)
  np.testing.assert_allclose(kept, np.sqrt(N), rtol=tol.F32_LONG["rtol"])
  plain = cell.clone(nonnegative_modrelu_bias=False)
  lost = np.asarray(diagnostics.state_jacobian_norms(plain, p, xs))
  assert lost[0] < 0.5 * np.sqrt(N)


def test_nonnegative_modrelu_bias_trains_b_through_its_absolute_value():
  cell = cells.LVFRNNCell(N, activation="modrelu", nonnegative_modrelu_bias=True)
  variables, h, x, _ = init_apply(cell)
  b = np.array([-0.3, 0.2, -0.1, 0.4, -0.5, 0.6])
  variables = replace_param(variables, "bias", b)

  def loss(bias):
    return jnp.sum(cell.apply(replace_param(variables, "bias", bias), h, x)[0] ** 2)

  g = np.asarray(jax.grad(loss)(jnp.asarray(b, jnp.float32)))
  g_abs = np.asarray(jax.grad(loss)(jnp.asarray(np.abs(b), jnp.float32)))
  np.testing.assert_allclose(g, np.sign(b) * g_abs, **tol.F32)
  assert np.all(g != 0)


def test_nonnegative_modrelu_bias_needs_modrelu():
  cell = cells.LVFRNNCell(N, activation="tanh", nonnegative_modrelu_bias=True)
  with pytest.raises(ValueError, match="nonnegative_modrelu_bias=True needs activation"):
    init_apply(cell)


def test_lvf_input_init_scale_scales_the_initial_input_kernel_only():
  x, h = jnp.ones((1, M)), jnp.zeros((1, N))
  for centred in (False, True):
    one = cells.LVFRNNCell(N, center_input_init=centred).init(jax.random.key(2), h, x)
    small = cells.LVFRNNCell(N, center_input_init=centred, input_init_scale=0.01).init(
        jax.random.key(2), h, x)
    np.testing.assert_allclose(small["params"]["input"]["kernel"],
                               0.01 * np.asarray(one["params"]["input"]["kernel"]),
                               rtol=tol.F32_SHORT["rtol"])
    for name in ("vector_field", "bias"):
      np.testing.assert_array_equal(small["params"][name], one["params"][name])
  with pytest.raises(ValueError, match="'input_init_scale' must be a finite number > 0"):
    cells.LVFRNNCell(N, input_init_scale=0.0).init(jax.random.key(2), h, x)


def test_lvf_euler_tends_to_identity():
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator="euler", tau=1.0)
  variables, _, _, _ = init_apply(cell)
  rng = np.random.default_rng(3)
  v = rng.uniform(size=(N, N))
  d, _ = np_directional_derivative(v)
  errs = []
  for tau in (1e-1, 1e-2, 1e-3):
    c = cells.LVFRNNCell(N, parametrization="paper", integrator="euler", tau=tau)
    k = _np(c.apply(replace_param(variables, "vector_field", v), method=lambda m: m.prepare())["kernel"])
    errs.append(np.max(np.abs(k - np.eye(N))))
    # k = I - tau D is rounded to float32 at magnitude 1 (N-term divergences): divided by tau
    np.testing.assert_allclose((np.eye(N) - k.T) / tau, d, atol=tol.probabilistic(N) / tau)
  # k - I = -tau D: tau max|D| = 1e-3 * 2.2 for this field, below 1e-2
  assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-2


def test_lvf_div_penalty_sown_and_differentiable():
  lam = 0.3
  cell = cells.LVFRNNCell(N, parametrization="paper", div_penalty=lam)
  layer = layers.Recurrent(cell)
  x = jax.random.normal(jax.random.key(0), (B, 5, M))
  variables = layer.init(jax.random.key(1), x)
  rng = np.random.default_rng(4)
  v = rng.uniform(size=(N, N))
  params = jax.tree_util.tree_map(lambda a: a, variables["params"])
  params["cell"]["vector_field"] = jnp.asarray(v, jnp.float32)

  def reg(p):
    _, state = layer.apply({"params": p}, x, mutable=["losses"])
    return layers.regularization_loss(state)

  _, div = np_directional_derivative(v)
  np.testing.assert_allclose(reg(params), lam * np.sum(div ** 2), rtol=tol.F32["rtol"])
  terms = layers.regularization_terms(layer.apply({"params": params}, x, mutable=["losses"])[1])
  assert list(terms) == ["cell/div_penalty"]
  g = jax.grad(reg)(params)["cell"]["vector_field"]
  want = 2 * lam * (div[None, :] - div[:, None])  # d/dV_ab of lam sum_i div_i^2
  np.testing.assert_allclose(g, want, **tol.F32)  # N-term divergences, squared and summed
  # lambda = 0: nothing sown.
  layer0 = layers.Recurrent(cells.LVFRNNCell(N, parametrization="paper"))
  assert layers.regularization_terms(layer0.apply({"params": params}, x, mutable=["losses"])[1]) == {}


def test_lvf_paper_default_init_is_divergence_free():
  """Alg. 2's doubly-stochastic field, the default under ``parametrization='paper'``."""
  variables, _, _, _ = init_apply(cells.LVFRNNCell(N, parametrization="paper"))
  v = _np(variables["params"]["vector_field"])
  np.testing.assert_allclose(np.diag(v), 0.0)
  np.testing.assert_allclose(v.sum(0), 1.0, **tol.F32)
  np.testing.assert_allclose(v.sum(1), 1.0, **tol.F32)


def test_lvf_natural_default_starts_at_a_spread_rotation():
  """The default (``'natural'``, ``'exp'``, tau 1, :func:`geometry.rotation_field`): the
  field starts divergence-free, ``C_V`` orthogonal with eigen-angles spread over the circle
  (Alg. 2's field would give angles near 0: ``C_V`` close to ``I``)."""
  n = 32
  cell = cells.LVFRNNCell(n)
  assert (cell.parametrization, cell.integrator, cell.tau) == ("natural", "exp", 1.0)
  variables = cell.init(jax.random.key(0), jnp.zeros((B, n)), jnp.zeros((B, M)))
  field = cell.apply(variables, method=lambda c: c.field())
  np.testing.assert_allclose(_np(geometry.divergence(field)), 0.0, atol=tol.F32["atol"] * n)
  k = _np(cell.apply(variables, method=lambda c: c.prepare())["kernel"])
  np.testing.assert_allclose(k @ k.T, np.eye(n), **tol.F32)  # expm of an n-term skew matrix
  angles = np.abs(np.angle(np.linalg.eigvals(k)))
  assert np.median(angles) > 0.5 and angles.max() > 2.0
  paper = cells.LVFRNNCell(n, parametrization="paper")
  kp = _np(paper.apply(paper.init(jax.random.key(0), jnp.zeros((B, n)), jnp.zeros((B, M))),
                       method=lambda c: c.prepare())["kernel"])
  assert np.abs(np.angle(np.linalg.eigvals(kp))).max() < 0.5


def _moduli_after_step(n, parametrization, lr, seed=0):
  """The largest ``|log |lambda||`` over the eigenvalues of ``C_V`` (``'exp'``, tau 1) after
  one step of size ``lr`` on every stored entry of a divergence-free field."""
  cell = cells.LVFRNNCell(n, parametrization=parametrization)
  variables = cell.init(jax.random.key(seed), jnp.zeros((B, n)), jnp.zeros((B, M)))
  rng = np.random.default_rng(seed)
  params = dict(variables["params"])
  if parametrization == "paper":  # start from the same divergence-free field
    params["vector_field"] = geometry.project_divergence_free(
        jnp.asarray(rng.uniform(size=(n, n)), jnp.float32))
  # a sign step that Adam can take: +lr on the rows of one half of the units, -lr on the
  # others (under 'paper' it moves every (div V)_i by n lr), and the same signs on a
  u = np.where(np.arange(n) < n // 2, 1.0, -1.0)
  steps = {"vector_field": np.outer(u, np.ones(n)), "vector_field_divergence": u}
  for name, step in steps.items():
    if name in params:
      params[name] = params[name] + lr * jnp.asarray(step, jnp.float32)
  k = _np(cell.apply({"params": params}, method=lambda c: c.prepare())["kernel"])
  return float(np.abs(np.log(np.abs(np.linalg.eigvals(k.astype(np.float64))))).max())


def test_lvf_natural_step_moves_c_v_off_the_circle_by_o_lr_at_every_width():
  """Bendixson: the eigenvalues of ``exp(-tau D_V)`` have moduli ``exp(-tau Re lambda)`` with
  ``Re lambda`` in ``[-max div V, -min div V]``; under ``'natural'`` a step of ``lr`` on every
  stored entry moves ``div V = a - mean(a)`` by at most ``2 lr``, at any ``n``, where under
  ``'paper'`` it moves ``(div V)_i``, a sum of ``2 (n - 1)`` entries, by up to ``2 (n - 1) lr``."""
  lr = 1e-3
  for n in (8, 256):
    # 2 lr, plus float32 rounding of expm's moduli (n-term products at magnitude 1)
    assert _moduli_after_step(n, "natural", lr) <= 2 * lr + 100 * n * np.finfo(np.float32).eps
  assert _moduli_after_step(256, "paper", lr) > 10 * lr  # the same step, the paper's V
  with pytest.raises(ValueError, match="'parametrization' must be one of"):
    init_apply(cells.LVFRNNCell(N, parametrization="scaled"))


# --------------------------------------------------------------- expRNN / scoRNN


@pytest.mark.parametrize("init", ["henaff", "cayley", "random"])
def test_exprnn_step_matches_paper(init):
  cell = cells.ExpRNNCell(N, orthogonal_init=init)
  variables, h, x, out = init_apply(cell)
  p = variables["params"]
  w = scipy.linalg.expm(np_skew_from_triu(_np(p["skew"])))
  # SciPy's float64 expm of a 6 x 6 skew matrix, against orthogonality
  np.testing.assert_allclose(w.T @ w, np.eye(N), atol=tol.F64_CONDITIONED["atol"])
  assert "bias" not in p["input"]  # U has no bias (expRNN)
  u_col = _np(p["input"]["kernel"]).T
  for i in range(B):
    want = np_modrelu(w @ _np(h[i]) + u_col @ _np(x[i]), _np(p["bias"]))
    np.testing.assert_allclose(out[i], want, **tol.F32)


def test_exprnn_dynamic_base():
  cell = cells.ExpRNNCell(N, use_base=True)
  variables, h, x, _ = init_apply(cell)
  np.testing.assert_array_equal(variables["dtriv"]["base"], np.eye(N))
  q = np.linalg.qr(np.random.default_rng(5).normal(size=(N, N)))[0]
  variables = {**variables, "dtriv": {"base": jnp.asarray(q, jnp.float32)}}
  out = cell.apply(variables, h, x)[0]
  p = variables["params"]
  w = q @ scipy.linalg.expm(np_skew_from_triu(_np(p["skew"])))
  want = np_modrelu(_np(h) @ w.T + _np(x) @ _np(p["input"]["kernel"]), _np(p["bias"])[None])
  np.testing.assert_allclose(out, want, **tol.F32)


@pytest.mark.parametrize("cls", [cells.ExpRNNCell, cells.ScoRNNCell, cells.NNRNNCell])
def test_matrix_parameterisation(cls):
  cell = cls(N, orthogonal_param="matrix")
  variables, h, x, out = init_apply(cell)
  p = variables["params"]
  assert "skew" not in p
  w = _np(p["orthogonal"])
  np.testing.assert_allclose(w.T @ w, np.eye(N), atol=tol.F32["atol"])
  if cls is not cells.NNRNNCell:
    want = np_modrelu(_np(h) @ w.T + _np(x) @ _np(p["input"]["kernel"]), _np(p["bias"])[None])
    np.testing.assert_allclose(out, want, **tol.F32)


@pytest.mark.parametrize("rho", [0, 2, 5, N])
def test_scornn_step_matches_paper_column_form(rho):
  cell = cells.ScoRNNCell(N, rho=rho)
  variables, h, x, out = init_apply(cell)
  rng = np.random.default_rng(6)
  variables = replace_param(variables, "skew", rng.normal(size=(N, N)))
  out = cell.apply(variables, h, x)[0]
  p = variables["params"]
  a = np_skew_from_triu(_np(p["skew"]))
  d = np.diag([1.0] * (N - rho) + [-1.0] * rho)
  eye = np.eye(N)
  w = np.linalg.solve(eye + a, eye - a) @ d  # paper: D acts first (scales columns)
  assert np.isclose(np.linalg.det(w), (-1) ** rho)
  u = _np(p["input"]["kernel"])
  assert np.max(np.abs(u)) <= 0.01
  for i in range(B):
    want = np_modrelu(w @ _np(h[i]) + u.T @ _np(x[i]), _np(p["bias"]))
    np.testing.assert_allclose(out[i], want, **tol.F32)
  if 0 < rho < N:  # the transposed convention (D acting last) would differ
    k = _np(kernel_of(cell, variables)["kernel"])
    # negative check: the conventions differ by 1.2-1.3 (rho = 2, 5), 1e-3 is 100 F32 roundings
    assert not np.allclose(k, (d @ np.linalg.solve(eye + a, eye - a)).T, atol=1e-3)


def test_scornn_default_rho():
  cell = cells.ScoRNNCell(N)
  variables, _, _, _ = init_apply(cell)
  k = _np(kernel_of(cell, variables)["kernel"])
  assert np.isclose(np.linalg.det(k), (-1) ** (N // 2))


@settings(max_examples=15)
@given(seed=st.integers(0, 2**16), tau=st.floats(0.01, 20.0),
       integrator=st.sampled_from(["euler", "midpoint", "exp"]))
def test_lvf_properties_hypothesis(seed, tau, integrator):
  """C_V fixes constants (D_V 1 = 0) for every field; divergence-free + midpoint is orthogonal."""
  v = np.random.default_rng(seed).uniform(size=(N, N))
  cell = cells.LVFRNNCell(N, parametrization="paper", integrator=integrator, tau=tau, divergence_free=True)
  variables = {"params": {"vector_field": jnp.asarray(v, jnp.float32),
                          "bias": jnp.zeros((N,), jnp.float32)}}
  k = _np(cell.apply(variables, method=lambda c: c.prepare())["kernel"])
  scale = max(1.0, np.max(np.abs(k)))
  # tau up to 20: a Cayley solve of condition up to 18, or up to 4 squarings of the Taylor
  # sum (each doubles its rounding): F32_LONG's matrix function; 100 draws of each
  # integrator stay below 1.4e-5 (midpoint) and 9.2e-6 (exp) in k^T k - I
  np.testing.assert_allclose(np.ones(N) @ k, np.ones(N),
                             atol=tol.F32_LONG["atol"] * scale)  # row form: 1 K = 1
  if integrator == "midpoint":
    np.testing.assert_allclose(k.T @ k, np.eye(N), atol=tol.F32_LONG["atol"])
  if integrator == "exp":  # exp of a skew generator is orthogonal as well
    np.testing.assert_allclose(k.T @ k, np.eye(N), atol=tol.F32_LONG["atol"])
