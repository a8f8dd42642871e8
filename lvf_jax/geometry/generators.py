"""Generators: the matrices that the maps turn into recurrent transition matrices.

Conventions (documented once, for the whole library):

* Matrices in this module are written in the papers' **column convention**: an operator
  ``G`` acts on a hidden state ``h`` as ``G @ h``. The Flax cells use the **row
  convention** ``h @ K`` (a Dense kernel is ``(in, out)``), so a cell whose transition is
  ``M`` (column form) uses the kernel ``K = M.T``. Tests pin this.
* Every function accepts leading batch dimensions ``(..., n, n)`` unless stated otherwise
  and preserves the input dtype.

Latent vector-field toolbox (lvfRNN paper, "A Differential Geometry Perspective on
Orthogonal Recurrent Models", Sec. 4.1): a vector field on the complete graph of ``n``
latent nodes is a matrix ``V`` with zero diagonal (``V[i, j]`` is the weight of the edge
``i -> j``).

* ``grad h``       eq (7):  ``(grad h)_ij = h_i - h_j``
* ``div V``        eq (8):  ``(div V)_i = sum_j V_ji - V_ij``  (column sums minus row sums)
* ``D_V``          eq (9):  ``(D_V)_ij = V_ji - V_ij`` (i != j), ``(D_V)_ii = -(div V)_i``
* ``R_V, T_V``     eq (10): ``D_V = R_V - T_V``, ``R_V = V^T - V``, ``T_V = diag(div V)``

Note: ``sum_i (div V)_i = 0`` for every ``V``, so "every ``(div V)_i <= 0``" (the
hypothesis of Prop. 2) already forces ``div V = 0``; see :func:`divergence`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import _validation
from lvf_jax.geometry._util import diag_embed, eye_like

Array = jax.Array


# --------------------------------------------------------------------------- skew


def antisymmetrize(m: Array) -> Array:
  """Returns ``M - M^T`` (skew-symmetric), as in AntisymmetricRNN eq (10)."""
  _validation.check_matrix("antisymmetrize", "m", m)
  return m - jnp.swapaxes(m, -1, -2)


def skew_from_triu(m: Array) -> Array:
  """Skew matrix built from the strictly-upper triangle of ``m``: ``U - U^T``, ``U = triu(m, 1)``.

  This is the expRNN parameterisation: the lower triangle and diagonal of ``m`` are
  ignored (they receive zero gradient).
  """
  _validation.check_matrix("skew_from_triu", "m", m)
  upper = jnp.triu(m, k=1)
  return upper - jnp.swapaxes(upper, -1, -2)


def num_skew_params(n: int) -> int:
  """Dimension of Skew(n) (and of VF_n, lvfRNN Sec. 4.2): ``n (n - 1) / 2``."""
  return n * (n - 1) // 2


def _triu_indices(n: int) -> tuple[np.ndarray, np.ndarray]:
  """Row and column indices of the strictly-upper triangle, row-major, as NumPy constants
  (``jnp.triu_indices`` computes them with traced ops: a cumulative sum and a scatter
  evaluated in every call of a jitted step)."""
  return np.triu_indices(n, k=1)


def skew_from_packed(v: Array, n: int) -> Array:
  """Skew matrix whose strictly-upper triangle (row-major order) is the vector ``v``.

  Args:
    v: array ``(..., n (n - 1) / 2)``.
    n: matrix size.
  """
  shape = _validation.shape_of(v)
  if len(shape) < 1 or shape[-1] != num_skew_params(n):
    raise ValueError(
        f"skew_from_packed: argument 'v' must have last dimension n(n-1)/2 = "
        f"{num_skew_params(n)} for n={n}; got shape {shape}.")
  rows, cols = _triu_indices(n)
  upper = jnp.zeros(shape[:-1] + (n, n), dtype=v.dtype).at[..., rows, cols].set(
      v, indices_are_sorted=True, unique_indices=True)
  return upper - jnp.swapaxes(upper, -1, -2)


def packed_from_skew(a: Array) -> Array:
  """Inverse of :func:`skew_from_packed`: the strictly-upper triangle of ``a`` as a vector."""
  n = _validation.check_matrix("packed_from_skew", "a", a)
  rows, cols = _triu_indices(n)
  return a[..., rows, cols]


# ------------------------------------------------------------------ vector fields


def grad(h: Array) -> Array:
  """Discrete gradient of a hidden state, lvfRNN eq (7): ``(grad h)_ij = h_i - h_j``.

  Args:
    h: array ``(..., n)``.

  Returns:
    array ``(..., n, n)``.
  """
  if jnp.ndim(h) < 1:
    raise ValueError(
        f"grad: argument 'h' must have shape (..., n); got shape {_validation.shape_of(h)}.")
  return h[..., :, None] - h[..., None, :]


def divergence(v: Array) -> Array:
  """Discrete divergence, lvfRNN eq (8): ``(div V)_i = sum_j V_ji - V_ij``.

  It is the adjoint of ``-grad`` (integration by parts, eq 13). Its entries always sum
  to zero.

  Args:
    v: vector field ``(..., n, n)`` (its diagonal does not contribute).

  Returns:
    array ``(..., n)``.
  """
  _validation.check_matrix("divergence", "v", v)
  return jnp.sum(v, axis=-2) - jnp.sum(v, axis=-1)


div = divergence


def rotation(v: Array) -> Array:
  """Rotation part ``R_V = V^T - V`` (skew-symmetric), lvfRNN eq (10)."""
  _validation.check_matrix("rotation", "v", v)
  return jnp.swapaxes(v, -1, -2) - v


def flux(v: Array) -> Array:
  """Flux part ``T_V = diag(div V)``, lvfRNN eq (10)."""
  return diag_embed(divergence(v))


def directional_derivative(v: Array) -> Array:
  """Directional-derivative operator ``D_V = R_V - T_V``, lvfRNN eqs (9)-(10).

  ``(D_V h)_i = sum_j (V_ij - V_ji) (h_i - h_j)`` (eq 15); ``D_V`` annihilates constant
  vectors and is skew-symmetric iff ``div V = 0`` (Thm 1, discrete form).
  """
  r = rotation(v)
  d = jnp.sum(r, axis=-1)  # row sums of R_V equal div V (Alg. 1, line 4)
  return r - diag_embed(d)


def project_divergence_free(v: Array) -> Array:
  """Orthogonal (Frobenius) projection of ``V`` onto ``{V : div V = 0}``.

  ``div`` has adjoint ``(div^* a)_ij = a_j - a_i`` and ``div div^* = 2 n (I - 11^T/n)``,
  so the projection is ``V + grad(div V) / (2 n)``; it keeps the diagonal at zero.
  Used by the hard divergence-free mode of the lvfRNN cell.
  """
  n = _validation.check_matrix("project_divergence_free", "v", v)
  return v + grad(divergence(v)) / (2 * n)


def with_divergence(v: Array, a: Array) -> Array:
  """The divergence-free part of ``v`` plus the gradient field of divergence ``a - mean(a)``.

  ``project_divergence_free(v) - grad(a - mean(a)) / (2 n)``: since ``div grad(x) / (2 n) =
  -x`` for every ``x`` with zero sum, the result has ``div = a - mean(a)`` and the same
  divergence-free part as ``v`` (the Frobenius-orthogonal split of ``vf_n`` into
  ``{div = 0}`` and the gradient fields, lvfRNN eqs. 7-8). Every field of ``vf_n`` is
  reached, by ``(v, div v)``.

  Args:
    v: vector field ``(..., n, n)``.
    a: divergence ``(..., n)`` (its mean is removed: a divergence sums to zero).

  Returns:
    the field ``(..., n, n)``.
  """
  n = _validation.check_matrix("with_divergence", "v", v)
  if jnp.shape(a)[-1:] != (n,):
    raise ValueError(f"with_divergence: argument 'a' must have shape (..., {n}); got shape "
                     f"{_validation.shape_of(a)}.")
  a = a - jnp.mean(a, axis=-1, keepdims=True)
  return project_divergence_free(v) - grad(a) / (2 * n)


# ------------------------------------------------------------- other generators


def antisymmetric_diffusion(w: Array, gamma) -> Array:
  """``W - W^T - gamma I``, AntisymmetricRNN eq (12) (gamma >= 0 is the diffusion)."""
  _validation.check_matrix("antisymmetric_diffusion", "w", w)
  _validation.check_nonnegative("antisymmetric_diffusion", "gamma", gamma)
  return w - jnp.swapaxes(w, -1, -2) - jnp.asarray(gamma, dtype=w.dtype) * eye_like(w)


def rotation_blocks(gamma: Array, theta: Array) -> Array:
  """Block-diagonal ``Lambda`` of nnRNN eq (5): blocks ``gamma_i [[cos, -sin], [sin,
  cos]](theta_i)``.

  Args:
    gamma: moduli ``(..., k)``.
    theta: angles ``(..., k)``.

  Returns:
    array ``(..., 2k, 2k)``.
  """
  _validation.check_same_shape("rotation_blocks", ("gamma", "theta"), gamma, theta)
  if jnp.ndim(gamma) < 1:
    raise ValueError("rotation_blocks: arguments 'gamma' and 'theta' must have shape (..., k).")
  k = gamma.shape[-1]
  c, s = gamma * jnp.cos(theta), gamma * jnp.sin(theta)
  blocks = jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)  # (..., k, 2, 2)
  lead = blocks.shape[:-3]
  # (..., k, 2, k, 2) block-diagonal assembly, then merge the pairs of axes.
  eye_k = jnp.broadcast_to(jnp.eye(k, dtype=blocks.dtype)[:, None, :, None], lead + (k, 2, k, 2))
  full = jnp.broadcast_to(blocks[..., :, :, None, :], lead + (k, 2, k, 2)) * eye_k
  return full.reshape(lead + (2 * k, 2 * k))


def schur_form(p: Array, gamma: Array, theta: Array, t: Array) -> Array:
  """nnRNN recurrent matrix ``V = P (Lambda(gamma, theta) + T) P^T``, eq (5).

  Args:
    p: orthogonal matrix ``(n, n)`` (n even).
    gamma: moduli ``(n/2,)``; theta: angles ``(n/2,)``.
    t: ``(n, n)``; only its strictly-lower triangle is used (column convention: the
      feed-forward coupling from Schur mode j to mode i > j). As printed in eq (5) this
      includes the entries ``t_{2i+1, 2i}`` inside the 2x2 blocks, which do change the
      eigenvalues; with them at zero the spectrum is exactly ``gamma_i e^{+-i theta_i}``.

  Returns:
    ``V`` in column convention (acts as ``V @ h``).
  """
  n = _validation.check_matrix("schur_form", "p", p)
  if n % 2:
    raise ValueError(f"schur_form: the hidden size n must be even; got p of shape {p.shape}.")
  if _validation.shape_of(gamma)[-1:] != (n // 2,):
    raise ValueError(
        f"schur_form: argument 'gamma' must have shape (n/2,) = ({n // 2},); got "
        f"{_validation.shape_of(gamma)}.")
  _validation.check_same_shape("schur_form", ("gamma", "theta"), gamma, theta)
  if _validation.shape_of(t) != _validation.shape_of(p):
    raise ValueError(
        f"schur_form: argument 't' must have the shape of 'p' {p.shape}; got "
        f"{_validation.shape_of(t)}.")
  theta_mat = rotation_blocks(gamma, theta) + jnp.tril(t, k=-1)
  return p @ theta_mat @ jnp.swapaxes(p, -1, -2)
