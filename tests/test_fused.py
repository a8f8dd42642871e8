"""Fused recurrences (custom VJP) against a NumPy loop of the equations and plain autodiff.

Forward: an independent NumPy loop of ``h_t = sigma(h_{t-1} K + u_t, b)`` (expRNN eq 3 /
lvfRNN eq 5, row form) and of the AntisymmetricRNN Euler steps (eq 12, 13). Backward: the
gradients of the hand-written VJP against reverse-mode autodiff of a plain ``lax.scan``
(float64 tight, float32 loose) and against finite differences (``check_grads``, x64).
"""

import jax
from jax import test_util as jtu
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from hypothesis import given, settings, strategies as st

from lvf_jax import cells, layers
from lvf_jax import recurrences as fused
from layer_helpers import reference_scan
import tolerances as tol

T, B, N = 6, 3, 6
CONFIGS = [(False, None), (True, np.array([6, 2, 0])), (False, np.array([6, 2, 0]))]
LENGTHS = np.array([6, 2, 0])


# ------------------------------------------------------------------ NumPy references


def np_act(name, z, b):
  if name == "modrelu":
    return z if b is None else np.sign(z) * np.maximum(np.abs(z) + b, 0.0)
  if b is not None:
    z = z + b
  return {"tanh": np.tanh, "relu": lambda a: np.maximum(a, 0.0), "identity": lambda a: a}[name](z)


def np_scan(step, u, h0, reverse=False, lengths=None):
  """Loop of ``h <- step(h, u_t)`` with frozen carry / zero output on padded steps."""
  h = np.array(h0, dtype=np.float64)
  ys = np.zeros(u.shape[:2] + h0.shape[-1:])
  order = range(u.shape[0] - 1, -1, -1) if reverse else range(u.shape[0])
  for t in order:
    new = step(h, u[t])
    if lengths is not None:
      valid = (t < lengths)[:, None]
      new = np.where(valid, new, h)
      ys[t] = np.where(valid, new, 0.0)
    else:
      ys[t] = new
    h = new
  return h, ys


def sigmoid(a):
  return 1.0 / (1.0 + np.exp(-a))


def data(seed=0, width=1, dtype=jnp.float64):
  k = jax.random.split(jax.random.key(seed), 4)
  kernel = jax.random.normal(k[0], (N, N), dtype) * float(1.2 / np.sqrt(N))
  u = jax.random.normal(k[1], (T, B, width * N), dtype)
  h0 = jax.random.normal(k[2], (B, N), dtype) * 0.5
  bias = jax.random.normal(k[3], (N,), dtype) * 0.3
  return kernel, u, h0, bias


def jax_act(name, z, b):
  """The activations written out in jnp (independent of the scans' own)."""
  if name == "modrelu_split":  # the complex modReLU without a bias: the identity
    assert b is None
    return z
  b = None if b is None else b[None, :]
  if name == "modrelu":
    return z if b is None else jnp.sign(z) * jnp.maximum(jnp.abs(z) + b, 0.0)
  if b is not None:
    z = z + b
  return {"tanh": jnp.tanh, "relu": lambda a: jnp.maximum(a, 0.0),
          "identity": lambda a: a}[name](z)


def plain_rnn(kernel, u, h0, bias, activation, reverse=False, mask=None):
  return reference_scan(lambda k, h, u_t: jax_act(activation, h @ k + u_t, bias),
                              kernel, u, h0, reverse=reverse, mask=mask)


def plain_euler(kernel, u, h0, eps, gated, reverse=False, mask=None):
  n = kernel.shape[0]

  def step(k, h, u_t):
    a = h @ k
    if gated:
      return h + eps * (jax.nn.sigmoid(a + u_t[..., n:]) * jnp.tanh(a + u_t[..., :n]))
    return h + eps * jnp.tanh(a + u_t)

  return reference_scan(step, kernel, u, h0, reverse=reverse, mask=mask)


def mask_of(lengths):
  return None if lengths is None else jnp.arange(T)[:, None] < jnp.asarray(lengths)[None, :]


def objective(fn):
  """A scalar touching every output and the final carry with non-trivial weights."""
  def loss(*args):
    h_last, hs = fn(*args)
    w = jnp.cos(jnp.arange(hs.size, dtype=hs.dtype)).reshape(hs.shape)
    return jnp.sum(w * jnp.sin(hs)) + jnp.sum(h_last * h_last)
  return loss


# ---------------------------------------------------------------------- rnn_scan


FWD_CASES = [(a, *c) for a in ("tanh", "modrelu") for c in
             [(False, False, None), (True, True, LENGTHS), (True, False, LENGTHS)]] + \
            [("identity", True, True, LENGTHS), ("relu", True, False, LENGTHS)]
GRAD_CASES = [(a, *c) for a in ("tanh", "modrelu") for c in CONFIGS] + \
             [("identity", False, LENGTHS), ("relu", True, LENGTHS)]


@pytest.mark.parametrize("activation, use_bias, reverse, lengths", FWD_CASES)
def test_rnn_forward_matches_numpy(activation, use_bias, reverse, lengths, x64):
  kernel, u, h0, bias = data()
  b = bias if use_bias else None
  h_last, hs = fused.rnn_scan(kernel, u, h0, b, activation=activation, reverse=reverse,
                              seq_lengths=None if lengths is None else jnp.asarray(lengths))
  nb = None if b is None else np.asarray(b)
  k = np.asarray(kernel)
  ref_h, ref_ys = np_scan(lambda h, u_t: np_act(activation, h @ k + u_t, nb),
                          np.asarray(u), np.asarray(h0), reverse, lengths)
  np.testing.assert_allclose(hs, ref_ys, **tol.F64)
  np.testing.assert_allclose(h_last, ref_h, **tol.F64)


@pytest.mark.parametrize("activation, reverse, lengths", GRAD_CASES)
def test_rnn_grads_match_autodiff_x64(activation, reverse, lengths, x64):
  kernel, u, h0, bias = data(1)
  mask = mask_of(lengths)
  f = objective(lambda k, u, h, b: fused.rnn_scan(k, u, h, b, activation=activation,
                                                  reverse=reverse, mask=mask))
  g = objective(lambda k, u, h, b: plain_rnn(k, u, h, b, activation, reverse, mask))
  # float64 losses of T = 6 steps of B = 3 N = 6-term products
  np.testing.assert_allclose(f(kernel, u, h0, bias), g(kernel, u, h0, bias), rtol=tol.F64["rtol"])
  got = jax.grad(f, argnums=(0, 1, 2, 3))(kernel, u, h0, bias)
  want = jax.grad(g, argnums=(0, 1, 2, 3))(kernel, u, h0, bias)
  for a, b in zip(got, want):
    np.testing.assert_allclose(a, b, **tol.F64_GRAD)


@pytest.mark.parametrize("activation", ["tanh", "modrelu"])
def test_rnn_grads_match_autodiff_float32(activation):
  kernel, u, h0, bias = data(2, dtype=jnp.float32)
  f = objective(lambda k, u, h, b: fused.rnn_scan(k, u, h, b, activation=activation,
                                                  seq_lengths=jnp.asarray(LENGTHS)))
  g = objective(lambda k, u, h, b: plain_rnn(k, u, h, b, activation, mask=mask_of(LENGTHS)))
  got = jax.jit(jax.grad(f, argnums=(0, 1, 2, 3)))(kernel, u, h0, bias)
  want = jax.jit(jax.grad(g, argnums=(0, 1, 2, 3)))(kernel, u, h0, bias)
  for a, b in zip(got, want):
    assert a.dtype == jnp.float32
    np.testing.assert_allclose(a, b, **tol.F32_GRAD)


@pytest.mark.parametrize("activation", ["tanh", "modrelu"])
def test_rnn_check_grads_finite_differences(activation, x64):
  kernel, u, h0, bias = data(3)
  f = objective(lambda k, u, h, b: fused.rnn_scan(k, u, h, b, activation=activation,
                                                  unroll=2))
  jtu.check_grads(jax.jit(f), (kernel, u, h0, bias), order=1, modes=("rev",), **tol.FD)


# ------------------------------------------------------------------- Euler scans


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("reverse, lengths", CONFIGS[:2])
def test_euler_forward_matches_numpy(gated, reverse, lengths, x64):
  eps = 0.3
  kernel, u, h0, _ = data(4, width=2 if gated else 1)
  fn = fused.gated_euler_scan if gated else fused.euler_scan
  h_last, hs = fn(kernel, u, h0, epsilon=eps, reverse=reverse,
                  seq_lengths=None if lengths is None else jnp.asarray(lengths))
  k = np.asarray(kernel)

  def step(h, u_t):
    a = h @ k
    if gated:
      return h + eps * sigmoid(a + u_t[:, N:]) * np.tanh(a + u_t[:, :N])
    return h + eps * np.tanh(a + u_t)

  ref_h, ref_ys = np_scan(step, np.asarray(u), np.asarray(h0), reverse, lengths)
  np.testing.assert_allclose(hs, ref_ys, **tol.F64)
  np.testing.assert_allclose(h_last, ref_h, **tol.F64)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("reverse, lengths", CONFIGS[:2])
def test_euler_grads_match_autodiff_x64(gated, reverse, lengths, x64):
  eps = 0.4
  kernel, u, h0, _ = data(5, width=2 if gated else 1)
  mask = mask_of(lengths)
  fn = fused.gated_euler_scan if gated else fused.euler_scan
  f = objective(lambda k, u, h: fn(k, u, h, epsilon=eps, reverse=reverse, mask=mask))
  g = objective(lambda k, u, h: plain_euler(k, u, h, eps, gated, reverse, mask))
  got = jax.grad(f, argnums=(0, 1, 2))(kernel, u, h0)
  want = jax.grad(g, argnums=(0, 1, 2))(kernel, u, h0)
  for a, b in zip(got, want):
    np.testing.assert_allclose(a, b, **tol.F64_GRAD)


@pytest.mark.parametrize("gated", [False, True])
def test_euler_grads_float32_and_finite_differences(gated, x64):
  fn = fused.gated_euler_scan if gated else fused.euler_scan
  kernel, u, h0, _ = data(6, width=2 if gated else 1)
  f = objective(lambda k, u, h: fn(k, u, h, epsilon=0.5))
  jtu.check_grads(jax.jit(f), (kernel, u, h0), order=1, modes=("rev",), **tol.FD)
  with jax.enable_x64(False):
    args32 = tuple(jnp.asarray(a, jnp.float32) for a in (kernel, u, h0))
    f32 = objective(lambda k, u, h: fn(k, u, h, epsilon=0.5))
    g32 = objective(lambda k, u, h: plain_euler(k, u, h, 0.5, gated))
    for a, b in zip(jax.grad(f32, (0, 1, 2))(*args32), jax.grad(g32, (0, 1, 2))(*args32)):
      assert a.dtype == jnp.float32
      np.testing.assert_allclose(a, b, **tol.F32_GRAD)


def test_gated_euler_pair_equals_concatenated_inputs_x64(x64):
  """u = (u_h, u_z) and u = [u_h | u_z] give the same outputs; the pair's cotangents are
  the halves of the concatenated input's."""
  kernel, u, h0, _ = data(7, width=2)
  mask = mask_of(CONFIGS[1][1])

  def run(uu):
    return fused.gated_euler_scan(kernel, uu, h0, epsilon=0.3, mask=mask)

  pair = (u[..., :N], u[..., N:])
  for a, b in zip(run(pair), run(u)):  # float64, one scan fed two ways: T = 6 steps, N = 6
    np.testing.assert_allclose(a, b, **tol.F64)
  g_pair = jax.grad(objective(lambda k, uu, h: run(uu)), argnums=1)(kernel, pair, h0)
  g_cat = jax.grad(objective(lambda k, uu, h: run(uu)), argnums=1)(kernel, u, h0)
  np.testing.assert_allclose(jnp.concatenate(g_pair, axis=-1), g_cat, **tol.F64)


def test_gated_euler_pair_errors():
  kernel, u, h0, _ = data(8, width=2, dtype=jnp.float32)
  with pytest.raises(ValueError, match="pair"):
    fused.gated_euler_scan(kernel, (u[..., :N],), h0, epsilon=0.1)
  with pytest.raises(ValueError, match="one shape"):
    fused.gated_euler_scan(kernel, (u[..., :N], u[:-1, :, :N]), h0, epsilon=0.1)
  with pytest.raises(ValueError, match="'u'"):  # halves of the wrong width
    fused.gated_euler_scan(kernel, (u, u), h0, epsilon=0.1)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_euler_in_place_activations_mask_unroll_x64(gated, reverse, x64):
  """The Euler scans keep the activations in the projected inputs' buffers: with (for
  the gated scan) the pair form, a mask, ``unroll`` and both directions, outputs and
  gradients equal autodiff of the plain scan, and the caller's arrays (still used after
  the call) are untouched."""
  kernel, u, h0, _ = data(9, width=2 if gated else 1)
  mask = mask_of(CONFIGS[2][1])
  eps = 0.35
  fn = fused.gated_euler_scan if gated else fused.euler_scan

  def split(uu):
    return (uu[..., :N], uu[..., N:]) if gated else uu

  @jax.jit
  def run(k, parts, h):
    h_last, hs = fn(k, parts, h, epsilon=eps, reverse=reverse, unroll=3, mask=mask)
    return h_last, hs, parts  # the inputs after the call

  h_last, hs, after = run(kernel, split(u), h0)
  for a, b in zip(jax.tree.leaves(after), jax.tree.leaves(split(u))):
    np.testing.assert_array_equal(a, b)
  ref_last, ref_hs = plain_euler(kernel, u, h0, eps, gated, reverse, mask)
  np.testing.assert_allclose(hs, ref_hs, **tol.F64)
  np.testing.assert_allclose(h_last, ref_last, **tol.F64)

  f = objective(lambda k, uu, h: run(k, split(uu), h)[:2])
  g = objective(lambda k, uu, h: plain_euler(k, uu, h, eps, gated, reverse, mask))
  for a, b in zip(jax.grad(f, argnums=(0, 1, 2))(kernel, u, h0),
                  jax.grad(g, argnums=(0, 1, 2))(kernel, u, h0)):
    np.testing.assert_allclose(a, b, **tol.F64_GRAD)


# Temporary memory of a training step, in (T, B, n) float32 sequences, that the in-place
# loops must not exceed: the tanh floor keeps its states H (the outputs), the output
# cotangents (over which its backward loop writes the shifted dz) and the aligned input
# cotangent dZ; the AntisymmetricRNN keeps H, the output cotangents and its projected
# inputs' buffer (activations, then input cotangents); the gated one a second such buffer.
# Before the in-place loops they kept about 5.1, 5.2 and 8.1 sequences.
SEQUENCE_BUDGET = {"rnn": 4.5, "antisymmetric": 3.5, "gated_antisymmetric": 4.5}


@pytest.mark.parametrize("name", sorted(SEQUENCE_BUDGET))
def test_fused_layers_keep_few_sequence_buffers(name):
  """Writing the activations and cotangents over buffers that are dead by then keeps a
  training step's temporary memory within the budget above (an XLA copy of a carried
  buffer, or an extra stacked output, would add a whole sequence)."""
  x = jax.random.normal(jax.random.key(0), (4, 50, 3))
  layer = layers.Recurrent(cells.make_cell(name, 16), fused=True, input_projection="hoisted")
  params = layer.init(jax.random.key(1), x)

  def loss(p):
    return jnp.sum(jnp.sin(layer.apply(p, x)))

  temp = jax.jit(jax.grad(loss)).lower(params).compile().memory_analysis().temp_size_in_bytes
  one_sequence = 50 * 4 * 16 * 4
  assert temp <= SEQUENCE_BUDGET[name] * one_sequence


# -------------------------------------------------- shapes, transformations, errors


@settings(max_examples=8)
@given(steps=st.integers(1, 5), batch=st.lists(st.integers(1, 3), max_size=2),
       unroll=st.integers(1, 4), activation=st.sampled_from(fused.ACTIVATIONS))
def test_batch_shapes_and_unroll_property(steps, batch, unroll, activation):
  batch = tuple(batch)
  k = jax.random.split(jax.random.key(steps), 3)
  kernel = jax.random.normal(k[0], (N, N)) / np.sqrt(N)
  u = jax.random.normal(k[1], (steps,) + batch + (N,))
  h0 = jax.random.normal(k[2], batch + (N,))
  h_last, hs = fused.rnn_scan(kernel, u, h0, activation=activation, unroll=unroll)
  ref_h, ref_hs = plain_rnn(kernel, u, h0, None, activation)
  assert hs.shape == u.shape and h_last.shape == h0.shape
  # float32, two scans of <= 5 steps of N = 6-term products: <= 30 terms
  np.testing.assert_allclose(hs, ref_hs, **tol.F32)
  np.testing.assert_allclose(h_last, ref_h, **tol.F32)


def test_jit_vmap_and_checkpoint():
  kernel, u, h0, bias = data(7, dtype=jnp.float32)
  kernels = jnp.stack([kernel, 0.5 * kernel])

  def loss(k, u, h, b):
    return objective(lambda *a: fused.rnn_scan(*a, activation="tanh"))(k, u, h, b)

  def ref(k, u, h, b):
    return objective(lambda *a: plain_rnn(*a, "tanh"))(k, u, h, b)

  got = jax.jit(jax.vmap(jax.grad(loss), in_axes=(0, None, None, None)))(kernels, u, h0, bias)
  want = jax.vmap(jax.grad(ref), in_axes=(0, None, None, None))(kernels, u, h0, bias)
  np.testing.assert_allclose(got, want, **tol.F32_GRAD)
  ck = jax.jit(jax.grad(jax.checkpoint(loss), argnums=(0, 1)))(kernel, u, h0, bias)
  plain = jax.grad(loss, argnums=(0, 1))(kernel, u, h0, bias)
  for a, b in zip(ck, plain):  # float32 gradients through T = 6, B = 3, N = 6, recomputed
    np.testing.assert_allclose(a, b, **tol.F32_GRAD)


def test_dtype_is_preserved_and_inputs_cast(x64):
  kernel, u, h0, bias = data(8, dtype=jnp.float32)
  h_last, hs = fused.rnn_scan(kernel.astype(jnp.float64), u, h0, bias)
  assert hs.dtype == jnp.float32 and h_last.dtype == jnp.float32
  g = jax.grad(lambda k: jnp.sum(fused.rnn_scan(k, u, h0, bias)[1]))(kernel.astype(jnp.float64))
  assert g.dtype == jnp.float64


@pytest.mark.parametrize("call, match", [
    (lambda k, u, h: fused.rnn_scan(k, u, h, activation="sigmoid"), "'activation'"),
    (lambda k, u, h: fused.rnn_scan(k[:, :2], u, h), "'kernel'"),
    (lambda k, u, h: fused.rnn_scan(k, u[..., :2], h), "'u'"),
    (lambda k, u, h: fused.rnn_scan(k, u, h[:1]), "'h0'"),
    (lambda k, u, h: fused.rnn_scan(k, u, h, jnp.zeros(2)), "'bias'"),
    (lambda k, u, h: fused.rnn_scan(k, u, h, unroll=0), "'unroll'"),
    (lambda k, u, h: fused.rnn_scan(k, u, h, seq_lengths=jnp.zeros(B)), "'seq_lengths'"),
    (lambda k, u, h: fused.rnn_scan(k, u, h, mask=jnp.ones((T, B))), "'mask'"),
    (lambda k, u, h: fused.rnn_scan(k, u[:0], h), "at least one time step"),
    (lambda k, u, h: fused.euler_scan(k, u, h, epsilon=0.0), "'epsilon'"),
    (lambda k, u, h: fused.gated_euler_scan(k, u, h, epsilon=0.1), "'u'"),
])
def test_errors(call, match):
  kernel, u, h0, _ = data(9, dtype=jnp.float32)
  with pytest.raises(ValueError, match=match):
    call(kernel, u, h0)


# ------------------------------------------------------ wiring into the library cells


_SLOW = pytest.mark.slow  # same code path as exprnn / rnn: run with -m slow
WIRED = [("exprnn", {}), pytest.param("scornn", {"activation": "tanh"}, marks=_SLOW),
         pytest.param("nnrnn", {}, marks=_SLOW),
         ("lvf", {"integrator": "midpoint", "tau": 0.8}), ("rnn", {}),
         pytest.param("rnn_orth", {}, marks=_SLOW),
         ("antisymmetric", {"epsilon": 0.3}), ("gated_antisymmetric", {"epsilon": 0.3}),
         ("ncgru", {"orthogonal_reset": True, "rho": 2})]


@pytest.mark.parametrize("name, kw", WIRED)
def test_cell_fused_scan_matches_recurrent_layer(name, kw):
  cell = cells.make_cell(name, N, **kw)
  layer = layers.Recurrent(cell, return_carry=True, time_major=True)
  x = jax.random.normal(jax.random.key(10), (T, B, 2))
  lengths = jnp.asarray(LENGTHS)
  params = layer.init(jax.random.key(11), x)["params"]
  scan = cell.fused_scan()
  assert scan is not None
  h0 = jnp.zeros((B, N))

  def via_layer(p):
    return layer.apply({"params": p}, x, initial_carry=h0, seq_lengths=lengths)

  def via_fused(p):
    def run(m):
      u = m.project_inputs(x)
      return scan(m.prepare(dtype=cells.base.input_dtype(u)), h0, u, mask=mask_of(LENGTHS))
    return cell.apply({"params": p["cell"]}, method=run)

  for a, b in zip(via_fused(params), via_layer(params)):
    np.testing.assert_allclose(a, b, **tol.F32)
  g_f = jax.grad(objective(via_fused))(params)
  g_l = jax.grad(objective(via_layer))(params)
  jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, **tol.F32_GRAD),
                         g_f, g_l)


def test_cell_fused_scan_none_for_uncovered():
  assert cells.make_cell("ncgru", N).fused_scan() is not None
  assert cells.make_cell("lstm", N).fused_scan() is not None
  # The hand-written derivatives assume sigmoid gates and tanh: other functions fall back.
  assert cells.LSTMCell(N, gate_fn=jax.nn.hard_sigmoid).fused_scan() is None
  assert cells.GRUCell(N, activation_fn=jax.nn.relu).fused_scan() is None
  # The Euler scans have no in-loop form; Flax's own cells no fused scan at all.
  assert cells.make_cell("antisymmetric", N).fused_scan(in_loop=True) is None
  assert layers.recurrent.fused_scan(nn.GRUCell(N)) is None


# ------------------------------------------------------- in-loop input projection


@pytest.mark.parametrize("activation, reverse, lengths",
                         [("tanh", False, None), ("modrelu", True, LENGTHS)])
def test_input_kernel_matches_hoisted_projection_x64(activation, reverse, lengths, x64):
  kernel, _, h0, bias = data(12)
  x = jax.random.normal(jax.random.key(13), (T, B, 2), jnp.float64)
  w = jax.random.normal(jax.random.key(14), (2, N), jnp.float64)
  mask = mask_of(lengths)
  f = objective(lambda k, x, w, h, b: fused.rnn_scan(k, x, h, b, activation=activation,
                                                     input_kernel=w, reverse=reverse,
                                                     mask=mask))
  g = objective(lambda k, x, w, h, b: plain_rnn(k, jnp.einsum("tbd,dn->tbn", x, w), h, b,
                                                activation, reverse, mask))
  # float64 losses of T = 6 steps of B = 3 N = 6-term products and the 2-wide projection
  np.testing.assert_allclose(f(kernel, x, w, h0, bias), g(kernel, x, w, h0, bias),
                             rtol=tol.F64["rtol"])
  for a, b in zip(jax.grad(f, argnums=tuple(range(5)))(kernel, x, w, h0, bias),
                  jax.grad(g, argnums=tuple(range(5)))(kernel, x, w, h0, bias)):
    np.testing.assert_allclose(a, b, **tol.F64_GRAD)


def test_input_kernel_shape_error():
  kernel, u, h0, _ = data(15, dtype=jnp.float32)
  with pytest.raises(ValueError, match="'input_kernel'"):
    fused.rnn_scan(kernel, u, h0, input_kernel=jnp.zeros((2, N)))
