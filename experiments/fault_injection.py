"""Fault injection: kill or stop the CLI, damage checkpoints and raw data, poison the loss.

``python -m experiments.fault_injection --kills 30 --terms 30 --out DIR`` runs every trial
kind and prints one JSON line per kind with its figures (``trials``, ``survived``, ``lost``);
the tests run the same functions with fewer trials (``tests/test_fault_injection.py``).

* **kills**: ``lvf-jax`` on a small copy-task run is killed with SIGKILL at random moments
  after training has started (during steps, evaluations and checkpoint writes), then rerun with
  the same command, ``kills`` times in a row; the finished run must equal an uninterrupted one
  bit for bit (every parameter, every logged metric). A trial survives when its rerun resumes
  (or starts over) without an error; ``lost`` counts runs that could not continue, and
  ``steps_redone`` the steps trained twice (after the last complete checkpoint).
* **terms**: the same with SIGTERM, which asks the run to stop: each must exit with status
  143 with its last logged step checkpointed (no step trained twice).
* **checkpoints**: each file of the newest checkpoint is truncated, or one byte of it flipped;
  the rerun must fall back to the previous step (the damaged one moved aside) or restore it
  intact, and finish equal to the uninterrupted run. ``lost``: a damage that stops the run or
  changes its result.
* **data**: each raw data file kind present in the data directory is truncated, or one byte
  of it flipped; loading must raise ``lvf_jax.data.DataError`` in one line naming the file.
* **nan**: the loss becomes NaN from a random step on; training must stop with
  ``NonFiniteLossError`` naming that step and keep only checkpoints of earlier steps.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Optional

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The run every kill and checkpoint trial trains: a tanh RNN on a short copy task, with a
#: checkpoint every 4 steps so that kills often land in a save.
RUN_ARGS = ("--config=configs/copy.py:rnn", "--config.task.options.T=6",
            "--config.model.hidden=8", "--config.train.batch_size=4",
            "--config.train.steps=240", "--config.train.checkpoint_every=4",
            "--config.train.keep_checkpoints=2", "--config.train.log_every=1",
            "--config.train.eval_every=40", "--config.train.eval_size=8",
            "--config.train.progress_bar=False", "--config.train.plot=False",
            "--config.train.tensorboard=False")


def _command(workdir: str, steps: Optional[int] = None) -> list[str]:
  args = list(RUN_ARGS)
  if steps is not None:
    args = [a for a in args if not a.startswith("--config.train.steps=")]
    args.append(f"--config.train.steps={steps}")
  return [sys.executable, "-m", "experiments.main", f"--workdir={workdir}", *args]


def _env() -> dict:
  return dict(os.environ, JAX_PLATFORMS="cpu")


def run(workdir: str, steps: Optional[int] = None) -> subprocess.CompletedProcess:
  """The CLI on :data:`RUN_ARGS` in ``workdir``, to completion."""
  return subprocess.run(_command(workdir, steps), cwd=ROOT, env=_env(), capture_output=True,
                        text=True, timeout=900)


def final_params(workdir: str) -> dict[str, np.ndarray]:
  """The parameters of the newest checkpoint, flattened (``{path: array}``)."""
  import jax  # pylint: disable=g-import-not-at-top
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  directory = os.path.join(os.path.abspath(workdir), "checkpoints")
  with ocp.CheckpointManager(directory) as manager:
    state = manager.restore(manager.latest_step(), args=ocp.args.StandardRestore())
  flat = jax.tree_util.tree_flatten_with_path(state["params"])[0]
  return {jax.tree_util.keystr(p): np.asarray(v) for p, v in flat}


def metrics(workdir: str) -> list[dict]:
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    return [json.loads(line) for line in f]


def same_run(a: str, b: str) -> bool:
  """Whether two finished workdirs hold bit-identical parameters and metric histories."""
  pa, pb = final_params(a), final_params(b)
  if pa.keys() != pb.keys() or any(not np.array_equal(pa[k], pb[k]) for k in pa):
    return False
  strip = lambda rs: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]
  return strip(metrics(a)) == strip(metrics(b))


def _size(path: str) -> int:
  try:
    return os.path.getsize(path)
  except OSError:
    return -1


def _latest_checkpoint(workdir: str) -> int:
  """The newest complete checkpoint step (orbax names unfinished ones ``<step>.orbax-...``)."""
  directory = os.path.join(workdir, "checkpoints")
  steps = [int(n) for n in os.listdir(directory) if n.isdigit()] if os.path.isdir(directory) \
      else []
  return max(steps, default=0)


def reference_run(root: str) -> str:
  """Trains the uninterrupted run every trial is compared with; returns its workdir."""
  reference = os.path.join(root, "reference")
  r = run(reference)
  if r.returncode:
    raise RuntimeError(f"reference run failed: {r.stderr[-2000:]}")
  return reference


def kill_trials(root: str, kills: int, seed: int = 0, reference: Optional[str] = None,
                signum: int = signal.SIGKILL) -> dict[str, Any]:
  """``kills`` signals ``signum`` to one run at random moments of its training, each
  followed by a rerun; then the run finishes and is compared with an uninterrupted one.

  SIGKILL ends the process where it stands. SIGTERM and SIGINT ask it to stop: a trial then
  survives only if the process exits with ``128 + signum`` and its newest checkpoint is the
  step it logged last (``steps_redone`` stays 0), or if it had finished before the signal.
  """
  rng = random.Random(seed)
  reference = reference or reference_run(root)
  name = signal.Signals(signum).name
  graceful = signum != signal.SIGKILL
  workdir = os.path.join(root, f"signalled-{name}")
  survived = lost = redone = 0
  moments, failures = [], []
  for _ in range(kills):
    log = os.path.join(workdir, "metrics.jsonl")
    start_size = _size(log)
    proc = subprocess.Popen(_command(workdir), cwd=ROOT, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while _size(log) <= start_size and proc.poll() is None and time.time() < deadline:
      time.sleep(0.01)  # until the (resumed) run logs a new step
    time.sleep(rng.uniform(0.0, 0.6))
    finished = proc.poll() is not None
    if not finished:
      proc.send_signal(signum)
    _, err = proc.communicate()
    expected = 0 if finished or not graceful else 128 + signum
    if (finished or graceful) and proc.returncode != expected:
      lost += 1
      failures.append({"returncode": proc.returncode, "stderr": err[-500:]})
      continue
    records = metrics(workdir)
    moments.append(records[-1]["step"] if records else 0)
    redone += moments[-1] - _latest_checkpoint(workdir)
    survived += 1
  final = run(workdir)
  if final.returncode:
    lost += 1
  identical = final.returncode == 0 and same_run(reference, workdir)
  return {"kind": name, "trials": kills, "survived": survived, "lost": lost,
          "identical_to_uninterrupted": identical, "signalled_after_step": moments,
          "steps_redone": redone, "failures": failures}


def _flip(b: bytes) -> bytes:
  return b[:len(b) // 2] + bytes([b[len(b) // 2] ^ 0xFF]) + b[len(b) // 2 + 1:]


#: The damages every file is put through: truncated to half, one byte flipped.
DAMAGES = (("truncate", lambda b: b[:len(b) // 2]), ("flip", _flip))


def run_config(steps: Optional[int] = None):
  """The config :data:`RUN_ARGS` gives the CLI, for runs in this process."""
  import ast  # pylint: disable=g-import-not-at-top
  import runpy  # pylint: disable=g-import-not-at-top
  from lvf_jax.train.config import set_field  # pylint: disable=g-import-not-at-top
  spec = RUN_ARGS[0].split("=", 1)[1]
  path, preset = spec.split(":")
  c = runpy.run_path(os.path.join(ROOT, path))["get_config"](preset)
  for arg in RUN_ARGS[1:]:
    field, value = arg[len("--config."):].split("=", 1)
    try:
      value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
      pass
    set_field(c, field, value)
  if steps is not None:
    c.train.steps = steps
  return c


def _file_kind(rel: str) -> str:
  """``rel`` with content-addressed names (orbax's data chunks) replaced by ``<chunk>``."""
  parts = rel.split(os.sep)
  return os.sep.join("<chunk>" if len(p) == 32 and all(c in "0123456789abcdef" for c in p)
                     else p for p in parts)


def checkpoint_trials(root: str, reference: str, one_per_kind: bool = False
                      ) -> dict[str, Any]:
  """Every file of the newest checkpoint of a run stopped early (``one_per_kind``: one file of
  each kind), truncated or bit-flipped; each rerun (in this process) must finish equal to the
  uninterrupted ``reference``."""
  import contextlib  # pylint: disable=g-import-not-at-top
  import io  # pylint: disable=g-import-not-at-top
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  base = os.path.join(root, "ckpt-base")
  half = 120
  with contextlib.redirect_stdout(io.StringIO()):
    train.train_and_evaluate(run_config(steps=half), base)
  newest = os.path.join(base, "checkpoints", str(half))
  files = sorted(os.path.relpath(os.path.join(d, f), newest)
                 for d, _, fs in os.walk(newest) for f in fs)
  if one_per_kind:
    files = list({_file_kind(f): f for f in reversed(files)}.values())
  outcomes = []
  for rel in files:
    for name, damage in DAMAGES:
      work = os.path.join(root, f"ckpt-{name}-{rel.replace(os.sep, '_')}")
      shutil.copytree(base, work)
      target = os.path.join(work, "checkpoints", str(half), rel)
      with open(target, "rb") as f:
        data = f.read()
      if not data:
        continue
      with open(target, "wb") as f:
        f.write(damage(data))
      error = None
      err = io.StringIO()
      try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
          c = run_config()
          c.train.allow_resume_changes = True  # the base run stopped at half the steps
          train.train_and_evaluate(c, work)
      except Exception as e:  # pylint: disable=broad-except
        error = f"{type(e).__name__}: {e}"[:300]
      aside = os.path.isdir(os.path.join(work, "checkpoints", f"damaged-{half}"))
      ok = error is None and same_run(reference, work)
      outcomes.append({"file": _file_kind(rel), "damage": name, "fell_back": aside, "ok": ok,
                       "error": error, "warning": err.getvalue().strip()[-300:]})
      shutil.rmtree(work)
  return {"kind": "checkpoint", "trials": len(outcomes),
          "survived": sum(o["ok"] for o in outcomes),
          "lost": sum(not o["ok"] for o in outcomes),
          "fell_back": sum(o["fell_back"] for o in outcomes),
          "failures": [o for o in outcomes if not o["ok"]]}


def _raw_files(raw_dir) -> list[tuple[str, str]]:
  """``(dataset, file relative to raw_dir)`` of one file per raw file kind present."""
  from lvf_jax.data import readers  # pylint: disable=g-import-not-at-top
  candidates = [
      ("mnist", os.path.join("mnist", readers.MNIST_FILES["test_labels"][0])),
      ("ptb_char", readers.PTB_FILES[("char", "valid")][0]),
      ("jsb", readers.MUSIC_PICKLES["jsb"][0][0]),
      ("musedata", readers.MUSIC_MAT["musedata"][0]),
      ("fsdd", os.path.join("fsdd", "recordings", "0_theo_10.wav")),
  ]
  return [(d, rel) for d, rel in candidates if os.path.isfile(os.path.join(raw_dir, rel))]


def data_trials(root: str) -> dict[str, Any]:
  """Each raw file kind, truncated or bit-flipped in a copy of the data directory: loading
  must fail with a one-line ``DataError`` naming it."""
  from lvf_jax import data  # pylint: disable=g-import-not-at-top
  from lvf_jax.data import paths  # pylint: disable=g-import-not-at-top
  raw = paths.raw_data_dir()
  outcomes = []
  for dataset, rel in _raw_files(raw):
    for name, damage in DAMAGES:
      work = os.path.join(root, f"data-{dataset}-{name}")
      src = os.path.join(raw, rel)
      target = os.path.join(work, rel)
      shutil.copytree(os.path.dirname(src), os.path.dirname(target))  # the other files too
      with open(src, "rb") as f:
        content = f.read()
      with open(target, "wb") as f:
        f.write(damage(content))
      split = "test" if dataset in ("mnist", "jsb", "musedata") else "valid"
      error = None
      try:
        data.load(dataset, split, data_dir=work, tfds_dir=os.path.join(work, "tfds"))
      except paths.DataError as e:
        error = str(e)
      # FSDD's recordings are checked as one tree: the error names their folder.
      named = target if dataset != "fsdd" else os.path.dirname(target)
      ok = error is not None and "\n" not in error and named in error
      outcomes.append({"dataset": dataset, "file": rel, "damage": name, "ok": ok,
                       "error": (error or "loaded without an error")[:300]})
      shutil.rmtree(work)
  return {"kind": "data", "trials": len(outcomes), "survived": sum(o["ok"] for o in outcomes),
          "lost": sum(not o["ok"] for o in outcomes),
          "failures": [o for o in outcomes if not o["ok"]]}


class PoisonedPipeline:
  """A synthetic task's pipeline whose training inputs, hence loss, are NaN from optimiser step
  ``bad_step`` on (steps count from 1)."""

  def __init__(self, inner, bad_step: int):
    self._inner = inner
    self._bad = bad_step

  def __getattr__(self, name):
    return getattr(self._inner, name)

  def train_batch(self, key, step):
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    batch = self._inner.train_batch(key, step)  # step counts from 0
    scale = jnp.where(step + 1 >= self._bad, jnp.float32(jnp.nan), jnp.float32(1.0))
    return batch._replace(inputs=batch.inputs * scale)


def nan_trials(root: str, trials: int, seed: int = 0) -> dict[str, Any]:
  """The loss becomes NaN from a random step on: the run must stop naming that step and keep
  only checkpoints of earlier steps."""
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import builders, checkpoints  # pylint: disable=g-import-not-at-top
  from lvf_jax.train.config import make_config  # pylint: disable=g-import-not-at-top
  rng = random.Random(seed)
  outcomes = []
  real = builders.build_pipeline
  for trial in range(trials):
    bad = rng.randint(2, 30)
    c = make_config("copy", {"T": 6}, "rnn", 8, train=dict(
        steps=40, batch_size=4, log_every=rng.choice([1, 3, 7]), eval_every=5, eval_size=8,
        checkpoint_every=4, progress_bar=False, plot=False, tensorboard=False))
    workdir = os.path.join(root, f"nan-{trial}")
    builders.build_pipeline = lambda config, bad=bad: PoisonedPipeline(real(config), bad)
    try:
      train.train_and_evaluate(c, workdir)
      error = None
    except train.NonFiniteLossError as e:
      error = e
    finally:
      builders.build_pipeline = real
    ck = checkpoints.Checkpointer(os.path.join(workdir, "checkpoints"))
    saved = ck.all_steps()
    ck.close()
    ok = error is not None and error.step == bad and all(s < bad for s in saved)
    outcomes.append({"bad_step": bad, "reported": None if error is None else error.step,
                     "checkpoints": saved, "ok": ok})
  return {"kind": "nan", "trials": trials, "survived": sum(o["ok"] for o in outcomes),
          "lost": sum(not o["ok"] for o in outcomes),
          "failures": [o for o in outcomes if not o["ok"]]}


KINDS = ("kill", "term", "checkpoint", "data", "nan")


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--kills", type=int, default=30)
  parser.add_argument("--terms", type=int, default=30)
  parser.add_argument("--nan", type=int, default=10)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--kinds", default=",".join(KINDS),
                      help=f"comma-separated trial kinds to run, of {', '.join(KINDS)}")
  parser.add_argument("--out", required=True, help="scratch directory (emptied first)")
  args = parser.parse_args(argv)
  kinds = [k for k in args.kinds.split(",") if k]
  unknown = sorted(set(kinds) - set(KINDS))
  if unknown:
    parser.error(f"--kinds: unknown kind(s) {unknown}; valid kinds are {list(KINDS)}.")
  shutil.rmtree(args.out, ignore_errors=True)
  os.makedirs(args.out)
  t0 = time.time()
  reference = reference_run(args.out) if {"kill", "term", "checkpoint"} & set(kinds) else None
  trials = {
      "kill": lambda: kill_trials(args.out, args.kills, args.seed, reference),
      "term": lambda: kill_trials(args.out, args.terms, args.seed, reference,
                                  signum=signal.SIGTERM),
      "checkpoint": lambda: checkpoint_trials(args.out, reference),
      "data": lambda: data_trials(args.out),
      "nan": lambda: nan_trials(args.out, args.nan, args.seed),
  }
  for kind in kinds:
    print(json.dumps(trials[kind]()), flush=True)
  print(json.dumps({"seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
  main()
