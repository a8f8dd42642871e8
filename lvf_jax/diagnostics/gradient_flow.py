"""Gradient flow over time: how much of a loss's gradient, and of the last state, reaches each
step (vanishing and exploding gradients at a glance).

For a cell run over ``x`` (batch, time, features), a zero perturbation ``e_t`` is added to the
state after every step, ``h_t = step(h_{t-1}, x_t) + e_t``; then ``dL/de_t = dL/dh_t`` and
``dh_T/de_t = dh_T/dh_t`` (Bengio, Simard and Frasconi 1994; Pascanu, Mikolov and Bengio 2013,
arXiv:1211.5063, eq. 5), so one backward pass gives every ``||dL/dh_t||`` and ``n`` (vmapped)
give every ``||dh_T/dh_t||_F``. Cost: a scan over the cell's own step (no fused kernel), linear
in ``T``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

Array = jax.Array


def _prepared(cell: Any, params: Any, x: Array):
  """``(prep, u_tm)``: the cell's step parameters and its projected inputs, time-major."""
  def prepare(c):
    return c.prepare(), c.project_inputs(jnp.moveaxis(x, -2, 0))
  return cell.apply({"params": params}, method=prepare)


def _state(carry: Any) -> Array:
  """The hidden state of a carry: the carry itself, or its last entry (LSTM ``(c, h)``)."""
  return carry[-1] if isinstance(carry, (tuple, list)) else carry


def _with_state(carry: Any, h: Array) -> Any:
  if isinstance(carry, (tuple, list)):
    return type(carry)((*carry[:-1], h))
  return h


def perturbed_states(cell: Any, params: Any, x: Array, e: Array,
                     initial_carry: Optional[Any] = None) -> Array:
  """Hidden states ``h_t`` (batch, time, n) of ``cell`` on ``x`` with ``e[:, t]`` added to the
  state after step ``t`` (``e = 0``: the cell's own states)."""
  prep, u = _prepared(cell, params, x)
  if initial_carry is None:
    initial_carry = cell.initialize_carry(jax.random.key(0), x.shape[:-2] + x.shape[-1:])

  def body(carry, inputs):
    u_t, e_t = inputs
    carry, _ = cell.step(prep, carry, u_t)
    h = _state(carry) + e_t
    return _with_state(carry, h), h

  _, hs = jax.lax.scan(body, initial_carry, (u, jnp.moveaxis(e, -2, 0)))
  return jnp.moveaxis(hs, 0, -2)


def _zeros(cell: Any, params: Any, x: Array) -> Array:
  h = jax.eval_shape(lambda: perturbed_states(cell, params, x, jnp.zeros(x.shape[:-1] + (
      _state_size(cell),), x.dtype)))
  return jnp.zeros(h.shape, h.dtype)


def _state_size(cell: Any) -> int:
  carry = jax.eval_shape(lambda: cell.initialize_carry(jax.random.key(0), (1, 1)))
  return _state(carry).shape[-1]


def loss_gradients(cell: Any, params: Any, x: Array, loss_fn: Callable[[Array], Array],
                   initial_carry: Optional[Any] = None) -> Array:
  """``dL/dh_t`` for every example, step and hidden unit, shape (batch, time, n), for
  ``L = loss_fn(h)`` of the states ``h`` (batch, time, n). Where it stays large over a delay
  (a unit, a time span) is where the information the loss needs is carried: for the copy
  task, the units that hold the symbols between their presentation and their recall.

  For a model, ``loss_fn`` maps the states through the rest of it, e.g.
  ``lambda h: cross_entropy(head.apply(head_params, h), targets)``.
  """
  e = _zeros(cell, params, x)
  return jax.grad(lambda e_: loss_fn(perturbed_states(cell, params, x, e_, initial_carry)))(e)


def loss_gradient_norms(cell: Any, params: Any, x: Array,
                        loss_fn: Callable[[Array], Array],
                        initial_carry: Optional[Any] = None) -> Array:
  """``||dL/dh_t||`` for ``t = 1..T`` over the batch and the units (see
  :func:`loss_gradients`); shape ``(T,)``."""
  g = loss_gradients(cell, params, x, loss_fn, initial_carry)
  return jnp.sqrt(jnp.sum(g * g, axis=tuple(range(g.ndim - 2)) + (g.ndim - 1,)))


def state_jacobian_norms(cell: Any, params: Any, x: Array,
                         initial_carry: Optional[Any] = None) -> Array:
  """``||dh_T/dh_t||_F`` for ``t = 1..T`` (mean over the batch); shape ``(T,)``.

  One VJP per hidden unit of ``h_T`` (vmapped): ``n`` backward passes.
  """
  e = _zeros(cell, params, x)
  h_last, pullback = jax.vjp(
      lambda e_: perturbed_states(cell, params, x, e_, initial_carry)[..., -1, :], e)
  n = h_last.shape[-1]
  basis = jnp.eye(n, dtype=h_last.dtype)
  rows = jax.vmap(lambda v: pullback(jnp.broadcast_to(v, h_last.shape))[0])(basis)
  # rows[i, ..., t, :] = d h_T[i] / d h_t per batch element; Frobenius over (i, state).
  sq = jnp.sum(rows * rows, axis=(0, rows.ndim - 1))  # (..., T)
  norms = jnp.sqrt(sq)
  return jnp.mean(norms.reshape(-1, norms.shape[-1]), axis=0)


def hidden_pca(h: Array, k: int = 2) -> tuple[Array, Array]:
  """Principal components of hidden states ``h`` (..., n) over every leading axis.

  Returns:
    ``(projections (..., k), explained variance ratio (k,))``.
  """
  h = jnp.asarray(h)
  flat = h.reshape(-1, h.shape[-1])
  centred = flat - jnp.mean(flat, axis=0, keepdims=True)
  _, s, vt = jnp.linalg.svd(centred, full_matrices=False)
  total = jnp.sum(s * s)
  ratio = (s[:k] ** 2) / jnp.where(total > 0, total, 1)
  return (centred @ vt[:k].T).reshape(h.shape[:-1] + (k,)), ratio
