"""Riemannian scaled-Cayley updates of an orthogonal matrix: scoRNN and NC-GRU.

The parameter *is* the orthogonal matrix ``W`` (column form, named ``orthogonal*``); the
transform keeps the skew matrix ``A`` with ``W = (I + A)^{-1} (I - A) D`` and an inner
optimiser acting on ``A`` in its state, and returns ``updates = W_new - W``. Both
transforms must therefore be the **last** transform of their chain (put gradient clipping
etc. *before* them) and need ``params``.

One update, given ``G = dL/dW`` (whatever the preceding transforms produced):

1. ``V = Ainv^T G (D + W^T)`` with ``Ainv = (I + A)^{-1}`` (scoRNN Thm 3.2; NC-GRU eq 6 and
   Alg. 1 line 4), ``dL/dA = V^T - V`` (eq 5);
2. ``u = inner(dL/dA)``, ``A_new = A + u`` (the paper's ``dA = -u``; Alg. 1 lines 5-6);
3. ``Ainv_new = (I + A_new)^{-1}``: exactly (:func:`scornn`) or by the truncated Neumann
   series ``sum_i (Ainv dA)^i Ainv`` (:func:`neumann_cayley`; NC-GRU eqs 16-18, Alg. 1
   line 7) applied to the *actual* inner step ``dA = A - A_new`` (or, as a model of the
   authors' released code, to ``sgd_series_lr * dL/dA``);
4. ``W_new = Ainv_new (I - A_new) D`` (Alg. 1 line 8).

``two_kernel_update='released'`` models the released code's update of NC-GRU(U_c, U_r)
instead (see :func:`neumann_cayley`): it couples the leaves ``orthogonal_c`` and
``orthogonal_r`` of one module; every other leaf is updated alone.

The state keeps ``Ainv`` so scoRNN needs one LU inverse per update (not two).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.optim import _common

Array = jax.Array

#: How :func:`neumann_cayley` updates a module's two orthogonal kernels (``two_kernel_update``).
TWO_KERNEL_UPDATES = ("own", "released")
#: The names of NC-GRU's candidate and reset kernels (:class:`lvf_jax.cells.NCGRUCell`).
CANDIDATE, RESET = "orthogonal_c", "orthogonal_r"


class ScoRNNState(NamedTuple):
  """State of :func:`scornn`.

  Attributes:
    count: number of updates so far (int32).
    skew: tree of skew ``A`` with ``W = (I + A)^{-1} (I - A) D`` (same structure as params).
    inverse: tree of ``(I + A)^{-1}``.
    inner_state: state of the inner optimiser acting on ``skew``.
  """
  count: Array
  skew: Any
  inverse: Any
  inner_state: optax.OptState


class NeumannCayleyState(NamedTuple):
  """State of :func:`neumann_cayley` (fields of :class:`ScoRNNState` plus diagnostics).

  Attributes:
    residual_norm: tree of scalars, ``||Ainv dA||_F`` of the last update (maximum over
      leading batch dimensions): the quantity of NC-GRU's validity condition (Fig. 8).
    num_resets: tree of int32, exact inverses computed so far (scheduled or forced).
    num_invalid: tree of int32, resets forced by the validity check.
  """
  count: Array
  skew: Any
  inverse: Any
  inner_state: optax.OptState
  residual_norm: Any
  num_resets: Any
  num_invalid: Any


def _init_leaf(fn: str, w: Array, rho: Any) -> tuple[Array, Array]:
  n = w.shape[-1]
  d = _common.scaling_diagonal(fn, rho, n, w.dtype)
  # A = (I + W D)^{-1} (I - W D) inverts W = (I + A)^{-1} (I - A) D; symmetrise the rounding.
  a = _common.skew_part(geometry.cayley(_common.scale_columns(_common.gather_matrix(w), d)))
  inv = geometry.cayley_inverse(a)
  return _common.shard_like(a, w), _common.shard_like(inv, w)


def _skew_gradient(g: Array, w: Array, inv: Array, d: Array) -> Array:
  """``V^T - V`` with ``V = Ainv^T G (D + W^T)`` (scoRNN eq 5-6; NC-GRU Alg. 1 line 4)."""
  g = g.astype(w.dtype)
  v = _common.transpose(inv) @ (g @ _common.transpose(w) + _common.scale_columns(g, d))
  return _common.transpose(v) - v


def _weight(inv: Array, a: Array, d: Array) -> Array:
  """``W = Ainv (I - A) D`` (Alg. 1 line 8)."""
  return _common.scale_columns(inv - inv @ a, d)


def _neumann_series(x: Array, inv: Array, order: int) -> Array:
  """``(I + X + ... + X^order) Ainv`` in Horner form from the product ``X = Ainv dA``.

  Same as :func:`lvf_jax.geometry.neumann_inverse_update`, which recomputes ``X``; here
  ``X`` is already needed for the validity check, so one product is saved.
  """
  series = _common.eye_like(x) + x
  for _ in range(order - 1):
    series = _common.eye_like(x) + x @ series
  return series @ inv


def _neumann_leaf(a_new: Array, inv: Array, delta: Array, order: Any, force: Array,
                  threshold: Any) -> tuple[Array, Array, Array, Array]:
  x = geometry.neumann_product(inv, delta)
  norms = jnp.sqrt(jnp.sum(jnp.square(x), axis=(-2, -1)))
  norm = jnp.max(norms) if norms.ndim else norms
  invalid = norm >= jnp.asarray(threshold, norm.dtype)
  reset = jnp.logical_or(force, invalid)

  def approx():
    if _validation.is_concrete(order):
      return _neumann_series(x, inv, int(order))
    branches = [lambda k=k: _neumann_series(x, inv, k) for k in geometry.NEUMANN_ORDERS]
    return jax.lax.switch(jnp.clip(jnp.asarray(order, jnp.int32) - 1, 0, 2), branches)

  new_inv = jax.lax.cond(reset, lambda: geometry.cayley_inverse(a_new), approx)
  return new_inv, norm, reset, invalid


def _cayley_transform(fn: str, inner: Any, rho: Any, *, neumann: bool, order: Any = 2,
                      reset_every: Any = None, threshold: Any = 0.5,
                      sgd_series_lr: Optional[float] = None,
                      two_kernel_update: str = "own"
                      ) -> optax.GradientTransformationExtraArgs:
  inner = _common.check_transformation(fn, "inner", inner)
  released = _validation.check_choice(fn, "two_kernel_update", two_kernel_update,
                                      TWO_KERNEL_UPDATES) == "released"
  _validation.check_concrete_int(fn, "rho", rho, minimum=0)
  if neumann:
    if _validation.is_concrete(order):
      v = _validation.concrete_value(order)
      if isinstance(order, bool) or v is None or v not in geometry.NEUMANN_ORDERS:
        _validation.fail(fn, "order", order, f"one of {geometry.NEUMANN_ORDERS}")
    _validation.check_concrete_int(fn, "reset_every", reset_every, minimum=0, allow_none=True)
    _validation.check_in_range(fn, "threshold", threshold, 0, 1)
    if sgd_series_lr is not None:
      _validation.check_positive_number(fn, "sgd_series_lr", sgd_series_lr)
  neumann_args = (order, reset_every, threshold, sgd_series_lr) if neumann else None

  def init_fn(params):
    if released:
      _released_pairs(fn, params)
    return _cayley_init(fn, inner, rho, neumann, params)

  def update_fn(updates, state, params=None, **extra_args):
    pairs = _released_pairs(fn, params) if released and params is not None else {}
    return _cayley_update(fn, inner, rho, neumann_args, updates, state, params, extra_args,
                          pairs)

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def _released_pairs(fn: str, params) -> dict[int, int]:
  """``{index of U_r: index of U_c}`` in ``params``' flattened leaves, for every module
  holding both ``orthogonal_c`` and ``orthogonal_r``; a ValueError when there is none."""
  paths = [tuple(getattr(k, "key", k) for k in path)
           for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
  where = {path: i for i, path in enumerate(paths)}
  pairs = {i: where[path[:-1] + (CANDIDATE,)] for i, path in enumerate(paths)
           if path and path[-1] == RESET and path[:-1] + (CANDIDATE,) in where}
  if not pairs:
    _validation.fail(fn, "two_kernel_update", "released",
                     f"'own' for parameters without a module holding both {CANDIDATE!r} and "
                     f"{RESET!r} (NC-GRU(U_c, U_r)); leaves: {paths}")
  return pairs


def _cayley_init(fn: str, inner, rho, neumann: bool, params):
  leaves = _common.check_square_leaves(fn, params)
  _common.check_orthogonal_leaves(fn, params)
  treedef = jax.tree.structure(params)
  pairs = [_init_leaf(fn, w, rho) for w in leaves]
  skew = treedef.unflatten([a for a, _ in pairs])
  inverse = treedef.unflatten([inv for _, inv in pairs])
  count = _common.zero_count(params)
  inner_state = _common.shard_state_like(inner.init(skew), skew)
  if not neumann:
    return ScoRNNState(count, skew, inverse, inner_state)
  zeros_f = treedef.unflatten([jnp.zeros([], w.dtype) for w in leaves])
  zeros_i = treedef.unflatten([jnp.zeros([], jnp.int32) for _ in leaves])
  return NeumannCayleyState(count, skew, inverse, inner_state, zeros_f, zeros_i, zeros_i)


def _cayley_update(fn: str, inner, rho, neumann_args, updates, state, params, extra_args,
                   pairs=None):
  """One update of every leaf; ``neumann_args`` ``(order, reset_every, threshold,
  sgd_series_lr)`` for the Neumann-Cayley update, None for scoRNN's exact inverse.
  ``pairs`` (:func:`_released_pairs`): each ``U_c`` takes the skew gradient of its
  ``U_r``'s ``G``, and each ``U_r``'s series starts from its ``U_c``'s new inverse."""
  pairs = pairs or {}
  _common.require_params(fn, params)
  w_shard = _common.check_square_leaves(fn, params)
  _common.check_same_structure(fn, ("updates", "params"), updates, params)
  treedef = jax.tree.structure(params)
  gather = _common.gather_matrix
  w_leaves = [gather(w) for w in w_shard]
  a_leaves = [gather(a) for a in treedef.flatten_up_to(state.skew)]
  inv_leaves = [gather(inv) for inv in treedef.flatten_up_to(state.inverse)]
  diags = [_common.scaling_diagonal(fn, rho, w.shape[-1], w.dtype) for w in w_leaves]
  raw = treedef.flatten_up_to(updates)
  source = {c: r for r, c in pairs.items()}
  raw = [raw[source.get(i, i)] for i in range(len(raw))]
  grads = [_common.shard_like(_skew_gradient(gather(g), w, inv, d), ref)
           for g, w, inv, d, ref in zip(raw, w_leaves, inv_leaves, diags, w_shard)]
  steps, inner_state = inner.update(
      treedef.unflatten(grads), state.inner_state, state.skew, **extra_args)
  force = None if neumann_args is None else _common.every_k(state.count, neumann_args[1])
  steps = treedef.flatten_up_to(steps)

  def leaf(i, inv):
    return _cayley_leaf(w_leaves[i], a_leaves[i], inv, gather(steps[i]), gather(grads[i]),
                        diags[i], w_shard[i], neumann_args, force)

  leaves = {i: leaf(i, inv) for i, inv in enumerate(inv_leaves) if i not in pairs}
  leaves.update({r: leaf(r, gather(leaves[c][2])) for r, c in pairs.items()})
  leaves = [leaves[i] for i in range(len(w_leaves))]
  width = 3 if neumann_args is None else 6  # the fields of _cayley_leaf, for any leaf count
  fields = [treedef.unflatten([leaf[i] for leaf in leaves]) for i in range(width)]
  updates, skew, inverse = fields[:3]
  count = optax.safe_increment(state.count)
  if neumann_args is None:
    return updates, ScoRNNState(count, skew, inverse, inner_state)
  norms, resets, invalids = fields[3:]
  add = lambda c, r: c + r  # noqa: E731
  return updates, NeumannCayleyState(count, skew, inverse, inner_state, norms,
                                     jax.tree.map(add, state.num_resets, resets),
                                     jax.tree.map(add, state.num_invalid, invalids))


def _cayley_leaf(w, a, inv, u, g, d, ref, neumann_args, force):
  """``(update, A_new, inverse_new[, norm, reset, invalid])`` of one matrix: ``A_new = A +
  skew(u)``, its inverse ``(I + A_new)^{-1}`` exactly or by the Neumann update (of the
  step taken, or of ``sgd_series_lr * g`` for the skew gradient ``g``), and the parameter
  update ``W_new - W``."""
  a_next = a + _common.skew_part(u.astype(a.dtype))
  extra = ()
  if neumann_args is None:
    inv_next = geometry.cayley_inverse(a_next)
  else:
    order, _, threshold, sgd_lr = neumann_args
    delta = a - a_next if sgd_lr is None else (sgd_lr * g).astype(a.dtype)
    inv_next, norm, reset, invalid = _neumann_leaf(a_next, inv, delta, order, force,
                                                   threshold)
    extra = (norm, reset.astype(jnp.int32), invalid.astype(jnp.int32))
  update = (_weight(inv_next, a_next, d) - w).astype(w.dtype)
  return (_common.shard_like(update, ref), _common.shard_like(a_next, ref),
          _common.shard_like(inv_next, ref)) + extra


def scornn(inner: optax.GradientTransformation, rho: int
           ) -> optax.GradientTransformationExtraArgs:
  r"""scoRNN's Riemannian update of orthogonal matrices (Helfrich et al. 2018, eqs 3-6).

  The parameter is ``W = (I + A)^{-1} (I - A) D`` itself (column form, ``D = diag(+1 x
  (n - rho), -1 x rho)`` scaling the columns). The state holds ``A`` and ``(I + A)^{-1}``;
  the gradient ``G = dL/dW`` is turned into ``dL/dA = V^T - V``,
  ``V = (I + A)^{-T} G (D + W^T)``, which ``inner`` (any elementwise optax optimiser, e.g.
  ``optax.rmsprop(1e-4)``; it keeps ``A`` skew) turns into a step on ``A``; then
  ``W_new = (I + A_new)^{-1} (I - A_new) D`` with an exact inverse (one LU per update).

  This is the same trajectory as autodiff through the scaled Cayley map of a cell whose
  parameter is the upper triangle of ``A`` (e.g. ``ScoRNNCell(orthogonal_param='skew')``)
  with the same ``inner`` optimiser.

  Must be the **last** transform of its chain: it returns ``updates = W_new - W`` and needs
  ``params``; every leaf it sees must be a square ``(..., n, n)`` orthogonal matrix (use
  ``optax.partition`` with :func:`lvf_jax.optim.param_labels`). ``W`` at ``init`` must be
  a scaled Cayley image for the same ``rho`` (``W D`` without eigenvalue -1), e.g.
  initialised by ``geometry.scaled_cayley(A_0, rho)``.

  Args:
    inner: optax optimiser acting on ``A`` (it receives ``dL/dA`` and returns the step).
    rho: number of ``-1`` entries of ``D``, an int in ``[0, n]`` for every leaf (may be a
      traced int under ``optax.inject_hyperparams``).

  Returns:
    An ``optax.GradientTransformationExtraArgs`` with state :class:`ScoRNNState`.
  """
  return _cayley_transform("scornn", inner, rho, neumann=False)


def neumann_cayley(inner: optax.GradientTransformation, rho: int, *, order: int = 2,
                   reset_every: Optional[int] = 100, threshold: float = 0.5,
                   sgd_series_lr: Optional[float] = None, two_kernel_update: str = "own"
                   ) -> optax.GradientTransformationExtraArgs:
  r"""NC-GRU's Neumann-Cayley update of orthogonal matrices (Mucllari et al., Alg. 1).

  As :func:`scornn`, but ``(I + A)^{-1}`` is carried in the state and updated by the
  truncated Neumann series (eq 18)

  ``Ainv_new = (I + X + ... + X^order) Ainv``,  ``X = Ainv dA``,  ``dA = A - A_new``,

  where ``dA`` is the step the inner optimiser *actually* took (the reference code assumes
  plain SGD while using Adam). The inverse is recomputed exactly (LU) on every
  ``reset_every``-th update and whenever the series' validity condition
  ``||Ainv dA|| < 1`` is in doubt: ``||X||_F >= threshold`` (the Frobenius norm bounds the
  spectral norm from above). With leading batch dimensions, one violation resets the whole
  leaf. The exact reset is also what cancels the accumulated float32 drift.

  Must be the **last** transform of its chain (returns ``W_new - W``; needs ``params``).

  Args:
    inner: optax optimiser acting on ``A``.
    rho: number of ``-1`` entries of ``D`` (int in ``[0, n]``).
    order: number of series terms after the identity, 1, 2 (Alg. 1) or 3.
    reset_every: exact inverse every this many updates (``None`` or 0: only on the
      validity check). The paper resets every epoch or every 20-100 iterations.
    threshold: reset when ``||Ainv dA||_F >= threshold``, in ``(0, 1]``.
    sgd_series_lr: None (default): the series takes the step ``inner`` took. A rate: it
      takes ``dA = sgd_series_lr * dL/dA``, the plain SGD step the NC-GRU authors' released
      code (github.com/emucllari1/NC-GRU, ``utils.makeW``) feeds it while its Adam moves
      ``A`` by another step; the inverse is then not that of ``I + A_new`` and
      ``W_new = Ainv_new (I - A_new) D`` is not orthogonal until the next exact reset. Not
      Alg. 1 (whose ``dA`` is the optimiser's step): a model of that code.
    two_kernel_update: ``'own'`` (default; Alg. 1 for each matrix): every leaf from its own
      gradient and inverse. ``'released'``: the released code's update of NC-GRU(U_c, U_r)
      (``denoise_task.py``, ``parenthesis_task.py``), in every module holding both
      ``orthogonal_c`` (U_c) and ``orthogonal_r`` (U_r): U_c's skew gradient is step 1
      with U_r's ``G`` (its own ``A``, ``W`` and ``Ainv``), and U_r's series starts from
      U_c's new inverse (``X = Ainv_c,new dA_r``, ``Ainv_r,new = (I + X + ...)
      Ainv_c,new``), so U_c never sees its own gradient and U_r is not orthogonal between
      exact resets. Not Alg. 1: a model of that code. Needs such a module (ValueError).

  Returns:
    An ``optax.GradientTransformationExtraArgs`` with state :class:`NeumannCayleyState`.
  """
  return _cayley_transform("neumann_cayley", inner, rho, neumann=True, order=order,
                           reset_every=reset_every, threshold=threshold,
                           sgd_series_lr=sgd_series_lr, two_kernel_update=two_kernel_update)
