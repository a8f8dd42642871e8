"""``train_and_evaluate(config, workdir)``: the training loop of lvf_jax.

* The train step is one jit-compiled function of the train state: it draws the step's
  batch (a pure function of ``(data_key, step)``), computes the task loss plus the cells'
  regularisation terms, applies the partitioned optimiser and (optionally) the dynamic
  trivialisation rebase. Resuming from a checkpoint therefore continues exactly as an
  uninterrupted run.
* A non-finite loss or gradient stops training with :class:`NonFiniteLossError` naming the
  step; the step's update is discarded and the last good checkpoint is left untouched. The
  jitted step records the first bad step on the device and freezes the state from there, so
  the host checks only when it logs, evaluates or saves (no synchronisation per step).
* SIGTERM or SIGINT (a scheduler's stop, Ctrl-C, a notebook's interrupt) ends the run after
  the step it is in: the step is logged and checkpointed, the summary written, and
  :class:`~lvf_jax.train.stop.StoppedBySignal` raised (``train.stop_on_signal``, default
  True; a second signal acts as without it). Running again resumes there.
* Evaluation on the fixed validation split every ``eval_every`` steps; the test split is
  evaluated whenever validation improves ("test at the best validation step"), and the
  variables of that step are written to ``best_variables.msgpack`` (atomically, with
  ``best.json`` naming the step): the model a run reports is the model it keeps.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Any, NamedTuple, Optional

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from lvf_jax import diagnostics, models
from lvf_jax.regularization import regularization_loss
from lvf_jax.optim import DTRIV_COLLECTION, dynamic_trivialization
from lvf_jax.train import builders, checkpoints, parallel, reporting, resume, stop
from lvf_jax.train.config import validate_config

Array = jax.Array

BEST_VARIABLES = "best_variables.msgpack"
BEST_INFO = "best.json"


def save_best_variables(workdir: str, step: int, params: Any, extras: Any,
                        validation: dict) -> str:
  """Writes ``{'params': ..., **extras}`` of the best validation step (flax msgpack).

  Both files are written to temporary names and renamed, so a crash never leaves a
  half-written file under the final name.
  """
  path = os.path.join(workdir, BEST_VARIABLES)
  payload = flax.serialization.to_bytes(jax.device_get({"params": params, **extras}))
  for name, data, mode in ((path, payload, "wb"),
                           (os.path.join(workdir, BEST_INFO),
                            json.dumps({"step": int(step), "validation": validation}), "w")):
    with open(name + ".tmp", mode) as f:
      f.write(data)
    os.replace(name + ".tmp", name)
  return path


class NonFiniteLossError(RuntimeError):
  """Raised when the loss (or the gradient) becomes NaN/inf; names the step."""

  def __init__(self, step: int, loss: float, checkpoint_step: Any, directory: str,
               grad_norm: float = float("nan")):
    self.step, self.loss, self.grad_norm = step, loss, grad_norm
    kept = (f"the last good checkpoint (step {checkpoint_step}) is kept in {directory}"
            if checkpoint_step is not None else "no checkpoint had been saved yet")
    super().__init__(
        f"non-finite loss ({loss}) or gradient (norm {grad_norm}) at step {step}: training "
        f"stopped and the update of that "
        f"step was discarded; {kept}. Lower the learning rate or enable gradient clipping "
        f"(config.optim.clip_norm).")


@flax.struct.dataclass
class TrainState:
  step: Array
  params: Any
  opt_state: Any
  extras: Any  # non-trainable variable collections (e.g. the 'dtriv' bases)
  carry: Any  # recurrent state carried across batches (truncated BPTT), else None
  data_key: Array  # raw key data (uint32), so that checkpoints hold plain arrays
  dropout_key: Array


def _mean_records(records: list[dict[str, Array]]) -> dict[str, float]:
  """(Weighted) means over steps/batches; a vector metric ``m`` becomes ``m_0, m_1, ...``.

  A record may hold ``'weight'`` (e.g. the number of valid tokens of an evaluation batch);
  it is used as the averaging weight and dropped from the result.
  """
  weights = np.asarray([float(r.get("weight", 1.0)) for r in records], np.float64)
  weights = weights / max(weights.sum(), 1e-30)
  out = {}
  for k in records[0]:
    if k == "weight":
      continue
    stacked = np.stack([np.asarray(r[k], np.float64) for r in records])
    mean = np.tensordot(weights, stacked, axes=1)
    if mean.ndim == 0:
      out[k] = float(mean)
    else:
      out.update({f"{k}_{i}": float(v) for i, v in enumerate(mean.reshape(-1))})
  return out


def make_train_step(model, pipeline, tx, *, dtriv_every: int = 0, dtriv_orthonormalize_every=30,
                    placement: Optional[parallel.Placement] = None):
  """The pure train step ``(state, batch) -> (state, metrics, finite)`` (jit it).

  ``batch`` is ``None`` for pipelines that draw their batches inside the step
  (``pipeline.host_fed`` false, e.g. the synthetic tasks); such a batch is split over the
  data-parallel devices of ``placement`` (:class:`lvf_jax.train.parallel.Placement`; None:
  one device).
  """
  place = placement or parallel.Placement()

  def train_step(state: TrainState, batch=None):
    if batch is None:
      batch = pipeline.train_batch(jax.random.wrap_key_data(state.data_key), state.step)
      batch = place.shard(batch)
    dropout_key = jax.random.fold_in(jax.random.wrap_key_data(state.dropout_key), state.step)
    carry = pipeline.carry_for_batch(state.carry, batch)

    def loss_fn(params):
      variables = {"params": params, **state.extras}
      (outputs, new_carry), mutated = pipeline.forward(
          model, variables, batch, carry, deterministic=False, rngs={"dropout": dropout_key},
          mutable=["losses"])
      task_loss = pipeline.train_loss(outputs, batch)
      reg = regularization_loss(mutated)
      return task_loss + reg, (task_loss, reg, outputs, new_carry)

    (total, (task_loss, reg, outputs, new_carry)), grads = jax.value_and_grad(
        loss_fn, has_aux=True)(state.params)
    # optax's own arithmetic (e.g. Adam's `b1 ** count`) assumes standard promotion; keep it
    # independent of a caller's (or the test suite's) strict promotion mode.
    with jax.numpy_dtype_promotion("standard"):
      updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    extras = state.extras
    if dtriv_every:
      params, bases = dynamic_trivialization(
          params, extras[DTRIV_COLLECTION], state.step + 1, every=dtriv_every,
          orthonormalize_every=dtriv_orthonormalize_every)
      extras = {**extras, DTRIV_COLLECTION: bases}
    grad_norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))
    finite = jnp.isfinite(total) & jnp.isfinite(grad_norm)
    metrics = dict(pipeline.metrics(outputs, batch))
    metrics.update(loss=task_loss, regularization=reg, grad_norm=grad_norm)
    new_carry = jax.lax.stop_gradient(new_carry)
    new = state.replace(step=state.step + 1, params=params, opt_state=opt_state, extras=extras,
                        carry=new_carry)
    new = jax.tree_util.tree_map(lambda n, o: jnp.where(finite, n, o), new, state)
    return new, metrics, finite

  return train_step


class Health(NamedTuple):
  """The first non-finite step (``-1`` while none) with its loss and gradient norm."""
  bad_step: Array
  loss: Array
  grad_norm: Array


def healthy() -> Health:
  return Health(jnp.asarray(-1, jnp.int32), jnp.asarray(0.0, jnp.float32),
                jnp.asarray(0.0, jnp.float32))


def guard_train_step(train_step):
  """``(state, health, batch) -> (state, health, metrics)`` around a step of
  :func:`make_train_step`: once a step is non-finite, ``health`` names it and every later
  step leaves the state as it was before that step."""

  def guarded(state: TrainState, health: Health, batch=None):
    new, metrics, finite = train_step(state, batch)
    fresh = health.bad_step < 0
    new = jax.tree_util.tree_map(lambda n, o: jnp.where(fresh, n, o), new, state)
    first = fresh & ~finite
    health = Health(
        jnp.where(first, state.step + 1, health.bad_step).astype(jnp.int32),
        jnp.where(first, jnp.asarray(metrics["loss"], jnp.float32), health.loss),
        jnp.where(first, jnp.asarray(metrics["grad_norm"], jnp.float32), health.grad_norm))
    return new, health, metrics

  return guarded


def make_diagnose(model):
  """``params -> {name: value}``: :func:`lvf_jax.diagnostics.model_diagnostics` of ``model``
  (jitted); an empty dict, after one warning, for a model whose cells it cannot read."""
  fn = jax.jit(lambda params: diagnostics.model_diagnostics(model, params))
  failed = []

  def diagnose(params) -> dict[str, Any]:
    if failed:
      return {}
    try:
      return fn(params)
    except Exception as e:  # pylint: disable=broad-except
      failed.append(e)
      print(f"lvf_jax: warning: diagnostics skipped for this model ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200]}); set train.diagnostics=False to silence this.")
      return {}

  return diagnose


def make_eval_step(model, pipeline):
  """``(params, extras, batch, carry) -> (metrics, carry)``; metrics may carry a 'weight'."""

  def eval_step(params, extras, batch, carry):
    carry = pipeline.carry_for_batch(carry, batch)
    (outputs, new_carry), _ = pipeline.forward(
        model, {"params": params, **extras}, batch, carry, deterministic=True, rngs={},
        mutable=False)
    metrics = dict(pipeline.eval_metrics(outputs, batch))
    metrics["loss"] = pipeline.loss(outputs, batch)
    metrics["weight"] = pipeline.batch_weight(batch)
    return metrics, new_carry

  return eval_step


def evaluate(eval_step, pipeline, params: Any, extras: Any, split: str,
             placement: Optional[parallel.Placement] = None) -> dict[str, float]:
  """Metrics of ``params`` (with the non-trainable ``extras``) over a whole split.

  ``eval_step`` is ``jax.jit(make_eval_step(model, pipeline))``; batch averages are weighted
  by the pipeline's batch weights (examples, tokens or frames). Batches are split over the
  data-parallel devices of ``placement`` (None: one device).
  """
  place = placement or parallel.Placement()
  carry = place.shard(pipeline.initial_carry(eval=True))
  records = []
  for batch in pipeline.eval_batches(split):
    metrics, carry = eval_step(params, extras, place.shard(batch), carry)
    records.append(metrics)
  return pipeline.summarize(_mean_records(records))


def initial_state(config, model, pipeline, tx) -> TrainState:
  keys = jax.random.split(jax.random.key(int(config.train.seed)), 3)
  init_key, data_key, dropout_key = (jax.random.key_data(k) for k in keys)
  variables = builders.init_variables(model, pipeline, keys[0])
  params = variables["params"]
  extras = {k: v for k, v in variables.items() if k not in ("params", "losses")}
  if int(config.optim.get("dtriv_every", 0) or 0) and DTRIV_COLLECTION not in extras:
    raise ValueError(
        "config: 'optim.dtriv_every' > 0 needs cells with a dynamic-trivialisation base "
        "(e.g. model.name='exprnn' with model.cell.use_base=True).")
  return TrainState(step=jnp.asarray(0, jnp.int32), params=params, opt_state=tx.init(params),
                    extras=extras, carry=pipeline.initial_carry(eval=False),
                    data_key=data_key, dropout_key=dropout_key)


def train_and_evaluate(config, workdir: str) -> dict[str, Any]:
  """Trains ``config`` in ``workdir`` (resuming from its latest checkpoint); returns the summary.

  A workdir that holds checkpoints is resumed only with the config it was started with
  (:mod:`lvf_jax.train.resume`: ``ConfigMismatchError`` names the differing fields;
  ``train.allow_resume_changes`` admits a new step budget and cadence).

  Writes ``workdir/config.json``, ``metrics.jsonl``, ``tensorboard/`` (if tensorboardX is
  installed), ``checkpoints/``, ``best_variables.msgpack`` + ``best.json`` (the variables
  of the best validation step), ``curves.png`` and ``summary.json``.
  """
  parallel.initialize(config)  # several processes: before anything else touches JAX
  pipeline = validate_config(config)
  place = parallel.Placement.of(config)
  os.makedirs(workdir, exist_ok=True)
  with place.context():
    return _train_and_evaluate(config, workdir, pipeline, place)


@dataclasses.dataclass(frozen=True)
class TrainSettings:
  """The values of ``config.train`` (and the optimiser's rebase cadence) that the loop
  reads, typed once; :func:`~lvf_jax.train.config.validate_config` has checked them."""

  steps: int
  log_every: int
  eval_every: int
  checkpoint_every: int
  keep_checkpoints: int
  time_limit: float  # seconds of training, 0: none
  tensorboard: bool
  diagnostics: bool
  progress_bar: bool
  plot: bool
  stop_on_signal: bool
  dtriv_every: int
  dtriv_orthonormalize_every: Any

  @classmethod
  def of(cls, config) -> "TrainSettings":
    t, o = config.train, config.optim
    return cls(steps=int(t.steps), log_every=int(t.log_every), eval_every=int(t.eval_every),
               checkpoint_every=int(t.checkpoint_every),
               keep_checkpoints=int(t.keep_checkpoints),
               time_limit=float(t.get("time_limit", 0.0) or 0.0),
               tensorboard=bool(t.get("tensorboard", True)),
               diagnostics=bool(t.get("diagnostics", True)),
               progress_bar=bool(t.get("progress_bar", True)), plot=bool(t.get("plot", True)),
               stop_on_signal=bool(t.get("stop_on_signal", True)),
               dtriv_every=int(o.get("dtriv_every", 0) or 0),
               dtriv_orthonormalize_every=o.get("dtriv_orthonormalize_every", 30))


class StopPolicy:
  """Whether a step is the run's last: its budget, ``train.time_limit`` (checked at the log
  steps, so that every process decides at the same step) or a stop signal (asked at every
  step by a single process, at the log steps by several, each asking all the others)."""

  def __init__(self, s: TrainSettings, request: stop.StopRequest, place: parallel.Placement):
    self.s, self.request, self.place, self.t0 = s, request, place, time.time()
    self.single_process = jax.process_count() == 1
    self.ask_every = 1 if self.single_process else s.log_every
    self.at_time_limit = False
    self.by = None  # the signal that stopped the run

  def last(self, step: int) -> bool:
    if step == self.s.steps:
      return True
    if self.s.time_limit and step % self.s.log_every == 0:
      self.at_time_limit = self.place.agree(time.time() - self.t0 >= self.s.time_limit)
      if self.at_time_limit:
        return True
    if step % self.ask_every == 0 and self.place.any_process(self.request.requested):
      self.by = self.request.signal or "SIGTERM"  # another process's signal, or this one's
      return True
    return False

  def final_signal(self):
    """The signal that stops the caller: the loop's, or (one process) one after the loop."""
    return self.by or (self.request.signal if self.single_process else None)


@dataclasses.dataclass
class Run:
  """What the loop advances: the train state and the bookkeeping around it."""

  state: TrainState
  health: Health
  step: int
  resumed_from: Any
  best: dict
  last_saved: Any
  steps_done: int = 0
  pending: list = dataclasses.field(default_factory=list)


def best_of_history(records: list[dict]) -> dict:
  """``{'loss', 'step', 'test'}`` of the best validation step logged so far."""
  best = {"loss": math.inf, "step": None, "test": None}
  for r in records:
    if r["split"] == "validation" and r["loss"] < best["loss"]:
      best.update(loss=r["loss"], step=r["step"])
    if r["split"] == "test" and r["step"] == best["step"]:
      best["test"] = _without_position(r)
  return best


def _without_position(record: dict) -> dict:
  return {k: v for k, v in record.items() if k not in ("step", "split")}


def restore_or_init(config, workdir, pipeline, place, model, tx, ckpt) -> tuple[TrainState, Any]:
  """The initial train state, or the latest checkpoint's; checks (and on process 0 writes)
  the run's config first. Returns ``(state, resumed_from)``."""
  state = place.replicate(initial_state(config, model, pipeline, tx))
  state = state.replace(carry=place.shard(state.carry))  # TBPTT: (batch, n)
  resumed_from = ckpt.latest_step()
  try:  # a resume with another config stops here, before anything is written
    if place.writer:
      resume.check_resume(config, workdir, resuming=resumed_from is not None)
    if resumed_from is not None:
      state, resumed_from = ckpt.restore_latest(state)
  except ValueError:  # ConfigMismatchError, or no checkpoint restores
    ckpt.close()
    raise
  return state, resumed_from


def _announce(config, pipeline, place, n_params, resumed_from, ckpt) -> str:
  """Prints what is trained where; returns the run's label."""
  label = f"{config.model.name} on {pipeline.describe()}"
  print(f"lvf_jax: training {label}; {n_params} parameters; "
        f"no-memory baseline loss {pipeline.baseline_loss():.4g}")
  if resumed_from is not None:
    print(f"lvf_jax: resumed from checkpoint step {resumed_from} in {ckpt.directory}")
  batch = int(config.train.batch_size)
  if place.mesh is not None:
    print(f"lvf_jax: data parallel over {place.devices} devices "
          f"({place.mesh.devices.flat[0].device_kind}): batch {batch} split "
          f"{batch // place.devices} per device")
  if place.rows is not None:
    print(f"lvf_jax: process {jax.process_index()} builds rows {place.rows.start}:"
          f"{place.rows.stop} of every training batch")
  return label


def _train_and_evaluate(config, workdir: str, pipeline, place) -> dict[str, Any]:
  """:func:`train_and_evaluate` after validation, inside the mesh's context (if any)."""
  s = TrainSettings.of(config)
  model = builders.build_model(config, pipeline.model_head())
  tx = builders.build_optimizer(config)
  ckpt = checkpoints.Checkpointer(os.path.join(workdir, "checkpoints"), s.keep_checkpoints)
  state, resumed_from = restore_or_init(config, workdir, pipeline, place, model, tx, ckpt)
  n_params = models.count_params(state.params)
  writer = reporting.MetricWriter(workdir, tensorboard=s.tensorboard,
                                  resume_step=int(state.step), enabled=place.writer)
  place = place.reading(pipeline.batch_size, pipeline.host_fed)
  label = _announce(config, pipeline, place, n_params, resumed_from, ckpt)
  run = Run(state=state, health=place.replicate(healthy()),  # placed as the state
            step=int(state.step), resumed_from=resumed_from,
            best=best_of_history(writer.records), last_saved=resumed_from)
  policy = StopPolicy(s, stop.StopRequest(enabled=s.stop_on_signal).install(), place)
  progress = reporting.Progress(s.steps, run.step, s.progress_bar,
                                f"{config.model.name}/{pipeline.name}")
  try:
    _loop(run, s, policy, _Steps.make(model, pipeline, tx, s, place), writer, ckpt,
          progress, workdir)
  except BaseException:
    policy.request.restore()
    raise
  finally:
    progress.close()
    writer.close()
    ckpt.close()
  # the handlers stay until the summary is written: a signal after the last step (the run
  # then complete) still stops the caller, and never cuts the summary short
  try:
    summary = _summary(config, pipeline, run, policy, n_params, writer.records, workdir)
    if place.writer:  # process 0 of a multi-process run writes the files
      _write_summary(summary, s, writer.records, workdir, label, pipeline.baseline_loss())
  finally:
    policy.request.restore()
  if policy.final_signal():
    raise stop.StoppedBySignal(policy.final_signal(), summary)
  return summary


@dataclasses.dataclass(frozen=True)
class _Steps:
  """The compiled functions of one run and the data it feeds."""

  train: Any
  evaluate: Any
  diagnose: Any
  pipeline: Any
  place: parallel.Placement

  @classmethod
  def make(cls, model, pipeline, tx, s: TrainSettings, place) -> "_Steps":
    train = jax.jit(guard_train_step(make_train_step(
        model, pipeline, tx, dtriv_every=s.dtriv_every,
        dtriv_orthonormalize_every=s.dtriv_orthonormalize_every, placement=place)))
    return cls(train=train, evaluate=jax.jit(make_eval_step(model, pipeline)),
               diagnose=make_diagnose(model) if s.diagnostics else None, pipeline=pipeline,
               place=place)

  def batch(self, step: int):
    """The host-built batch of ``step`` (None where the train step draws its own)."""
    p = self.pipeline
    if not p.host_fed:
      return None
    return self.place.host_batch(p.host_batch(step, rows=self.place.rows), p.batch_size)


def _loop(run: Run, s: TrainSettings, policy: StopPolicy, steps: _Steps, writer, ckpt,
          progress, workdir: str) -> None:
  """Trains until the budget or the stop policy ends the run."""
  while run.step < s.steps:
    run.state, run.health, metrics = steps.train(run.state, run.health, steps.batch(run.step))
    run.step += 1
    run.steps_done += 1
    run.pending.append(metrics)
    step, last = run.step, policy.last(run.step)
    log_now = step % s.log_every == 0 or last
    # a stop by signal logs and saves without evaluating: a scheduler's grace is short
    eval_now = (step % s.eval_every == 0 or last) and not policy.by
    save_now = step % s.checkpoint_every == 0 or last
    if (log_now or eval_now or save_now) and int(run.health.bad_step) >= 0:
      # the one host check, before anything is written
      raise NonFiniteLossError(int(run.health.bad_step), float(run.health.loss),
                               run.last_saved, ckpt.directory, float(run.health.grad_norm))
    if log_now:
      rec = writer.write(step, "train", _mean_records(run.pending))
      run.pending = []
      progress.update(step % s.log_every or s.log_every, loss=rec["loss"],
                      **({"acc": rec["accuracy"]} if "accuracy" in rec else {}))
    if eval_now:
      _evaluate(run, steps, writer, workdir)
    if save_now:
      ckpt.save(step, run.state)
      run.last_saved = step
    if policy.at_time_limit:
      print(f"lvf_jax: stopped at step {step} of {s.steps}: train.time_limit of "
            f"{s.time_limit:g} s reached; run again with the same workdir to resume")
    if policy.at_time_limit or policy.by:
      break


def _evaluate(run: Run, steps: _Steps, writer, workdir: str) -> None:
  """Validation (and the diagnostics); on a new best, the test split and the variables."""
  state, step = run.state, run.step

  def on(split):
    return evaluate(steps.evaluate, steps.pipeline, state.params, state.extras, split,
                    steps.place)

  val = writer.write(step, "validation", on("validation"))
  figures = steps.diagnose(state.params) if steps.diagnose is not None else None
  if figures:
    writer.write(step, "diagnostics", figures)
  if val["loss"] < run.best["loss"]:
    test = writer.write(step, "test", on("test"))
    run.best.update(loss=val["loss"], step=step, test=_without_position(test))
    if steps.place.writer:
      save_best_variables(workdir, step, state.params, state.extras, _without_position(val))


def _previous_seconds(workdir: str, resumed_from) -> float:
  """The seconds of the earlier parts of a resumed run (their summary), else 0."""
  path = os.path.join(workdir, "summary.json")
  if resumed_from is None or not os.path.exists(path):
    return 0.0
  with open(path) as f:
    earlier = json.load(f)
  return float(earlier.get("seconds_total", earlier.get("seconds", 0.0)))


def _summary(config, pipeline, run: Run, policy: StopPolicy, n_params: int, records: list,
             workdir: str) -> dict[str, Any]:
  elapsed = time.time() - policy.t0
  previous = _previous_seconds(workdir, run.resumed_from)
  validations = [r for r in records if r["split"] == "validation"]
  return {
      "model": config.model.name,
      "task": pipeline.describe(),
      "parameters": n_params,
      "effective_parameters": models.count_params(run.state.params, effective=True),
      "steps": run.step,
      "steps_budget": int(config.train.steps),
      "stopped_at_time_limit": policy.at_time_limit,
      "stopped_by_signal": policy.final_signal(),
      "resumed_from": run.resumed_from,
      "seconds": round(elapsed, 2),
      # every part of the run that wrote a summary (a part killed before it wrote one is
      # not counted)
      "seconds_total": round(previous + elapsed, 2),
      "steps_per_second": round(run.steps_done / elapsed, 3) if elapsed > 0 else None,
      "baseline_loss": pipeline.baseline_loss(),
      "final_validation": _without_position(validations[-1]) if validations else None,
      "best_validation_step": run.best["step"],
      "test_at_best_validation": run.best["test"],
  }


def _write_summary(summary: dict, s: TrainSettings, records: list, workdir: str, label: str,
                   baseline: float) -> None:
  """The curves, the diagnostics figure and ``summary.json``; prints the summary line."""
  if s.plot:
    summary["plot"] = reporting.plot_curves(records, os.path.join(workdir, "curves.png"),
                                            title=label, baseline=baseline)
    summary["diagnostics_plot"] = reporting.plot_diagnostics(
        records, os.path.join(workdir, "diagnostics.png"), title=label)
  with open(os.path.join(workdir, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
  print(format_summary(summary))


def format_summary(summary: dict[str, Any]) -> str:
  """The run's summary line: steps and seconds, the test loss (and accuracy) at the best
  validation step, or that no validation ran before the run stopped, and the baseline."""
  head = f"lvf_jax: {summary['model']} after {summary['steps']} steps ({summary['seconds']:.0f} s)"
  baseline = f"no-memory baseline {summary['baseline_loss']:.4g}"
  test, step = summary["test_at_best_validation"], summary["best_validation_step"]
  if step is None or not test:
    return f"{head}: no validation yet, so no test metrics; {baseline}"
  acc = f", accuracy {test['accuracy']:.3f}" if "accuracy" in test else ""
  return (f"{head}: test loss {test.get('loss', float('nan')):.4g}{acc} "
          f"(at best validation step {step}) vs {baseline}")
