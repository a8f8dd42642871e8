"""Neumann-series update of a Cayley inverse (NC-GRU, Sec. 3.2, eqs 16-18).

With ``A_k = A_{k-1} - dA`` and ``Ainv ~= (I + A_{k-1})^{-1}``,

    (I + A_k)^{-1} = (I - Ainv dA)^{-1} Ainv = sum_{i>=0} (Ainv dA)^i Ainv    (eq 18)

valid when ``||Ainv dA|| < 1``. Truncating after ``order`` + 1 terms leaves the error
``(Ainv dA)^{order+1} (I - Ainv dA)^{-1} Ainv``. The update costs ``order + 1`` matrix
products instead of an LU solve; errors accumulate, so the inverse is periodically reset
exactly (:func:`cayley_inverse`) -- and whenever the validity condition fails.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from lvf_jax import _validation
from lvf_jax.geometry._util import eye_like

Array = jax.Array

NEUMANN_ORDERS = (1, 2, 3)


def cayley_inverse(a: Array) -> Array:
  """Exact ``(I + A)^{-1}`` by an LU solve (the reset of the Neumann update)."""
  _validation.check_matrix("cayley_inverse", "a", a)
  eye = eye_like(a)
  return jnp.linalg.solve(eye + a, eye)


def neumann_product(inv_prev: Array, delta: Array) -> Array:
  """``X = Ainv dA``, whose norm decides whether the series is valid."""
  _validation.check_matrix("neumann_product", "inv_prev", inv_prev)
  _validation.check_same_shape("neumann_product", ("inv_prev", "delta"), inv_prev, delta)
  return inv_prev @ delta


def neumann_inverse_update(inv_prev: Array, delta: Array, order: int = 2) -> Array:
  """Truncated Neumann update ``sum_{i=0}^{order} (Ainv dA)^i Ainv`` (NC-GRU eq 18).

  Args:
    inv_prev: current approximation of ``(I + A_{k-1})^{-1}``.
    delta: the step ``dA`` with ``A_k = A_{k-1} - dA``.
    order: 1, 2 or 3 (Alg. 1 uses 2).

  Returns:
    approximation of ``(I + A_k)^{-1}``.
  """
  order = _validation.check_int_in("neumann_inverse_update", "order", order, NEUMANN_ORDERS)
  x = neumann_product(inv_prev, delta)
  # Horner form: (I + X (I + X (I + ...))) Ainv, `order` products with X plus one with Ainv.
  eye = eye_like(x)
  series = eye + x
  for _ in range(order - 1):
    series = eye + x @ series
  return series @ inv_prev


class NeumannStep(NamedTuple):
  inverse: Array  # approximation of (I + A_new)^{-1}
  reset: Array  # bool: whether the exact inverse was used
  norm: Array  # ||Ainv dA||_F (an upper bound on the spectral norm)


def neumann_inverse_step(a_new: Array, inv_prev: Array, delta: Array, *, order: int = 2,
                         force_reset=False, threshold: float = 0.5) -> NeumannStep:
  """One inverse update with the exact-reset safeguard (unbatched; use ``jax.vmap``).

  Uses the Neumann update unless ``force_reset`` is true (e.g. every k steps) or the
  validity condition fails: ``||Ainv dA||_F >= threshold``. The Frobenius norm bounds the
  spectral norm of the paper's condition from above and costs no extra product.

  Args:
    a_new: ``A_k = A_{k-1} - dA`` (used for the exact inverse).
    inv_prev: approximation of ``(I + A_{k-1})^{-1}``.
    delta: ``dA``.
    order: Neumann order, 1-3.
    force_reset: bool (may be traced) requesting the exact inverse.
    threshold: validity threshold in (0, 1].
  """
  order = _validation.check_int_in("neumann_inverse_step", "order", order, NEUMANN_ORDERS)
  _validation.check_matrix("neumann_inverse_step", "a_new", a_new, batched=False)
  _validation.check_same_shape("neumann_inverse_step", ("a_new", "inv_prev"), a_new, inv_prev)
  _validation.check_in_range("neumann_inverse_step", "threshold", threshold, 0, 1)
  x = neumann_product(inv_prev, delta)
  norm = jnp.sqrt(jnp.sum(jnp.square(x)))
  reset = jnp.logical_or(jnp.asarray(force_reset, dtype=bool), norm >= threshold)
  inverse = jax.lax.cond(
      reset,
      lambda: cayley_inverse(a_new),
      lambda: neumann_inverse_update(inv_prev, delta, order))
  return NeumannStep(inverse, reset, norm)
