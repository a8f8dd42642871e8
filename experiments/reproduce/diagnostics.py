"""Measurements the runner adds to a seed's record after training (``Row.diagnostics``).

A row names them as ``{name: keyword arguments}``; :func:`measure` runs each on the seed's
run directory and the record keeps the values under ``"diagnostics"``. The page writer
prints them in a section of their own (:func:`cell`, :data:`DESCRIPTIONS`). Every
measurement reads the run's log or its best validation variables (``best_variables``) and
gives None where the run has neither yet.

- ``target_reached``: the first evaluated step whose validation loss is below ``target``;
- ``gradient_reach``: ``||dh_T/dh_1||_F / ||dh_T/dh_T||_F`` of the first layer, the factor
  by which a gradient from the last state reaches the first step;
- ``memory_probe``: what the first layer's last state holds of an adding task's inputs, by
  held-out linear probes (the linear memory capacity of Jaeger 2002 and the target's
  ``R^2``);
- ``field_divergence``: ``||div V||`` of the first layer's lvfRNN field (Azencot et al.
  2021, arXiv:2102.09589, eq. 8), the field the cell uses;
- ``singular_values``: the smallest, mean and largest singular value of the first layer's
  recurrent matrix (a cell with ``recurrent_matrix``, e.g. the soft orthogonal RNN, whose
  spectral margin ``m`` bounds them to ``[1 - m, 1 + m]``; Vorontsov et al. 2017,
  arXiv:1702.00071, Sec. 2.2);
- ``batch_minimum``: the validation loss of ``size`` sequences and the smallest loss of one of
  its consecutive batches of ``batch``, what a minimum over single-batch evaluations would
  read of the same model;
- ``after_update``: each training batch's loss before its update (what the run logs) and
  after it, on the same batch, replaying the run's last steps from a retained checkpoint: by
  how much a log of the loss after the update (as the NC-GRU authors' released denoise code
  writes it) reads below the harness's;
- ``piece_nll``: the NLL per frame of every test piece of a music run, each piece alone
  (Azencot et al. 2021, arXiv:2102.09589, Fig. 3 compares models piece by piece): the median
  and the pieces furthest above it, with their frames and notes, so that a mean over pieces
  that a few pieces dominate shows as such.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from lvf_jax.train.loop import BEST_VARIABLES
from lvf_jax.train.reporting import MetricWriter

#: What each measurement is, as the page says it.
DESCRIPTIONS = {
    "target_reached": ("'target reached at' is the first evaluated step whose validation loss "
                       "is below the target (LEM's threshold, Rusch and Mishra 2021), 'not "
                       "reached' if none"),
    "gradient_reach": ("'dh_T/dh_1' is `||dh_T/dh_1||_F / ||dh_T/dh_T||_F` of the first "
                       "layer at the best validation step, the mean over two validation "
                       "sequences: the factor by which a gradient from the last state "
                       "reaches the first step"),
    "memory_probe": ("'h_T memory' is what the first layer's last state holds at the best "
                     "validation step, by held-out linear probes on test sequences (half "
                     "fit, half measure; `lvf_jax.diagnostics.linear_memory_curve`): the sum "
                     "over lags k of the R^2 with which the value input k steps back is read "
                     "(the linear memory capacity, at most n for a linear state; Jaeger "
                     "2002), and the R^2 with which the target is read (1: the answer is in "
                     "the state; 0: nothing of it)"),
    "field_divergence": ("'||div V||' is the Euclidean norm of the divergence (lvfRNN eq. 8) "
                         "of the first layer's field at the best validation step, the field "
                         "the cell uses (with its divergence parameter, or projected)"),
    "singular_values": ("'singular values' are the smallest / mean / largest singular value "
                        "of the first layer's recurrent matrix at the best validation step "
                        "(1 for every one of an orthogonal matrix; a spectral margin m bounds "
                        "them to [1 - m, 1 + m])"),
    "batch_minimum": ("'one batch's minimum' is, at the best validation step, the loss of "
                      "the validation sequences named in the cell (10,000 by default, the "
                      "size of NC-GRU Sec. 4.3's evaluation set) and, after the arrow, the "
                      "smallest loss of one of its consecutive batches (of the paper's batch "
                      "size, also in the cell): what a minimum over single-batch evaluations "
                      "would read of the same model"),
    "after_update": ("'after the update' is, over the run's last steps replayed from its "
                     "earliest retained checkpoint, the mean ratio of each training batch's "
                     "loss after its own update to its loss before it (the logged one), with "
                     "the number of steps replayed"),
    "piece_nll": ("'per piece' is, at the best validation step, the NLL per frame of each "
                  "test piece alone (`lvf_jax.data.music_nll_per_sequence`): its median over "
                  "the pieces, then the worst pieces, each as NLL (frames, most notes "
                  "sounding in a frame, the floor's NLL on that piece), and the mean over "
                  "pieces without those worst ones; 'floor' is the per-key Markov chain "
                  "fitted on the training split (a worst piece the floor predicts well is "
                  "one the model fails on)"),
}

#: The column heading of each measurement.
HEADINGS = {"target_reached": "target reached at", "gradient_reach": "dh_T/dh_1",
            "memory_probe": "h_T memory", "field_divergence": "||div V||",
            "singular_values": "singular values", "batch_minimum": "one batch's minimum",
            "after_update": "after the update", "piece_nll": "per piece"}

#: Test sequences of :func:`memory_probe` in a smoke run.
SMOKE_PROBE_BATCH = 16


def target_reached(run_dir: str, *, target: float, smoke: bool = False) -> Optional[dict]:
  """``{"target": target, "step": first evaluated step below it or None}``; None before
  the run's first evaluation."""
  del smoke  # reads the log only
  path = os.path.join(run_dir, "metrics.jsonl")
  val = ([r for r in MetricWriter.read(path) if r["split"] == "validation"]
         if os.path.exists(path) else [])
  if not val:
    return None
  step = next((r["step"] for r in val if r["loss"] < target), None)
  return {"target": float(target), "step": step}


def _best_run(run_dir: str):
  """``(model, variables, config)`` of the run at its best validation variables, or None
  before its first evaluation."""
  if not os.path.exists(os.path.join(run_dir, BEST_VARIABLES)):
    return None
  from lvf_jax import zoo  # pylint: disable=g-import-not-at-top
  return zoo.load_run(run_dir)


def _first_cell(run_dir: str):
  """``(cell, params, config)`` of the first layer at the run's best validation variables,
  or None before its first evaluation."""
  run = _best_run(run_dir)
  if run is None:
    return None
  model, variables, c = run
  return model.cells[0], variables["params"]["rnn"]["layer_0"]["cell"], c


def _first_cell_value(run_dir: str, method: Callable[[Any], Any]):
  """``method(cell)`` of the first layer at the run's best validation variables, or None
  before its first evaluation."""
  layer = _first_cell(run_dir)
  if layer is None:
    return None
  cell, params, _ = layer
  return cell.apply({"params": params}, method=method)


def _first_layer(run_dir: str):
  """``(cell, params, task)``: :func:`_first_cell` with the run's synthetic task."""
  layer = _first_cell(run_dir)
  if layer is None:
    return None
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  cell, params, c = layer
  return cell, params, builders.build_pipeline(c).task


def gradient_reach(run_dir: str, *, batch: int = 2, smoke: bool = False) -> Optional[float]:
  """``||dh_T/dh_1||_F / ||dh_T/dh_T||_F`` of the first layer (mean over ``batch``
  validation sequences) at the run's best validation variables.

  ``dh_T/dh_T`` is the identity, so the ratio is ``||dh_T/dh_1||_F / sqrt(n)``: far below
  one, a gradient from the end of a sequence vanishes before it reaches the start.
  """
  del smoke  # two sequences are already small
  layer = _first_layer(run_dir)
  if layer is None:
    return None
  from lvf_jax import diagnostics  # pylint: disable=g-import-not-at-top
  cell, params, task = layer
  norms = diagnostics.state_jacobian_norms(cell, params,
                                           task.fixed_split("validation", batch).inputs)
  return float(norms[0] / norms[-1])


def field_divergence(run_dir: str, *, smoke: bool = False) -> Optional[float]:
  """``||div V||`` of the first layer's lvfRNN field at the run's best validation
  variables (``LVFRNNCell.field``: the divergence parameter or the projection applied)."""
  del smoke
  v = _first_cell_value(run_dir, lambda c: c.field())
  if v is None:
    return None
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lvf_jax import geometry  # pylint: disable=g-import-not-at-top
  return float(np.linalg.norm(np.asarray(geometry.divergence(v), np.float64)))


def singular_values(run_dir: str, *, smoke: bool = False) -> Optional[dict]:
  """``{"min", "mean", "max"}`` of the singular values of the first layer's recurrent
  matrix (``cell.recurrent_matrix()``) at the run's best validation variables."""
  del smoke
  w = _first_cell_value(run_dir, lambda c: c.recurrent_matrix())
  if w is None:
    return None
  import numpy as np  # pylint: disable=g-import-not-at-top
  s = np.linalg.svd(np.asarray(w, np.float64), compute_uv=False)
  return {"min": float(s.min()), "mean": float(s.mean()), "max": float(s.max())}


#: Validation sequences and batch of :func:`batch_minimum` in a smoke run.
SMOKE_BATCH_MINIMUM = (20, 5)


def batch_minimum(run_dir: str, *, size: int = 10000, batch: int = 50,
                  smoke: bool = False) -> Optional[dict]:
  """``{"size", "batch", "loss", "min", "std"}``: the task loss of ``size`` validation
  sequences at the run's best validation variables (the mean over its batches), the smallest
  loss of one batch of ``batch`` consecutive sequences and the sample standard deviation of
  the batches' losses."""
  run = _best_run(run_dir)
  if run is None:
    return None
  size, batch = SMOKE_BATCH_MINIMUM if smoke else (size, batch)
  if size % batch:
    raise ValueError(f"batch_minimum: size {size} is not a multiple of batch {batch}.")
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  model, variables, c = run
  task = builders.build_pipeline(c).task
  split = task.fixed_split("validation", size)
  loss = jax.jit(lambda b: task.loss(model.apply(variables, b.inputs), b))
  losses = np.asarray([float(loss(jax.tree_util.tree_map(lambda a, i=i: a[i:i + batch], split)))
                       for i in range(0, size, batch)])
  return {"size": size, "batch": batch, "loss": float(losses.mean()),
          "min": float(losses.min()), "std": float(losses.std(ddof=1))}


#: Replayed steps of :func:`after_update` in a smoke run.
SMOKE_AFTER_UPDATE = 2


def after_update(run_dir: str, *, steps: int = 400, smoke: bool = False) -> Optional[dict]:
  """``{"from_step", "steps", "before", "after", "ratio", "replay_error"}``: the run replayed
  from its earliest retained checkpoint for ``steps`` train steps (the run's own batches and
  optimiser state), each step's batch loss before its update (``before``, their mean), the
  same batch's loss after it (``after``), the mean over steps of after / before (``ratio``),
  and the largest relative difference between the replay's losses averaged as the run logs
  them (``train.log_every`` steps) and the run's logged ones (``replay_error``: zero when the
  replay is the run; None where the two do not overlap). None without a checkpoint.

  Only for tasks whose train step draws its own batches (the synthetic tasks).
  """
  steps = SMOKE_AFTER_UPDATE if smoke else steps
  if steps < 1:
    raise ValueError(f"after_update: steps must be >= 1; got {steps}.")
  ckpt_dir, run = os.path.join(run_dir, "checkpoints"), _best_run(run_dir)
  if run is None or not os.path.isdir(ckpt_dir):
    return None
  c = run[2]
  start, before, after = _replay(c, ckpt_dir, steps)
  if start is None:
    return None
  import numpy as np  # pylint: disable=g-import-not-at-top
  before, after = np.asarray(before), np.asarray(after)
  return {"from_step": start, "steps": steps, "before": float(before.mean()),
          "after": float(after.mean()), "ratio": float((after / before).mean()),
          "replay_error": _replay_error(run_dir, start, before, int(c.train.log_every))}


def _replay(c, ckpt_dir: str, steps: int) -> tuple:
  """``(start, before, after)``: :func:`after_update`'s replay of config ``c`` from the
  earliest checkpoint in ``ckpt_dir`` (``(None, [], [])`` without one)."""
  import jax  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import builders, checkpoints, loop  # pylint: disable=g-import-not-at-top
  pipeline = builders.build_pipeline(c)
  if pipeline.host_fed:
    raise ValueError("after_update: replays tasks whose train step draws its own batches "
                     f"(the synthetic tasks); {pipeline.name!r} is fed by the host.")
  model = builders.build_model(c, pipeline.model_head())
  tx = builders.build_optimizer(c)
  ckpt = checkpoints.Checkpointer(ckpt_dir, keep=1 << 30)  # restores only: removes nothing
  try:
    saved = ckpt.all_steps()
    if not saved:
      return None, [], []
    state = ckpt.restore(loop.initial_state(c, model, pipeline, tx), min(saved))
  finally:
    ckpt.close()
  s = loop.TrainSettings.of(c)
  train_step = jax.jit(loop.make_train_step(
      model, pipeline, tx, dtriv_every=s.dtriv_every,
      dtriv_orthonormalize_every=s.dtriv_orthonormalize_every))
  loss_after = jax.jit(lambda params, extras, key, step, carry: _batch_loss(
      model, pipeline, {"params": params, **extras}, key, step, carry))
  start, before, after = int(state.step), [], []
  for _ in range(steps):
    step, carry = state.step, state.carry
    state, metrics, _ = train_step(state)
    before.append(float(metrics["loss"]))
    after.append(float(loss_after(state.params, state.extras,
                                  jax.random.wrap_key_data(state.data_key), step, carry)))
  return start, before, after


def _batch_loss(model, pipeline, variables, key, step, carry):
  """The training loss of step ``step``'s batch (drawn as the train step draws it) under
  ``variables``, deterministic, from the recurrent ``carry``."""
  batch = pipeline.train_batch(key, step)
  (outputs, _), _ = pipeline.forward(model, variables, batch,
                                     pipeline.carry_for_batch(carry, batch),
                                     deterministic=True, rngs={}, mutable=["losses"])
  return pipeline.train_loss(outputs, batch)


def _replay_error(run_dir: str, start: int, before, log_every: int) -> Optional[float]:
  """The largest relative difference between the run's logged training losses of steps
  ``start + log_every ..`` and the means of ``log_every`` replayed losses ``before``."""
  path = os.path.join(run_dir, "metrics.jsonl")
  logged = [r for r in MetricWriter.read(path) if r["split"] == "train"
            and start < r["step"] <= start + len(before) and (r["step"] - start) >= log_every]
  if not logged:
    return None
  return max(abs(float(before[r["step"] - start - log_every:r["step"] - start].mean()) /
                 r["loss"] - 1) for r in logged)


def piece_nll(run_dir: str, *, split: str = "test", worst: int = 2,
              smoke: bool = False) -> Optional[dict]:
  """``{"split", "pieces", "mean", "median", "floor_median", "worst", "mean_without_worst"}``:
  the NLL per frame of each piece of ``split`` (every piece weighted equally, as the
  record's ``nll_per_sequence``) at the run's best validation variables.

  ``worst`` lists the ``worst`` highest pieces, highest first, each as ``{"index"`` (its place
  in the split), ``"nll", "frames", "max_notes"`` (most keys on in one predicted frame),
  ``"floor"`` (the piece's NLL per frame under the per-key Markov chain fitted on the
  training split, :func:`experiments.reproduce.floors.markov_fit`)``}``: a piece the floor
  predicts well is one the model fails on, not one without structure; ``floor_median`` is
  the chain's median over the pieces and ``mean_without_worst`` the model's mean over the
  other pieces. None for a task other than music or before the first evaluation.
  """
  del smoke  # the split as the run evaluates it
  if worst < 0:
    raise ValueError(f"piece_nll: worst must be >= 0; got {worst}.")
  run = _best_run(run_dir)
  if run is None:
    return None
  from lvf_jax.train import builders  # pylint: disable=g-import-not-at-top
  model, variables, c = run
  pipeline = builders.build_pipeline(c)
  if not getattr(pipeline, "is_music", False):
    return None
  import numpy as np  # pylint: disable=g-import-not-at-top
  nll, frames, notes, floor = _pieces(model, variables, pipeline, split)
  order = np.argsort(-nll, kind="stable")[:worst]
  rest = np.delete(nll, order)
  return {"split": split, "pieces": int(len(nll)), "mean": float(nll.mean()),
          "median": float(np.median(nll)), "floor_median": float(np.median(floor)),
          "worst": [{"index": int(i), "nll": float(nll[i]), "frames": int(frames[i]),
                     "max_notes": int(notes[i]), "floor": float(floor[i])} for i in order],
          "mean_without_worst": float(rest.mean()) if len(rest) else None}


def _pieces(model, variables, pipeline, split: str) -> tuple:
  """``(nll, frames, max_notes, floor)`` arrays over the pieces of ``split`` that have a
  predicted frame, in the split's order: :func:`piece_nll`'s per-piece values."""
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from experiments.reproduce import floors  # pylint: disable=g-import-not-at-top
  from lvf_jax import data as data_lib  # pylint: disable=g-import-not-at-top
  from lvf_jax.data import paths, readers  # pylint: disable=g-import-not-at-top
  chain = floors.markov_fit(readers.read_music(
      readers.music_source_file(paths.raw_data_dir(), pipeline.name))["train"])

  @jax.jit
  def per_piece(batch):
    (outputs, _), _ = pipeline.forward(model, variables, batch, None, deterministic=True,
                                       rngs={}, mutable=False)
    return data_lib.music_nll_per_sequence(outputs, batch["targets"], batch["mask"])

  nll, frames, notes, floor = [], [], [], []
  for b in pipeline.eval_batches(split):
    mask = np.asarray(b["mask"]) > 0
    keep = mask.any(axis=-1)  # padded rows have no frame
    nll.append(np.asarray(per_piece(b), np.float64)[keep])
    frames.append(mask.sum(axis=-1)[keep])
    notes.append((np.asarray(b["targets"]).sum(axis=-1) * mask).max(axis=-1)[keep])
    floor.append([floors.markov_step_nll(chain, x[m], y[m]).mean() for x, y, m in
                  zip(np.asarray(b["inputs"]), np.asarray(b["targets"]), mask) if m.any()])
  return tuple(np.concatenate(a) for a in (nll, frames, notes, floor))


def measured(records, name: str) -> list:
  """The recorded value of measurement ``name`` of each record that has one, in the
  records' order (a seed without a best validation step records None)."""
  return [m for m in ((r.get("diagnostics") or {}).get(name) for r in records) if m]


def measured_batch_minima(records) -> list:
  """The :func:`batch_minimum` of each record that measured one with its batches' standard
  deviation, in the records' order."""
  return [m for m in measured(records, "batch_minimum") if m.get("std")]


def last_states(cell: Any, params: Any, x, chunk: int = 256):
  """The first layer's last state ``h_T`` on inputs ``x`` (batch, T, features), computed
  ``chunk`` sequences at a time without forming the other states."""
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lvf_jax import layers  # pylint: disable=g-import-not-at-top
  scan = layers.Recurrent(cell, fused=True, return_sequences=False)  # the final carry only
  # the state is the carry itself or its last entry (the LSTM's (c, h))
  last = jax.jit(lambda u: jax.tree_util.tree_leaves(
      scan.apply({"params": {"cell": params}}, u))[-1])
  return np.concatenate([np.asarray(last(x[i:i + chunk])) for i in range(0, len(x), chunk)])


def memory_probe(run_dir: str, *, batch: int = 4096, lags: tuple = (1, 10, 100, 1000),
                 smoke: bool = False) -> Optional[dict]:
  """What the first layer's last state holds on ``batch`` test sequences of an adding run
  (``SMOKE_PROBE_BATCH`` in a smoke run), by held-out linear probes
  (:mod:`lvf_jax.diagnostics.probes`; half fit, half measure).

  Returns:
    ``{"capacity": sum_k m(k), "n": units, "target_r2": R^2 of the target (the sum of the
    two marked values), "lags": {k: m(k)} for the ``lags`` up to T}``, where ``m(k)`` is the
    memory curve of the value channel; None for a task other than adding or before the
    first evaluation.
  """
  layer = _first_layer(run_dir)
  if layer is None or layer[2].name != "adding":
    return None
  import numpy as np  # pylint: disable=g-import-not-at-top
  from lvf_jax import diagnostics  # pylint: disable=g-import-not-at-top
  cell, params, task = layer
  split = task.fixed_split("test", SMOKE_PROBE_BATCH if smoke else batch)
  x = np.asarray(split.inputs)
  h = last_states(cell, params, x)
  m = np.asarray(diagnostics.linear_memory_curve(h, x[..., 0]))
  r2 = diagnostics.linear_probe_r2(h, np.asarray(split.targets).reshape(len(x)))
  return {"capacity": float(m.sum()), "n": int(h.shape[-1]), "target_r2": float(r2),
          "lags": {str(k): float(m[k - 1]) for k in lags if k <= len(m)}}


MEASUREMENTS: dict[str, Callable[..., Any]] = {
    "target_reached": target_reached, "gradient_reach": gradient_reach,
    "memory_probe": memory_probe, "field_divergence": field_divergence,
    "singular_values": singular_values, "batch_minimum": batch_minimum,
    "after_update": after_update, "piece_nll": piece_nll}


def check(names) -> None:
  """Raises ValueError for a name that is no measurement of :data:`MEASUREMENTS`."""
  unknown = sorted(set(names) - set(MEASUREMENTS))
  if unknown:
    raise ValueError(f"unknown diagnostics {unknown}; known: {sorted(MEASUREMENTS)}.")


def measure(spec: dict, run_dir: str, *, smoke: bool = False) -> dict:
  """``{name: value}`` of every measurement ``{name: keyword arguments}`` in ``spec`` on
  the run in ``run_dir``."""
  check(spec)
  return {name: MEASUREMENTS[name](run_dir, smoke=smoke, **kwargs)
          for name, kwargs in spec.items()}


def _fmt(x: Optional[float]) -> str:
  return "" if x is None else f"{x:.3g}"


def cell(name: str, value: Any) -> str:
  """The page's cell of measurement ``name`` with recorded ``value``."""
  if value is None:
    return ""
  if name == "target_reached":
    return "not reached" if value["step"] is None else str(value["step"])
  if name == "batch_minimum":
    return (f"{value['loss']:.3g} -> {value['min']:.3g} ({value['size']:,} sequences, "
            f"batches of {value['batch']})")
  if name == "singular_values":
    return f"{value['min']:.3g} / {value['mean']:.3g} / {value['max']:.3g}"
  if name == "after_update":
    return f"{value['ratio']:.3g} ({value['steps']:,} steps from {value['from_step']:,})"
  if name == "piece_nll":
    worst = "; ".join(f"{p['nll']:.3g} ({p['frames']:,} frames, {p['max_notes']} notes, "
                      f"floor {p['floor']:.3g})" for p in value["worst"])
    return (f"median {value['median']:.3g} of {value['pieces']} (floor "
            f"{value['floor_median']:.3g}); worst {worst}; mean without them "
            f"{_fmt(value['mean_without_worst'])}")
  if name == "memory_probe":
    return (f"{value['capacity']:.1f} of n = {value['n']}; target R^2 "
            f"{max(value['target_r2'], 0.0):.2f}")
  return _fmt(value)
