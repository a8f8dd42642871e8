"""NC-GRU, AntisymmetricRNN, nnRNN and baseline cells against their papers' equations
(NumPy, column form), the registry, and argument validation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from lvf_jax import cells, layers
from np_reference import (B, M, N, _np, init_apply, kernel_of, np_modrelu, np_sigmoid,
                          np_skew_from_triu)
import tolerances as tol

# ----------------------------------------------------------------------- NC-GRU


@pytest.mark.parametrize("orthogonal_reset", [False, True])
@pytest.mark.parametrize("orthogonal_param", ["skew", "matrix"])
def test_ncgru_step_matches_eq19(orthogonal_reset, orthogonal_param):
  rho = 2
  cell = cells.NCGRUCell(N, rho=rho, orthogonal_reset=orthogonal_reset,
                         orthogonal_param=orthogonal_param)
  variables, h, x, _ = init_apply(cell)
  rng = np.random.default_rng(7)
  p = dict(variables["params"])
  for k in ("bias_r", "bias_u", "bias_c"):
    p[k] = jnp.asarray(rng.normal(size=N) * 0.3, jnp.float32)
  if orthogonal_param == "skew":
    p["skew_c"] = jnp.asarray(rng.normal(size=(N, N)), jnp.float32)
  variables = {"params": p}
  out = cell.apply(variables, h, x)[0]
  d = np.diag([1.0] * (N - rho) + [-1.0] * rho)
  eye = np.eye(N)

  def orth(s):
    if orthogonal_param == "matrix":
      return _np(p[f"orthogonal_{s}"])
    a = np_skew_from_triu(_np(p[f"skew_{s}"]))
    return np.linalg.solve(eye + a, eye - a) @ d

  u_c = orth("c")
  u_r = orth("r") if orthogonal_reset else _np(p["recurrent_r"]).T  # column form
  assert ("skew_r" in p or "orthogonal_r" in p) == orthogonal_reset
  u_u = _np(p["recurrent_u"]).T
  w = _np(p["input"]["kernel"]).T  # (3n, m): [W_r; W_u; W_c]
  w_r, w_u, w_c = w[:N], w[N:2 * N], w[2 * N:]
  for i in range(B):
    hh, xx = _np(h[i]), _np(x[i])
    r = np_sigmoid(w_r @ xx + u_r @ hh + _np(p["bias_r"]))
    z = np_sigmoid(w_u @ xx + u_u @ hh + _np(p["bias_u"]))
    c = np_modrelu(w_c @ xx + u_c @ (r * hh), _np(p["bias_c"]))  # r BEFORE the matmul
    want = (1 - z) * hh + z * c
    np.testing.assert_allclose(out[i], want, **tol.F32)


def _released_params(orthogonal_reset, n, d):
  cell = cells.NCGRUCell(n, orthogonal_reset=orthogonal_reset, init_scheme="released",
                         input_features=d)
  return cell.init(jax.random.key(3), jnp.zeros((1, n)), jnp.zeros((1, d)))["params"]


def _assert_uniform(w, limit):
  """Draws of U(-limit, limit): inside it, and spread as it (the sample std of k uniform
  draws has relative sd sqrt(0.8 / (4 k)); 0.1 is over 6 of them for k >= 1,000)."""
  w = np.ravel(w)
  assert np.abs(w).max() <= limit
  assert abs(w.std() / (limit / math.sqrt(3)) - 1) < 0.1


@pytest.mark.parametrize("orthogonal_reset", [False, True])
def test_ncgru_released_init_follows_the_authors_cell(orthogonal_reset):
  n, d = 128, 40
  p = _released_params(orthogonal_reset, n, d)
  k = _np(p["input"]["kernel"])  # (d, 3n): [W_r | W_u | W_c]
  gate_fan_in = d if orthogonal_reset else d + n
  _assert_uniform(k[:, :2 * n], math.sqrt(6 / gate_fan_in))
  # He-normal (truncated at 2 sd, rescaled): sd sqrt(2 / d); relative sd of the sample sd of
  # k = 5,120 draws about 1 / sqrt(2 k) = 0.01, so 0.06 is 6 of them
  assert abs(k[:, 2 * n:].std() / math.sqrt(2 / d) - 1) < 0.06
  _assert_uniform(p["recurrent_u"], math.sqrt(6 / (n if orthogonal_reset else d + n)))
  assert ("recurrent_r" in p) != orthogonal_reset
  if not orthogonal_reset:
    _assert_uniform(p["recurrent_r"], math.sqrt(6 / (d + n)))
  # modReLU bias U(-0.1, 0.1): the library's own is U(-0.01, 0.01)
  assert 0.05 < np.abs(_np(p["bias_c"])).max() <= 0.1
  biases = np.concatenate([_np(p["bias_r"]), _np(p["bias_u"])])
  if orthogonal_reset:  # N(0, 1): relative sd of the sample sd of 256 draws 0.044; 6 of them
    assert abs(biases.std() - 1) < 0.27
  else:
    np.testing.assert_array_equal(biases, 0.0)


def test_ncgru_released_init_needs_the_input_size():
  n, d = 8, 5
  with pytest.raises(ValueError, match="'input_features' must be the input size d"):
    cells.NCGRUCell(n, init_scheme="released").init(
        jax.random.key(0), jnp.zeros((1, n)), jnp.zeros((1, d)))
  with pytest.raises(ValueError, match="'input_features' is 4 but the inputs have 5"):
    cells.NCGRUCell(n, init_scheme="released", input_features=4).init(
        jax.random.key(0), jnp.zeros((1, n)), jnp.zeros((1, d)))
  with pytest.raises(ValueError, match="argument 'init_scheme' must be one of"):
    cells.NCGRUCell(n, init_scheme="keras").init(
        jax.random.key(0), jnp.zeros((1, n)), jnp.zeros((1, d)))


# -------------------------------------------------------------- AntisymmetricRNN


def np_packed_to_upper(w, n):
  up = np.zeros((n, n))
  k = 0
  for i in range(n):
    for j in range(i + 1, n):
      up[i, j] = w[k]
      k += 1
  return up


@pytest.mark.parametrize("gated", [False, True])
def test_antisymmetric_step_matches_eqs_12_13(gated):
  eps, gamma = 0.3, 0.05
  cls = cells.GatedAntisymmetricRNNCell if gated else cells.AntisymmetricRNNCell
  cell = cls(N, epsilon=eps, gamma=gamma)
  variables, h, x, _ = init_apply(cell)
  p = dict(variables["params"])
  assert p["recurrent_triu"].shape == (N * (N - 1) // 2,)
  p["input"] = {"kernel": p["input"]["kernel"],
                "bias": jnp.asarray(np.random.default_rng(8).normal(size=p["input"]["bias"].shape),
                                    jnp.float32)}
  variables = {"params": p}
  out = cell.apply(variables, h, x)[0]
  w = np_packed_to_upper(_np(p["recurrent_triu"]), N)
  a = w - w.T - gamma * np.eye(N)
  v = _np(p["input"]["kernel"]).T
  bias = _np(p["input"]["bias"])
  for i in range(B):
    hh, xx = _np(h[i]), _np(x[i])
    pre = a @ hh + v[:N] @ xx + bias[:N]
    if gated:
      z = np_sigmoid(a @ hh + v[N:] @ xx + bias[N:])
      want = hh + eps * z * np.tanh(pre)
    else:
      want = hh + eps * np.tanh(pre)
    np.testing.assert_allclose(out[i], want, **tol.F32)


def test_gated_antisymmetric_projects_a_pair():
  """project_inputs returns (x V_h + b_h, x V_z + b_z) from ONE (d, 2n) parameter; step
  accepts the pair or the concatenated array and rejects other shapes."""
  cell = cells.GatedAntisymmetricRNNCell(N, epsilon=0.3)
  variables, h, x, _ = init_apply(cell)
  p = variables["params"]["input"]
  assert p["kernel"].shape == (x.shape[-1], 2 * N) and p["bias"].shape == (2 * N,)
  bias = jnp.asarray(np.random.default_rng(9).normal(size=(2 * N,)), jnp.float32)
  variables = {"params": {**variables["params"], "input": {"kernel": p["kernel"], "bias": bias}}}
  u_h, u_z = cell.apply(variables, x, method=lambda c, xx: c.project_inputs(xx))
  want = _np(x) @ _np(p["kernel"]) + _np(bias)
  np.testing.assert_allclose(u_h, want[:, :N], **tol.F32)
  np.testing.assert_allclose(u_z, want[:, N:], **tol.F32)
  prep = cell.apply(variables, method=lambda c: c.prepare())
  a = cell.step(prep, h, (u_h, u_z))[0]
  b = cell.step(prep, h, jnp.concatenate([u_h, u_z], axis=-1))[0]
  np.testing.assert_allclose(a, b, **tol.F32_SHORT)  # the same step, its inputs sliced
  with pytest.raises(ValueError, match="pair"):
    cell.step(prep, h, u_h)
  with pytest.raises(ValueError, match="pair"):
    cell.step(prep, h, (u_h, u_z, u_z))


def test_antisymmetric_init_statistics():
  n, m = 64, 40
  cell = cells.AntisymmetricRNNCell(n, sigma_w=2.0)
  v = cell.init(jax.random.key(0), jnp.zeros((1, n)), jnp.zeros((1, m)))["params"]
  w = _np(v["recurrent_triu"])
  # sampling error of the std of k normal draws: relative sd 1 / sqrt(2 k); 0.1 is 6 sigma for
  # the n (n - 1) / 2 = 2016 of W, 7 sigma for the m n = 2560 of V
  assert abs(w.std() - 2.0 / math.sqrt(n)) < 0.1 * 2.0 / math.sqrt(n)
  k = _np(v["input"]["kernel"])
  assert abs(k.std() - 1 / math.sqrt(m)) < 0.1 / math.sqrt(m)
  np.testing.assert_array_equal(v["input"]["bias"], 0.0)


def test_antisymmetric_gamma0_imaginary_spectrum():
  cell = cells.AntisymmetricRNNCell(N, gamma=0.0)
  variables, h, x, _ = init_apply(cell)
  k = kernel_of(cell, variables)["kernel"]
  np.testing.assert_allclose(k, -k.T, atol=tol.F32_SHORT["atol"])  # W - W^T, one rounding
  # Jacobian of the ODE right-hand side f(h) = tanh(A h + V x + b) (column form) at a point.
  u = cell.apply(variables, x, method=lambda c, xx: c.project_inputs(xx))
  jac = jax.jacfwd(lambda hh: jnp.tanh(hh @ k + u[0]))(h[0])  # d f_i / d h_j
  eig = np.linalg.eigvals(_np(jac))
  # diag(tanh') A is similar to an antisymmetric matrix: its float32 rounding moves the
  # real parts (9e-10 here)
  np.testing.assert_allclose(eig.real, 0.0, atol=tol.F32["atol"])
  assert np.max(np.abs(eig.imag)) > 1e-2  # negative check: 0.50 for this draw
  # with diffusion gamma > 0 the real parts become negative: -gamma = -0.5, with 0.1 of room
  cell_g = cells.AntisymmetricRNNCell(N, gamma=0.5)
  k_g = kernel_of(cell_g, variables)["kernel"]
  assert np.max(np.linalg.eigvals(_np(k_g)).real) < -0.4


# ------------------------------------------------------------------------ nnRNN


def np_schur(p, gamma, theta, t):
  n = p.shape[0]
  lam = np.zeros((n, n))
  for i in range(n // 2):
    c, s = math.cos(theta[i]), math.sin(theta[i])
    lam[2 * i:2 * i + 2, 2 * i:2 * i + 2] = gamma[i] * np.array([[c, -s], [s, c]])
  tl = np.zeros((n, n))
  for i in range(n):
    for j in range(i):  # strictly lower: t_{i,j}, i > j (column form)
      tl[i, j] = t[i, j]
  return p @ (lam + tl) @ p.T


def test_nnrnn_step_matches_eq5():
  cell = cells.NNRNNCell(N)
  variables, h, x, _ = init_apply(cell)
  rng = np.random.default_rng(9)
  p = dict(variables["params"])
  p["gamma"] = jnp.asarray(rng.uniform(0.5, 1.5, size=N // 2), jnp.float32)
  p["triangular"] = jnp.asarray(rng.normal(size=(N, N)), jnp.float32)  # upper part ignored
  variables = {"params": p}
  out = cell.apply(variables, h, x)[0]
  pm = scipy.linalg.expm(np_skew_from_triu(_np(p["skew"])))
  v = np_schur(pm, _np(p["gamma"]), _np(p["theta"]), _np(p["triangular"]))
  k = _np(kernel_of(cell, variables)["kernel"])
  # float32 P (Lambda + T) P^T: a 6 x 6 Taylor expm and two 6-term products
  np.testing.assert_allclose(k, v.T, **tol.F32)
  # strictly LOWER in column form: the strictly-upper variant differs
  v_up = np_schur(pm, _np(p["gamma"]), _np(p["theta"]), _np(p["triangular"]).T)
  # negative check: by up to 2.9 for this draw; 1e-2 is 1000 times F32's rounding
  assert not np.allclose(k, v_up.T, atol=1e-2)
  u = _np(p["input"]["kernel"]).T
  for i in range(B):
    want = np_modrelu(v @ _np(h[i]) + u @ _np(x[i]), _np(p["bias"]))
    np.testing.assert_allclose(out[i], want, **tol.F32)


def test_nnrnn_init_is_orthogonal():
  for init in ("henaff", "cayley", "random"):
    cell = cells.NNRNNCell(N, orthogonal_init=init)
    variables, _, _, _ = init_apply(cell)
    p = variables["params"]
    np.testing.assert_array_equal(p["gamma"], 1.0)
    np.testing.assert_array_equal(p["triangular"], 0.0)
    assert np.all((_np(p["theta"]) >= 0) & (_np(p["theta"]) <= 2 * math.pi))
    k = _np(kernel_of(cell, variables)["kernel"])
    np.testing.assert_allclose(k.T @ k, np.eye(N), atol=tol.F32["atol"])


def test_nnrnn_regularizers_sown_and_differentiable():
  delta, tdec = 0.2, 0.05
  layer = layers.Recurrent(cells.NNRNNCell(N, delta=delta, t_decay=tdec))
  x = jax.random.normal(jax.random.key(0), (B, 4, M))
  params = layer.init(jax.random.key(1), x)["params"]
  rng = np.random.default_rng(10)
  gamma = rng.uniform(0.5, 1.5, size=N // 2)
  t = rng.normal(size=(N, N))
  params["cell"]["gamma"] = jnp.asarray(gamma, jnp.float32)
  params["cell"]["triangular"] = jnp.asarray(t, jnp.float32)

  def reg(p):
    return layers.regularization_loss(layer.apply({"params": p}, x, mutable=["losses"])[1])

  terms = layers.regularization_terms(layer.apply({"params": params}, x, mutable=["losses"])[1])
  assert set(terms) == {"cell/gamma_penalty", "cell/t_decay"}
  tl = np.tril(t, -1)
  # float32 sums of N / 2 = 3 and N (N - 1) / 2 = 15 squares
  np.testing.assert_allclose(terms["cell/gamma_penalty"], delta * np.sum((gamma - 1) ** 2),
                             rtol=tol.F32["rtol"])
  np.testing.assert_allclose(terms["cell/t_decay"], tdec * np.sum(tl ** 2), rtol=tol.F32["rtol"])
  g = jax.grad(reg)(params)["cell"]
  # elementwise 2 delta (gamma - 1), 2 t_decay T: the float32 rounding of gamma and T, then
  # a subtraction and a product
  np.testing.assert_allclose(g["gamma"], 2 * delta * (gamma - 1), **tol.F32_SHORT)
  np.testing.assert_allclose(g["triangular"], 2 * tdec * tl, **tol.F32_SHORT)


@pytest.mark.parametrize("g", [1.0, 0.958])
def test_nnrnn_fixed_gamma_clamps_the_eigenvalue_moduli(g):
  """Kerg et al. 2019, Supp. F: gamma clamped instead of learned; no gamma parameter, no
  gamma penalty, the transition matrix is eq (5) with gamma_i = g."""
  cell = cells.NNRNNCell(N, fixed_gamma=g, delta=0.5, t_decay=0.1)
  variables, h, x, _ = init_apply(cell)
  p = dict(variables["params"])
  assert "gamma" not in p
  k0 = _np(kernel_of(cell, variables)["kernel"])
  # T = 0 at init: the eigenvalues of the normal float32 P Lambda P^T, moved by its rounding
  np.testing.assert_allclose(np.abs(np.linalg.eigvals(k0)), g, rtol=tol.F32["rtol"])
  rng = np.random.default_rng(11)
  p["triangular"] = jnp.asarray(rng.normal(size=(N, N)), jnp.float32)
  variables = {"params": p}
  pm = scipy.linalg.expm(np_skew_from_triu(_np(p["skew"])))
  v = np_schur(pm, np.full(N // 2, g), _np(p["theta"]), _np(p["triangular"]))
  np.testing.assert_allclose(_np(kernel_of(cell, variables)["kernel"]), v.T, **tol.F32)
  layer = layers.Recurrent(cell)
  xs = jax.random.normal(jax.random.key(0), (B, 4, M))
  terms = layers.regularization_terms(layer.apply({"params": {"cell": p}}, xs,
                                                  mutable=["losses"])[1])
  assert set(terms) == {"cell/t_decay"}
  assert cells.cell_options("nnrnn")["fixed_gamma"] == (float, None)


# -------------------------------------------------------------------- baselines


def test_tanh_rnn_baselines():
  for cls in (cells.TanhRNNCell, cells.OrthInitRNNCell):
    cell = cls(N)
    variables, h, x, out = init_apply(cell)
    p = variables["params"]
    want = np.tanh(_np(h) @ _np(p["recurrent"]) + _np(x) @ _np(p["input"]["kernel"])
                   + _np(p["input"]["bias"])[None])
    np.testing.assert_allclose(out, want, **tol.F32)
  k = _np(cells.OrthInitRNNCell(N).init(jax.random.key(0), jnp.zeros((1, N)),
                                        jnp.zeros((1, M)))["params"]["recurrent"])
  np.testing.assert_allclose(k.T @ k, np.eye(N), atol=tol.F32["atol"])


def test_make_cell_registry():
  for name in cells.CELLS:
    assert cells.make_cell(name, 4).features == 4
  with pytest.raises(ValueError, match="make_cell: argument 'name'"):
    cells.make_cell("no_such_rnn", 4)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("cell, match", [
    (cells.LVFRNNCell(N, tau=-1.0), "LVFRNNCell: argument 'tau' must be a finite number > 0"),
    (cells.LVFRNNCell(N, tau=0.0), "argument 'tau'"),
    (cells.LVFRNNCell(N, integrator="rk4"), "LVFRNNCell: argument 'integrator' must be one of"),
    (cells.LVFRNNCell(N, activation="relu"), "LVFRNNCell: argument 'activation'"),
    (cells.LVFRNNCell(N, div_penalty=-0.1), "argument 'div_penalty'"),
    (cells.LVFRNNCell(1), "argument 'features' must be an int >= 2"),
    (cells.ScoRNNCell(N, rho=N + 1), r"ScoRNNCell: argument 'rho' .* \[0, n=6\]; got 7"),
    (cells.ScoRNNCell(N, rho=-1), "argument 'rho'"),
    (cells.NCGRUCell(N, rho=100), "NCGRUCell: argument 'rho'"),
    (cells.ExpRNNCell(N, orthogonal_init="glorot"), "ExpRNNCell: argument 'orthogonal_init'"),
    (cells.ExpRNNCell(N, orthogonal_param="dense"), "argument 'orthogonal_param'"),
    (cells.ExpRNNCell(N, orthogonal_param="matrix", use_base=True), "use_base"),
    (cells.NNRNNCell(5), "NNRNNCell: argument 'features' must be even"),
    (cells.NNRNNCell(N, fixed_gamma=0.0), "NNRNNCell: argument 'fixed_gamma'"),
    (cells.AntisymmetricRNNCell(N, epsilon=0.0), "argument 'epsilon'"),
    (cells.AntisymmetricRNNCell(N, gamma=-1.0), "argument 'gamma'"),
    (cells.TanhRNNCell(0), "argument 'features' must be an int >= 1"),
])
def test_bad_arguments_raise(cell, match):
  x = jnp.zeros((2, M))
  carry = jnp.zeros((2, max(cell.features, 1)))
  with pytest.raises(ValueError, match=match):
    cell.init(jax.random.key(0), carry, x)


@pytest.mark.parametrize("name", sorted(set(cells.CELLS) - {"lstm"}))  # tuple carry: own test
def test_wrong_feature_size_raises(name):
  cell = cells.make_cell(name, N)
  variables, h, x, _ = init_apply(cell)
  with pytest.raises(ValueError, match=f"inputs must have {M} features"):
    cell.apply(variables, h, jnp.zeros((B, M + 1)))
