"""The floor of every task: the loss (or accuracy) of a model that learned no memory.

A row whose result is no better than its task's floor has not reproduced anything, whatever
the paper's value (:mod:`experiments.reproduce.verdict`). The floors are:

- synthetic tasks (copy, adding, denoise, parenthesis): the task's own no-memory loss
  (``baseline_loss`` of :mod:`lvf_jax.tasks`), recorded in every run's result and computed
  from the row's config for a row without one; a validation or test loss is held against the
  no-memory loss of the split it was measured on (``split_baseline_loss``: adding's fixed
  split of a few hundred targets has its own, 5 % from the expectation at 512);
- polyphonic music: the test NLL per frame (summed over the 88 keys, averaged over the
  frames of every test piece, and as the mean over pieces of each piece's average) of an
  independent Bernoulli per key and of a first-order Markov chain per key, both fitted on the
  training split; the lower of the two is the floor;
- PTB: the test cross entropy of the training unigram distribution (bits per character,
  perplexity per word) and the test accuracy of always predicting the most frequent token;
- MNIST, permuted MNIST, CIFAR-10: chance accuracy, 10 %.

The music and PTB floors read the data, so ``python -m experiments.reproduce.floors``
computes them once and writes :data:`PATH` (with its command, commit, machine and date);
the pages read that file.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from typing import Optional, Sequence

import numpy as np

from experiments.reproduce import provenance
from experiments.reproduce.presets import preset_config, task_name
from experiments.reproduce.rows import Row

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floors.json")
#: Chance accuracy (percent) of the ten-class image tasks.
CHANCE = {"mnist": 10.0, "pmnist": 10.0, "cifar10": 10.0, "cifar10_noise": 10.0}
#: Tasks whose no-memory loss the task computes (``lvf_jax.tasks``).
LOSS_METRICS = ("test_loss", "val_loss", "min_train_loss")
#: The evaluation split of each split loss.
SPLIT_OF = {"val_loss": "validation", "test_loss": "test"}
MUSIC = ("jsb", "musedata")
EPS = 1e-7


def _bce(p: np.ndarray, y: np.ndarray) -> np.ndarray:
  """Per-frame NLL (nats, summed over keys) of binary ``y`` under probabilities ``p``."""
  p = np.clip(p, EPS, 1 - EPS)
  y = y.astype(np.float64)
  return -(y * np.log(p) + (1 - y) * np.log1p(-p)).sum(axis=-1)


def bernoulli_frame_nll(train: Sequence[np.ndarray], pieces: Sequence[np.ndarray]) -> list:
  """Per-frame NLL of each piece under one Bernoulli per key fitted on ``train``.

  Args:
    train: training piano rolls, each ``(T, 88)`` binary.
    pieces: the rolls to score; every frame after the first of a piece is predicted.

  Returns:
    one ``(T - 1,)`` array per piece.
  """
  p = np.concatenate([r[1:] for r in train]).mean(axis=0)
  return [_bce(np.broadcast_to(p, r[1:].shape), r[1:]) for r in pieces]


def markov_fit(train: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
  """``(p(on | on), p(on | off))`` per key of a first-order Markov chain per key fitted on
  the training piano rolls ``train``, with one pseudo-count per transition."""
  prev = np.concatenate([r[:-1] for r in train]).astype(np.float64)
  nxt = np.concatenate([r[1:] for r in train]).astype(np.float64)
  return (((prev * nxt).sum(0) + 1) / (prev.sum(0) + 2),
          (((1 - prev) * nxt).sum(0) + 1) / ((1 - prev).sum(0) + 2))


def markov_step_nll(fit: tuple, previous: np.ndarray, frames: np.ndarray) -> np.ndarray:
  """Per-frame NLL of ``frames`` ``(T, 88)`` given the frames before each, ``previous``,
  under the chain ``fit`` (:func:`markov_fit`)."""
  on_on, off_on = fit
  x = np.asarray(previous, np.float64)
  return _bce(x * on_on + (1 - x) * off_on, np.asarray(frames))


def markov_frame_nll(train: Sequence[np.ndarray], pieces: Sequence[np.ndarray]) -> list:
  """Per-frame NLL of each piece under a first-order Markov chain per key fitted on
  ``train`` (:func:`markov_fit`): one ``(T - 1,)`` array per piece."""
  fit = markov_fit(train)
  return [markov_step_nll(fit, r[:-1], r[1:]) for r in pieces]


def averages(frame_nll: Sequence[np.ndarray]) -> dict:
  """The three averages of a split from its pieces' per-frame NLLs.

  Args:
    frame_nll: one array of per-frame NLLs per piece (pieces without frames are skipped).

  Returns:
    ``frame_weighted`` (summed NLL over summed frames), ``per_piece`` (mean over pieces of
    each piece's mean: the harness's ``test_nll_per_sequence``) and ``summed_per_piece``
    (mean over pieces of each piece's sum).
  """
  pieces = [np.asarray(a, np.float64) for a in frame_nll if len(a)]
  sums = np.array([a.sum() for a in pieces])
  counts = np.array([len(a) for a in pieces])
  return {"frame_weighted": float(sums.sum() / counts.sum()),
          "per_piece": float(np.mean(sums / counts)),
          "summed_per_piece": float(sums.mean())}


def unigram(train: list, test: list) -> dict[str, float]:
  """Test cross entropy (nats per token) of the training unigram distribution and the test
  accuracy (percent) of always predicting the most frequent training token.

  Args:
    train: training lines, each a list of tokens (``<eos>`` included).
    test: test lines.
  """
  from collections import Counter  # pylint: disable=g-import-not-at-top
  counts = Counter(t for line in train for t in line)
  total = sum(counts.values())
  tokens = [t for line in test for t in line]
  nll = -np.mean([math.log(counts[t] / total) for t in tokens])
  top = counts.most_common(1)[0][0]
  return {"nats": float(nll), "accuracy": 100.0 * sum(t == top for t in tokens) / len(tokens)}


def compute(data_dir: str) -> dict:
  """Every data floor from the raw files under ``data_dir`` (``$LVF_JAX_DATA_DIR``)."""
  from lvf_jax.data import readers  # pylint: disable=g-import-not-at-top
  out = {}
  for name in MUSIC:
    rolls = readers.read_music(readers.music_source_file(data_dir, name))
    train, test = rolls["train"], rolls["test"]
    out[name] = {}
    for model, frame_nll in (("bernoulli", bernoulli_frame_nll), ("markov", markov_frame_nll)):
      a = averages(frame_nll(train, test))
      out[name][f"{model}_nll"] = a["frame_weighted"]
      out[name][f"{model}_nll_per_piece"] = a["per_piece"]
  for level, task in (("char", "ptb_char"), ("word", "ptb_word")):
    lines = {s: readers.read_ptb_lines(readers.ptb_file(data_dir, level, s))
             for s in ("train", "test")}
    u = unigram(lines["train"], lines["test"])
    out[task] = {"unigram_bpc" if level == "char" else "unigram_ppl":
                 u["nats"] / math.log(2) if level == "char" else math.exp(u["nats"]),
                 "unigram_accuracy": u["accuracy"]}
  return out


def load(path: str = PATH) -> dict:
  """The stored floors (``{}`` before :func:`main` wrote them)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return json.load(f)["floors"]


def load_info(path: str = PATH) -> dict:
  """How the stored floors were made: command, commit, machine, date."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    return {k: v for k, v in json.load(f).items() if k != "floors"}


def _task_loss(row: Row, split: str = "") -> Optional[float]:
  """The no-memory loss of a synthetic row's task, from its config: on the row's ``split``
  (its config's ``eval_size`` sequences) when one is named, else the expectation."""
  c = preset_config(row)
  options = tuple(sorted(c.task.options.to_dict().items()))
  return _no_memory_loss(str(c.task.name), options, split, int(c.train.get("eval_size", 512)))


@functools.lru_cache(maxsize=None)
def _no_memory_loss(name: str, options: tuple, split: str, size: int) -> Optional[float]:
  from lvf_jax import tasks  # pylint: disable=g-import-not-at-top
  if name not in tasks.TASKS:
    return None
  task = tasks.get_task(name, **dict(options))
  return float(task.split_baseline_loss(split, size) if split else task.baseline_loss())


def of_row(row: Row, records: list, stored: Optional[dict] = None) -> dict:
  """``{metric: (value, what)}``: the floor of each of ``row``'s paper metrics that has one.

  Args:
    row: the table row.
    records: its per-seed results; a synthetic task's floor is their ``baseline_loss``.
    stored: the data floors (:func:`load`, read when None).
  """
  if not row.paper or row.config is None:
    return {}
  stored = load() if stored is None else stored
  task = task_name(row)
  out = {}
  for metric in row.paper:
    floor = _floor(row, task, metric, records, stored)
    if floor is not None:
      out[metric] = floor
  return out


def _floor(row, task, metric, records, stored):
  if metric == "test_accuracy" and task in CHANCE:
    return CHANCE[task], "chance"
  if task in MUSIC and metric == "test_loss" and task in stored:
    s = stored[task]
    return min(s["bernoulli_nll"], s["markov_nll"]), "per-key Markov chain"
  if task in MUSIC and metric == "test_nll_per_sequence" and task in stored:
    s = stored[task]
    return (min(s["bernoulli_nll_per_piece"], s["markov_nll_per_piece"]),
            "per-key Markov chain, per-piece mean")
  if task == "ptb_char" and task in stored:
    return {"test_bpc": (stored[task]["unigram_bpc"], "unigram"),
            "test_accuracy": (stored[task]["unigram_accuracy"], "most frequent character")
            }.get(metric)
  if task == "ptb_word" and task in stored and metric == "test_ppl":
    return stored[task]["unigram_ppl"], "unigram"
  if metric in SPLIT_OF and task not in MUSIC:
    loss = _task_loss(row, SPLIT_OF[metric])
    if loss is not None:
      return loss, "no-memory loss"
  if metric in LOSS_METRICS:
    recorded = [r["baseline_loss"] for r in records if r.get("baseline_loss") is not None]
    if recorded and task not in MUSIC:
      return float(recorded[0]), "no-memory loss"
    loss = _task_loss(row)
    if loss is not None:
      return loss, "no-memory loss"
  return None


def main() -> int:
  """Computes the data floors and writes :data:`PATH` with how they were made."""
  data_dir = os.environ.get("LVF_JAX_DATA_DIR", "")
  if not data_dir:
    raise SystemExit("set LVF_JAX_DATA_DIR to the directory holding polyphonic/ and ptb/")
  value = {"floors": compute(data_dir), "command": "python -m experiments.reproduce.floors",
           "commit": provenance.git_commit(), "machine": provenance.machine(),
           "date": provenance.utc_now()}
  with open(PATH, "w") as f:
    json.dump(value, f, indent=1, sort_keys=True)
    f.write("\n")
  print(json.dumps(value, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
