"""The Fisher memory curve of linear recurrent dynamics (column form).

For ``h_t = Theta h_{t-1} + U x_t`` with a scalar input ``x_t = s_t + xi_t`` and white
Gaussian noise of variance ``eps`` injected through ``U``, the Fisher information that
``h_t`` keeps about a signal injected ``k`` steps before is (Ganguli, Huh and Sompolinsky
2008, eq. 3; nnRNN, Kerg et al. 2019, arXiv:1905.12080, SM B eq. 7)::

    J(k) = U^T (Theta^k)^T C^{-1} Theta^k U,    C = eps sum_{k >= 0} Theta^k (Theta^k)^T,

the Fisher memory curve (FMC); its sum ``J_tot`` is the memory capacity that nnRNN Table 6
compares across the Schur forms of Fig. 1(a) (:func:`schur_chain`). ``C`` is the
stationary covariance, the solution of ``C = Theta C Theta^T + eps U U^T`` summed here by
doubling (``A <- A^2``, ``C <- C + A C A^T``), so ``2^doublings`` terms cost
``doublings`` pairs of products. Everything is jit/vmap-safe and keeps the input dtype.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from lvf_jax import _validation

Array = jax.Array


def _square(name: str, theta) -> Array:
  theta = jnp.asarray(theta)
  if theta.ndim != 2 or theta.shape[0] != theta.shape[1] \
      or not jnp.issubdtype(theta.dtype, jnp.floating):
    raise ValueError(f"{name}: argument 'theta' must be a floating square matrix (n, n); got "
                     f"{theta.dtype} of shape {theta.shape}.")
  return theta


def _source(name: str, source, n: int, dtype) -> Array:
  if source is None:
    return jnp.zeros((n,), dtype).at[0].set(1)
  source = jnp.asarray(source, dtype)
  if source.shape != (n,):
    raise ValueError(f"{name}: argument 'source' must have shape (n,) = ({n},); got "
                     f"{source.shape}.")
  return source



def noise_covariance(theta, source=None, *, noise: float = 1.0,
                     doublings: int = 16) -> Array:
  """``C = noise sum_{k < 2^doublings} Theta^k U U^T (Theta^k)^T``, the covariance of the
  state driven by white noise through ``U`` (``source``; default the first unit vector).

  With ``U = e_1`` and the nnRNN paper's ``C_n = eps sum_k Theta^k (Theta^k)^T`` the two
  agree on the span the signal reaches; the paper's form (the identity as the noise
  input, every unit noisy) is ``source='all'``.

  Args:
    theta: the recurrent matrix ``(n, n)``, column form.
    source: ``(n,)`` input vector, None for ``e_1``, or ``'all'`` for noise on every unit.
    noise: noise variance ``eps > 0``.
    doublings: the sum runs over ``2^doublings`` steps (exact for a nilpotent ``Theta``
      of size ``n <= 2^doublings``; otherwise the tail must be negligible, i.e. the
      spectral radius below one).
  """
  name = "noise_covariance"
  theta = _square(name, theta)
  n = theta.shape[0]
  _validation.check_int(name, "doublings", doublings)
  if isinstance(source, str):
    if source != "all":
      raise ValueError(f"{name}: argument 'source' must be an array, None or 'all'; got "
                       f"{source!r}.")
    c = jnp.eye(n, dtype=theta.dtype)
  else:
    u = _source(name, source, n, theta.dtype)
    c = jnp.outer(u, u)
  c = noise * c

  def body(_, carry):
    a, c = carry
    return a @ a, c + a @ c @ a.T

  _, c = jax.lax.fori_loop(0, doublings, body, (theta, c))
  return c


def fisher_memory_curve(theta, steps: int, source=None, *, noise: float = 1.0,
                        noise_source="all", doublings: int = 16) -> Array:
  """``J(k)`` for ``k = 0 .. steps - 1`` (nnRNN SM B eq. 7, Ganguli et al. 2008 eq. 3).

  Args:
    theta: the recurrent matrix ``(n, n)``, column form.
    steps: number of delays ``k``.
    source: the signal's input vector ``U`` (default ``e_1``, the papers' source).
    noise: the noise variance ``eps``.
    noise_source: where the noise enters: ``'all'`` (the papers' ``C_n``: every unit), or
      a vector / None as ``source`` of :func:`noise_covariance`.
    doublings: see :func:`noise_covariance`.

  Returns:
    ``(steps,)`` array of Fisher information values.
  """
  name = "fisher_memory_curve"
  theta = _square(name, theta)
  _validation.check_int(name, "steps", steps)
  u = _source(name, source, theta.shape[0], theta.dtype)
  c = noise_covariance(theta, noise_source, noise=noise, doublings=doublings)

  def body(v, _):
    return theta @ v, v

  _, vs = jax.lax.scan(body, u, None, length=steps)  # Theta^k U, k = 0 .. steps - 1
  w = jnp.linalg.solve(c, vs.T)  # C^{-1} Theta^k U for every k at once
  return jnp.einsum("kn,nk->k", vs, w)


def fisher_memory_total(theta, steps: Optional[int] = None, **kwargs) -> Array:
  """``J_tot = sum_k J(k)`` over ``steps`` delays (default ``4 n``, past which the curves
  of the nnRNN paper's Schur forms have vanished); keywords as :func:`fisher_memory_curve`."""
  theta = _square("fisher_memory_total", theta)
  return jnp.sum(fisher_memory_curve(theta, steps or 4 * theta.shape[0], **kwargs))


def schur_chain(n: int, alpha: float, beta: float = 0.0, d: float = 0.0,
                dtype=jnp.float32) -> Array:
  """The lower-triangular Schur forms of nnRNN Fig. 1(a): ``d`` on the diagonal, ``alpha``
  on the sub-diagonal (the feed-forward chain, a delay line when ``beta = d = 0``) and
  ``beta`` on the rest of the lower triangle.

  nnRNN's SM B writes the delay line with ``sqrt(alpha)`` on the sub-diagonal, whose FMC is
  the closed form ``alpha^k (alpha - 1) / (alpha^(k+1) - 1)`` of Ganguli et al.; the values
  of its Table 6 come from ``alpha`` itself (``docs/reproduction/nnrnn-t6.md``), so pass
  ``sqrt(alpha)`` for the former.
  """
  _validation.check_int("schur_chain", "n", n)
  i = jnp.arange(n)
  below = i[:, None] - i[None, :]
  return jnp.where(below == 0, d, jnp.where(below == 1, alpha, jnp.where(below > 1, beta, 0.0))
                   ).astype(dtype)
