"""Train several models on one task and compare them (the README's main job).

A compare config is an ordinary training config plus ``runner='compare'`` and
``compare``: a dict ``{run_name: {'model': {...overrides}, 'optim': {...}, ...}}``. Each run
trains in ``workdir/<run_name>`` (resumable like any run); the comparison table is printed
and written to ``workdir/comparison.json`` and ``workdir/comparison.png``.
"""

from __future__ import annotations

import copy as copy_lib
import json
import os
from typing import Any

from lvf_jax.train import loop, reporting
from lvf_jax.train.config import cell_config


def _run_config(config, overrides: dict[str, Any]):
  c = copy_lib.deepcopy(config)
  with c.unlocked():
    del c["compare"]
    del c["runner"]
    for section, values in overrides.items():
      for key, value in values.items():
        if (section, key) != ("model", "cell"):
          c[section][key] = value
    # The run's cell options: the base config's when it trains the same cell, else the
    # cell's defaults; then the run's own.
    same = c.model.name == config.model.name
    c.model.cell = cell_config(c.model.name, {**(config.model.cell.to_dict() if same else {}),
                                              **overrides.get("model", {}).get("cell", {})})
  return c


def run(config, workdir: str) -> dict[str, Any]:
  runs = config.compare.to_dict()
  configs = {name: _run_config(config, ov) for name, ov in runs.items()}
  from lvf_jax.train.config import validate_config
  for name, c in configs.items():  # every run is validated before anything compiles
    try:
      validate_config(c)
    except ValueError as e:
      raise ValueError(f"compare run {name!r}: {e}") from None
  summaries = {name: loop.train_and_evaluate(c, os.path.join(workdir, name))
               for name, c in configs.items()}
  rows = []
  baseline = next(iter(summaries.values()))["baseline_loss"]
  for name, s in summaries.items():
    test = s["test_at_best_validation"] or {}
    rows.append({"run": name, "model": s["model"], "parameters": s["parameters"],
                 "steps": s["steps"], "seconds": s["seconds"],
                 "test_loss": test.get("loss"), "test_accuracy": test.get("accuracy"),
                 "baseline_loss": baseline})
  lines = [f"{'run':<14}{'params':>8}{'steps':>7}{'time/s':>8}{'test loss':>11}"
           f"{'accuracy':>10}   vs no-memory baseline {baseline:.4g}"]
  for r in rows:
    acc = "" if r["test_accuracy"] is None else f"{r['test_accuracy']:.3f}"
    verdict = ("below baseline" if r["test_loss"] < 0.5 * baseline else
               "at baseline" if r["test_loss"] <= 1.05 * baseline else "above baseline")
    lines.append(f"{r['run']:<14}{r['parameters']:>8}{r['steps']:>7}{r['seconds']:>8.0f}"
                 f"{r['test_loss']:>11.4g}{acc:>10}   {verdict}")
  table = "\n".join(lines)
  print("\n" + table)
  with open(os.path.join(workdir, "comparison.json"), "w") as f:
    json.dump(rows, f, indent=2)
  _plot(workdir, list(summaries), baseline, config)
  print(f"\nplots: {os.path.join(workdir, 'comparison.png')}")
  return {"rows": rows, "table": table}


def _plot(workdir: str, names: list[str], baseline: float, config) -> None:
  try:
    from matplotlib.figure import Figure  # a figure object: pyplot and its backend untouched
  except ImportError:
    return
  fig = Figure(figsize=(7, 4.2))
  ax = fig.subplots()
  for name in names:
    recs = reporting.MetricWriter.read(os.path.join(workdir, name, "metrics.jsonl"))
    pts = [(r["step"], r["loss"]) for r in recs if r["split"] == "train"]
    if pts:
      ax.plot(*zip(*pts), label=name)
  ax.axhline(baseline, color="k", ls="--", lw=1, label="no-memory baseline")
  ax.set_yscale("log")
  ax.set_xlabel("training step")
  ax.set_ylabel("cross-entropy (train)")
  ax.set_title(f"{config.task.name} task, T={dict(config.task.options).get('T', '?')}")
  ax.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(workdir, "comparison.png"), dpi=110)

