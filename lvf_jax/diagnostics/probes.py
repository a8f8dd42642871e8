"""Linear read-out probes of hidden states: what a state holds, measured on held-out data.

A probe fits a ridge regression from states ``h`` (batch, n) to targets on one part of the
batch and reports its coefficient of determination ``R^2`` on the rest. Applied to the inputs
``k`` steps back it gives the linear memory curve ``m(k)`` of a driven recurrent network and
its sum, the short-term memory capacity, which for a linear state of ``n`` units is at most
``n`` (Jaeger 2002, "Short term memory in echo state networks", GMD Report 152, Sec. 3 and
Prop. 2). Unlike the Fisher memory curve of :mod:`lvf_jax.diagnostics.memory` it needs no
linear model: it measures a trained nonlinear network from its states. Unlike
``||dh_T/dh_t||`` (:mod:`lvf_jax.diagnostics.gradient_flow`), which says whether a gradient
reaches step ``t``, it says whether step ``t``'s input can still be read from the state.

Everything is jit-safe and keeps the states' floating dtype.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

Array = jax.Array


def _split(name: str, h, targets, train_fraction: float) -> tuple[Array, Array, int]:
  h = jnp.asarray(h)
  if h.ndim != 2 or not jnp.issubdtype(h.dtype, jnp.floating):
    raise ValueError(f"{name}: argument 'states' must be a floating array (batch, n); got "
                     f"{h.dtype} of shape {h.shape}.")
  targets = jnp.asarray(targets, h.dtype)
  if targets.ndim not in (1, 2) or targets.shape[0] != h.shape[0]:
    raise ValueError(f"{name}: the targets must have shape (batch,) or (batch, m) with batch "
                     f"= {h.shape[0]} as the states; got {targets.shape}.")
  if not 0.0 < train_fraction < 1.0:
    raise ValueError(f"{name}: argument 'train_fraction' must lie in (0, 1); got "
                     f"{train_fraction!r}.")
  n_fit = int(round(train_fraction * h.shape[0]))
  if n_fit < 2 or h.shape[0] - n_fit < 2:
    raise ValueError(f"{name}: {h.shape[0]} examples leave {n_fit} to fit and "
                     f"{h.shape[0] - n_fit} to test; each part needs at least 2.")
  return h, targets, n_fit


def linear_probe_r2(states, targets, *, ridge: float = 1e-6,
                    train_fraction: float = 0.5) -> Array:
  """Held-out ``R^2`` of a ridge regression (with intercept) from ``states`` to ``targets``.

  Args:
    states: (batch, n) hidden states, one per example.
    targets: (batch,) or (batch, m) values to read from them.
    ridge: penalty relative to the mean variance of the state features: ``lambda = ridge *
      trace(X^T X) / n`` of the centred fitting states ``X``, so the probe is invariant to the
      states' scale.
    train_fraction: the leading fraction of the batch used to fit; the rest measures.

  Returns:
    ``R^2 = 1 - mean((pred - y)^2) / var(y)`` on the held-out examples, per target (shape
    ``()`` or ``(m,)``): 1 when the targets are a linear function of the states, about 0 (or
    below, by overfitting) when the states carry nothing linear about them.
  """
  h, y, n_fit = _split("linear_probe_r2", states, targets, train_fraction)
  y2 = y[:, None] if y.ndim == 1 else y
  h_mean = jnp.mean(h[:n_fit], axis=0, keepdims=True)
  y_mean = jnp.mean(y2[:n_fit], axis=0, keepdims=True)
  x = h[:n_fit] - h_mean
  gram = x.T @ x
  lam = ridge * jnp.trace(gram) / h.shape[1]
  w = jnp.linalg.solve(gram + lam * jnp.eye(h.shape[1], dtype=h.dtype),
                       x.T @ (y2[:n_fit] - y_mean))
  pred = (h[n_fit:] - h_mean) @ w + y_mean
  test = y2[n_fit:]
  var = jnp.var(test, axis=0)
  r2 = 1.0 - jnp.mean((pred - test) ** 2, axis=0) / jnp.where(var > 0, var, 1.0)
  return r2[0] if y.ndim == 1 else r2


def linear_memory_curve(states, signal, *, max_lag: Optional[int] = None,
                        ridge: float = 1e-6, train_fraction: float = 0.5) -> Array:
  """The linear memory curve ``m(k)``, ``k = 1..max_lag``, of states driven by ``signal``.

  ``m(k)`` is the held-out ``R^2`` (:func:`linear_probe_r2`, clipped at 0) of reading the
  input ``k`` steps back, ``signal[:, T - k]``, from the last states; its sum is the
  short-term memory capacity (Jaeger 2002, Sec. 3), at most ``n`` for a linear state of ``n``
  units.

  Args:
    states: (batch, n) states after the last step of ``signal``.
    signal: (batch, T) the scalar input of every step (e.g. the adding task's value channel).
    max_lag: the largest ``k`` (default ``T``).
    ridge: see :func:`linear_probe_r2`.
    train_fraction: see :func:`linear_probe_r2`.

  Returns:
    ``m`` of shape ``(max_lag,)``, ``m[k - 1]`` for lag ``k``.
  """
  signal = jnp.asarray(signal)
  if signal.ndim != 2:
    raise ValueError("linear_memory_curve: argument 'signal' must have shape (batch, T); got "
                     f"{signal.shape}.")
  t = signal.shape[1]
  max_lag = t if max_lag is None else max_lag
  if isinstance(max_lag, bool) or not isinstance(max_lag, int) or not 1 <= max_lag <= t:
    raise ValueError(f"linear_memory_curve: argument 'max_lag' must be an int in [1, T = {t}]; "
                     f"got {max_lag!r}.")
  lagged = signal[:, ::-1][:, :max_lag]  # column k - 1: the input k steps back
  r2 = linear_probe_r2(states, lagged, ridge=ridge, train_fraction=train_fraction)
  return jnp.maximum(r2, 0)
