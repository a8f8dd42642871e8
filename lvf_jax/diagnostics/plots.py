"""Plots of the diagnostics: each takes an optional matplotlib ``Axes`` and returns the one it
drew on (a new ``matplotlib.figure.Figure`` when none is given); pyplot, its backend and its
current figure are never touched."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np


def _axes(ax: Optional[Any], figsize=(4.5, 4)):
  if ax is not None:
    return ax
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  return Figure(figsize=figsize).subplots()


def plot_spectrum(eigenvalues: Any, ax: Optional[Any] = None, *, label: Optional[str] = None,
                  **scatter_kwargs: Any):
  """Eigenvalues in the complex plane against the unit circle."""
  ax = _axes(ax)
  eig = np.asarray(eigenvalues)
  t = np.linspace(0, 2 * np.pi, 256)
  ax.plot(np.cos(t), np.sin(t), color="0.6", lw=1)
  ax.scatter(eig.real, eig.imag, s=scatter_kwargs.pop("s", 12), label=label, **scatter_kwargs)
  ax.set_aspect("equal")
  ax.set_xlabel("Re")
  ax.set_ylabel("Im")
  if label is not None:
    ax.legend()
  return ax


def plot_gradient_flow(norms: Mapping[str, Any], ax: Optional[Any] = None, *,
                       ylabel: str = r"$\|\partial L / \partial h_t\|$"):
  """Norms over time steps (one line per entry of ``norms``), log scale."""
  ax = _axes(ax, figsize=(6, 4))
  for name, values in norms.items():
    values = np.asarray(values)
    ax.semilogy(np.arange(1, len(values) + 1), values, label=name)
  ax.set_xlabel("time step t")
  ax.set_ylabel(ylabel)
  ax.legend()
  return ax


def plot_pca(projections: Any, ax: Optional[Any] = None, *, color_by_time: bool = True):
  """Trajectories of the first two principal components of hidden states (batch, time, 2)."""
  ax = _axes(ax)
  p = np.asarray(projections).reshape((-1,) + np.shape(projections)[-2:])
  for traj in p:
    ax.plot(traj[:, 0], traj[:, 1], lw=0.6, color="0.7")
    if color_by_time:
      ax.scatter(traj[:, 0], traj[:, 1], c=np.arange(len(traj)), s=4, cmap="viridis")
  ax.set_xlabel("PC 1")
  ax.set_ylabel("PC 2")
  return ax
