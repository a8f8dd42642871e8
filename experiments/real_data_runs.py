"""Short measured training runs on real data for the documentation.

Trains the models of ``--models`` on the datasets of ``--datasets`` from their configs
(``configs/<dataset>.py:<model>``, the papers' model sizes and optimisers) for ``--epochs``
epochs each, and writes ``results.json`` and a Markdown table ``results.md`` to
``--workdir`` (one sub-directory per run with the usual metrics, checkpoints and curves)::

    python -m experiments.real_data_runs --workdir=/tmp/real_runs --datasets=jsb,fsdd \\
        --models=lvf,exprnn,lstm --epochs=2

The reported metric is the test loss at the best validation step (frame NLL for music, masked
MSE for speech, bits per character / perplexity for PTB, accuracy for classification), next to
the no-memory baseline of the training set. ``--max_epoch_steps`` truncates an epoch
(``train.steps = epochs * min(steps per epoch, max_epoch_steps)``) for very slow models.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time


def load_config(dataset: str, model: str):
  from experiments.reproduce import harness  # pylint: disable=g-import-not-at-top
  return harness.load_config(f"{dataset}.py:{model}")


def machine() -> str:
  return f"{platform.machine()} CPU, {os.cpu_count()} cores ({platform.platform(terse=True)})"


def run_one(dataset: str, model: str, epochs: float, workdir: str,
            max_epoch_steps: int = 0, tfds_dir: str = "") -> dict:
  from lvf_jax import train  # pylint: disable=g-import-not-at-top
  c = load_config(dataset, model)
  per_epoch = int(c.train.eval_every)  # the configs evaluate once per epoch
  if max_epoch_steps:
    per_epoch = min(per_epoch, max_epoch_steps)
  c.train.steps = max(1, int(round(epochs * per_epoch)))
  c.train.eval_every = per_epoch
  c.train.checkpoint_every = c.train.steps
  c.train.log_every = max(1, per_epoch // 4)
  c.train.progress_bar = False
  c.train.tensorboard = False
  if tfds_dir:
    c.task.options.tfds_dir = tfds_dir
  load = os.getloadavg()[0]
  t0 = time.time()
  summary = train.train_and_evaluate(c, os.path.join(workdir, f"{dataset}_{model}"))
  test = summary["test_at_best_validation"] or {}
  return {
      "dataset": dataset, "model": model, "hidden": c.model.hidden,
      "layers": c.model.num_layers, "parameters": summary["parameters"],
      "batch_size": c.train.batch_size, "steps": summary["steps"],
      "steps_per_epoch": per_epoch, "epochs": summary["steps"] / per_epoch,
      "test_loss": test.get("loss"), "test": test,
      "best_validation_step": summary["best_validation_step"],
      "final_validation": summary["final_validation"],
      "baseline_loss": summary["baseline_loss"],
      "train_seconds": summary["seconds"], "wall_seconds": round(time.time() - t0, 1),
      "load_average_at_start": round(load, 2),
      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
      "machine": machine(),
  }


def markdown(results: list) -> str:
  lines = ["| dataset | model | hidden x layers | params | steps (epochs) | test loss at best "
           "val. | no-memory baseline | train time (s) | date |",
           "|---|---|---|---|---|---|---|---|---|"]
  for r in results:
    test = f"{r['test_loss']:.3f}" if r["test_loss"] is not None else "n/a"
    lines.append(
        f"| {r['dataset']} | {r['model']} | {r['hidden']} x {r['layers']} | {r['parameters']} | "
        f"{r['steps']} ({r['epochs']:.3g}) | {test} | {r['baseline_loss']:.3f} | "
        f"{r['train_seconds']:.0f} | {r['date']} |")
  return "\n".join(lines) + "\n"


def main(argv=None) -> None:
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--workdir", required=True)
  ap.add_argument("--datasets", default="jsb,fsdd")
  ap.add_argument("--models", default="lvf,exprnn,lstm")
  ap.add_argument("--epochs", type=float, default=2.0)
  ap.add_argument("--max_epoch_steps", type=int, default=0)
  ap.add_argument("--tfds_dir", default="")
  args = ap.parse_args(argv)
  os.makedirs(args.workdir, exist_ok=True)
  path = os.path.join(args.workdir, "results.json")
  results = json.load(open(path)) if os.path.exists(path) else []
  for dataset in args.datasets.split(","):
    for model in args.models.split(","):
      r = run_one(dataset, model, args.epochs, args.workdir, args.max_epoch_steps,
                  args.tfds_dir)
      results = [x for x in results if (x["dataset"], x["model"]) != (dataset, model)] + [r]
      with open(path, "w") as f:
        json.dump(results, f, indent=2)
      with open(os.path.join(args.workdir, "results.md"), "w") as f:
        f.write(markdown(results))
      print(markdown([r]), flush=True)


if __name__ == "__main__":
  main()
