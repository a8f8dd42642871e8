"""Unitary cells (uRNN, EURNN, GORU; the full-capacity uRNN in test_cells_fcurnn.py) and their geometry: each factor and each step against
NumPy written from the papers' equations (complex arithmetic, column form), unitarity,
the real embedding of complex states, layer == loop == nn.RNN with gradients, masking,
the fused path of the real EURNN, and bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from hypothesis import given
from hypothesis import strategies as st
from jax import test_util as jtu

from lvf_jax import cells, geometry, layers, models, optim
from np_reference import B, M, _np, init_apply, np_modrelu, np_sigmoid
import tolerances as tol

# ------------------------------------------------------------- NumPy references


def np_phase(theta):
  return np.exp(1j * np.asarray(theta, np.float64))


def np_urnn(theta, refl, perm):
  """W = D3 R2 F^-1 D2 Pi R1 F D1 from explicit n x n matrices."""
  n = theta.shape[1]
  d = [np.diag(np_phase(t)) for t in theta]
  f = np.fft.fft(np.eye(n), norm="ortho")  # unitary DFT matrix
  pi = np.eye(n)[perm]  # (Pi x)_i = x_perm[i]
  r = []
  for k in range(2):
    v = refl[k, 0] + 1j * refl[k, 1]
    norm2 = np.vdot(v, v).real
    r.append(np.eye(n) - (2.0 * np.outer(v, v.conj()) / norm2 if norm2 > 0 else 0))  # v = 0: I
  return d[2] @ r[1] @ np.linalg.inv(f) @ d[1] @ pi @ r[0] @ f @ d[0]


def np_givens_layer(n, theta, phi, offset):
  g = np.eye(n, dtype=complex)
  for k, i in enumerate(range(offset, n - 1, 2)):
    c, s = np.cos(theta[k]), np.sin(theta[k])
    e = 1.0 if phi is None else np_phase(phi[k])
    g[i, i], g[i, i + 1], g[i + 1, i], g[i + 1, i + 1] = c, -e * s, s, e * c
  return g


def np_eunn(n, theta_a, theta_b, phi_a=None, phi_b=None, omega=None):
  w = np.eye(n, dtype=complex)
  for layer in range(theta_a.shape[0] + theta_b.shape[0]):
    k, off = layer // 2, layer % 2
    theta, phi = (theta_a, phi_a) if off == 0 else (theta_b, phi_b)
    w = np_givens_layer(n, theta[k], None if phi is None else phi[k], off) @ w
  if omega is not None:
    w = np.diag(np_phase(omega)) @ w
  return w


def np_eunn_fft(n, theta, phi=None, omega=None):
  """FFT-style EUNN: layer k rotates (i, i + s), s = n / 2^(k+1), for every i whose bit
  of weight s is 0; the rotation angle of the pair is theta[k, rank of i among those]."""
  w = np.eye(n, dtype=complex)
  for k in range(theta.shape[0]):
    s = n >> (k + 1)
    g = np.eye(n, dtype=complex)
    firsts = [i for i in range(n) if not i & s]
    for rank, i in enumerate(firsts):
      c, sn = np.cos(theta[k, rank]), np.sin(theta[k, rank])
      e = 1.0 if phi is None else np_phase(phi[k, rank])
      g[i, i], g[i, i + s], g[i + s, i], g[i + s, i + s] = c, -e * sn, sn, e * c
    w = g @ w
  if omega is not None:
    w = np.diag(np_phase(omega)) @ w
  return w


def np_complex_modrelu(z, b):
  mag = np.abs(z)
  return np.where(mag > 0, z / np.where(mag > 0, mag, 1) * np.maximum(mag + b, 0), 0)


def split(h):
  h = _np(h)
  n = h.shape[-1] // 2
  return h[..., :n] + 1j * h[..., n:]


def angles(rng, *shape):
  return rng.uniform(-np.pi, np.pi, shape)


# ------------------------------------------------------------------ geometry


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_urnn_matrix_equals_numpy_product_and_is_unitary(n):
  rng = np.random.RandomState(n)
  theta, refl = angles(rng, 3, n), rng.uniform(-1, 1, (2, 2, n))
  perm = rng.permutation(n)
  v = refl[:, 0] + 1j * refl[:, 1]
  w = geometry.urnn_matrix(*jnp.asarray(theta, jnp.float32), jnp.asarray(v[0], jnp.complex64),
                           jnp.asarray(v[1], jnp.complex64), perm)
  assert w.dtype == jnp.complex64
  # complex64: four n-term factors (the DFTs, the reflections) and the phases, n <= 8
  np.testing.assert_allclose(np.asarray(w), np_urnn(theta, refl, perm), **tol.F32)
  np.testing.assert_allclose(np.asarray(w).conj().T @ np.asarray(w), np.eye(n), **tol.F32)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_urnn_apply_equals_the_numpy_product(n):
  """The factors applied to rows (the factored uRNN's step) against NumPy's W x."""
  rng = np.random.RandomState(n + 20)
  theta, refl = angles(rng, 3, n), rng.uniform(-1, 1, (2, 2, n))
  refl[1] *= n != 5  # v_2 = 0: R_2 = I
  perm = rng.permutation(n)
  v = refl[:, 0] + 1j * refl[:, 1]
  factors = geometry.urnn_factors(*jnp.asarray(theta, jnp.float32),
                                  *jnp.asarray(v, jnp.complex64))
  x = (rng.normal(size=(2, 3, n)) + 1j * rng.normal(size=(2, 3, n))).astype(np.complex64)
  got = geometry.urnn_apply(factors, jnp.asarray(x), perm)
  assert got.dtype == jnp.complex64 and got.shape == x.shape
  # the factors applied to rows: four n-term factors, n <= 8, at |x| up to 3
  np.testing.assert_allclose(np.asarray(got), x @ np_urnn(theta, refl, perm).T, **tol.F32)
  np.testing.assert_allclose(np.asarray(geometry.urnn_apply(factors, jnp.asarray(x.real), perm)),
                             x.real @ np_urnn(theta, refl, perm).T, **tol.F32)


def test_urnn_factors_and_apply_bad_arguments():
  f = geometry.urnn_factors(jnp.zeros(4), jnp.zeros(4), jnp.zeros(4), jnp.ones(4), jnp.ones(4))
  with pytest.raises(ValueError, match=r"urnn_apply: argument 'x' must have n = 4"):
    geometry.urnn_apply(f, jnp.zeros((2, 5)), np.arange(4))
  with pytest.raises(ValueError, match=r"urnn_apply: argument 'permutation' must be a "
                                       r"permutation of range\(4\)"):
    geometry.urnn_apply(f, jnp.zeros((2, 4)), np.array([0, 1, 1, 2]))
  with pytest.raises(ValueError, match="urnn_factors: arguments .* must all have shape"):
    geometry.urnn_factors(jnp.zeros(4), jnp.zeros(4), jnp.zeros(4), jnp.ones(3), jnp.ones(4))


@pytest.mark.parametrize("n", [2, 3, 6, 7])
@pytest.mark.parametrize("capacity", [1, 2, 3, 4])
@pytest.mark.parametrize("complex_valued", [True, False])
def test_eunn_matrix_equals_numpy_product(n, capacity, complex_valued):
  rng = np.random.RandomState(10 * n + capacity)
  la, lb = (capacity + 1) // 2, capacity // 2
  ta, tb = angles(rng, la, n // 2), angles(rng, lb, (n - 1) // 2)
  phases = (angles(rng, la, n // 2), angles(rng, lb, (n - 1) // 2), angles(rng, n)) \
      if complex_valued else ()
  w = geometry.eunn_matrix(*(jnp.asarray(a, jnp.float32) for a in (ta, tb) + phases))
  assert w.dtype == (jnp.complex64 if complex_valued else jnp.float32)
  # capacity <= 4 layers of 2 x 2 rotations and the phases
  np.testing.assert_allclose(np.asarray(w), np_eunn(n, ta, tb, *phases), **tol.F32)


@pytest.mark.parametrize("n", [2, 3, 6, 7])
@pytest.mark.parametrize("capacity", [1, 2, 3, 4])
@pytest.mark.parametrize("complex_valued", [True, False])
def test_eunn_apply_equals_the_numpy_product(n, capacity, complex_valued):
  """The layers applied to vectors (the factored EURNN's step) against NumPy's W x."""
  rng = np.random.RandomState(10 * n + capacity + 1)
  la, lb = (capacity + 1) // 2, capacity // 2
  ta, tb = angles(rng, la, n // 2), angles(rng, lb, (n - 1) // 2)
  phases = (angles(rng, la, n // 2), angles(rng, lb, (n - 1) // 2), angles(rng, n)) \
      if complex_valued else ()
  rot = geometry.eunn_rotations(*(jnp.asarray(a, jnp.float32) for a in (ta, tb) + phases))
  x = rng.normal(size=(2, 3, n)) + (1j * rng.normal(size=(2, 3, n)) if complex_valued else 0)
  x = x.astype(np.complex64 if complex_valued else np.float32)
  want = x @ np_eunn(n, ta, tb, *phases).T
  got = geometry.eunn_apply(rot, jnp.asarray(x))
  assert got.dtype == x.dtype and got.shape == x.shape
  # capacity <= 4 layers of 2 x 2 rotations applied to rows, at |x| up to 4
  np.testing.assert_allclose(np.asarray(got), want, **tol.F32)
  if complex_valued:  # a real x is the complex vector with zero imaginary part
    np.testing.assert_allclose(np.asarray(geometry.eunn_apply(rot, jnp.asarray(x.real))),
                               x.real @ np_eunn(n, ta, tb, *phases).T, **tol.F32)


def test_eunn_apply_bad_arguments():
  rot = geometry.eunn_rotations(jnp.zeros((1, 3)), jnp.zeros((1, 2)))
  with pytest.raises(ValueError, match=r"eunn_apply: argument 'x' must have n = 6 or 7"):
    geometry.eunn_apply(rot, jnp.zeros((2, 5)))
  with pytest.raises(ValueError, match="eunn_rotations: give both 'phi_a' and 'phi_b'"):
    geometry.eunn_rotations(jnp.zeros((1, 3)), jnp.zeros((1, 2)), jnp.zeros((1, 3)))
  with pytest.raises(ValueError, match="eunn_rotations: shapes of 'theta_a'"):
    geometry.eunn_rotations(jnp.zeros((1, 3)), jnp.zeros((2, 2)))


@given(n=st.integers(2, 9), capacity=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_eunn_is_unitary_property(n, capacity, seed):
  rng = np.random.RandomState(seed)
  la, lb = (capacity + 1) // 2, capacity // 2
  shapes = [(la, n // 2), (lb, (n - 1) // 2)] * 2 + [(n,)]
  w = np.asarray(geometry.eunn_matrix(*(jnp.asarray(angles(rng, *s), jnp.float32)
                                        for s in shapes)))
  # capacity <= 6 layers of rotations, then n <= 9-term complex products
  np.testing.assert_allclose(w.conj().T @ w, np.eye(n), **tol.F32)


def test_full_capacity_real_eunn_reaches_any_rotation_sign_pattern():
  """The capacity knob is real: one layer touches only its pairs, L = n layers mix all."""
  rng = np.random.RandomState(0)
  n = 6
  one = np.asarray(geometry.eunn_matrix(jnp.asarray(angles(rng, 1, 3), jnp.float32),
                                        jnp.zeros((0, 2), jnp.float32)))
  # structural zeros are exact; the other entries are cosines and sines of uniform angles
  # and their products (0.22 and 0.0068 the smallest here), far above 1e-7
  assert np.count_nonzero(np.abs(one) > 1e-7) == 2 * n  # three 2 x 2 blocks
  full = np.asarray(geometry.eunn_matrix(jnp.asarray(angles(rng, 3, 3), jnp.float32),
                                         jnp.asarray(angles(rng, 3, 2), jnp.float32)))
  assert np.count_nonzero(np.abs(full) > 1e-7) == n * n


@pytest.mark.parametrize("n", [2, 4, 16])
@pytest.mark.parametrize("complex_valued", [True, False])
def test_eunn_fft_matrix_equals_numpy_butterflies(n, complex_valued):
  rng = np.random.default_rng(n)
  layers_ = int(np.log2(n))
  theta = angles(rng, layers_, n // 2)
  phi, omega = (angles(rng, layers_, n // 2), angles(rng, n)) if complex_valued else (None, None)
  w = geometry.eunn_fft_matrix(*[None if a is None else jnp.asarray(a, jnp.float32)
                                 for a in (theta, phi, omega)])
  want = np_eunn_fft(n, theta, phi, omega)
  # each entry a product of log2 n <= 4 rotation entries and phases, each rounded
  np.testing.assert_allclose(np.asarray(w), want if complex_valued else want.real, **tol.F32)
  assert np.iscomplexobj(np.asarray(w)) == complex_valued
  # log2 n butterfly layers couple every coordinate with every other (no structural zeros,
  # which would be exact 0; the smallest float64 entry here is 9e-4 for n = 16)
  assert np.all(np.abs(want) > 1e-6)


def test_eunn_fft_matrix_bad_arguments():
  with pytest.raises(ValueError, match=r"eunn_fft_matrix: argument 'theta' must have shape "
                                       r"\(log2 n, n / 2\) with n a power of 2; got \(2, 3\)"):
    geometry.eunn_fft_matrix(jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match="eunn_fft_matrix: argument 'theta' must have shape"):
    geometry.eunn_fft_matrix(jnp.zeros((2, 4)))  # n = 8 needs 3 layers
  with pytest.raises(ValueError, match="eunn_fft_matrix: argument 'phi' must have the shape"):
    geometry.eunn_fft_matrix(jnp.zeros((2, 2)), jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match="eunn_fft_matrix: argument 'omega' requires"):
    geometry.eunn_fft_matrix(jnp.zeros((2, 2)), None, jnp.zeros((4,)))


def test_complex_to_real_kernel_acts_as_w_on_split_states():
  rng = np.random.RandomState(3)
  n = 5
  w = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
  h = rng.normal(size=(4, n)) + 1j * rng.normal(size=(4, n))
  k = np.asarray(geometry.complex_to_real_kernel(jnp.asarray(w, jnp.complex64)), np.float64)
  out = np.concatenate([h.real, h.imag], -1) @ k
  np.testing.assert_allclose(out[:, :n] + 1j * out[:, n:], (w @ h.T).T, **tol.F32)
  q, _ = np.linalg.qr(w)  # unitary -> orthogonal embedding
  kq = np.asarray(geometry.complex_to_real_kernel(jnp.asarray(q, jnp.complex64)), np.float64)
  np.testing.assert_allclose(kq.T @ kq, np.eye(2 * n), atol=tol.F32["atol"])


def test_modrelu_split_equals_complex_modrelu_and_is_grad_safe_at_zero():
  rng = np.random.RandomState(4)
  z = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
  z[0, 0] = 0.0
  b = rng.uniform(-1, 0.5, 4)
  zs = jnp.asarray(np.concatenate([z.real, z.imag], -1), jnp.float32)
  out = geometry.modrelu_split(zs, jnp.asarray(b, jnp.float32))
  # elementwise: |z|, z / |z| and (|z| + b)_+, a few roundings at |z| up to 2.2
  np.testing.assert_allclose(split(out), np_complex_modrelu(z, b), **tol.F32_SHORT)
  np.testing.assert_allclose(split(out), np.asarray(geometry.modrelu(
      jnp.asarray(z, jnp.complex64), jnp.asarray(b, jnp.float32))), **tol.F32_SHORT)
  g = jax.grad(lambda a: jnp.sum(geometry.modrelu_split(a, jnp.zeros((4,)))))(zs)
  assert np.all(np.isfinite(np.asarray(g))) and float(g[0, 0]) == 0.0
  with pytest.raises(ValueError, match="modrelu_split: the last axis of 'z' must have even"):
    geometry.modrelu_split(jnp.zeros((2, 3)), jnp.zeros((1,)))


def test_unitary_maps_gradients_x64(x64):
  rng = np.random.RandomState(5)
  n = 4
  perm = rng.permutation(n)

  def f_urnn(theta, refl):
    v = jax.lax.complex(refl[:, 0], refl[:, 1])
    w = geometry.urnn_matrix(theta[0], theta[1], theta[2], v[0], v[1], perm)
    return jnp.sum(jnp.real(w) * jnp.arange(n * n, dtype=w.real.dtype).reshape(n, n) - jnp.imag(w) ** 2)

  def f_eunn(ta, tb, pa, pb, om):
    w = geometry.eunn_matrix(ta, tb, pa, pb, om)
    return jnp.sum(jnp.abs(w[:, 0] + w[0]) ** 2) + jnp.sum(jnp.real(w) * jnp.imag(w))

  jtu.check_grads(jax.jit(f_urnn), (jnp.asarray(angles(rng, 3, n)), jnp.asarray(rng.uniform(-1, 1, (2, 2, n)))),
                  order=1, modes=("rev",), **tol.FD, eps=tol.FD_STEP)
  shapes = [(2, 2), (1, 1), (2, 2), (1, 1), (n,)]
  jtu.check_grads(jax.jit(f_eunn), tuple(jnp.asarray(angles(rng, *s)) for s in shapes), order=1,
                  modes=("rev",), **tol.FD, eps=tol.FD_STEP)

  def f_fft(theta, phi, om):
    w = geometry.eunn_fft_matrix(theta, phi, om)
    return jnp.sum(jnp.abs(w[:, 1] + w[2]) ** 2) + jnp.sum(jnp.real(w) * jnp.imag(w))

  jtu.check_grads(jax.jit(f_fft), tuple(jnp.asarray(angles(rng, *s)) for s in [(2, 2), (2, 2), (n,)]),
                  order=1, modes=("rev",), **tol.FD, eps=tol.FD_STEP)


def test_geometry_bad_arguments():
  with pytest.raises(ValueError, match=r"urnn_matrix: argument 'permutation' must be a permutation of range\(3\)"):
    z = jnp.zeros((3,))
    geometry.urnn_matrix(z, z, z, z.astype(jnp.complex64), z.astype(jnp.complex64),
                         np.array([0, 0, 1]))
  with pytest.raises(ValueError, match="eunn_matrix: shapes of 'theta_a'"):
    geometry.eunn_matrix(jnp.zeros((1, 3)), jnp.zeros((3, 2)))
  with pytest.raises(ValueError, match="eunn_matrix: give both 'phi_a' and 'phi_b'"):
    geometry.eunn_matrix(jnp.zeros((1, 3)), jnp.zeros((1, 2)), jnp.zeros((1, 3)))
  with pytest.raises(ValueError, match="eunn_layer: argument 'theta' must have shape"):
    geometry.eunn_layer(jnp.eye(4), jnp.zeros((3,)), None, 0)


# ----------------------------------------------------------------- the cells


def _urnn_w(params, seed=0):
  p = {k: _np(v) for k, v in params.items() if k in ("theta", "reflection")}
  n = p["theta"].shape[1]
  return np_urnn(p["theta"], p["reflection"], np.random.RandomState(seed).permutation(n))


def test_urnn_step_equals_numpy_equation():
  cell = cells.URNNCell(5, permutation_seed=3)
  variables, h, x, out = init_apply(cell)
  p = variables["params"]
  assert h.shape == (B, 10) and out.shape == (B, 10)
  kernel = _np(p["input"]["kernel"])
  v = kernel[:, :5] + 1j * kernel[:, 5:]  # V = V_re + i V_im, column form V^T
  pre = (_urnn_w(p, 3) @ split(h).T).T + _np(x) @ v
  # one complex step: n + M = 8 complex terms
  np.testing.assert_allclose(split(out), np_complex_modrelu(pre, _np(p["bias"])), **tol.F32)


@pytest.mark.parametrize("capacity", [1, 3])
def test_complex_eurnn_step_equals_numpy_equation(capacity):
  cell = cells.EURNNCell(6, capacity=capacity)
  variables, h, x, out = init_apply(cell)
  p = {k: _np(v) for k, v in variables["params"]["eunn"].items()}
  lb = capacity // 2
  w = np_eunn(6, p["theta_a"], p.get("theta_b", np.zeros((lb, 2))), p["phi_a"],
              p.get("phi_b", np.zeros((lb, 2))), p["omega"])
  kernel = _np(variables["params"]["input"]["kernel"])
  pre = (w @ split(h).T).T + _np(x) @ (kernel[:, :6] + 1j * kernel[:, 6:])
  want = np_complex_modrelu(pre, _np(variables["params"]["bias"]))
  np.testing.assert_allclose(split(out), want, **tol.F32)  # capacity layers, then 9 terms


def test_fft_eurnn_and_goru_steps_equal_numpy_equation():
  cell = cells.EURNNCell(8, fft=True)
  variables, h, x, out = init_apply(cell)
  p = {k: _np(v) for k, v in variables["params"]["eunn"].items()}
  assert p["theta"].shape == (3, 4) and p["omega"].shape == (8,)
  w = np_eunn_fft(8, p["theta"], p["phi"], p["omega"])
  kernel = _np(variables["params"]["input"]["kernel"])
  pre = (w @ split(h).T).T + _np(x) @ (kernel[:, :8] + 1j * kernel[:, 8:])
  np.testing.assert_allclose(split(out), np_complex_modrelu(pre, _np(variables["params"]["bias"])),
                             **tol.F32)
  goru = cells.GORUCell(4, fft=True)
  variables = goru.init(jax.random.key(0), jnp.zeros((B, 4)), jnp.zeros((B, M)))
  e = variables["params"]["eunn"]
  assert set(e) == {"theta"}
  u_orth = np_eunn_fft(4, _np(e["theta"])).real
  # n = 4: each entry a product of log2 n = 2 rotation entries
  np.testing.assert_allclose(goru.apply(variables, method="orthogonal_matrix"), u_orth,
                             **tol.F32_SHORT)


def test_real_eurnn_step_equals_numpy_equation():
  cell = cells.EURNNCell(5, capacity=2, complex_valued=False, activation="tanh")
  variables, h, x, out = init_apply(cell)
  p = {k: _np(v) for k, v in variables["params"]["eunn"].items()}
  w = np_eunn(5, p["theta_a"], p["theta_b"]).real
  want = np.tanh(_np(h) @ w.T + _np(x) @ _np(variables["params"]["input"]["kernel"])
                 + _np(variables["params"]["bias"]))
  np.testing.assert_allclose(out, want, **tol.F32)


def test_goru_step_equals_numpy_equation():
  cell = cells.GORUCell(6, capacity=3)
  variables, h, x, out = init_apply(cell)
  p = variables["params"]
  e = {k: _np(v) for k, v in p["eunn"].items()}
  u_orth = np_eunn(6, e["theta_a"], e["theta_b"]).real  # column form
  hh, xx = _np(h), _np(x)
  k_in = _np(p["input"]["kernel"])
  r = np_sigmoid(hh @ _np(p["recurrent_r"]) + xx @ k_in[:, :6] + _np(p["bias_r"]))
  z = np_sigmoid(hh @ _np(p["recurrent_z"]) + xx @ k_in[:, 6:12] + _np(p["bias_z"]))
  c = np_modrelu(r * (u_orth @ hh.T).T + xx @ k_in[:, 12:], _np(p["bias_c"]))
  np.testing.assert_allclose(out, z * hh + (1 - z) * c, **tol.F32)
  np.testing.assert_allclose(_np(p["bias_r"]), 2.0)  # reference init
  np.testing.assert_allclose(_np(p["bias_c"]), 0.01)


@pytest.mark.parametrize("name, kw, n", [
    ("urnn", {}, 8), ("urnn", {}, 5), ("eurnn", {"capacity": 4}, 8), ("eurnn", {}, 5),
    ("fcurnn", {}, 8), ("fcurnn", {}, 5)])
def test_unitary_recurrence_preserves_the_norm(name, kw, n):
  """modReLU with b = 0 is the identity: with zero inputs ||h_t|| = ||h_0|| for 200 steps.
  ``features`` is the complex size n, which may be odd (the FFT and the reflections of the
  uRNN, EUNN's unpaired last unit): the carry has 2n real entries."""
  cell = cells.make_cell(name, n, bias_init=nn.initializers.zeros_init(), **kw)
  layer = layers.Recurrent(cell, return_carry=True)
  x = jnp.zeros((3, 200, 2))
  params = jax.jit(layer.init)(jax.random.key(0), x)
  h0 = jax.random.normal(jax.random.key(1), (3, 2 * n))
  carry, ys = jax.jit(lambda p: layer.apply(p, x, initial_carry=h0))(params)
  # the same float32 W at every step: its unitarity defect and each step's rounding add up
  # linearly over the steps, with no averaging (2.4e-5 after 200 steps at n = 5), so the
  # worst-case gamma of the chain of steps * 2n <= 3,200 terms (1.2e-4 to 1.9e-4)
  steps = x.shape[1]
  np.testing.assert_allclose(np.linalg.norm(ys, axis=-1),
                             np.broadcast_to(np.linalg.norm(h0, axis=-1)[:, None], (3, 200)),
                             rtol=tol.worst_case(steps * 2 * n))


# the complex cells in the default suite; EURNN and GORU (whose layers the fused-scan tests
# above also cover) under -m slow
@pytest.mark.parametrize("name", ["urnn", pytest.param("eurnn", marks=pytest.mark.slow),
                                  pytest.param("goru", marks=pytest.mark.slow), "fcurnn"])
def test_layer_gradients_equal_nn_rnn_and_loop(name):
  cell = cells.make_cell(name, 4)
  layer = layers.Recurrent(cell, return_carry=True)
  rnn = nn.RNN(cell, return_carry=True)
  x = jax.random.normal(jax.random.key(0), (2, 5, M))
  params = jax.jit(layer.init)(jax.random.key(1), x)["params"]
  width = cell.state_size if name != "goru" else 4
  w = jax.random.normal(jax.random.key(2), (2, 5, width))

  def loop(p, xx):
    c = jnp.zeros((2, width))
    ys = []
    for t in range(5):
      c, y = cell.apply({"params": p["cell"]}, c, xx[:, t])
      ys.append(y)
    return c, jnp.stack(ys, 1)

  def loss(apply, p, xx):
    c, y = apply(p, xx)
    return jnp.sum(y * w) + jnp.sum(c)

  grads = [jax.jit(jax.grad(lambda p, xx, f=f: loss(f, p, xx), (0, 1)))(params, x)
           for f in (lambda p, xx: layer.apply({"params": p}, xx),
                     lambda p, xx: rnn.apply({"params": p}, xx), loop)]
  for g in grads[1:]:
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F32_GRAD),
                           grads[0], g)
  assert all(np.any(np.asarray(g) != 0) for g in jax.tree_util.tree_leaves(grads[0]))


def test_complex_cells_mask_and_final_carry():
  cell = cells.URNNCell(4)
  layer = layers.Recurrent(cell, return_carry=True)
  x = jax.random.normal(jax.random.key(0), (3, 6, M))
  lengths = jnp.array([6, 2, 4])
  params = layer.init(jax.random.key(1), x)
  carry, ys = layer.apply(params, x, seq_lengths=lengths)
  for b in range(3):
    short_carry, short_ys = layer.apply(params, x[b:b + 1, :int(lengths[b])])
    # up to 6 steps of 2n + M = 11 terms, batch 3 against batch 1
    np.testing.assert_allclose(carry[b], short_carry[0], **tol.F32)
    np.testing.assert_allclose(ys[b, :int(lengths[b])], short_ys[0], **tol.F32)
    assert np.all(np.asarray(ys[b, int(lengths[b]):]) == 0)


def test_fused_path_covers_every_unitary_cell():
  for cell in (cells.EURNNCell(4, complex_valued=False), cells.EURNNCell(4), cells.URNNCell(4),
               cells.GORUCell(4), cells.FullCapacityURNNCell(4), cells.EURNNCell(4, factored=True),
               cells.EURNNCell(4, complex_valued=False, factored=True),
               cells.URNNCell(4, factored=True)):
    assert cell.fused_scan() is not None


def assert_same_function(fast, plain, params, x, lengths, w):
  """Two layers of the same parameters give the same masked loss and the same gradients
  (parameters and inputs); returns the first's gradients.

  Tolerances: the scans here run T <= 9 steps of width n <= 14 over B = 3, so the loss is a
  chain of T n + T B n <= 504 terms (F32_LONG) and each gradient sums T B n <= 378 of them
  (F32_GRAD, whose atol is for magnitude 1: scaled to the largest entry of each leaf, up to
  ~900 here, as the entries that cancel carry the rounding of that magnitude)."""

  def loss(m, p, xx):
    c, y = m.apply(p, xx, seq_lengths=lengths)
    return jnp.sum(jnp.sin(y) * w) + jnp.sum(c ** 2)

  def close(a, c):
    scale = max(1.0, float(np.max(np.abs(c))))
    np.testing.assert_allclose(a, c, rtol=tol.F32_GRAD["rtol"],
                               atol=tol.F32_GRAD["atol"] * scale)

  np.testing.assert_allclose(loss(fast, params, x), loss(plain, params, x),
                             rtol=tol.F32_LONG["rtol"])
  g_fast = jax.jit(jax.grad(lambda p, xx: loss(fast, p, xx), (0, 1)))(params, x)
  g_plain = jax.jit(jax.grad(lambda p, xx: loss(plain, p, xx), (0, 1)))(params, x)
  jax.tree_util.tree_map(close, g_fast, g_plain)
  return g_fast


def factored_against_dense(cls, fused, **kw):
  """The gradients of ``cls(**kw, factored=True)`` after checking that it is the same
  function of the same parameters as the dense ``W``: outputs, final carries and every
  gradient, with masks."""
  dense = layers.Recurrent(cls(**kw), return_carry=True, fused=fused)
  fact = layers.Recurrent(cls(**kw, factored=True), return_carry=True, fused=fused)
  x = jax.random.normal(jax.random.key(0), (3, 9, M))
  lengths = jnp.array([9, 4, 6])
  params = dense.init(jax.random.key(1), x)
  assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(
      fact.init(jax.random.key(1), x))
  b = params["params"]["cell"]["bias"]
  params["params"]["cell"]["bias"] = jax.random.uniform(jax.random.key(3), b.shape,
                                                        minval=-0.6, maxval=0.4)
  w = jax.random.normal(jax.random.key(2), (3, 9, dense.cell.state_size))
  return assert_same_function(fact, dense, params, x, lengths, w)[0]["params"]


@pytest.mark.parametrize("complex_valued", [True, False])
@pytest.mark.parametrize("capacity", [1, pytest.param(2, marks=pytest.mark.slow), 3])
@pytest.mark.parametrize("fused", [True, False])
def test_factored_eurnn_equals_the_dense_eurnn(complex_valued, capacity, fused):
  """factored=True: the rotation layers applied each step."""
  g = factored_against_dense(cells.EURNNCell, fused, features=7, capacity=capacity,
                             complex_valued=complex_valued)
  assert np.any(np.asarray(g["cell"]["eunn"]["theta_a"]) != 0)


@pytest.mark.parametrize("fused", [True, False])
def test_factored_urnn_equals_the_dense_urnn(fused):
  """factored=True: phases, FFTs, reflections and the permutation applied each step."""
  g = factored_against_dense(cells.URNNCell, fused, features=6, permutation_seed=3)
  assert np.all(np.asarray(g["cell"]["reflection"]) != 0)


# the EUNN layers also run fused against the plain scan (test_fused_layer_equals_plain_scan_
# with_masks) and factored against dense (test_factored_eurnn_equals_the_dense_eurnn)
@pytest.mark.parametrize("structure", [pytest.param("eunn", marks=pytest.mark.slow), "urnn"])
def test_rnn_scan_operator_equals_the_dense_kernel_x64(x64, structure):
  """rnn_scan(operator=...) -- the EUNN's layers, the uRNN's factors -- against the dense
  real kernel of the same angles: values and gradients (angles through both
  parametrisations, inputs, carry, bias), reversed and masked, and finite differences."""
  from lvf_jax import recurrences as fused
  from lvf_jax.cells.unitary import eunn_rows, urnn_rows
  rng = np.random.RandomState(3)
  n, steps, batch = 5, 6, 3
  if structure == "eunn":
    shapes = [(2, n // 2), (1, (n - 1) // 2)] * 2 + [(n,)]
    factors, matrix, op = geometry.eunn_rotations, geometry.eunn_matrix, eunn_rows
  else:  # theta_1..3, then [Re, Im] of v_1, v_2
    shapes = [(n,)] * 3 + [(2, n)] * 2
    perm = rng.permutation(n)

    def args_of(a):
      return (*a[:3], *(jax.lax.complex(v[0], v[1]) for v in a[3:]))

    factors = lambda *a: geometry.urnn_factors(*args_of(a))  # noqa: E731
    matrix = lambda *a: geometry.urnn_matrix(*args_of(a), perm)  # noqa: E731
    op = urnn_rows(tuple(int(i) for i in perm))
  ang = tuple(jnp.asarray(angles(rng, *s)) for s in shapes)
  u = jnp.asarray(rng.normal(size=(steps, batch, 2 * n)))
  h0 = jnp.asarray(rng.normal(size=(batch, 2 * n)))
  b = jnp.asarray(rng.uniform(-1.0, 0.5, n))
  mask = jnp.asarray(rng.uniform(size=(steps, batch)) > 0.3)

  def run(ang, u, h0, b, factored, reverse):
    if factored:
      k, o = factors(*ang), op
    else:
      k, o = geometry.complex_to_real_kernel(matrix(*ang)), None
    c, hs = fused.rnn_scan(k, u, h0, b, activation="modrelu_split", mask=mask,
                           reverse=reverse, operator=o)
    return jnp.sum(jnp.cos(hs)) + jnp.sum(c)

  args = (ang, u, h0, b)
  for reverse in (False, True):
    np.testing.assert_allclose(run(*args, True, reverse), run(*args, False, reverse),
                               rtol=tol.F64["rtol"])
    got = jax.grad(run, (0, 1, 2, 3))(*args, True, reverse)
    want = jax.grad(run, (0, 1, 2, 3))(*args, False, reverse)
    jax.tree_util.tree_map(
        lambda a, c: np.testing.assert_allclose(a, c, **tol.F64_GRAD), got, want)
  jtu.check_grads(jax.jit(lambda *a: run(*a, True, False)), args, order=1, modes=("rev",),
                  **tol.FD, eps=tol.FD_STEP)
  with pytest.raises(ValueError, match="rnn_scan: argument 'operator' must be a function"):
    fused.rnn_scan(factors(*ang), u, h0, b, activation="modrelu_split", operator=structure)


_MASKED_CELLS = {"urnn": cells.URNNCell(5), "eurnn": cells.EURNNCell(6, capacity=3),
                 "eurnn_real": cells.EURNNCell(6, complex_valued=False, capacity=3),
                 "goru": cells.GORUCell(5, capacity=3), "fcurnn": cells.FullCapacityURNNCell(4)}


# every cell forward; reversed, the EUNN in the default suite and every cell under -m slow
@pytest.mark.parametrize("cell, reverse", [
    pytest.param(cell, reverse, id=f"{reverse}-{name}",
                 marks=pytest.mark.slow if reverse and name != "eurnn" else ())
    for reverse in (False, True) for name, cell in _MASKED_CELLS.items()])
def test_fused_layer_equals_plain_scan_with_masks(cell, reverse):
  x = jax.random.normal(jax.random.key(0), (3, 7, M))
  lengths = jnp.array([7, 3, 5])
  plain = layers.Recurrent(cell, return_carry=True, reverse=reverse)
  fast = layers.Recurrent(cell, return_carry=True, reverse=reverse, fused=True)
  params = plain.init(jax.random.key(1), x)
  # modReLU biases of both signs: some units inactive (output 0) at some steps
  name = "bias_c" if isinstance(cell, cells.GORUCell) else "bias"
  b = params["params"]["cell"][name]
  params["params"]["cell"][name] = 0.8 * jax.random.uniform(jax.random.key(3), b.shape,
                                                            minval=-1.0, maxval=0.5)
  w = jax.random.normal(jax.random.key(2), (3, 7, getattr(cell, "state_size", cell.features)))
  g_fast = assert_same_function(fast, plain, params, x, lengths, w)
  assert np.any(np.asarray(g_fast[0]["params"]["cell"][name]) != 0)


def test_rnn_scan_modrelu_split_gradient_x64(x64):
  """The hand-written complex-modReLU VJP against finite differences (float64)."""
  from layer_helpers import reference_scan
  from lvf_jax import recurrences as fused
  rng = np.random.RandomState(0)
  n2, steps, batch = 6, 5, 3
  args = (jnp.asarray(rng.normal(size=(n2, n2)) / 2), jnp.asarray(rng.normal(size=(steps, batch, n2))),
          jnp.asarray(rng.normal(size=(batch, n2))), jnp.asarray(rng.uniform(-1.0, 0.5, n2 // 2)))
  mask = jnp.asarray(rng.uniform(size=(steps, batch)) > 0.3)

  def f(k, u, h0, b):
    c, hs = fused.rnn_scan(k, u, h0, b, activation="modrelu_split", mask=mask)
    return jnp.sum(jnp.cos(hs)) + jnp.sum(c)

  def ref(k, u, h0, b):
    c, hs = reference_scan(
        lambda kk, h, u_t: geometry.modrelu_split(h @ kk + u_t, b), k, u, h0, mask=mask)
    return jnp.sum(jnp.cos(hs)) + jnp.sum(c)

  np.testing.assert_allclose(f(*args), ref(*args), rtol=tol.F64["rtol"])
  jax.tree_util.tree_map(lambda a, c: np.testing.assert_allclose(a, c, **tol.F64_GRAD),
                         jax.grad(f, (0, 1, 2, 3))(*args), jax.grad(ref, (0, 1, 2, 3))(*args))
  jtu.check_grads(jax.jit(f), args, order=1, modes=("rev",), **tol.FD, eps=tol.FD_STEP)
  with pytest.raises(ValueError, match="rnn_scan: with activation='modrelu_split'"):
    fused.rnn_scan(args[0], args[1], args[2], jnp.zeros((n2,)), activation="modrelu_split")


def test_bfloat16_inputs_compute_in_float32_and_models_read_2n_outputs():
  cell = cells.URNNCell(4)
  x = jnp.ones((2, 3, M), jnp.bfloat16)
  layer = layers.Recurrent(cell)
  params = layer.init(jax.random.key(0), x)
  assert layer.apply(params, x).dtype == jnp.float32
  model = models.SequenceClassifier([cells.URNNCell(4), cells.EURNNCell(4)], num_outputs=3)
  variables = model.init(jax.random.key(0), jnp.ones((2, 5, M)))
  assert model.apply(variables, jnp.ones((2, 5, M))).shape == (2, 3)
  assert variables["params"]["head"]["kernel"].shape == (8, 3)  # reads [Re h | Im h]
  # uRNN: 7n recurrent parameters + n modReLU biases + the (M, 2n) input kernel
  urnn = variables["params"]["rnn"]["layer_0"]["cell"]
  assert models.count_params(urnn) == 7 * 4 + 4 + M * 8
  labels = jax.tree_util.tree_leaves(optim.param_labels(variables["params"]["rnn"]))
  assert set(labels) == {"default"}  # angles and phases train with the Euclidean optimiser


@pytest.mark.parametrize("cell, match", [
    (cells.URNNCell(4, activation="tanh"), "URNNCell: argument 'activation' must be one of \\['modrelu'\\]"),
    (cells.EURNNCell(4, activation="tanh"), "EURNNCell: argument 'activation' must be one of \\['modrelu'\\]"),
    (cells.EURNNCell(4, capacity=0), "EURNNCell: argument 'capacity' .* must be an int >= 1; got 0"),
    (cells.EURNNCell(1), "EURNNCell: argument 'features' must be an int >= 2; got 1"),
    (cells.GORUCell(4, capacity=1.5), "GORUCell: argument 'capacity'"),
    (cells.GORUCell(6, fft=True), "GORUCell: argument 'features' must be a power of 2 >= 2 with fft=True"),
    (cells.EURNNCell(12, fft=True), "EURNNCell: argument 'features' must be a power of 2"),
    (cells.EURNNCell(8, fft=True, factored=True), "EURNNCell: factored=True .* cannot be combined "
                                                  "with fft=True"),
    (cells.URNNCell(0), "URNNCell: argument 'features' must be an int >= 1"),
])
def test_bad_arguments_raise(cell, match):
  with pytest.raises(ValueError, match=match):
    cell.init(jax.random.key(0), jnp.zeros((2, 8)), jnp.zeros((2, M)))


def test_wrong_carry_width_names_the_cell():
  cell = cells.URNNCell(4)
  with pytest.raises(ValueError, match=r"URNNCell: the carry has width 4, but .*features=4, whose carry has width 8"):
    cell.init(jax.random.key(0), jnp.zeros((2, 4)), jnp.zeros((2, M)))


def test_gru_scan_candidate_arguments_are_checked():
  from lvf_jax import recurrences as fused_gated
  k, u, h0 = jnp.zeros((4, 12)), jnp.zeros((3, 2, 12)), jnp.zeros((2, 4))
  with pytest.raises(ValueError, match=r"gru_scan: argument 'candidate' must be one of \['tanh', 'modrelu'\]"):
    fused_gated.gru_scan(k, jnp.zeros((12,)), u, h0, candidate="relu")
  with pytest.raises(ValueError, match="gru_scan: argument 'candidate_bias' must have shape"):
    fused_gated.gru_scan(k, jnp.zeros((12,)), u, h0, candidate_bias=jnp.zeros((4,)))
  with pytest.raises(ValueError, match="gru_scan: argument 'candidate_bias' must have shape"):
    fused_gated.gru_scan(k, jnp.zeros((12,)), u, h0, candidate="modrelu",
                         candidate_bias=jnp.zeros((5,)))
