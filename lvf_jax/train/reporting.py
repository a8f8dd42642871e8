"""Metrics output: JSON lines, optional TensorBoard, a progress bar, the curves PNG."""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Mapping, Optional

import numpy as np


def _scalar(v: Any) -> float:
  return float(np.asarray(v))


class MetricWriter:
  """Appends ``{"step", "split", **metrics}`` records to ``metrics.jsonl`` (and TensorBoard).

  On resume, records past the restored step are dropped so the history matches an
  uninterrupted run.
  """

  def __init__(self, workdir: str, *, tensorboard: bool = True, resume_step: int = 0,
               enabled: bool = True):
    self.path = os.path.join(workdir, "metrics.jsonl")
    kept = [r for r in self.read(self.path) if r["step"] <= resume_step] if resume_step else []
    #: every record of the run so far (also kept when ``enabled`` is false: a process of a
    #: multi-process run that writes no files)
    self.records = list(kept)
    self._enabled = enabled
    if enabled:
      with open(self.path, "w") as f:
        for r in kept:
          f.write(json.dumps(r) + "\n")
    self._tb = None
    if tensorboard and enabled:
      try:
        from tensorboardX import SummaryWriter  # optional dependency
        self._tb = SummaryWriter(os.path.join(workdir, "tensorboard"))
      except ImportError:
        self._tb = None
        print("lvf_jax: TensorBoard logs skipped: tensorboardX is not installed "
              "(pip install 'lvf_jax[tensorboard]', or set train.tensorboard=False); the "
              "metrics are in metrics.jsonl.")

  @staticmethod
  def read(path: str) -> list[dict]:
    if not os.path.exists(path):
      return []
    with open(path) as f:
      return [json.loads(line) for line in f if line.strip()]

  def write(self, step: int, split: str, metrics: Mapping[str, Any]) -> dict:
    record = {"step": int(step), "split": split}
    record.update({k: _scalar(v) for k, v in metrics.items()})
    self.records.append(record)
    if not self._enabled:
      return record
    with open(self.path, "a") as f:
      f.write(json.dumps(record) + "\n")
    if self._tb is not None:
      for k, v in record.items():
        if k not in ("step", "split"):
          self._tb.add_scalar(f"{split}/{k}", v, step)
    return record

  def close(self) -> None:
    if self._tb is not None:
      self._tb.close()


class Progress:
  """tqdm bar with live loss/accuracy; steps/s is tqdm's rate. Quiet when disabled."""

  def __init__(self, total: int, initial: int, enabled: bool, desc: str):
    self._bar = None
    if enabled:
      from tqdm.auto import tqdm
      self._bar = tqdm(total=total, initial=initial, desc=desc, unit="step", dynamic_ncols=True,
                       mininterval=0.5 if sys.stderr.isatty() else 10.0, file=sys.stderr)

  def update(self, n: int, **postfix: float) -> None:
    if self._bar is not None:
      self._bar.set_postfix({k: f"{v:.4g}" for k, v in postfix.items()}, refresh=False)
      self._bar.update(n)

  def close(self) -> None:
    if self._bar is not None:
      self._bar.close()


def plot_curves(records: list[dict], path: str, *, title: str,
                baseline: Optional[float] = None) -> Optional[str]:
  """Writes training/validation loss (and accuracy, if logged) curves to ``path`` (PNG)."""
  try:
    from matplotlib.figure import Figure  # a figure object: pyplot and its backend untouched
  except ImportError:
    return None
  has_acc = any("accuracy" in r for r in records)
  fig = Figure(figsize=(11 if has_acc else 6, 4))
  axes = fig.subplots(1, 2 if has_acc else 1, squeeze=False)
  ax = axes[0, 0]
  for split, style in (("train", "-"), ("validation", "o-")):
    pts = [(r["step"], r["loss"]) for r in records if r["split"] == split and "loss" in r]
    if pts:
      ax.plot(*zip(*pts), style, label=split, markersize=3)
  if baseline is not None and math.isfinite(baseline):
    ax.axhline(baseline, color="k", ls="--", lw=1, label="no-memory baseline")
  ax.set_yscale("log")
  ax.set_xlabel("step")
  ax.set_ylabel("loss")
  ax.legend()
  ax.set_title(title)
  if has_acc:
    ax = axes[0, 1]
    for split, style in (("train", "-"), ("validation", "o-")):
      pts = [(r["step"], r["accuracy"]) for r in records
             if r["split"] == split and "accuracy" in r]
      if pts:
        ax.plot(*zip(*pts), style, label=split, markersize=3)
    ax.set_xlabel("step")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  return path


def plot_diagnostics(records: list[dict], path: str, *, title: str) -> Optional[str]:
  """Writes the logged diagnostics (``split == 'diagnostics'``: spectral radius and
  orthogonality error per transition matrix, ``||div V||``) against the step to ``path``;
  None when there are none."""
  rows = [r for r in records if r["split"] == "diagnostics"]
  if not rows:
    return None
  try:
    from matplotlib.figure import Figure  # a figure object: pyplot and its backend untouched
  except ImportError:
    return None
  kinds = ("spectral_radius", "orthogonality_error", "divergence_norm")
  present = [k for k in kinds if any(key.endswith(k) for r in rows for key in r)]
  fig = Figure(figsize=(4.5 * len(present), 3.8))
  axes = fig.subplots(1, len(present), squeeze=False)[0]
  for ax, kind in zip(axes, present):
    names = sorted({key for r in rows for key in r if key.endswith(kind)})
    for name in names:
      floor = 0.0 if kind == "spectral_radius" else 1e-12  # log axes: exact zeros at 1e-12
      pts = [(r["step"], max(r[name], floor)) for r in rows if name in r]
      ax.plot(*zip(*pts), "o-", markersize=3, label=name[:-len(kind) - 1] or name)
    if kind == "spectral_radius":
      ax.axhline(1.0, color="k", ls="--", lw=1)
    else:
      ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(kind.replace("_", " "))
    ax.legend(fontsize=7)
  fig.suptitle(title, fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  return path
