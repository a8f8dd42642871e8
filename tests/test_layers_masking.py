"""Masking (seq_lengths), reverse processing and bidirectional use of the scan layer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lvf_jax import layers

from layer_helpers import B, N, T, data, init_params, make, python_loop
from layer_helpers import close as _close


@pytest.mark.parametrize("name", ["lvf", "exprnn", "lstm"])
def test_seq_lengths_masking(name):
  cell = make(name)
  layer = layers.Recurrent(cell, return_carry=True)
  x = data(batch=2, steps=5)
  lengths = jnp.array([5, 2])
  params = init_params(layer, x, 1)
  carry, y = layer.apply({"params": params}, x, seq_lengths=lengths)
  for b in range(2):
    n_b = int(lengths[b])
    c_b, y_b = layer.apply({"params": params}, x[b:b + 1, :n_b])  # the truncated sequence
    _close(jax.tree_util.tree_map(lambda a: a[b:b + 1], carry), c_b)
    _close(y[b:b + 1, :n_b], y_b)
    np.testing.assert_array_equal(y[b, n_b:], 0.0)
  # nn.RNN agrees on the final carry (it selects the last valid one)
  c_rnn, _ = nn.RNN(cell, return_carry=True).apply({"params": params}, x, seq_lengths=lengths)
  _close(carry, c_rnn)


@pytest.mark.parametrize("name", ["scornn", "gru"])
def test_reverse(name):
  cell = make(name)
  layer = layers.Recurrent(cell, return_carry=True, reverse=True)
  x = data(batch=2, steps=5)
  params = init_params(layer, x, 1)
  carry0 = cell.initialize_carry(jax.random.key(0), x[:, 0].shape)
  c1, y1 = layer.apply({"params": params}, x)
  c2, y2 = python_loop(cell, {"params": params["cell"]}, x, carry0, reverse=True)
  _close((c1, y1), (c2, y2))
  # with lengths: each sequence is processed from its last valid step; padding stays at the end
  lengths = jnp.array([5, 3])
  c3, y3 = layer.apply({"params": params}, x, seq_lengths=lengths)
  c4, y4 = nn.RNN(cell, return_carry=True, reverse=True, keep_order=True).apply(
      {"params": params}, x, seq_lengths=lengths)
  _close(c3, c4)
  cb, yb = layer.apply({"params": params}, x[1:, :3])  # the truncated sequence, reversed
  _close(jax.tree_util.tree_map(lambda a: a[1:], c3), cb)
  _close(y3[1:, :3], yb)
  _close(y3[:, :3], y4[:, :3])
  np.testing.assert_array_equal(y3[1, 3:], 0.0)


def test_bidirectional():
  cell_f, cell_b = make("lvf"), make("lvf")
  bi = nn.Bidirectional(nn.RNN(cell_f), nn.RNN(cell_b))  # the cells also run in nn.RNN
  x = data()
  variables = bi.init(jax.random.key(0), x)
  y = bi.apply(variables, x)
  assert y.shape == (B, T, 2 * N)
  # the same with the library layer in both directions, directly and inside nn.Bidirectional
  fwd = layers.Recurrent(make("lvf"))
  bwd = layers.Recurrent(make("lvf"), reverse=True)
  p = {"forward": variables["params"]["forward_rnn"], "backward": variables["params"]["backward_rnn"]}
  y_f = fwd.apply({"params": p["forward"]}, x)
  y_b = bwd.apply({"params": p["backward"]}, x)
  _close(y, jnp.concatenate([y_f, y_b], axis=-1))
  bi2 = nn.Bidirectional(layers.Recurrent(make("lvf")), layers.Recurrent(make("lvf")))
  lengths = jnp.array([T, 4, 2])
  _close(bi2.apply(variables, x, seq_lengths=lengths), bi.apply(variables, x, seq_lengths=lengths)
         * (jnp.arange(T)[None, :, None] < lengths[:, None, None]).astype(jnp.float32))
  # keep_order=False returns the reverse pass in processing order, as nn.RNN does
  y_rev = layers.Recurrent(make("lvf"), reverse=True, keep_order=False).apply(
      {"params": p["backward"]}, x, seq_lengths=lengths)
  y_rnn = nn.RNN(make("lvf"), reverse=True).apply({"params": p["backward"]}, x, seq_lengths=lengths)
  for b in range(B):
    _close(y_rev[b, :int(lengths[b])], y_rnn[b, :int(lengths[b])])


def test_seq_lengths_outside_the_sequence_are_rejected():
  layer = layers.Recurrent(make("rnn"))
  x = jnp.zeros((2, T, 3))
  params = layer.init(jax.random.key(0), x)
  for bad in ([T + 1, 2], [-1, 2]):
    with pytest.raises(ValueError, match=rf"'seq_lengths' must lie in \[0, {T}\]"):
      layer.apply(params, x, seq_lengths=jnp.asarray(bad))
  layer.apply(params, x, seq_lengths=jnp.asarray([0, T]))  # the ends are valid
  jax.jit(lambda s: layer.apply(params, x, seq_lengths=s))(jnp.asarray([1, 2]))  # traced
