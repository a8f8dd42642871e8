"""Transition matrices of trained cells and their spectra (column form).

A cell's transition matrix is the matrix its step applies to the hidden state: ``C_V`` of the
lvfRNN (Azencot et al. 2021, arXiv:2102.09589, eq. 11), expRNN's ``expm(A)`` (Lezcano-Casado
and Martinez-Rubio 2019, arXiv:1901.08428), scoRNN's scaled Cayley matrix (Helfrich et al.
2018, arXiv:1707.09520), nnRNN's ``P (Gamma R + T) P^T`` (Kerg et al. 2019,
arXiv:1905.12080, eq. 3), the unitary ``W`` of the uRNNs, and one matrix per gate of the
gated cells (LSTM ``i f g o``, GRU ``r z n``, NC-GRU ``r u c``, GORU ``r z c``). The library
stores ``K = M^T`` (row form); everything here is the paper's column form ``M``.

Eigenvalues are computed on the host (NumPy, through :func:`jax.pure_callback`), so the
functions work on every backend and inside ``jit``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lvf_jax import geometry

Array = jax.Array

#: Gate names of the blocks of ``prepare()['kernel']`` of the gated cells without ``GATES``.
_GATE_NAMES = {"GORUCell": ("r", "z", "c"), "NCGRUCell": ("r", "u"), "TanhRNNCell": ("recurrent",),
               "OrthInitRNNCell": ("recurrent",)}


def transition_matrices(cell: Any, params: Any) -> dict[str, Array]:
  """The column-form transition matrices of ``cell`` with parameters ``params``.

  Args:
    cell: a cell of :mod:`lvf_jax.cells` (unbound).
    params: its parameters (``variables['params']`` of the cell, e.g.
      ``layer_params['cell']`` of a :class:`lvf_jax.layers.Recurrent`).

  Returns:
    ``{'recurrent': M}`` for the cells whose step is ``sigma(M h + ...)`` (complex ``W`` for
    the uRNNs); ``{gate: M_gate}`` for the gated cells.
  """
  def collect(c):
    if hasattr(c, "recurrent_matrix"):
      return {"recurrent": c.recurrent_matrix()}
    prep = c.prepare()
    n = c.features
    out = {}
    for key, kernel in prep.items():
      if not key.startswith("kernel"):
        continue
      k = kernel.shape[-1] // n
      names = ("c",) if key == "kernel_c" else (getattr(c, "GATES", ()) or
                                                 _GATE_NAMES.get(type(c).__name__, ()))
      if len(names) != k:
        names = tuple(f"{key}_{i}" for i in range(k))
      for i, name in enumerate(names):
        out[name] = kernel[:, i * n:(i + 1) * n].T
    return out

  return cell.apply({"params": params}, method=collect)


def eigenvalues(m: Array) -> Array:
  """Eigenvalues of the square matrix ``m`` (complex, in NumPy's order)."""
  m = jnp.asarray(m)
  dtype = m.dtype if jnp.issubdtype(m.dtype, jnp.complexfloating) else \
      geometry.complex_dtype(m.dtype)
  shape = jax.ShapeDtypeStruct(m.shape[:-1], dtype)
  return jax.pure_callback(lambda a: np.linalg.eigvals(np.asarray(a)).astype(dtype), shape, m)


def singular_values(m: Array) -> Array:
  """Singular values of ``m``, largest first."""
  return jnp.linalg.svd(jnp.asarray(m), compute_uv=False)


def orthogonality_error(m: Array) -> Array:
  """``||M^H M - I||_F``: zero exactly for an orthogonal (unitary) ``M``."""
  m = jnp.asarray(m)
  gram = jnp.conj(m).T @ m
  return jnp.linalg.norm(gram - jnp.eye(m.shape[-1], dtype=gram.dtype))


def normality_error(m: Array) -> Array:
  """``||M M^H - M^H M||_F / ||M||_F^2``: zero exactly for a normal ``M`` (nnRNN's measure of
  non-normality, Kerg et al. 2019, Sec. 3)."""
  m = jnp.asarray(m)
  mh = jnp.conj(m).T
  scale = jnp.sum(jnp.abs(m) ** 2)
  return jnp.linalg.norm(m @ mh - mh @ m) / jnp.where(scale > 0, scale, 1)


def spectral_radius(m: Array) -> Array:
  """The largest modulus of the eigenvalues of ``m``."""
  return jnp.max(jnp.abs(eigenvalues(m)))


def spectrum(m: Array) -> dict[str, Array]:
  """Eigenvalues, singular values, spectral radius, distances from orthogonality and from
  normality of ``m`` (one dict)."""
  eig = eigenvalues(m)
  return {"eigenvalues": eig, "singular_values": singular_values(m),
          "spectral_radius": jnp.max(jnp.abs(eig)),
          "orthogonality_error": orthogonality_error(m),
          "normality_error": normality_error(m)}


def vector_field_summary(v: Array) -> dict[str, Array]:
  """The lvfRNN's vector field ``V`` (column form): ``||div V||`` and the Frobenius norms of
  the rotation ``R_V = V^T - V`` (skew-symmetric) and the flux ``T_V = diag(div V)`` of
  ``D_V = R_V - T_V`` (lvfRNN eqs. 9-10); ``D_V`` is skew-symmetric, its Euler map
  near-orthogonal, exactly when the flux vanishes (Thm. 1)."""
  v = jnp.asarray(v)
  return {"divergence_norm": jnp.linalg.norm(geometry.divergence(v)),
          "rotation_norm": jnp.linalg.norm(geometry.rotation(v)),
          "flux_norm": jnp.linalg.norm(geometry.flux(v))}


def schur_factors(cell: Any, params: Any) -> dict[str, Array]:
  """nnRNN's factors of ``V = P (Lambda + T) P^T`` (Kerg et al. 2019, eq. 5; column form):
  the orthogonal ``P``, the block-diagonal ``Lambda`` of the 2x2 blocks ``gamma_i R(theta_i)``
  (its normal part), the strictly lower-triangular ``T`` (its non-normal part), ``gamma`` and
  ``theta``.

  Raises:
    ValueError: for a cell without a Schur form (not an nnRNN cell).
  """
  if not hasattr(cell, "schur_basis"):
    raise ValueError(f"schur_factors: argument 'cell' must be an nnRNN cell (NNRNNCell); got "
                     f"{type(cell).__name__}.")

  def collect(c):
    return {"P": c.schur_basis(), "Lambda": geometry.rotation_blocks(c.gamma, c.theta),
            "T": jnp.tril(c.triangular, k=-1), "gamma": c.gamma, "theta": c.theta}

  return cell.apply({"params": params}, method=collect)


def model_diagnostics(model: Any, params: Any) -> dict[str, Array]:
  """Cheap diagnostics of every layer of a model of :mod:`lvf_jax.models` (its ``cells``,
  parameters under ``rnn/layer_<i>/cell``): the spectral radius and the orthogonality error
  of each transition matrix, ``||div V||`` of each lvfRNN vector field and ``||T||_F`` of
  each nnRNN's non-normal part.

  Returns:
    A dict with the keys ``layer_<i>/<matrix>/spectral_radius``,
    ``layer_<i>/<matrix>/orthogonality_error``, ``layer_<i>/divergence_norm`` and
    ``layer_<i>/schur_T_norm`` (an empty dict for a model without cells).
  """
  cells = getattr(model, "cells", None)
  stack = params.get("rnn", {}) if hasattr(params, "get") else {}
  out: dict[str, Array] = {}
  for i, cell in enumerate(cells or ()):
    layer = stack.get(f"layer_{i}", {}).get("cell")
    if layer is None:
      continue
    for name, m in transition_matrices(cell, layer).items():
      out[f"layer_{i}/{name}/spectral_radius"] = spectral_radius(m)
      out[f"layer_{i}/{name}/orthogonality_error"] = orthogonality_error(m)
    if hasattr(cell, "schur_basis"):  # nnRNN: the size of the non-normal part
      out[f"layer_{i}/schur_T_norm"] = jnp.linalg.norm(schur_factors(cell, layer)["T"])
    if hasattr(cell, "field"):  # the lvfRNN's V as the cell uses it (projected or not)
      v = cell.apply({"params": layer}, method=lambda c: c.field())
      out[f"layer_{i}/divergence_norm"] = jnp.linalg.norm(geometry.divergence(v))
  return out
