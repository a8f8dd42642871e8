"""The minimum of a training-loss history under each reading of "minimum attained loss".

NC-GRU's tables (Mucllari et al. 2022, arXiv:2208.06496, Tables 1 and 2) report the minimum
training loss a run attained; whether that minimum is over single batches or over means of
consecutive batches changes it by the batches' scatter. :func:`train_every_batch` trains a
config with every batch's loss logged, :func:`window_minima` reads the history each way.
"""

from __future__ import annotations

import os

import numpy as np

from experiments.reproduce import archive, provenance, runner

#: Windows read: single batches and means of 10 and 100 consecutive batches.
WINDOWS = (1, 10, 100)


def window_means(losses, w: int) -> np.ndarray:
  """The means of ``w`` consecutive losses (non-overlapping windows; a last partial one is
  dropped)."""
  x = np.asarray(losses, np.float64)
  return x[: len(x) // w * w].reshape(-1, w).mean(axis=1)


def window_minima(losses, windows=WINDOWS) -> dict:
  """``{w: the smallest mean of w consecutive losses}`` (non-overlapping windows)."""
  return {str(w): float(window_means(losses, w).min()) for w in windows}


def train_every_batch(c, run_dir: str) -> list:
  """Trains config ``c`` in ``run_dir`` with ``log_every = 1``; every batch's training loss."""
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  provenance.started_at_commit()  # the record names the code this run trains with
  c.train.log_every = 1
  os.makedirs(run_dir, exist_ok=True)
  train.train_and_evaluate(c, run_dir)
  return [r["loss"] for r in runner._records(run_dir)  # pylint: disable=protected-access
          if r["split"] == "train"]


def load_runs(path: str) -> list:
  """The runs recorded at ``path`` (``[]`` before any)."""
  return archive.load(path).get("runs", [])


def save_runs(path: str, runs: list) -> None:
  """Writes ``runs`` to ``path`` atomically."""
  archive.save(path, {"runs": runs})


def settings_lines(paper_section: str, code: str, settings) -> list:
  """A table of ``(setting, paper, authors' code, harness)`` rows, one per setting."""
  lines = [f"| setting | paper ({paper_section}) | authors' code ({code}) | harness |",
           "|---|---|---|---|"]
  return lines + [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in settings]


def write_page(path: str, text: str) -> None:
  """Writes a study's page (generated from its records) and prints it."""
  with open(path, "w") as f:
    f.write(text)
  print(text)
