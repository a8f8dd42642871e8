"""Cells, layers and their fused scans on a batch sharded over 4 host devices, with the
``Explicit`` mesh axes of ``jax.make_mesh`` (sharding in types) and with ``Auto`` axes:
outputs and gradients equal the unsharded ones (conftest sets 4 host devices)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from lvf_jax import cells, layers, models

from layer_helpers import close_grads, slow_unless
import tolerances as tol


def mesh(axis_type):
  return jax.make_mesh((4,), ("data",), axis_types=(axis_type,))


CELLS = sorted(cells.CELLS)


WIDTH = 6  # the cells' width (3 for the complex-state cells)


def _small(name):
  return cells.make_cell(name, WIDTH if name not in ("urnn", "fcurnn", "eurnn") else 3)


#: One cell per fused scan (rnn, Euler, gated Euler, complex rnn, LSTM, GRU, NC-GRU, GORU);
#: the other cells share these scans and run under -m slow.
FAST = ("lvf", "antisymmetric", "gated_antisymmetric", "fcurnn", "lstm", "gru", "ncgru", "goru")


@pytest.mark.parametrize("name, axis_type",
                         slow_unless(FAST, CELLS, AxisType.Explicit)
                         + [pytest.param(n, AxisType.Auto, marks=pytest.mark.slow)
                            for n in ("lvf", "gru", "ncgru")])
def test_layer_on_a_sharded_batch_equals_one_device(name, axis_type):
  assert jax.device_count() >= 4
  x = jax.random.normal(jax.random.key(0), (8, 12, 3))
  lengths = jnp.array([12, 5, 12, 1, 7, 12, 9, 3])
  layer = layers.Recurrent(_small(name), fused=True)
  variables = layer.init(jax.random.key(1), x)

  def loss(v, x):
    return jnp.sum(layer.apply(v, x, seq_lengths=lengths) ** 2)

  y_ref = layer.apply(variables, x, seq_lengths=lengths)
  g_ref = jax.grad(loss)(variables, x)
  m = mesh(axis_type)
  with jax.set_mesh(m):
    xs = jax.device_put(x, NamedSharding(m, P("data")))
    y = jax.jit(lambda v, x: layer.apply(v, x, seq_lengths=lengths))(variables, xs)
    g = jax.jit(jax.grad(loss))(variables, xs)
  if axis_type == AxisType.Explicit:
    assert jax.typeof(y).sharding.spec[0] == "data"
  np.testing.assert_allclose(y, y_ref, **tol.F32)  # float32, T (WIDTH + 3) = 108 terms
  terms = x.shape[0] * x.shape[1] * 4 * WIDTH  # B T steps of LSTM's 4n-wide gates, the widest
  close_grads(g, g_ref, terms)


@pytest.mark.parametrize("input_projection", ["hoisted", "in_loop"])
def test_stacked_model_with_explicit_axes_equals_one_device(input_projection):
  x = jax.random.normal(jax.random.key(0), (8, 10, 3))
  model = models.SequencePredictor(cells=[cells.LVFRNNCell(6), cells.GRUCell(6)],
                                   num_outputs=4, input_projection=input_projection,
                                   fused=True)
  variables = model.init(jax.random.key(1), x)
  loss = lambda v, x: jnp.mean(model.apply(v, x) ** 2)
  g_ref = jax.grad(loss)(variables, x)
  m = mesh(AxisType.Explicit)
  with jax.set_mesh(m):
    g = jax.jit(jax.grad(loss))(variables, jax.device_put(x, NamedSharding(m, P("data"))))
  terms = x.shape[0] * x.shape[1] * 3 * WIDTH  # B T steps of the GRU's 3n-wide gates
  close_grads(g, g_ref, terms)


@pytest.mark.parametrize("name", ["lvf", "lstm"])
def test_segments_on_a_sharded_batch_equal_one_device(name):
  """Segment-wise rematerialisation splits the (unsharded) time axis of a batch-sharded
  sequence; outputs-free classifier head included."""
  x = jax.random.normal(jax.random.key(2), (8, 23, 3))
  model = models.SequenceClassifier(cells=[_small(name)], num_outputs=2, fused=True)
  segmented = models.SequenceClassifier(cells=[_small(name)], num_outputs=2, fused=True,
                                        segment_length=5)
  variables = model.init(jax.random.key(3), x)
  ref = jax.grad(lambda v, x: jnp.sum(jnp.tanh(model.apply(v, x))))(variables, x)
  m = mesh(AxisType.Explicit)
  with jax.set_mesh(m):
    xs = jax.device_put(x, NamedSharding(m, P("data")))
    got = jax.jit(jax.grad(lambda v, x: jnp.sum(jnp.tanh(segmented.apply(v, x)))))(
        variables, xs)
  terms = x.shape[0] * x.shape[1] * 4 * WIDTH  # B T steps of LSTM's 4n-wide gates, the widest
  for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(ref)):
    close_grads(np.asarray(a), np.asarray(b), terms)
