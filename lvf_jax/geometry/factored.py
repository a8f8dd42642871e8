"""Factored recurrent matrices under soft constraints (column form, pure JAX).

* The spectral-margin factorisation of Vorontsov, Trabelsi, Kadoury and Pal (2017), "On
  orthogonality and learning recurrent networks with long term dependencies", ICML 2017,
  arXiv:1702.00071 (Sec. 2, "singular value parameterization"): ``W = U S V^T`` with ``U``
  and ``V`` orthogonal and ``S = diag(s)``, ``s_i = 2 m (sigmoid(p_i) - 1/2) + 1``, so every
  singular value lies in ``[1 - m, 1 + m]`` (``m`` the spectral margin; ``m = 0``: ``W``
  orthogonal). The same paper's soft constraint is the penalty ``||W^T W - I||_F^2``.
* The Kronecker-factored matrix of Jose, Cisse and Fleuret (2018), "Kronecker Recurrent
  Units", ICML 2018, arXiv:1705.10142 (Sec. 3): ``W = W_0 (x) W_1 (x) ... (x) W_{F-1}``
  with small (complex) factors and the soft unitary penalty ``sum_f ||W_f^H W_f - I||_F^2``
  on the factors. :func:`kronecker_apply` multiplies by ``W`` factor by factor (one
  contraction of the reshaped vector per factor, ``O(n sum_f p_f)`` a vector) without
  forming the ``n x n`` matrix.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import _validation
from lvf_jax.geometry._util import eye_like

Array = jax.Array


def _check_margin(fn: str, margin: Any) -> None:
  _validation.check_nonnegative(fn, "margin", margin)


def spectral_margin(p: Array, margin: Any) -> Array:
  """The singular values ``s = 2 m (sigmoid(p) - 1/2) + 1`` (Vorontsov et al. 2017), each in
  ``[1 - m, 1 + m]``; ``p`` of any shape, dtype preserved. For ``m > 1`` an ``s`` below 0 is
  allowed: the singular value of ``U diag(s) V^T`` is then ``|s| <= m - 1 < 1 + m``.

  Args:
    p: the unconstrained parameters (one per singular value).
    margin: the spectral margin ``m >= 0`` (a Python number is checked; a traced one is not).
  """
  _check_margin("spectral_margin", margin)
  p = jnp.asarray(p)
  m = jnp.asarray(margin, p.dtype)
  return 2.0 * m * (jax.nn.sigmoid(p) - 0.5) + 1.0


def margin_matrix(u: Array, p: Array, v: Array, margin: Any) -> Array:
  """``W = U diag(s) V^T`` with ``s = spectral_margin(p, margin)`` (column form).

  Args:
    u, v: orthogonal matrices ``(..., n, n)`` (not checked for orthogonality).
    p: ``(..., n)`` singular-value parameters.
    margin: the spectral margin ``m >= 0``.
  """
  fn = "margin_matrix"
  n = _validation.check_matrix(fn, "u", u)
  _validation.check_same_shape(fn, ("u", "v"), u, v)
  if _validation.shape_of(p)[-1:] != (n,):
    raise ValueError(f"{fn}: argument 'p' must have n = {n} entries on its last axis; got "
                     f"shape {_validation.shape_of(p)}.")
  s = spectral_margin(p, margin)
  return (u * s[..., None, :]) @ jnp.swapaxes(v, -1, -2)


def gram_penalty(w: Array) -> Array:
  """``||W^H W - I||_F^2`` (``W^T W`` for a real ``W``) of a square ``(..., n, n)`` matrix,
  one value per leading index: the soft orthogonality (Vorontsov et al. 2017) or soft
  unitarity (Jose et al. 2018) penalty."""
  _validation.check_matrix("gram_penalty", "w", w)
  w = jnp.asarray(w)
  gram = jnp.swapaxes(jnp.conj(w), -1, -2) @ w
  d = gram - eye_like(gram)
  return jnp.sum(jnp.real(d * jnp.conj(d)), axis=(-2, -1))


def kronecker_sizes(n: Any, factor_size: Any) -> tuple[int, ...]:
  """The sizes of the square factors of an ``n x n`` Kronecker-factored matrix: as many
  ``factor_size x factor_size`` factors as divide ``n``, then one factor of the rest when it
  is not 1 (``n = 512, 2``: nine 2s; ``6, 2``: ``(2, 3)``; ``5, 2``: ``(5,)``, one dense
  factor). Raises ``ValueError`` unless ``n >= 1`` and ``factor_size >= 2`` are ints."""
  fn = "kronecker_sizes"
  for name, value, low in (("n", n, 1), ("factor_size", factor_size, 2)):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)) \
        or int(value) < low:
      raise ValueError(f"{fn}: argument '{name}' must be an int >= {low}; got {value!r}.")
  n, p = int(n), int(factor_size)
  sizes = []
  while n % p == 0:
    sizes.append(p)
    n //= p
  if n > 1 or not sizes:
    sizes.append(n)
  return tuple(sizes)


def _check_factors(fn: str, factors: Sequence[Array]) -> tuple[int, ...]:
  if not isinstance(factors, (list, tuple)) or not factors:
    raise ValueError(f"{fn}: argument 'factors' must be a non-empty sequence of square "
                     f"matrices; got {type(factors).__name__}.")
  return tuple(_validation.check_matrix(fn, f"factors[{i}]", f, batched=False)
               for i, f in enumerate(factors))


def kronecker_matrix(factors: Sequence[Array]) -> Array:
  """``W_0 (x) W_1 (x) ... (x) W_{F-1}`` (``numpy.kron`` order), real or complex."""
  _check_factors("kronecker_matrix", factors)
  w = jnp.asarray(factors[0])
  for f in factors[1:]:
    w = jnp.kron(w, jnp.asarray(f))
  return w


def kronecker_blocks(factors: Sequence[Array], max_size: Any) -> tuple[Array, ...]:
  """The same Kronecker product with fewer, larger factors: consecutive factors merged
  (:func:`kronecker_matrix` of each run) while a block's size stays at most ``max_size``;
  a factor larger than ``max_size`` stays alone. ``kronecker_matrix`` of the result equals
  ``kronecker_matrix(factors)`` (associativity of the Kronecker product); nine ``2 x 2``
  factors with ``max_size = 32`` give blocks of 32 and 16. Applied by :func:`kronecker_apply`,
  a row costs ``O(n sum_b p_b)`` in ``len(blocks)`` contractions instead of ``len(factors)``:
  fewer, larger products, which processors run faster than many ``2 x 2`` ones.

  Args:
    factors: square matrices (real or complex), as for :func:`kronecker_matrix`.
    max_size: the largest block size formed, an int >= 1.
  """
  fn = "kronecker_blocks"
  sizes = _check_factors(fn, factors)
  _validation.check_int(fn, "max_size", max_size, 1)
  blocks, run, size = [], [], 1
  for f, p in zip(factors, sizes):
    if run and size * p > max_size:
      blocks.append(kronecker_matrix(run))
      run, size = [], 1
    run.append(f)
    size *= p
  blocks.append(kronecker_matrix(run))
  return tuple(blocks)


def kronecker_apply(factors: Sequence[Array], x: Array) -> Array:
  """``W x`` for every row ``x`` of ``x`` (``(..., n)``), ``W = kronecker_matrix(factors)``,
  applied factor by factor: the row reshaped to ``(p_0, ..., p_{F-1})`` (row-major, the
  order of :func:`kronecker_matrix`) and contracted with each factor in turn,
  ``O(n sum_f p_f)`` a row instead of ``O(n^2)``. ``x`` and the factors must share a dtype
  (complex factors need complex rows)."""
  fn = "kronecker_apply"
  sizes = _check_factors(fn, factors)
  n = int(np.prod(sizes))
  x = jnp.asarray(x)
  if x.shape[-1:] != (n,):
    raise ValueError(f"{fn}: argument 'x' must have n = {n} entries on its last axis (the "
                     f"product of the factor sizes {sizes}); got shape {x.shape}.")
  lead = x.shape[:-1]
  y = x.reshape(lead + sizes)
  axis = len(lead)
  for f in factors:  # contracts the leading factor axis; the new axis goes last
    y = jnp.tensordot(y, f, axes=([axis], [1]))
  return y.reshape(lead + (n,))
