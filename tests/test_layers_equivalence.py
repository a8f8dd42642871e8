"""Equivalence of the scan layer, a Python loop over the cell, and nn.RNN(cell):
forward for every cell (and Flax's own LSTM / GRU through the layer's fallback), gradients
for one cell of each code path (plain structured, gated structured, structured with a tuple
carry, Flax fallback with a tuple carry) and a tight float64 check."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn
from jax import test_util as jtu

from layer_helpers import close, init_params, python_loop
from lvf_jax import cells, layers
import tolerances as tol

N = 6
FLAX_CELLS = {"flax_lstm": nn.OptimizedLSTMCell, "flax_gru": nn.GRUCell}  # fallback path
ALL_CELLS = sorted(cells.CELLS) + sorted(FLAX_CELLS)
GRAD_CELLS = ("lvf", "ncgru", "lstm", "flax_lstm")
CELL_KW = {"lvf": dict(integrator="midpoint", tau=0.8),
           "ncgru": dict(orthogonal_reset=True)}


def make(name, **kw):
  if name in FLAX_CELLS:
    return FLAX_CELLS[name](N, **kw)
  return cells.make_cell(name, N, **{**CELL_KW.get(name, {}), **kw})


def data(key=0, batch=2, steps=5, m=3):
  return jax.random.normal(jax.random.key(key), (batch, steps, m))


@pytest.mark.parametrize("name", ALL_CELLS)
def test_forward_layer_equals_loop_and_nn_rnn(name):
  cell = make(name)
  layer = layers.Recurrent(cell, return_carry=True)
  rnn = nn.RNN(cell, return_carry=True)
  x = data()
  params = init_params(layer, x)
  out1, out3 = jax.jit(lambda p: (layer.apply({"params": p}, x), rnn.apply({"params": p}, x)))(params)
  close(out1, out3)  # same variable tree: parameters under 'cell'
  carry0 = cell.initialize_carry(jax.random.key(0), x[:, 0].shape)
  close(out1, python_loop(cell, {"params": params["cell"]}, x, carry0))


@pytest.mark.parametrize("name", GRAD_CELLS)
def test_gradients_layer_equal_nn_rnn(name):
  cell = make(name)
  layer = layers.Recurrent(cell, return_carry=True)
  rnn = nn.RNN(cell, return_carry=True)
  x = data()
  params = init_params(layer, x)
  w = jax.random.normal(jax.random.key(2), (2, 5, N))

  def loss(module, p, xx):
    c, y = module.apply({"params": p}, xx)
    return jnp.sum(y * w) + jnp.sum(jax.tree_util.tree_leaves(c)[0])

  @jax.jit
  def both(p, xx):
    return (jax.grad(lambda *a: loss(layer, *a), (0, 1))(p, xx),
            jax.grad(lambda *a: loss(rnn, *a), (0, 1))(p, xx))

  g1, g3 = both(params, x)
  close(g1, g3, tol=tol.F32_GRAD["rtol"])  # float32 gradients: B T 4N = 240 terms (LSTM)
  assert all(np.all(np.isfinite(g)) for g in jax.tree_util.tree_leaves(g1))
  assert all(np.any(g != 0) for g in jax.tree_util.tree_leaves(g1))


def test_scan_equals_loop_grad_x64(x64):
  """Tight float64 check of layer vs step-by-step cell gradients (lvfRNN, Cayley)."""
  cell = cells.LVFRNNCell(4, integrator="midpoint", tau=0.5, param_dtype=jnp.float64)
  layer = layers.Recurrent(cell)
  x = data(batch=2, steps=4).astype(jnp.float64)
  params = init_params(layer, x, 1)
  carry0 = jnp.zeros((2, 4), jnp.float64)

  def f_layer(p):
    return jnp.sum(jnp.sin(layer.apply({"params": p}, x)))

  def f_loop(p):
    return jnp.sum(jnp.sin(python_loop(cell, {"params": p["cell"]}, x, carry0)[1]))

  f_jit = jax.jit(f_layer)
  np.testing.assert_allclose(f_jit(params), f_loop(params), rtol=tol.F64["rtol"])
  close(jax.grad(f_jit)(params), jax.jit(jax.grad(f_loop))(params), tol=tol.F64_GRAD["rtol"])
  jtu.check_grads(f_jit, (params,), order=1, modes=("rev",), **tol.FD)
