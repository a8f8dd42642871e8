"""The scan layer: time-major / unroll / checkpoint variants, one prepare per sequence,
jit / vmap, dtypes, bad inputs and carried state (truncated BPTT)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lvf_jax import cells, layers

from layer_helpers import B, M, N, T, data, init_params, make
from layer_helpers import close as _close
import tolerances as tol


@pytest.mark.parametrize("name", ["nnrnn", "lstm"])
def test_time_major_unroll_checkpoint(name):
  cell = make(name)
  x = data(batch=2, steps=5)
  base_layer = layers.Recurrent(cell)
  params = init_params(base_layer, x, 1)
  w = jax.random.normal(jax.random.key(3), (2, 5, N))
  variants = [(base_layer, False), (layers.Recurrent(cell, time_major=True), True),
              (layers.Recurrent(cell, unroll=3), False),
              (layers.Recurrent(cell, checkpoint=True), False)]

  def loss(layer, tm, p):
    xx = jnp.swapaxes(x, 0, 1) if tm else x
    y = layer.apply({"params": p}, xx)
    y = jnp.swapaxes(y, 0, 1) if tm else y
    return jnp.sum(y * w), y

  @jax.jit
  def run(p):
    return [jax.value_and_grad(lambda q: loss(l, tm, q), has_aux=True)(p) for l, tm in variants]

  (_, ref_y), ref_g = run(params)[0]
  for (_, y), g in run(params)[1:]:
    _close(y, ref_y)
    _close(g, ref_g, tol=tol.F32_GRAD["rtol"])  # gradients: B T 4n = 240 terms (LSTM)


def test_prepare_called_once_per_sequence():
  """The layer evaluates the matrix function once; nn.RNN once per step."""
  calls = []

  class Counting(cells.ExpRNNCell):
    def recurrent_matrix(self):
      calls.append(1)
      return super().recurrent_matrix()

  cell = Counting(N)
  x = data()
  layer = layers.Recurrent(cell)
  params = init_params(layer, x, 0)
  calls.clear()
  jax.make_jaxpr(lambda p: layer.apply({"params": p}, x))(params)
  assert len(calls) == 1
  calls.clear()
  jax.make_jaxpr(lambda p: nn.RNN(cell).apply({"params": p}, x))(params)
  assert len(calls) >= 1  # inside the scan body: evaluated at every step at run time


def test_jit_and_vmap():
  cell = make("lvf")
  layer = layers.Recurrent(cell)
  x = data()
  params = init_params(layer, x, 1)
  y = layer.apply({"params": params}, x)
  y_jit = jax.jit(lambda p, xx: layer.apply({"params": p}, xx))(params, x)
  _close(y, y_jit)
  # unbatched (time, features) inputs vmapped over the batch
  y_vmap = jax.vmap(lambda xx: layer.apply({"params": params}, xx))(x)
  _close(y, y_vmap)
  # vmap over parameter sets (e.g. an ensemble)
  stacked = jax.tree_util.tree_map(lambda a: jnp.stack([a, 2 * a]), params)
  y_ens = jax.vmap(lambda p: layer.apply({"params": p}, x))(stacked)
  _close(y_ens[0], y)


@pytest.mark.parametrize("name", ["lvf", "ncgru", "gated_antisymmetric", "lstm"])
def test_dtypes(name):
  cell = make(name)
  layer = layers.Recurrent(cell)
  x = data()
  params = init_params(layer, x, 1)
  y32 = layer.apply({"params": params}, x)
  assert y32.dtype == jnp.float32
  y_in16 = layer.apply({"params": params}, x.astype(jnp.bfloat16))  # f32 params: f32 compute
  assert y_in16.dtype == jnp.float32
  scale = max(1.0, float(jnp.abs(y32).max()))
  # bfloat16 inputs, float32 compute: the T M inputs are rounded once each
  np.testing.assert_allclose(y_in16, y32, atol=tol.probabilistic(T * M, tol.BFLOAT16_EPS) * scale)
  layer16 = layers.Recurrent(make(name, dtype=jnp.bfloat16))
  y16 = layer16.apply({"params": params}, x)
  assert y16.dtype == jnp.bfloat16
  # bfloat16 compute: each of the T steps rounds N-term recurrent and M-term input products
  np.testing.assert_allclose(np.asarray(y16, np.float32), y32,
                             atol=tol.probabilistic(T * (N + M), tol.BFLOAT16_EPS) * scale)
  assert jax.tree_util.tree_leaves(params)[0].dtype == jnp.float32


def test_bad_inputs():
  layer = layers.Recurrent(make("lvf"))
  x = data()
  params = init_params(layer, x, 1)
  with pytest.raises(ValueError, match="Recurrent: inputs must have shape"):
    layer.apply({"params": params}, jnp.zeros((M,)))
  with pytest.raises(ValueError, match="LVFRNNCell: inputs must have 3 features"):
    layer.apply({"params": params}, jnp.zeros((B, T, M + 2)))
  with pytest.raises(ValueError, match="argument 'seq_lengths'"):
    layer.apply({"params": params}, x, seq_lengths=jnp.array([1, 2]))
  with pytest.raises(ValueError, match="argument 'seq_lengths'"):
    layer.apply({"params": params}, x, seq_lengths=jnp.array([1.0, 2.0, 3.0]))


def test_initial_carry_and_truncated_bptt():
  """Running two chunks with the carry threaded equals one run over the whole sequence."""
  layer = layers.Recurrent(make("exprnn"), return_carry=True)
  x = data(steps=8)
  params = init_params(layer, x, 1)
  c_full, y_full = layer.apply({"params": params}, x)
  c1, y1 = layer.apply({"params": params}, x[:, :5])
  c2, y2 = layer.apply({"params": params}, x[:, 5:], initial_carry=c1)
  _close(c_full, c2)
  _close(y_full, jnp.concatenate([y1, y2], axis=1))


@pytest.mark.parametrize("name", ["ncgru", "gated_antisymmetric"])
def test_pure_step_on_unbound_cell(name):
  """prepare / project_inputs / step compose outside Flax: scan_steps with the unbound step."""
  cell = make(name)
  layer = layers.Recurrent(cell)
  x = data()
  params = init_params(layer, x)
  v = {"params": params["cell"]}
  prep = cell.apply(v, method=lambda c: c.prepare())
  u = cell.apply(v, jnp.swapaxes(x, 0, 1), method=lambda c, xx: c.project_inputs(xx))
  carry0 = jnp.zeros((B, N), jnp.float32)
  step = jax.jit(cell.step)  # unbound: reads only static hyperparameters
  _, ys = layers.scan_steps(step, prep, carry0, u)
  _close(jnp.swapaxes(ys, 0, 1), layer.apply({"params": params}, x))


@pytest.mark.parametrize("name", ["lvf", "exprnn", "antisymmetric", "rnn", "ncgru", "lstm", "gru"])
def test_fused_layer_matches_plain_scan(name):
  """Recurrent(fused=True) gives the outputs and gradients of the plain scan (masked)."""
  x = data()
  lengths = jnp.array([T, 3, 5], jnp.int32)
  plain = layers.Recurrent(make(name), return_carry=True)
  fast = layers.Recurrent(make(name), return_carry=True, fused=True)
  params = init_params(plain, x)

  def loss(p, layer):
    carry, y = layer.apply({"params": p}, x, seq_lengths=lengths)
    return jnp.sum(y * y) + sum(jnp.sum(c * c) for c in jax.tree_util.tree_leaves(carry))

  # the loss: a T 4n = 168-term recurrence chain (LSTM), then a sum of B T n squares
  np.testing.assert_allclose(loss(params, fast), loss(params, plain), rtol=tol.F32["rtol"])
  g_fast = jax.grad(loss)(params, fast)
  g_plain = jax.grad(loss)(params, plain)
  _close(g_fast, g_plain, tol=tol.F32_GRAD["rtol"])  # gradients: B T 4n = 504 terms (LSTM)


def test_forward_mode_through_the_fused_layer_names_the_forward_mode_path():
  x = data()
  fused = layers.Recurrent(cells.ExpRNNCell(N), fused=True)
  params = fused.init(jax.random.key(0), x)
  with pytest.raises(TypeError, match=r"Recurrent\(fused=True\).*reverse-mode.*"
                                      r"Use Recurrent\(..., fused=False\)"):
    jax.jvp(lambda v: fused.apply(params, v), (x,), (x,))
  plain = layers.Recurrent(cells.ExpRNNCell(N), fused=False)
  y, ty = jax.jvp(lambda v: plain.apply(params, v), (x,), (x,))
  _, pullback = jax.vjp(lambda v: fused.apply(params, v), x)
  # <ty, c> from forward mode equals <x, J^T c> from the fused layer's reverse mode.
  c = jax.random.normal(jax.random.key(1), y.shape)
  # float32, two B T N-term dot products of random signs (cancellation ~ sqrt(B T N) = 11) of
  # T N-term chains: the F32_GRAD bound
  np.testing.assert_allclose(jnp.vdot(ty, c), jnp.vdot(x, pullback(c)[0]),
                             rtol=tol.F32_GRAD["rtol"])
