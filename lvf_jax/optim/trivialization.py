"""Dynamic trivialisation ("dtriv", Lezcano-Casado & Martinez-Rubio 2019, Sec. 4.3).

A trivialised orthogonal parameter is an unconstrained ``skew`` (any Euclidean optimiser
trains it) mapped every forward pass to ``W = B phi(A)`` with a non-trainable base ``B``.
Every ``K`` optimiser steps dtriv moves the base to the current point, ``B <- B phi(A)``,
and resets ``A <- 0`` (so ``W`` is unchanged), keeping ``A`` small where ``phi`` is well
conditioned; every ``M`` rebases it re-orthonormalises ``B`` to cancel float drift. The
optimiser state is not reset (as in the reference).

Convention (followed by :class:`lvf_jax.cells.ExpRNNCell` with ``use_base=True``): the
base of the parameter ``skew`` (or ``skew_<suffix>``) of a module is the variable ``base``
(or ``base_<suffix>``) of the same module in the collection ``'dtriv'``, and
``phi(A) = expm(A_upper - A_upper^T)`` (``A_upper`` = strictly-upper triangle of ``skew``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from lvf_jax import _validation
from lvf_jax import geometry
from lvf_jax.optim import _common

Array = jax.Array

DTRIV_COLLECTION = "dtriv"


def expm_triu(a: Array) -> Array:
  """expRNN's map ``expm(triu(A, 1) - triu(A, 1)^T)`` (the default ``phi``)."""
  return geometry.expm(geometry.skew_from_triu(a))


def _key_name(key) -> Any:
  for attr in ("key", "name", "idx"):
    if hasattr(key, attr):
      return getattr(key, attr)
  return str(key)  # pragma: no cover


def _param_name_for_base(name: str) -> Optional[str]:
  if name == "base":
    return "skew"
  if name.startswith("base_"):
    return "skew_" + name[len("base_"):]
  return None


def _match(fn: str, params: Any, bases: Any) -> dict[tuple, tuple]:
  """``{param path: base path}`` for every base leaf (names as tuples of keys)."""
  param_paths = {tuple(_key_name(k) for k in p): leaf
                 for p, leaf in jax.tree_util.tree_flatten_with_path(params)[0]}
  pairs = {}
  for path, base in jax.tree_util.tree_flatten_with_path(bases)[0]:
    names = tuple(_key_name(k) for k in path)
    target = _param_name_for_base(str(names[-1])) if names else None
    key = names[:-1] + (target,)
    if target is None or key not in param_paths:
      raise ValueError(
          f"{fn}: base {jax.tree_util.keystr(tuple(path))} has no matching parameter: a "
          f"base named 'base' or 'base_<suffix>' must sit in the same module as a parameter "
          f"'skew' or 'skew_<suffix>'; parameters are {sorted(map(str, param_paths))}.")
    w = param_paths[key]
    if jnp.shape(base) != jnp.shape(w):
      raise ValueError(
          f"{fn}: base {jax.tree_util.keystr(tuple(path))} has shape {jnp.shape(base)} but "
          f"its parameter has shape {jnp.shape(w)}.")
    pairs[key] = names
  return pairs


def _by_names(tree: Any) -> dict[tuple, Array]:
  return {tuple(_key_name(k) for k in p): leaf
          for p, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def dtriv_rebase(params: Any, bases: Any, *, phi: Callable[[Array], Array] = expm_triu,
                 orthonormalize: Any = False, method: str = "polar") -> tuple[Any, Any]:
  """Unconditional rebase: ``B <- B phi(A)``, ``A <- 0`` for every base leaf.

  Args:
    params: the model parameters (e.g. ``variables['params']``).
    bases: the base tree (e.g. ``variables['dtriv']``), mirroring ``params`` by module path
      with ``base*`` in place of ``skew*``.
    phi: the map the cell applies to the parameter (column form, ``phi(0) = I``).
    orthonormalize: bool (may be traced): also project the new base onto the orthogonal
      group (``method`` ``'polar'`` or ``'qr'``).
    method: see ``orthonormalize``.

  Returns:
    ``(new_params, new_bases)``, same structures and dtypes.
  """
  fn = "dtriv_rebase"
  _validation.check_choice(fn, "method", method, _common.ORTHONORMALIZE_METHODS)
  pairs = _match(fn, params, bases)
  flat_params = _by_names(params)
  flat_bases = _by_names(bases)
  new_bases = {}
  for key, base_key in pairs.items():
    ref = flat_bases[base_key]
    b = _common.gather_matrix(ref)
    w = b @ phi(_common.gather_matrix(flat_params[key])).astype(b.dtype)
    w = jax.lax.cond(jnp.asarray(orthonormalize, bool),
                     lambda w=w: _common.orthonormalize(w, method), lambda w=w: w)
    new_bases[base_key] = _common.shard_like(w, ref)

  def reset(path, leaf):
    names = tuple(_key_name(k) for k in path)
    return jnp.zeros_like(leaf) if names in pairs else leaf

  def rebase(path, leaf):
    return new_bases[tuple(_key_name(k) for k in path)]

  return (jax.tree_util.tree_map_with_path(reset, params),
          jax.tree_util.tree_map_with_path(rebase, bases))


def dynamic_trivialization(params: Any, bases: Any, step: Any, *, every: int = 100,
                           orthonormalize_every: Optional[int] = 30,
                           phi: Callable[[Array], Array] = expm_triu,
                           method: str = "polar") -> tuple[Any, Any]:
  """dtriv after optimiser step number ``step``: rebase iff ``step`` is a positive multiple of
  ``every`` (``K``), re-orthonormalising the base on every ``orthonormalize_every``-th
  rebase (``M``; expRNN uses K=100, M=30 for copy and 100 for MNIST/TIMIT).

  Pure and ``jit``-safe (``step`` may be traced; the rebase runs under ``lax.cond``). Call it
  in the training step right after the optimiser update, e.g. with a Flax ``TrainState``::

    state = state.apply_gradients(grads=grads)
    params, bases = dynamic_trivialization(state.params, bases, state.step, every=100)
    state = state.replace(params=params)

  Args:
    params: model parameters containing the ``skew*`` leaves.
    bases: the ``'dtriv'`` collection (see the module docstring for the naming).
    step: number of optimiser updates done (e.g. ``TrainState.step``).
    every: ``K >= 1``.
    orthonormalize_every: ``M >= 1`` rebases between projections (``None``/0: never).
    phi: the cell's map from parameter to orthogonal matrix (default expRNN's).
    method: ``'polar'`` or ``'qr'``.

  Returns:
    ``(new_params, new_bases)``.
  """
  fn = "dynamic_trivialization"
  _validation.check_concrete_int(fn, "every", every, minimum=1)
  _validation.check_concrete_int(fn, "orthonormalize_every", orthonormalize_every, minimum=0,
                                 allow_none=True)
  _validation.check_choice(fn, "method", method, _common.ORTHONORMALIZE_METHODS)
  _match(fn, params, bases)
  step = jnp.asarray(step, jnp.int32)
  due = jnp.logical_and(step > 0, step % every == 0)
  if orthonormalize_every:
    ortho = (step // every) % orthonormalize_every == 0
  else:
    ortho = jnp.asarray(False)
  return jax.lax.cond(
      due,
      lambda: dtriv_rebase(params, bases, phi=phi, orthonormalize=ortho, method=method),
      lambda: (params, bases))
