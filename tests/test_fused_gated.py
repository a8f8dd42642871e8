"""The fused LSTM / GRU / NC-GRU scans against plain autodiff of an independent scan of the
equations (float64, tight), finite differences, masking, reverse, batch axes, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import test_util as jtu

from lvf_jax import recurrences as fused_gated
from lvf_jax.recurrences import gated as gated_scans
import tolerances as tol

N, T = 4, 6
LENGTHS = np.array([T, 2, 4])


def lstm_ref(kernel, bias, u, carry, reverse=False, mask=None):
  """Plain lax.scan of the LSTM equations (autodiff baseline, written independently)."""
  def body(cr, xs):
    c, h = cr
    u_t, m_t = xs
    z = h @ kernel + bias[None, :] + u_t
    i = 1 / (1 + jnp.exp(-z[:, :N]))
    f = 1 / (1 + jnp.exp(-z[:, N:2 * N]))
    g = jnp.tanh(z[:, 2 * N:3 * N])
    o = 1 / (1 + jnp.exp(-z[:, 3 * N:]))
    c2 = f * c + i * g
    h2 = o * jnp.tanh(c2)
    if m_t is not None:
      c2 = jnp.where(m_t[:, None], c2, c)
      h2 = jnp.where(m_t[:, None], h2, h)
    return (c2, h2), h2
  cr, hs = jax.lax.scan(body, carry, (u, mask), reverse=reverse)
  if mask is not None:
    hs = jnp.where(mask[..., None], hs, 0.0)
  return cr, hs


def masked_scan(step, h0, u, reverse=False, mask=None):
  """``lax.scan`` of ``h_t = step(h_{t-1}, u_t)`` with frozen carry / zero output where
  ``mask`` is False (the semantics the fused scans promise)."""
  def body(h, xs):
    u_t, m_t = xs
    h2 = step(h, u_t)
    if m_t is not None:
      h2 = jnp.where(m_t[:, None], h2, h)
    return h2, h2
  h, hs = jax.lax.scan(body, h0, (u, mask), reverse=reverse)
  if mask is not None:
    hs = jnp.where(mask[..., None], hs, 0.0)
  return h, hs


def gru_ref(kernel, bias, u, h0, reverse=False, mask=None):
  def step(h, u_t):
    a = h @ kernel + bias[None, :]
    r = 1 / (1 + jnp.exp(-(u_t[:, :N] + a[:, :N])))
    z = 1 / (1 + jnp.exp(-(u_t[:, N:2 * N] + a[:, N:2 * N])))
    m = jnp.tanh(u_t[:, 2 * N:] + r * a[:, 2 * N:])
    return (1 - z) * m + z * h
  return masked_scan(step, h0, u, reverse, mask)


def ncgru_ref(kernel_ru, kernel_c, bias_c, u, h0, reverse=False, mask=None):
  """NC-GRU eq 19 (row form) as a plain lax.scan: reset before the candidate's product."""
  def step(h, u_t):
    g = h @ kernel_ru
    r = 1 / (1 + jnp.exp(-(u_t[:, :N] + g[:, :N])))
    z = 1 / (1 + jnp.exp(-(u_t[:, N:2 * N] + g[:, N:])))
    p = u_t[:, 2 * N:] + (r * h) @ kernel_c
    c = jnp.sign(p) * jnp.maximum(jnp.abs(p) + bias_c[None, :], 0.0)  # modReLU
    return (1 - z) * h + z * c
  return masked_scan(step, h0, u, reverse, mask)


def ncgru_data(batch=3, seed=0):
  rng = np.random.default_rng(seed)
  kernel_ru = jnp.asarray(rng.standard_normal((N, 2 * N)) / np.sqrt(N))
  q = np.linalg.qr(rng.standard_normal((N, N)))[0]
  kernel_c = jnp.asarray(q)
  # modReLU biases of both signs, so some units are cut off (c = 0) and the mask matters
  bias_c = jnp.asarray(np.array([0.4, -0.3, -2.5, 0.1]))
  u = jnp.asarray(rng.standard_normal((T, batch, 3 * N)))
  h0 = jnp.asarray(0.5 * rng.standard_normal((batch, N)))
  return kernel_ru, kernel_c, bias_c, u, h0


@pytest.mark.parametrize("reverse, lengths", [(False, None), (True, None), (False, LENGTHS),
                                              (True, LENGTHS)])
def test_ncgru_matches_autodiff_of_reference_x64(reverse, lengths, x64):
  args = ncgru_data()
  mask = None if lengths is None else mask_of(lengths)
  w = jnp.asarray(np.random.default_rng(9).standard_normal((T, 3, N)))
  out_f = fused_gated.ncgru_scan(*args, reverse=reverse, mask=mask)
  out_r = ncgru_ref(*args, reverse=reverse, mask=mask)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64),
                         out_f, out_r)
  # the negative biases cut units off (c = 0): both branches of modReLU are exercised
  u3 = tuple(jnp.split(args[3], 3, axis=-1))  # the core takes the three inputs apart
  _, (_, _, c) = gated_scans._ncgru_forward(*args[:3], u3, None, None, args[4], mask, reverse,
                                              1)
  c = np.asarray(c)
  assert (c == 0).any() and (c != 0).any()

  def f_fused(*a):
    return _loss(fused_gated.ncgru_scan(*a, reverse=reverse, mask=mask), w)

  def f_ref(*a):
    return _loss(ncgru_ref(*a, reverse=reverse, mask=mask), w)

  g_f = jax.jit(jax.grad(f_fused, argnums=(0, 1, 2, 3, 4)))(*args)
  g_r = jax.jit(jax.grad(f_ref, argnums=(0, 1, 2, 3, 4)))(*args)
  for a, b in zip(g_f, g_r):  # float64 VJPs through T = 6 steps, B = 3, 3 gates of N = 4
    np.testing.assert_allclose(a, b, **tol.F64_GRAD)


def test_ncgru_check_grads_finite_differences_x64(x64):
  kernel_ru, kernel_c, _, u, h0 = ncgru_data(batch=2, seed=3)
  bias_c = jnp.asarray([0.2, -0.1, 0.3, 0.05])  # no unit near modReLU's kink
  w = jnp.asarray(np.random.default_rng(1).standard_normal((T, 2, N)))
  f = lambda *a: _loss(fused_gated.ncgru_scan(*a), w)
  jtu.check_grads(jax.jit(f), (kernel_ru, kernel_c, bias_c, u, h0), order=1, modes=("rev",),
                  **tol.FD)


def test_ncgru_bad_arguments_raise():
  kernel_ru, kernel_c, bias_c, u, h0 = ncgru_data()
  with pytest.raises(ValueError, match=r"ncgru_scan: argument 'kernel' must be a matrix \(n, 2 n\)"):
    fused_gated.ncgru_scan(kernel_ru[:, :N], kernel_c, bias_c, u, h0)
  with pytest.raises(ValueError, match="ncgru_scan: argument 'kernel_c'"):
    fused_gated.ncgru_scan(kernel_ru, kernel_c[:2], bias_c, u, h0)
  with pytest.raises(ValueError, match="ncgru_scan: argument 'bias_c'"):
    fused_gated.ncgru_scan(kernel_ru, kernel_c, bias_c[:2], u, h0)
  with pytest.raises(ValueError, match="ncgru_scan: argument 'u' must have 12 features"):
    fused_gated.ncgru_scan(kernel_ru, kernel_c, bias_c, u[..., :2 * N], h0)


def data(k, batch=3, seed=0):
  rng = np.random.default_rng(seed)
  kernel = jnp.asarray(rng.standard_normal((N, k * N)) / np.sqrt(N))
  bias = jnp.asarray(0.3 * rng.standard_normal((k * N,)))
  u = jnp.asarray(rng.standard_normal((T, batch, k * N)))
  h0 = jnp.asarray(0.5 * rng.standard_normal((batch, N)))
  c0 = jnp.asarray(0.5 * rng.standard_normal((batch, N)))
  return kernel, bias, u, h0, c0


def mask_of(lengths):
  return jnp.asarray(np.arange(T)[:, None] < np.asarray(lengths)[None, :])


def _loss(out, w):
  carry, hs = out
  return jnp.sum(hs * w) + sum(jnp.sum(jnp.sin(c)) for c in jax.tree_util.tree_leaves(carry))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("reverse, lengths", [(False, None), (True, None), (False, LENGTHS),
                                              (True, LENGTHS)])
def test_matches_autodiff_of_reference_x64(cell, reverse, lengths, x64):
  kernel, bias, u, h0, c0 = data(4 if cell == "lstm" else 3)
  carry = (c0, h0) if cell == "lstm" else h0
  fused = fused_gated.lstm_scan if cell == "lstm" else fused_gated.gru_scan
  ref = lstm_ref if cell == "lstm" else gru_ref
  mask = None if lengths is None else mask_of(lengths)
  w = jnp.asarray(np.random.default_rng(9).standard_normal((T, 3, N)))

  def f_fused(*a):
    return _loss(fused(*a, reverse=reverse, mask=mask), w)

  def f_ref(*a):
    return _loss(ref(*a, reverse=reverse, mask=mask), w)

  args = (kernel, bias, u, carry)
  out_f = fused(*args, reverse=reverse, mask=mask)
  out_r = ref(*args, reverse=reverse, mask=mask)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64),
                         out_f, out_r)
  g_f = jax.jit(jax.grad(f_fused, argnums=(0, 1, 2, 3)))(*args)
  g_r = jax.jit(jax.grad(f_ref, argnums=(0, 1, 2, 3)))(*args)
  # float64 VJPs through T = 6 steps, B = 3, <= 4 gates of N = 4
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64_GRAD),
                         g_f, g_r)
  if lengths is not None:  # padded steps: zero outputs, frozen carry
    hs = np.asarray(out_f[1])
    assert np.all(hs[2:, 1] == 0)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_check_grads_finite_differences_x64(cell, x64):
  kernel, bias, u, h0, c0 = data(4 if cell == "lstm" else 3, batch=2, seed=3)
  carry = (c0, h0) if cell == "lstm" else h0
  fused = fused_gated.lstm_scan if cell == "lstm" else fused_gated.gru_scan
  w = jnp.asarray(np.random.default_rng(1).standard_normal((T, 2, N)))
  f = lambda *a: _loss(fused(*a), w)
  jtu.check_grads(jax.jit(f), (kernel, bias, u, carry), order=1, modes=("rev",), **tol.FD)


def test_several_batch_axes_and_seq_lengths():
  kernel, bias, u, h0, c0 = data(4, batch=6)
  u4 = u.reshape((T, 2, 3, 4 * N)).astype(jnp.float32)
  carry = (c0.reshape((2, 3, N)).astype(jnp.float32), h0.reshape((2, 3, N)).astype(jnp.float32))
  lengths = jnp.array([[T, 1, 2], [3, 4, 5]])
  (c, h), hs = fused_gated.lstm_scan(kernel.astype(jnp.float32), bias.astype(jnp.float32),
                                     u4, carry, seq_lengths=lengths)
  assert hs.shape == (T, 2, 3, N) and c.shape == h.shape == (2, 3, N)
  (c_ref, h_ref), hs_ref = lstm_ref(kernel.astype(jnp.float32), bias.astype(jnp.float32),
                                    u4.reshape((T, 6, 4 * N)),
                                    tuple(a.reshape((6, N)) for a in carry),
                                    mask=jnp.arange(T)[:, None] < lengths.reshape(-1)[None])
  # float32, two scans of T = 6 LSTM steps of 4 gates x N = 4: a 96-term chain
  np.testing.assert_allclose(hs.reshape((T, 6, N)), hs_ref, **tol.F32)
  np.testing.assert_allclose(h.reshape((6, N)), h_ref, **tol.F32)


def test_bad_arguments_raise():
  kernel, bias, u, h0, c0 = data(4)
  with pytest.raises(ValueError, match=r"lstm_scan: argument 'kernel' must be a matrix \(n, 4 n\)"):
    fused_gated.lstm_scan(kernel[:, :3 * N], bias, u, (c0, h0))
  with pytest.raises(ValueError, match=r"lstm_scan: argument 'bias' must have shape \(16,\)"):
    fused_gated.lstm_scan(kernel, bias[:3], u, (c0, h0))
  with pytest.raises(ValueError, match="lstm_scan: argument 'carry'"):
    fused_gated.lstm_scan(kernel, bias, u, (c0[:2], h0))
  with pytest.raises(ValueError, match="gru_scan: argument 'u' must have 12 features"):
    fused_gated.gru_scan(kernel[:, :3 * N], bias[:3 * N], u, h0)
  with pytest.raises(ValueError, match="gru_scan: argument 'unroll'"):
    fused_gated.gru_scan(kernel[:, :3 * N], bias[:3 * N], u[..., :3 * N], h0, unroll=0)


@pytest.mark.parametrize("scan", ["gru", "ncgru"])
def test_three_input_arrays_equal_one_concatenated_array_x64(scan, x64):
  """u as three (T, *batch, n) arrays (what the cells project) and as one (T, *batch, 3n)
  array give the same outputs; the three cotangents are the blocks of the one."""
  if scan == "gru":
    kernel, bias, u, h0, _ = data(3)
    run = lambda uu: fused_gated.gru_scan(kernel, bias, uu, h0, mask=mask_of(LENGTHS))
  else:
    kernel_ru, kernel_c, bias_c, u, h0 = ncgru_data()
    run = lambda uu: fused_gated.ncgru_scan(kernel_ru, kernel_c, bias_c, uu, h0,
                                            mask=mask_of(LENGTHS))
  parts = tuple(jnp.split(u, 3, axis=-1))
  w = jnp.asarray(np.random.default_rng(4).standard_normal((T, 3, N)))
  # float64, the same scan fed two ways: T = 6 steps of 3 gates x N = 4
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64),
                         run(parts), run(u))
  g_parts = jax.grad(lambda uu: _loss(run(uu), w))(parts)
  g_one = jax.grad(lambda uu: _loss(run(uu), w))(u)
  assert isinstance(g_parts, tuple) and len(g_parts) == 3
  np.testing.assert_allclose(jnp.concatenate(g_parts, axis=-1), g_one, **tol.F64)


def test_three_input_arrays_bad_arguments_raise():
  kernel, bias, u, h0, _ = data(3)
  a, b, c = jnp.split(u, 3, axis=-1)
  with pytest.raises(ValueError, match="gru_scan: argument 'u' must be one array .* or 3 "
                     "arrays .*; got a sequence of 2"):
    fused_gated.gru_scan(kernel, bias, (a, b), h0)
  with pytest.raises(ValueError, match="gru_scan: the 3 arrays of u must have one shape"):
    fused_gated.gru_scan(kernel, bias, (a, b, c[:-1]), h0)
  with pytest.raises(ValueError, match="gru_scan: argument 'u' must have 4 features"):
    fused_gated.gru_scan(kernel, bias, (u, u, u), h0)


D = 2  # raw input width of the in-loop projection tests


@pytest.mark.parametrize("scan", ["lstm", "gru", "ncgru"])
@pytest.mark.parametrize("reverse", [False, True])
def test_input_kernel_matches_the_projected_inputs_x64(scan, reverse, x64):
  """u_t = x_t W + b inside the loop == the scan of the hoisted x W + b: outputs, carries
  and the gradients of every argument (the raw input, W and b included)."""
  rng = np.random.default_rng(11)
  k = 4 if scan == "lstm" else 3
  x = jnp.asarray(rng.standard_normal((T, 3, D)))
  w_in = jnp.asarray(rng.standard_normal((D, k * N)))
  b_in = jnp.asarray(0.3 * rng.standard_normal((k * N,)))
  if scan == "ncgru":
    kernel_ru, kernel_c, bias_c, _, h0 = ncgru_data()
    run = lambda uu, **kw: fused_gated.ncgru_scan(kernel_ru, kernel_c, bias_c, uu, h0,
                                                  reverse=reverse, mask=mask_of(LENGTHS), **kw)
  else:
    kernel, bias, _, h0, c0 = data(k)
    fn = fused_gated.lstm_scan if scan == "lstm" else fused_gated.gru_scan
    carry = (c0, h0) if scan == "lstm" else h0
    run = lambda uu, **kw: fn(kernel, bias, uu, carry, reverse=reverse,
                              mask=mask_of(LENGTHS), **kw)
  out_w = jnp.asarray(rng.standard_normal((T, 3, N)))
  project = lambda xx, ww, bb: jnp.einsum("tbd,dk->tbk", xx, ww) + bb[None, None]
  hoisted = lambda xx, ww, bb: _loss(run(project(xx, ww, bb)), out_w)
  in_loop = lambda xx, ww, bb: _loss(run(xx, input_kernel=ww, input_bias=bb), out_w)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64),
                         run(x, input_kernel=w_in, input_bias=b_in),
                         run(project(x, w_in, b_in)))
  g_loop = jax.jit(jax.grad(in_loop, argnums=(0, 1, 2)))(x, w_in, b_in)
  g_hoist = jax.jit(jax.grad(hoisted, argnums=(0, 1, 2)))(x, w_in, b_in)
  # float64 VJPs through T = 6 steps, B = 3, <= 4 gates of N = 4 and the D = 2 projection
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F64_GRAD),
                         g_loop, g_hoist)
  assert float(jnp.max(jnp.abs(g_loop[0]))) > 1e-3


def test_input_kernel_bad_arguments_raise():
  kernel, bias, u, h0, c0 = data(3)
  x = u[..., :D]
  with pytest.raises(ValueError, match=r"gru_scan: argument 'input_kernel' must have shape "
                     r"\(d, 3 n\) = \(2, 12\)"):
    fused_gated.gru_scan(kernel, bias, x, h0, input_kernel=jnp.zeros((D, 8)))
  with pytest.raises(ValueError, match=r"gru_scan: argument 'input_bias' must have shape \(12,\)"):
    fused_gated.gru_scan(kernel, bias, x, h0, input_kernel=jnp.zeros((D, 12)),
                         input_bias=jnp.zeros((4,)))
  with pytest.raises(ValueError, match="gru_scan: argument 'input_bias' needs 'input_kernel'"):
    fused_gated.gru_scan(kernel, bias, u, h0, input_bias=jnp.zeros((12,)))
  with pytest.raises(ValueError, match="gru_scan: with 'input_kernel', argument 'u' must be "
                     "the raw input array"):
    fused_gated.gru_scan(kernel, bias, tuple(jnp.split(u, 3, axis=-1)), h0,
                         input_kernel=jnp.zeros((N, 12)))
