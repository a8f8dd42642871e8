"""Multiplicative Cayley step of full-capacity uRNN, and periodic re-orthonormalisation."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.optim import _common

Array = jax.Array


class MultiplicativeCayleyState(NamedTuple):
  """State of :func:`multiplicative_cayley`: ``count`` (int32), the number of updates."""
  count: Array


class ReorthonormalizeState(NamedTuple):
  """State of :func:`reorthonormalize`: ``count`` (int32), the number of updates."""
  count: Array


def _maybe_orthonormalize(due: Array, w_new: Array, method: str) -> Array:
  return jax.lax.cond(due, lambda: _common.orthonormalize(w_new, method), lambda: w_new)


def multiplicative_cayley(learning_rate: Any, *, reorthonormalize_every: Optional[int] = None,
                          method: str = "polar",
                          unitary: bool = False) -> optax.GradientTransformationExtraArgs:
  r"""Full-capacity multiplicative Cayley step (Wisdom et al. 2016, eqs 9-10; Tagare 2011).

  With ``G`` the incoming gradient of ``W`` (column form), ``A = G W^H - W G^H`` (skew-
  Hermitian; skew-symmetric for a real ``W``) and

  ``W_new = (I + lr/2 A)^{-1} (I - lr/2 A) W``,

  a descent step along the Riemannian gradient ``G - W G^H W`` (canonical metric) that
  stays exactly on the orthogonal (unitary) group in exact arithmetic. In float32 the
  rounding of each step accumulates, so ``reorthonormalize_every`` projects ``W_new`` back
  (polar or QR) every so many updates.

  ``unitary=True`` trains complex unitary matrices -- the full-capacity uRNN's ``W`` --
  stored as real pairs ``P = [Re W, Im W]`` of shape ``(..., 2, n, n)`` (see
  :func:`lvf_jax.geometry.complex_from_pair`); the gradient of a real loss then gives
  ``G = dL/dRe W + i dL/dIm W`` (Wisdom et al. 2016, Sec. 4), the step is taken in complex
  arithmetic and the update is returned as a real pair again.

  ``G`` is whatever the preceding transforms produced: chain e.g.
  ``optax.clip_by_global_norm`` or ``optax.scale_by_rms()`` *before* it (as a
  preconditioner), but not a negative scaling by the learning rate.

  Must be the **last** transform of its chain: it returns ``updates = W_new - W`` and needs
  ``params``; every leaf it sees must be a square ``(..., n, n)`` orthogonal matrix.

  Args:
    learning_rate: step size ``lr > 0`` or an optax schedule of the update count
      (injectable with ``optax.inject_hyperparams``).
    reorthonormalize_every: project ``W_new`` onto the orthogonal group every this many
      updates (``None`` or 0: never).
    method: ``'polar'`` (SVD, the nearest orthogonal matrix) or ``'qr'``.
    unitary: leaves are ``(..., 2, n, n)`` pairs ``[Re W, Im W]`` of unitary matrices
      (default ``False``: real orthogonal ``(..., n, n)``).
  """
  fn = "multiplicative_cayley"
  if not isinstance(unitary, bool):
    raise ValueError(f"{fn}: argument 'unitary' must be a bool; got {unitary!r}.")
  _common.check_learning_rate(fn, learning_rate)
  _validation.check_concrete_int(fn, "reorthonormalize_every", reorthonormalize_every, minimum=0,
                                 allow_none=True)
  _validation.check_choice(fn, "method", method, _common.ORTHONORMALIZE_METHODS)

  def init_fn(params):
    _common.check_square_leaves(fn, params, unitary=unitary)
    _common.check_orthogonal_leaves(fn, params, unitary=unitary)
    return MultiplicativeCayleyState(count=_common.zero_count(params))

  def update_fn(updates, state, params=None, **extra_args):
    del extra_args
    _common.require_params(fn, params)
    _common.check_square_leaves(fn, params, unitary=unitary)
    _common.check_same_structure(fn, ("updates", "params"), updates, params)
    lr = learning_rate(state.count) if callable(learning_rate) else learning_rate
    due = _common.every_k(state.count, reorthonormalize_every)
    as_matrix = geometry.complex_from_pair if unitary else (lambda m: m)
    as_param = geometry.pair_from_complex if unitary else (lambda m: m)

    def step(g, ref):
      p = _common.gather_matrix(ref)
      w = as_matrix(p)
      g = as_matrix(_common.gather_matrix(g).astype(p.dtype)).astype(w.dtype)
      a = g @ _common.adjoint(w) - w @ _common.adjoint(g)
      half = jnp.asarray(lr, w.dtype) * 0.5 * a
      eye = _common.eye_like(w)
      w_new = jnp.linalg.solve(eye + half, w - half @ w)
      w_new = as_param(_maybe_orthonormalize(due, w_new, method))
      return _common.shard_like((w_new - p.astype(w_new.dtype)).astype(p.dtype), ref)

    return jax.tree.map(step, updates, params), MultiplicativeCayleyState(
        optax.safe_increment(state.count))

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def reorthonormalize(every: int, method: str = "polar") -> optax.GradientTransformationExtraArgs:
  """Projects ``W + updates`` onto the orthogonal group every ``every`` updates.

  Chain it *after* any transform whose updates should keep ``W`` orthogonal (e.g. after
  :func:`lvf_jax.optim.neumann_cayley`, or after a Euclidean optimiser for a cheap
  projected-gradient method): on the due updates it returns
  ``orthonormalize(W + updates) - W``, otherwise ``updates`` unchanged. Must be the **last**
  transform of its chain and needs ``params``.

  Args:
    every: period in updates, an int >= 1.
    method: ``'polar'`` (SVD) or ``'qr'`` (sign-fixed).
  """
  fn = "reorthonormalize"
  _validation.check_concrete_int(fn, "every", every, minimum=1)
  _validation.check_choice(fn, "method", method, _common.ORTHONORMALIZE_METHODS)

  def init_fn(params):
    _common.check_square_leaves(fn, params)
    return ReorthonormalizeState(count=_common.zero_count(params))

  def update_fn(updates, state, params=None, **extra_args):
    del extra_args
    _common.require_params(fn, params)
    _common.check_square_leaves(fn, params)
    _common.check_same_structure(fn, ("updates", "params"), updates, params)
    due = _common.every_k(state.count, every)

    def step(u, ref):
      u = u.astype(ref.dtype)

      def project():
        w = _common.gather_matrix(ref)
        w_new = _common.orthonormalize(w + _common.gather_matrix(u), method)
        return _common.shard_like((w_new - w).astype(w.dtype), u)

      return jax.lax.cond(due, project, lambda: u)

    return jax.tree.map(step, updates, params), ReorthonormalizeState(
        optax.safe_increment(state.count))

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)
