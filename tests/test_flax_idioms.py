"""Structured cells inside Flax's own idioms: ``nn.RNN``, a user's cell that calls ours,
``nn.scan``, ``nn.Bidirectional`` and the ``flax.nnx`` bridge, per step and prepared once
(:meth:`lvf_jax.cells.StructuredCell.prepared`); LSTM / GRU carries of another width."""

from __future__ import annotations

import re
from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax.extend import core as jax_core
import numpy as np
import optax
import pytest
from flax import linen as nn
from flax import nnx

from lvf_jax import cells, layers
import tolerances as tol

N, D, B, T = 8, 3, 2, 5


def _make(name: str) -> Callable[..., Any]:
  return lambda **kw: cells.CELLS[name](N, **kw)


class UserCell(nn.RNNCellBase):
  """A user's decoder cell: ours, then a readout of its own."""

  cell: Any

  @nn.compact
  def __call__(self, carry, x):
    carry, y = self.cell(carry, x)
    return carry, nn.Dense(2, name="readout")(y)

  @property
  def num_feature_axes(self) -> int:
    return 1


class EncoderDecoder(nn.Module):
  """``nn.RNN(cell)`` encoder, ``nn.RNN(UserCell(cell))`` decoder from its carry."""

  make: Callable[..., Any]
  prepared: bool

  @nn.compact
  def __call__(self, x, y):
    enc, dec = self.make(name="enc"), self.make(name="dec")
    if self.prepared:
      enc, dec = enc.prepared(), dec.prepared()
    carry, _ = nn.RNN(enc, return_carry=True)(x)
    return nn.RNN(UserCell(dec))(y, initial_carry=carry)


def _inputs():
  rng = np.random.default_rng(0)
  return (jnp.asarray(rng.normal(size=(B, T, D)), jnp.float32),
          jnp.asarray(rng.normal(size=(B, T - 1, D)), jnp.float32))


def _tol(ref) -> float:
  """Float32 rounding of a sum over ``T`` steps of ``N``-term products, relative to the
  largest magnitude (the two paths add the same terms in another order)."""
  scale = max(1.0, max(float(np.max(np.abs(np.asarray(r)))) for r in jax.tree_util.tree_leaves(ref)))
  return tol.recurrence(T, N, scale)


def _assert_trees_close(a, b):
  tol = _tol(a)
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
    # rtol=0: _tol is absolute, at the tree's largest magnitude
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=tol)


def _value_and_grad(model, variables, *args):
  def loss(v):
    out = model.apply(v, *args)
    return sum(jnp.sum(jnp.sin(o)) for o in jax.tree_util.tree_leaves(out)), out

  (_, out), grads = jax.value_and_grad(loss, has_aux=True)(variables)
  return out, grads


@pytest.mark.parametrize("name", sorted(cells.CELLS))
def test_prepared_gives_the_per_step_outputs_and_gradients(name):
  x, y = _inputs()
  per_step, prepared = EncoderDecoder(_make(name), False), EncoderDecoder(_make(name), True)
  variables = per_step.init(jax.random.key(1), x, y)
  other = prepared.init(jax.random.key(1), x, y)
  assert jax.tree_util.tree_structure(other) == jax.tree_util.tree_structure(variables)
  assert jax.tree_util.tree_map(jnp.shape, other) == jax.tree_util.tree_map(jnp.shape, variables)
  out0, g0 = _value_and_grad(per_step, {"params": variables["params"]}, x, y)
  out1, g1 = _value_and_grad(prepared, {"params": variables["params"]}, x, y)
  _assert_trees_close(out0, out1)
  _assert_trees_close(g0, g1)
  assert any(np.any(np.asarray(g) != 0) for g in jax.tree_util.tree_leaves(g1["params"]["enc"]))


def _time_loop_bodies(jaxpr):
  """Every jaxpr inside a scan over the ``T`` or ``T - 1`` steps of the sequences (the
  recurrences, forward and backward), nested ones included."""
  for eqn in jaxpr.eqns:
    subs = jax_core.jaxprs_in_params(eqn.params)
    if eqn.primitive.name == "scan" and eqn.params["length"] in (T, T - 1):
      for sub in subs:
        yield from _nested(sub)
    else:
      for sub in subs:
        yield from _time_loop_bodies(sub)


def _nested(jaxpr):
  yield jaxpr
  for eqn in jaxpr.eqns:
    for sub in jax_core.jaxprs_in_params(eqn.params):
      yield from _nested(sub)


def _square_products_in_loops(model, variables, x, y) -> int:
  """Products of two ``(N, N)`` matrices inside the time loops of the training step's jaxpr (the
  matrix exponential's; a step's own products are ``(B, N) x (N, N)`` and ``(N, B) x (B,
  N)``)."""
  closed = jax.make_jaxpr(lambda v: _value_and_grad(model, v, x, y))(variables)
  count = 0
  for body in _time_loop_bodies(closed.jaxpr):
    for eqn in body.eqns:
      if eqn.primitive.name == "dot_general" and all(
          getattr(v.aval, "shape", None) == (N, N) for v in eqn.invars):
        count += 1
  return count


def test_prepared_expm_runs_outside_the_loops_forward_and_backward():
  """The per-step path multiplies ``N x N`` matrices inside its loops (``expm`` and its
  derivative at every step); the prepared path has none left there."""
  make = lambda **kw: cells.ExpRNNCell(N, **kw)  # noqa: E731
  x, y = _inputs()
  variables = {"params": EncoderDecoder(make, False).init(jax.random.key(0), x, y)["params"]}
  assert _square_products_in_loops(EncoderDecoder(make, False), variables, x, y) > 0
  assert _square_products_in_loops(EncoderDecoder(make, True), variables, x, y) == 0


N_WIDE = 64  # large enough that XLA keeps the N x N products as dots


def _adam_step_hlo(name: str) -> str:
  """The optimised HLO of one Adam iteration of the prepared encoder-decoder of cell
  ``name`` at ``N_WIDE`` (Adam's two moments are two consumers of every gradient)."""
  model = EncoderDecoder(lambda **kw: cells.CELLS[name](N_WIDE, **kw), True)
  x, y = _inputs()
  params = model.init(jax.random.key(0), x, y)["params"]
  tx = optax.adam(1e-3)

  def loss(p):
    return sum(jnp.sum(jnp.sin(o)) for o in jax.tree_util.tree_leaves(
        model.apply({"params": p}, x, y)))

  def step(p, opt):
    with jax.numpy_dtype_promotion("standard"):  # optax's step count is an int
      updates, opt = tx.update(jax.grad(loss)(p), opt, p)
    return optax.apply_updates(p, updates), opt

  return jax.jit(step).lower(params, tx.init(params)).compile().as_text()


def _transposing_chains(text: str, n: int) -> list[tuple[str, int]]:
  """``(fusion, count)`` for every elementwise (loop) fusion of ``text`` that transposes
  inside and reads more than two ``(n, n)`` float32 operands: a chain of elementwise
  producers evaluated at ``(i, j)`` and ``(j, i)``, every operand read with a column
  stride."""
  shapes = dict(re.findall(r"^\s*(%[\w.\-]+) = (\w+\[[\d,]*\])", text, re.M))
  bodies = dict(re.findall(r"^(%[\w.\-]+) .*?\{\n(.*?)\n\}", text, re.M | re.S))
  square = f"f32[{n},{n}]"
  found = []
  for fusion, operands, called in re.findall(
      r"^\s*(%[\w.\-]+) = \S+ fusion\(([^)]*)\), kind=kLoop, calls=(%[\w.\-]+)", text, re.M):
    names = [re.sub(r"/\*.*?\*/", "", o).strip() for o in operands.split(",")]
    count = sum(shapes.get(o) == square for o in names)
    if count > 2 and re.search(r"= \S+ transpose\(", bodies.get(called, "")):
      found.append((fusion, count))
  return found


@pytest.mark.parametrize("name", ["exprnn", "nnrnn"])
def test_prepared_adam_step_reads_no_cotangent_chain_transposed(name, unstored_cotangent):
  """The cotangent of ``expm``'s input is a sum of many products, which ``expm_taylor``'s
  backward pass stores (``maps._cotangent_stored``): no fusion of the compiled step then
  re-evaluates that sum transposed in the skew map's backward pass (``G -> triu(G - G^T,
  1)``), as every one of Adam's moments does without it."""
  assert _transposing_chains(_adam_step_hlo(name), N_WIDE) == []
  with unstored_cotangent():
    assert len(_transposing_chains(_adam_step_hlo(name), N_WIDE)) >= 2  # both moments


class Scanned(nn.Module):
  """``nn.scan`` of a user's cell over ours, as the Flax docs write a loop."""

  prepared: bool

  @nn.compact
  def __call__(self, x):
    cell = cells.ScoRNNCell(N, name="cell")
    loop = nn.scan(UserCell, variable_broadcast="params", split_rngs={"params": False},
                   in_axes=1, out_axes=1)
    carry = cell.initialize_carry(jax.random.key(0), x[:, 0].shape)
    return loop(cell.prepared() if self.prepared else cell)(carry, x)


class Bidirectional(nn.Module):
  prepared: bool

  @nn.compact
  def __call__(self, x):
    fwd, bwd = cells.LVFRNNCell(N, name="fwd"), cells.LVFRNNCell(N, name="bwd")
    if self.prepared:
      fwd, bwd = fwd.prepared(), bwd.prepared()
    return nn.Bidirectional(nn.RNN(fwd), nn.RNN(bwd))(x)


@pytest.mark.parametrize("model", [Scanned, Bidirectional], ids=["nn.scan", "nn.Bidirectional"])
def test_prepared_in_nn_scan_and_bidirectional(model):
  x, _ = _inputs()
  variables = {"params": model(False).init(jax.random.key(2), x)["params"]}
  out0, g0 = _value_and_grad(model(False), variables, x)
  out1, g1 = _value_and_grad(model(True), variables, x)
  _assert_trees_close(out0, out1)
  _assert_trees_close(g0, g1)


def test_prepared_through_the_nnx_bridge():
  """``nnx.bridge.ToNNX`` of a linen model that prepares its cells: the linen outputs and
  gradients."""
  x, y = _inputs()
  linen = EncoderDecoder(_make("exprnn"), True)
  model = nnx.bridge.ToNNX(linen, rngs=nnx.Rngs(0))
  nnx.bridge.lazy_init(model, x, y)
  params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
  out, grads = _value_and_grad(EncoderDecoder(_make("exprnn"), False), {"params": params}, x, y)
  _assert_trees_close(out, model(x, y))

  def loss(m):
    return jnp.sum(jnp.sin(m(x, y)))

  _assert_trees_close(grads["params"], nnx.to_pure_dict(nnx.grad(loss)(model)))


def test_prepared_sows_the_penalty_once():
  """A prepared cell sows its regularisation term once per call of the model."""

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.RNN(cells.LVFRNNCell(N, div_penalty=0.5).prepared())(x)

  x, _ = _inputs()
  variables = Model().init(jax.random.key(0), x)
  _, state = Model().apply({"params": variables["params"]}, x, mutable=["losses"])
  leaves = jax.tree_util.tree_leaves(state["losses"])
  assert len(leaves) == 1 and np.ndim(leaves[0]) == 0 and float(leaves[0]) > 0


# ------------------------------------------------------- carries of another width


def _wide_carry(ours, width: int):
  if isinstance(ours, cells.LSTMCell):
    return (jnp.full((B, width), 0.1), jnp.full((B, width), -0.2))
  return jnp.full((B, width), 0.3)


@pytest.mark.parametrize("ours,theirs", [
    (cells.LSTMCell(4), nn.OptimizedLSTMCell(4)),
    (cells.LSTMCell(4), nn.LSTMCell(4)),
    (cells.GRUCell(4), nn.GRUCell(4)),
], ids=["lstm-optimized", "lstm", "gru"])
def test_lstm_gru_take_their_width_from_the_carry_as_flax(ours, theirs):
  """``LSTMCell(k)`` / ``GRUCell(k)`` with a carry of width ``n != k``: Flax's outputs and
  parameter tree, in ``nn.RNN``, ``Recurrent`` (plain and fused), a user's cell and the
  prepared form."""
  x, _ = _inputs()
  carry = _wide_carry(ours, 7)
  flax_rnn = nn.RNN(theirs)
  variables = flax_rnn.init(jax.random.key(3), x, initial_carry=carry)
  want = flax_rnn.apply(variables, x, initial_carry=carry)
  assert want.shape == (B, T, 7)
  ours_vars = nn.RNN(ours).init(jax.random.key(3), x, initial_carry=carry)
  assert jax.tree_util.tree_map(jnp.shape, ours_vars) == \
      jax.tree_util.tree_map(jnp.shape, variables)
  tol = _tol(want)
  for layer in (nn.RNN(ours), layers.Recurrent(ours), layers.Recurrent(ours, fused=True)):
    got = layer.apply(variables, x, initial_carry=carry)
    # rtol=0: _tol is absolute, at the outputs' largest magnitude
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=tol)

  class Prepared(nn.Module):
    @nn.compact
    def __call__(self, x):
      cell = type(ours)(4, name="cell")
      return nn.RNN(cell.prepared(carry=carry), name="rnn")(x, initial_carry=carry)

  p_vars = Prepared().init(jax.random.key(3), x)
  assert jax.tree_util.tree_map(jnp.shape, p_vars["params"]["cell"]) == \
      jax.tree_util.tree_map(jnp.shape, variables["params"]["cell"])
  got = Prepared().apply({"params": {"cell": variables["params"]["cell"]}}, x)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=tol)  # as above


def test_prepared_lstm_names_both_widths_for_another_carry():
  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      return nn.RNN(cells.LSTMCell(4).prepared())(x, initial_carry=_wide_carry(
          cells.LSTMCell(4), 7))

  x, _ = _inputs()
  with pytest.raises(ValueError, match=r"prepared for a carry of width 4, got a carry of "
                                       r"width 7; call prepared\(carry=\.\.\.\)"):
    Model().init(jax.random.key(0), x)


STRUCTURED = sorted(set(cells.CELLS) - {"lstm", "gru"})


@pytest.mark.parametrize("name", STRUCTURED)
@pytest.mark.parametrize("prepared", [False, True], ids=["per-step", "prepared"])
def test_structured_cells_name_both_widths_for_another_carry(name, prepared):
  cell = cells.make_cell(name, N)
  want = jax.tree_util.tree_leaves(
      jax.eval_shape(lambda: cell.initialize_carry(jax.random.key(0), (1,))))[0].shape[-1]

  class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
      c = cells.make_cell(name, N)
      return nn.RNN(c.prepared() if prepared else c)(
          x, initial_carry=jnp.zeros((B, want + 3)))

  x, _ = _inputs()
  with pytest.raises(ValueError, match=rf"{type(cell).__name__}: the carry has width "
                                       rf"{want + 3}, but this cell was built with "
                                       rf"features={N}, whose carry has width {want}"):
    Model().init(jax.random.key(0), x)
