"""Segment-wise rematerialisation (``Recurrent(segment_length=...)``, ``segment_scan``) and
the outputs-free path (``return_sequences=False``): the same outputs and gradients as the
plain layer, and a compiled training step whose memory no longer grows as ``T B n``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lvf_jax import cells, layers, models, recurrences

from layer_helpers import close_grads, slow_unless
import tolerances as tol

CELLS = ["exprnn", "lvf", "urnn", "lstm", "gru", "ncgru", "antisymmetric",
         "gated_antisymmetric"]


def _loss_and_grads(layer, params, x, **kw):
  def loss(p):
    carry, y = layer.apply(p, x, **kw)
    c = sum(jnp.sum(jnp.sin(a)) for a in jax.tree_util.tree_leaves(carry))
    return jnp.sum(y ** 2) + c, (carry, y)
  return jax.value_and_grad(loss, has_aux=True)(params)


# one cell per kind of carry in the default suite (a vector, LSTM's pair, NC-GRU's gated
# state), every cell under -m slow
@pytest.mark.parametrize("name", slow_unless(("lvf", "lstm", "ncgru"), CELLS))
@pytest.mark.parametrize("fused", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_segments_equal_the_plain_layer(name, fused):
  n = 12
  cell = cells.make_cell(name, n)
  x = jax.random.normal(jax.random.key(0), (3, 23, 4))
  terms = x.shape[0] * x.shape[1] * 4 * n  # T B steps of LSTM's 4n-wide gates, the widest
  lengths = jnp.array([23, 17, 9])
  plain = layers.Recurrent(cell, fused=fused, return_carry=True)
  params = plain.init(jax.random.key(1), x)
  # a remainder segment forwards and backwards, with and without padding
  for k, reverse, kw in ((5, False, {"seq_lengths": lengths}), (5, True, {})):
    seg = layers.Recurrent(cell, fused=fused, return_carry=True, segment_length=k)
    (la, aux_a), ga = _loss_and_grads(plain, params, x, reverse=reverse, **kw)
    (lb, aux_b), gb = _loss_and_grads(seg, params, x, reverse=reverse, **kw)
    # a whole float32 loss: the T n recurrence chain, then a sum of its T B n squares
    np.testing.assert_allclose(float(la), float(lb), rtol=tol.F32_LONG["rtol"])
    close_grads(aux_a, aux_b, terms)
    close_grads(ga, gb, terms)


@pytest.mark.parametrize("k,reverse", [("auto", True), (1, False),
                                       pytest.param(23, True, marks=pytest.mark.slow),
                                       pytest.param(100, False, marks=pytest.mark.slow)])
def test_segment_lengths_from_one_step_to_the_whole_sequence(k, reverse):
  n = 8
  cell = cells.make_cell("lvf", n)
  x = jax.random.normal(jax.random.key(8), (2, 23, 3))
  plain = layers.Recurrent(cell, fused=True, return_carry=True)
  params = plain.init(jax.random.key(9), x)
  seg = layers.Recurrent(cell, fused=True, return_carry=True, segment_length=k)
  close_grads(_loss_and_grads(plain, params, x, reverse=reverse),
         _loss_and_grads(seg, params, x, reverse=reverse), x.shape[0] * x.shape[1] * n)


@pytest.mark.parametrize("name", ["lvf", "lstm"])
def test_return_sequences_false_gives_the_final_carry_and_its_gradient(name):
  n = 10
  cell = cells.make_cell(name, n)
  x = jax.random.normal(jax.random.key(2), (4, 30, 3))
  terms = x.shape[0] * x.shape[1] * 4 * n  # T B steps of LSTM's 4n-wide gates, the widest
  full = layers.Recurrent(cell, fused=True, return_carry=True)
  params = full.init(jax.random.key(3), x)
  for k in (None, 7):
    last = layers.Recurrent(cell, fused=True, return_sequences=False, segment_length=k)
    f = lambda p, l=last: jnp.sum(models.carry_output(l.apply(p, x)) ** 3)
    g = lambda p: jnp.sum(models.carry_output(full.apply(p, x)[0]) ** 3)
    close_grads(jax.value_and_grad(f)(params), jax.value_and_grad(g)(params), terms)
  carry, ys = layers.Recurrent(cell, fused=True, return_carry=True,
                               return_sequences=False).apply(params, x)
  assert ys is None
  close_grads(carry, full.apply(params, x)[0], terms)


def test_carry_output_is_the_last_valid_output_of_every_cell():
  x = jax.random.normal(jax.random.key(4), (3, 9, 2))
  lengths = jnp.array([9, 4, 1])
  for name in sorted(cells.CELLS):
    layer = layers.Recurrent(cells.make_cell(name, 6), fused=True, return_carry=True)
    params = layer.init(jax.random.key(5), x)
    carry, y = layer.apply(params, x, seq_lengths=lengths)
    # one state read two ways: at most an output map's few roundings
    np.testing.assert_allclose(np.asarray(models.carry_output(carry)),
                               np.asarray(models.last_valid(y, lengths)),
                               rtol=tol.F32_SHORT["rtol"],
                               err_msg=name)


def test_segment_scan_matches_a_python_loop_in_both_directions():
  """Independent reference: a Python loop over the steps of h_t = tanh(h W + x_t)."""
  rng = np.random.default_rng(0)
  w = rng.standard_normal((5, 5)).astype(np.float32) / 3
  xs = rng.standard_normal((13, 2, 5)).astype(np.float32)
  h0 = rng.standard_normal((2, 5)).astype(np.float32)

  def run(c, x, reverse):
    def body(h, x_t):
      h = jnp.tanh(h @ w + x_t)
      return h, h
    return jax.lax.scan(body, c, x, reverse=reverse)

  for reverse in (False, True):
    h, ys = h0, np.zeros_like(xs)
    for t in (reversed(range(13)) if reverse else range(13)):
      h = np.tanh(h @ w + xs[t])
      ys[t] = h
    for k in (1, 4, 13, "auto"):
      c, out = recurrences.segment_scan(lambda c, x, r=reverse: run(c, x, r), h0, xs,
                                        segment_length=k, reverse=reverse)
      # float32, 13 steps of 5-term products: 65 terms
      np.testing.assert_allclose(np.asarray(out), ys, **tol.F32)
      np.testing.assert_allclose(np.asarray(c), h, **tol.F32)
      c_only, none = recurrences.segment_scan(lambda c, x, r=reverse: run(c, x, r), h0, xs,
                                              segment_length=k, reverse=reverse,
                                              outputs=False)
      assert none is None
      np.testing.assert_allclose(np.asarray(c_only), h, **tol.F32)


def test_auto_segment_length_is_the_ceiling_of_the_square_root():
  for t in (1, 2, 4, 5, 99, 100, 101, 10 ** 6):
    k = recurrences.auto_segment_length(t)
    assert (k - 1) ** 2 < t <= k ** 2


def _temp_bytes(fn, *args) -> int:
  return jax.jit(fn).lower(*args).compile().memory_analysis().temp_size_in_bytes


def test_segments_bound_the_memory_of_a_last_state_training_step():
  """The compiled gradient of a last-state loss: its temporaries grow as T B n without
  segments and stay far below that with them (XLA's own memory analysis)."""
  n, b, t = 64, 8, 4096
  cell = cells.make_cell("exprnn", n)
  x = jnp.zeros((b, t, 2))
  params = layers.Recurrent(cell, fused=True).init(jax.random.key(0), x[:, :4])

  def grad_fn(layer):
    return jax.grad(lambda p, x: jnp.sum(models.carry_output(
        layer.apply(p, x, return_carry=True)[0]) ** 2))

  states = t * b * n * 4  # one (T, B, n) float32 sequence
  plain = _temp_bytes(grad_fn(layers.Recurrent(cell, fused=True)), params, x)
  seg = _temp_bytes(grad_fn(layers.Recurrent(cell, fused=True, return_sequences=False,
                                             segment_length="auto")), params, x)
  assert plain >= states
  assert seg < states / 4, (plain, seg, states)


@pytest.mark.parametrize("value", [-1, 2.5, "sqrt", True])
def test_bad_segment_lengths_are_rejected(value):
  cell = cells.make_cell("rnn", 4)
  with pytest.raises(ValueError, match="'segment_length' must be None, 0"):
    layers.Recurrent(cell, segment_length=value).init(jax.random.key(0), jnp.zeros((1, 5, 2)))


def test_segments_need_a_structured_cell():
  with pytest.raises(ValueError, match="'segment_length' needs a cell of lvf_jax.cells"):
    layers.Recurrent(nn.GRUCell(4), segment_length=2).init(jax.random.key(0),
                                                           jnp.zeros((1, 5, 2)))


@pytest.mark.slow  # the sharded classifier test covers the head in the default suite
def test_classifier_with_segments_equals_the_plain_classifier():
  x = jax.random.normal(jax.random.key(6), (2, 40, 1))
  kw = dict(cells=[cells.make_cell("lvf", 8), cells.make_cell("gru", 8)], num_outputs=3,
            fused=True)
  plain = models.SequenceClassifier(**kw)
  params = plain.init(jax.random.key(7), x)
  seg = models.SequenceClassifier(**kw, segment_length=6)
  f = lambda m: jax.value_and_grad(lambda p: jnp.sum(jnp.tanh(m.apply(p, x))))(params)
  close_grads(f(plain), f(seg), x.shape[0] * x.shape[1] * 3 * 8)  # T B steps of GRU's 3n gates
