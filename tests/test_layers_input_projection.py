"""Recurrent's ``input_projection``: ``x_t W`` inside the fused loop gives the outputs, final
carry and gradients of the hoisted projection and of the plain (unfused) scan; ``'auto'``
chooses by the input width; bad settings raise clear errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lvf_jax import cells, layers
from lvf_jax import recurrences as fused_lib
from lvf_jax.layers import recurrent as recurrent_lib

from layer_helpers import B, N, T, close, data, init_params, make, slow_unless
import tolerances as tol

# Every cell whose fused scan is rnn_scan: modReLU (expRNN, nnRNN, uRNN complex state,
# full-capacity uRNN), tanh with an input bias (tanh RNN), lvfRNN, scoRNN; and the gated
# scans: LSTM (no input bias), GRU (input biases), GORU / NC-GRU (gate biases added after
# the projection).
IN_LOOP_CELLS = ["exprnn", "scornn", "nnrnn", "lvf", "rnn", "rnn_orth", "urnn", "fcurnn",
                 "eurnn", "lstm", "gru", "goru", "ncgru"]


def _loss(layer, lengths):
  def loss(p, x):
    carry, y = layer.apply({"params": p}, x, seq_lengths=lengths)
    return jnp.sum(jnp.sin(3.0 * y)) + sum(jnp.sum(jnp.cos(c))
                                           for c in jax.tree_util.tree_leaves(carry))
  return loss


# forward: in the default suite every cell whose input enters its scan differently; the
# cells left out share a kept cell's scan (expRNN and nnRNN: scoRNN's real modReLU scan; uRNN:
# the full-capacity uRNN's complex one; GORU: NC-GRU's gate biases) and run under -m slow;
# reversed: one cell per scan family in the default suite
FORWARD_FAST = tuple(n for n in IN_LOOP_CELLS if n not in ("exprnn", "nnrnn", "urnn", "goru"))
REVERSED_FAST = ("lvf", "lstm", "ncgru")


@pytest.mark.parametrize("name, reverse", slow_unless(FORWARD_FAST, IN_LOOP_CELLS, False)
                         + slow_unless(REVERSED_FAST, IN_LOOP_CELLS, True))
def test_in_loop_matches_hoisted_and_plain_scan_x64(name, reverse, x64):
  x = data().astype(jnp.float64)
  lengths = jnp.array([T, 3, 5], jnp.int32)
  cell = make(name, param_dtype=jnp.float64)
  kw = dict(return_carry=True, reverse=reverse)
  in_loop = layers.Recurrent(cell, fused=True, input_projection="in_loop", **kw)
  hoisted = layers.Recurrent(cell, fused=True, input_projection="hoisted", **kw)
  plain = layers.Recurrent(cell, **kw)  # the pure step in lax.scan, autodiff
  params = init_params(in_loop, x)
  # Same parameter tree whichever way the input is projected.
  assert (jax.tree_util.tree_structure(params)
          == jax.tree_util.tree_structure(init_params(hoisted, x)))
  ref = {k: jax.value_and_grad(_loss(m, lengths), argnums=(0, 1))(params, x)
         for k, m in (("hoisted", hoisted), ("plain", plain))}
  got = jax.value_and_grad(_loss(in_loop, lengths), argnums=(0, 1))(params, x)
  for k in ref:
    close(got, ref[k], tol=tol.F64_GRAD["rtol"])  # float64 values and gradients
  # The input and its gradient really took part (not a zero path).
  assert float(jnp.max(jnp.abs(got[1][1]))) > 1e-3


def test_in_loop_with_checkpoint_unroll_time_major_and_batch_axes():
  cell = make("exprnn")
  x = jax.random.normal(jax.random.key(3), (T, 2, B, 3))  # time-major, two batch axes
  kw = dict(time_major=True, unroll=2, checkpoint=True, fused=True)
  a = layers.Recurrent(cell, input_projection="in_loop", **kw)
  b = layers.Recurrent(cell, input_projection="hoisted", **kw)
  params = init_params(a, x)

  def loss(m):
    return lambda p: jnp.sum(jnp.tanh(m.apply({"params": p}, x)))
  # float32 gradients: 2 B T n = 252 summed terms
  close(jax.jit(jax.value_and_grad(loss(a)))(params),
        jax.jit(jax.value_and_grad(loss(b)))(params), tol=tol.F32_GRAD["rtol"])


def test_in_loop_vmap_and_low_precision_dtype():
  cell = make("rnn", dtype=jnp.bfloat16)
  x = data().astype(jnp.bfloat16)
  layer = layers.Recurrent(cell, fused=True, input_projection="in_loop")
  params = init_params(layer, x)
  y = layer.apply({"params": params}, x)
  assert y.dtype == jnp.bfloat16
  ref = layers.Recurrent(cell, fused=True, input_projection="hoisted").apply(
      {"params": params}, x)
  # bfloat16 compute in two orders: each of the T steps rounds N-term recurrent and M-term
  # input products (tanh keeps the outputs' scale at 1)
  np.testing.assert_allclose(np.asarray(y, np.float32), np.asarray(ref, np.float32),
                             atol=tol.probabilistic(T * (N + x.shape[-1]), tol.BFLOAT16_EPS))
  ys = jax.vmap(lambda xx: layer.apply({"params": params}, xx))(x[None].repeat(2, axis=0))
  assert ys.shape == (2,) + y.shape


WIDE = 2 * recurrent_lib.IN_LOOP_RATIO  # a hidden size with two in-loop input widths


@pytest.mark.parametrize("width,expect_in_loop", [(1, True), (2, True), (3, False)])
def test_auto_chooses_by_input_width(monkeypatch, width, expect_in_loop):
  calls = []
  original = fused_lib.rnn_scan

  def spy(*args, **kwargs):
    calls.append(kwargs.get("input_kernel") is not None)
    return original(*args, **kwargs)
  monkeypatch.setattr(fused_lib, "rnn_scan", spy)
  x = jax.random.normal(jax.random.key(0), (B, T, width))
  cell = cells.make_cell("exprnn", WIDE)
  layer = layers.Recurrent(cell, fused=True, input_projection="auto")
  params = init_params(layer, x)
  calls.clear()
  auto = layer.apply({"params": params}, x)
  assert calls == [expect_in_loop]
  hoisted = layers.Recurrent(cell, fused=True, input_projection="hoisted").apply(
      {"params": params}, x)
  close(auto, hoisted, tol=tol.F32["rtol"])  # float32, T (WIDE + width) <= 133 terms


@pytest.mark.parametrize("name", ["antisymmetric", "gated_antisymmetric"])
def test_auto_hoists_for_cells_without_an_in_loop_scan(name):
  x = data()
  auto = layers.Recurrent(make(name), fused=True, input_projection="auto")
  params = init_params(auto, x)
  close(auto.apply({"params": params}, x),
        layers.Recurrent(make(name), fused=True, input_projection="hoisted").apply(
            {"params": params}, x))


def test_bad_input_projection_settings_raise():
  x = data()
  with pytest.raises(ValueError, match="'input_projection' must be one of"):
    init_params(layers.Recurrent(make("exprnn"), fused=True, input_projection="loop"), x)
  with pytest.raises(ValueError, match="fused=True"):
    init_params(layers.Recurrent(make("exprnn"), input_projection="in_loop"), x)
  with pytest.raises(ValueError, match="AntisymmetricRNNCell"):
    init_params(layers.Recurrent(make("antisymmetric"), fused=True, input_projection="in_loop"),
                x)
  with pytest.raises(ValueError, match="'in_loop'"):
    init_params(layers.Recurrent(nn.GRUCell(N), fused=True, input_projection="in_loop"), x)
  # Flax's own cell with 'auto' simply runs its fallback scan.
  assert layers.Recurrent(nn.GRUCell(N), input_projection="auto").init(
      jax.random.key(0), x) is not None


def test_input_weights_are_the_projection():
  cell = make("rnn")
  x = data()
  params = cell.init(jax.random.key(0), jnp.zeros((B, N)), x[:, 0])
  w, b = cell.apply(params, x, method=lambda c, xx: c.input_weights(xx))
  u = cell.apply(params, x, method=lambda c, xx: c.project_inputs(xx))
  np.testing.assert_allclose(u, x @ w + b[None, None], **tol.F32)  # float32, M + 1 terms
  with pytest.raises(NotImplementedError, match="GatedAntisymmetricRNNCell"):
    anti = make("gated_antisymmetric")
    anti.apply(anti.init(jax.random.key(0), jnp.zeros((B, N)), x[:, 0]), x,
               method=lambda c, xx: c.input_weights(xx))


@pytest.mark.parametrize("name", ["gru", "lstm", "goru", "ncgru"])
def test_gated_input_weights_are_the_concatenated_projections(name):
  cell = make(name)
  x = data()
  params = cell.init(jax.random.key(0), cell.initialize_carry(jax.random.key(1), x[:, 0].shape),
                     x[:, 0])
  # Non-zero biases, so that a bias lost on the way would show.
  params = jax.tree_util.tree_map(lambda a: a + 0.1, params)
  w, b = cell.apply(params, x, method=lambda c, xx: c.input_weights(xx))
  u = cell.apply(params, x, method=lambda c, xx: c.project_inputs(xx))
  u = jnp.concatenate(u, axis=-1) if isinstance(u, tuple) else u
  ref = x @ w if b is None else x @ w + b[None, None]
  np.testing.assert_allclose(u, ref, **tol.F32)
  assert (b is None) == (name == "lstm")
