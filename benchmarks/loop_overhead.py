"""Steps per second of ``train_and_evaluate`` against the bare jitted train step.

The README's main job (``configs/demo.py``: expRNN on the copy task, T = 200, n = 128, batch
64). The bare loop calls the loop's own jitted step (``loop.guard_train_step(
loop.make_train_step(...))``) back to back and waits once at the end; the training loop
runs ``train_and_evaluate`` in a fresh workdir with logging every ``log_every`` steps and,
in the ``eval`` variant, the demo's evaluation and checkpoint cadence. Compilation is
excluded by taking the marginal cost: the time of ``--long`` steps minus that of
``--short`` steps, divided by the difference. Repetitions alternate between the variants.

    python benchmarks/loop_overhead.py --short 100 --long 400 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import runpy  # noqa: E402

import jax  # noqa: E402

from experiments.reproduce.harness import machine  # noqa: E402
from lvf_jax.train import builders, loop  # noqa: E402

DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs",
                    "demo.py")


def demo_config(steps: int, with_eval: bool):
  """The main job's expRNN run (``configs/demo.py``) for ``steps`` steps."""
  c = runpy.run_path(DEMO)["get_config"]()
  c.train.steps = steps
  c.train.progress_bar = False
  c.train.plot = False
  if not with_eval:  # evaluation and the checkpoint only at the end
    c.train.eval_every = steps
    c.train.checkpoint_every = steps
  return c


def bare_seconds(steps: int) -> float:
  c = demo_config(steps, False)
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  tx = builders.build_optimizer(c)
  state = loop.initial_state(c, model, pipeline, tx)
  step = jax.jit(loop.guard_train_step(loop.make_train_step(model, pipeline, tx)))
  health = loop.healthy()
  t0 = time.perf_counter()
  for _ in range(steps):
    state, health, _ = step(state, health, None)
  jax.block_until_ready(state.params)
  return time.perf_counter() - t0


def loop_seconds(steps: int, with_eval: bool) -> float:
  with tempfile.TemporaryDirectory() as workdir:
    t0 = time.perf_counter()
    loop.train_and_evaluate(demo_config(steps, with_eval), workdir)
    return time.perf_counter() - t0


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--short", type=int, default=100)
  p.add_argument("--long", type=int, default=400)
  p.add_argument("--repeats", type=int, default=3)
  args = p.parse_args(argv)
  if not 0 < args.short < args.long or args.repeats < 1:
    raise SystemExit("need 0 < --short < --long and --repeats >= 1")
  variants = {"bare step": lambda n: bare_seconds(n),
              "train_and_evaluate": lambda n: loop_seconds(n, False),
              "train_and_evaluate, demo eval cadence": lambda n: loop_seconds(n, True)}
  per_step = {name: [] for name in variants}
  for _ in range(args.repeats):
    for name, run in variants.items():
      marginal = (run(args.long) - run(args.short)) / (args.long - args.short)
      per_step[name].append(marginal)
  bare = statistics.median(per_step["bare step"])
  print(f"{machine()}, jax {jax.__version__}; marginal ms per step over steps "
        f"{args.short}..{args.long}, median of {args.repeats}")
  print("| variant | ms / step | steps/s relative to the bare step |\n|---|---|---|")
  for name, values in per_step.items():
    ms = statistics.median(values)
    print(f"| {name} | {1e3 * ms:.2f} | {bare / ms:.3f} |")
  return 0


if __name__ == "__main__":
  sys.exit(main())
