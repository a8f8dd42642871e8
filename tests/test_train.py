"""The training pipeline: learning, exact resume, NaN handling, checkpoints, the CLI."""

import json
import logging
import os
import signal
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lvf_jax import train
from lvf_jax.train import builders, checkpoints, loop
import tolerances as tol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny(model="exprnn", task="copy", steps=6, **train_overrides):
  c = train.base_config()
  c.task.name = task
  c.task.options = {"T": 8}
  c.model.name = model
  c.model.hidden = 16
  c.train.steps = steps
  c.train.batch_size = 8
  c.train.eval_every = 3
  c.train.checkpoint_every = 3
  c.train.eval_size = 16
  c.train.eval_batch_size = 16
  c.train.log_every = 1
  c.train.progress_bar = False
  c.train.plot = False
  c.train.tensorboard = False
  c.train.allow_resume_changes = True  # the resume tests stop and extend runs
  for k, v in train_overrides.items():
    c.train[k] = v
  return c


def test_loss_decreases_on_copy_for_an_orthogonal_model(tmp_path):
  c = tiny("exprnn", steps=60)
  c.optim.learning_rate = 3e-3
  c.optim.lr_orth = 3e-4
  c.train.eval_every = 60
  c.train.checkpoint_every = 60
  train.train_and_evaluate(c, str(tmp_path))
  recs = [json.loads(l) for l in open(tmp_path / "metrics.jsonl")]
  losses = [r["loss"] for r in recs if r["split"] == "train"]
  assert len(losses) == 60
  assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:5])


def _final_state(c, workdir):
  pipeline = builders.build_pipeline(c)
  model = builders.build_model(c, pipeline.model_head())
  tx = builders.build_optimizer(c)
  state = loop.initial_state(c, model, pipeline, tx)
  ck = checkpoints.Checkpointer(os.path.join(workdir, "checkpoints"))
  try:
    return ck.restore(state)
  finally:
    ck.close()


# lvf carries the divergence penalty through the loss; nnrnn (its Schur penalties) is slow.
@pytest.mark.parametrize("model", ["lvf", pytest.param("nnrnn", marks=pytest.mark.slow)])
def test_resume_equals_uninterrupted(tmp_path, model):
  straight, split = str(tmp_path / "straight"), str(tmp_path / "split")
  c = tiny(model, steps=6)
  c.model.dropout = 0.0
  train.train_and_evaluate(c, straight)
  half = tiny(model, steps=3)
  train.train_and_evaluate(half, split)
  summary = train.train_and_evaluate(c, split)  # resumes from step 3
  assert summary["resumed_from"] == 3
  a, b = _final_state(c, straight), _final_state(c, split)
  assert int(a.step) == int(b.step) == 6
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  # the metric history of the resumed run is the uninterrupted one
  ra = [json.loads(l) for l in open(os.path.join(straight, "metrics.jsonl"))]
  rb = [json.loads(l) for l in open(os.path.join(split, "metrics.jsonl"))]
  assert [r["step"] for r in ra] == [r["step"] for r in rb]
  # each loss is one float32 forward pass (T n = 28 x 16 recurrence terms) and a mean over its
  # B L = 8 x 28 steps, in case the resumed process compiles it otherwise: past F32's 400 terms
  np.testing.assert_allclose([r["loss"] for r in ra if "loss" in r],
                             [r["loss"] for r in rb if "loss" in r], rtol=tol.F32_LONG["rtol"])
  diag = lambda rs: [r for r in rs if r["split"] == "diagnostics"]
  assert diag(ra) and diag(ra) == diag(rb)  # the logged spectra of the resumed run too


def test_time_limit_stops_at_a_log_step_and_the_run_resumes_to_the_same_end(tmp_path):
  straight, split = str(tmp_path / "straight"), str(tmp_path / "split")
  c = tiny("rnn", steps=6)
  train.train_and_evaluate(c, straight)
  limited = tiny("rnn", steps=6, log_every=2, time_limit=1e-9)
  part = train.train_and_evaluate(limited, split)
  # the first log step after the limit: evaluated, checkpointed and reported there
  assert part["steps"] == 2 and part["stopped_at_time_limit"] and part["steps_budget"] == 6
  records = [json.loads(l) for l in open(os.path.join(split, "metrics.jsonl"))]
  assert {r["split"] for r in records if r["step"] == 2} >= {"train", "validation"}
  assert _final_state(c, split).step == 2
  rest = train.train_and_evaluate(c, split)  # no limit: resumes and finishes
  assert rest["resumed_from"] == 2 and rest["steps"] == 6 and not rest["stopped_at_time_limit"]
  a, b = _final_state(c, straight), _final_state(c, split)
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("resume, mesh", [(False, ""), (True, ""),
                                          pytest.param(True, "data=2", marks=pytest.mark.slow)])
def test_the_train_step_compiles_once_afresh_and_on_resume(tmp_path, caplog, resume, mesh):
  """The first step's inputs are placed as every later step's (a restored checkpoint's, the
  outputs'), so that the step does not compile a second time."""
  if resume:
    train.train_and_evaluate(tiny("rnn", steps=2, mesh=mesh), str(tmp_path))
  with jax.log_compiles(True), caplog.at_level(logging.WARNING):
    train.train_and_evaluate(tiny("rnn", steps=4, mesh=mesh), str(tmp_path))
  compiles = [r for r in caplog.records if "Compiling jit(guarded)" in r.getMessage()]
  assert len(compiles) == 1, [r.getMessage()[:200] for r in compiles]


def test_dropout_and_stacked_resume(tmp_path):
  c = tiny("rnn", steps=4)
  c.model.num_layers = 2
  c.model.dropout = 0.3
  c.train.checkpoint_every = 2
  train.train_and_evaluate(c, str(tmp_path / "a"))
  c2 = tiny("rnn", steps=2)
  c2.model.num_layers = 2
  c2.model.dropout = 0.3
  train.train_and_evaluate(c2, str(tmp_path / "b"))
  train.train_and_evaluate(c, str(tmp_path / "b"))
  a, b = _final_state(c, str(tmp_path / "a")), _final_state(c, str(tmp_path / "b"))
  for x, y in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_interrupted_save_is_never_restored(tmp_path):
  c = tiny("rnn", steps=3)
  train.train_and_evaluate(c, str(tmp_path))
  ckdir = tmp_path / "checkpoints"
  # A save killed midway leaves only orbax's temporary directory behind.
  partial = ckdir / "6.orbax-checkpoint-tmp-1234567890"
  partial.mkdir()
  (partial / "garbage").write_text("half-written")
  ck = checkpoints.Checkpointer(str(ckdir))
  try:
    assert ck.latest_step() == 3
  finally:
    ck.close()
  summary = train.train_and_evaluate(tiny("rnn", steps=4), str(tmp_path))
  assert summary["resumed_from"] == 3 and summary["steps"] == 4


# log_every=1 checks every step; log_every=4 with eval/checkpoints every 3 checks at steps 3, 4,
# 6: the error still names step 5, the first bad one, and step 6 is never saved.
@pytest.mark.parametrize("log_every", [1, 4])
def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(tmp_path, monkeypatch, log_every):
  from experiments.fault_injection import PoisonedPipeline  # pylint: disable=g-import-not-at-top
  real = builders.build_pipeline
  monkeypatch.setattr(builders, "build_pipeline", lambda c: PoisonedPipeline(real(c), 5))
  c = tiny("exprnn", steps=8, log_every=log_every)
  handler = signal.getsignal(signal.SIGTERM)
  with pytest.raises(loop.NonFiniteLossError,
                     match=r"non-finite loss \(nan\) or gradient \(norm nan\) at step 5.*step 3"):
    train.train_and_evaluate(c, str(tmp_path))
  assert signal.getsignal(signal.SIGTERM) == handler  # the stop request's handler is gone
  state = _final_state(c, str(tmp_path))
  assert int(state.step) == 3
  assert all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(state.params))


@pytest.mark.parametrize("field,value,match", [
    ("model.hidden", 0, r"'model.hidden' must be an int >= 1; got 0"),
    ("task.name", "copyy", r"'task.name' must be one of \[.*'copy'.*; got 'copyy'"),
    ("model.name", "lvff", r"make_cell: argument 'name' must be one of \["),
    ("model.cell", {"tau": -1.0}, r"tau"),
    ("train.steps", -5, r"'train.steps' must be an int >= 1"),
    ("model.input_dropout", 1.0, r"'model.input_dropout' must lie in \[0, 1\); got 1.0"),
    ("model.output_dropout", -0.1,
     r"'model.output_dropout' must lie in \[0, 1\) or be None; got -0.1"),
    ("train.time_limit", -1.0, r"'train.time_limit' must be a number of seconds >= 0"),
    ("model.input_projection", "inloop",
     r"'model.input_projection' must be one of \['hoisted', 'in_loop', 'auto'\]; got 'inloop'"),
])
def test_config_validation(field, value, match):
  c = tiny("lvf")
  section, key = field.split(".")
  c[section][key] = value
  with pytest.raises(ValueError, match=match):
    train.validate_config(c)


def test_rho_larger_than_hidden_is_rejected():
  c = tiny("scornn")
  c.model.cell = {"rho": 17}
  with pytest.raises(ValueError, match=r"rho.*\[0, n=16\]; got 17"):
    train.validate_config(c)


def run_cli(*args, cwd=ROOT):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "-m", "experiments.main", *args], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=600)


def test_cli_end_to_end(tmp_path):
  wd = tmp_path / "run"
  r = run_cli("--config=configs/copy.py:lvf", f"--workdir={wd}", "--config.train.steps=4",
              "--config.task.options.T=6", "--config.model.hidden=8",
              "--config.train.eval_every=2", "--config.train.eval_size=8",
              "--config.train.batch_size=4", "--config.train.progress_bar=False")
  assert r.returncode == 0, r.stderr[-2000:]
  assert "no-memory baseline" in r.stdout
  for name in ("metrics.jsonl", "summary.json", "curves.png", "config.json", "checkpoints"):
    assert (wd / name).exists(), name
  summary = json.loads((wd / "summary.json").read_text())
  assert summary["steps"] == 4 and summary["model"] == "lvf"


def test_cli_reports_bad_values_without_training(tmp_path):
  wd = tmp_path / "bad"
  r = run_cli("--config=configs/copy.py:lvf", f"--workdir={wd}", "--config.model.cell.tau=-1.0")
  assert r.returncode == 2
  assert "lvf_jax: error:" in r.stderr and "tau" in r.stderr
  assert not (wd / "checkpoints").exists()
  r = run_cli("--config=configs/copy.py:nosuchmodel", f"--workdir={wd}")
  assert r.returncode != 0 and "valid models are" in r.stderr


def load_config(task, model):
  import importlib.util
  spec = importlib.util.spec_from_file_location(f"cfg_{task}", os.path.join(ROOT, "configs", f"{task}.py"))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod.get_config(model)


def shrink(c):
  """The paper config at toy size: same model, cell options and optimiser method."""
  c.task.options = {"T": 10}
  c.model.hidden = 8
  if "rho" in c.model.cell:
    c.model.cell.rho = 3
  if "rho" in c.optim:
    c.optim.rho = 3
  for k, v in dict(steps=2, batch_size=4, eval_every=2, eval_size=4, eval_batch_size=4,
                   checkpoint_every=2, progress_bar=False, plot=False, tensorboard=False).items():
    c.train[k] = v
  return c


TASK_NAMES = ("copy", "adding", "denoise", "parenthesis")
MODEL_NAMES = ("lvf", "exprnn", "scornn", "ncgru", "antisymmetric", "gated_antisymmetric",
               "nnrnn", "rnn", "rnn_orth", "lstm", "gru", "goru")
COPY_ONLY = ("urnn", "eurnn", "fcurnn")  # in configs/copy.py only (lvfRNN Table 4)


# Models that other default tests already train end to end (resume, CLI, stacked dropout,
# non-finite loss, the real-data configs) run here only with -m slow: the default suite keeps
# a margin under its 15-minute budget on 2 cores.
TRAINED_ELSEWHERE = ("lvf", "exprnn", "rnn", "rnn_orth", "lstm", "antisymmetric",
                     "gated_antisymmetric", "fcurnn")


@pytest.mark.parametrize("model", [
    pytest.param(m, marks=pytest.mark.slow) if m in TRAINED_ELSEWHERE else m
    for m in MODEL_NAMES + COPY_ONLY])
def test_every_model_trains_from_a_config(model, tmp_path):
  task = "copy" if model in COPY_ONLY else TASK_NAMES[MODEL_NAMES.index(model) % len(TASK_NAMES)]
  summary = train.train_and_evaluate(shrink(load_config(task, model)), str(tmp_path))
  assert summary["steps"] == 2 and np.isfinite(summary["final_validation"]["loss"])


@pytest.mark.slow
@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("model", MODEL_NAMES)
def test_every_model_on_every_task(task, model, tmp_path):
  summary = train.train_and_evaluate(shrink(load_config(task, model)), str(tmp_path))
  assert np.isfinite(summary["final_validation"]["loss"])


def test_configs_list_valid_models():
  with pytest.raises(ValueError, match=r"configs/adding.py: unknown model 'foo'; valid models"):
    load_config("adding", "foo")


def test_resuming_from_a_different_configuration_fails_clearly(tmp_path):
  train.train_and_evaluate(tiny("rnn", steps=2), str(tmp_path))
  other = tiny("lvf", steps=4)  # different parameters in the same workdir
  with pytest.raises(train.ConfigMismatchError, match=r"model.name: 'rnn' -> 'lvf'"):
    train.train_and_evaluate(other, str(tmp_path))
  os.remove(tmp_path / "config.json")  # without the record, the checkpoints still tell
  with pytest.raises(ValueError, match=r"does not match the train state.*new --workdir"):
    train.train_and_evaluate(other, str(tmp_path))
  assert os.path.isdir(tmp_path / "checkpoints" / "2")  # nothing moved aside


def test_guarded_step_freezes_the_state_after_the_first_bad_step():
  """The loop's device-side guard: the first non-finite step is recorded, later ones too are
  discarded (the state stays at the last good step), so the host may check rarely."""

  def fake_step(state, batch):
    new = state.replace(step=state.step + 1, params=state.params + batch)
    finite = jnp.isfinite(new.params)
    new = jax.tree_util.tree_map(lambda n, o: jnp.where(finite, n, o), new, state)
    return new, {"loss": new.params.astype(jnp.float32) * 0 + batch,
                 "grad_norm": jnp.float32(7.0)}, finite

  step = jax.jit(loop.guard_train_step(fake_step))
  state = loop.TrainState(step=jnp.asarray(0, jnp.int32), params=jnp.float32(0.0),
                          opt_state=None, extras={}, carry=None,
                          data_key=jnp.zeros(2, jnp.uint32), dropout_key=jnp.zeros(2, jnp.uint32))
  health = loop.healthy()
  for b in (1.0, 2.0, np.nan, 4.0, 5.0):
    state, health, _ = step(state, health, jnp.float32(b))
  assert int(health.bad_step) == 3 and np.isnan(float(health.loss))
  assert float(health.grad_norm) == 7.0
  assert int(state.step) == 2 and float(state.params) == 3.0


def test_plots_leave_the_global_matplotlib_state_alone(tmp_path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import reporting  # pylint: disable=g-import-not-at-top
  backend = matplotlib.get_backend()
  try:
    matplotlib.use("svg")  # any backend other than Agg: the plot must not switch it
    figures = plt.get_fignums()
    records = [{"step": 1, "split": "train", "loss": 1.0},
               {"step": 2, "split": "validation", "loss": 0.5, "accuracy": 0.4}]
    path = reporting.plot_curves(records, str(tmp_path / "c.png"), title="t", baseline=2.0)
    assert matplotlib.get_backend() == "svg" and plt.get_fignums() == figures
    with open(path, "rb") as f:
      assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 5000
  finally:
    matplotlib.use(backend)


def test_resume_with_another_config_stops_before_writing_anything(tmp_path):
  workdir = str(tmp_path)
  train.train_and_evaluate(tiny("exprnn", steps=3), workdir)
  saved = open(tmp_path / "config.json").read()
  metrics = open(tmp_path / "metrics.jsonl").read()
  changed = tiny("exprnn", steps=6, allow_resume_changes=False)
  changed.task.options = {"T": 9}
  changed.optim.learning_rate = 0.5
  with pytest.raises(train.ConfigMismatchError,
                     match=r"optim.learning_rate: 0.001 -> 0.5; .*task.options.T: 8 -> 9; "
                           r"train.allow_resume_changes: True -> False; train.steps: 3 -> 6"):
    train.train_and_evaluate(changed, workdir)
  assert open(tmp_path / "config.json").read() == saved
  assert open(tmp_path / "metrics.jsonl").read() == metrics
  # a longer budget alone: refused without the flag (which the message names) ...
  with pytest.raises(train.ConfigMismatchError, match="allow_resume_changes=True"):
    train.train_and_evaluate(tiny("exprnn", steps=6, allow_resume_changes=False), workdir)
  # ... and resumed with it, the change recorded
  longer = tiny("exprnn", steps=6)
  summary = train.train_and_evaluate(longer, workdir)
  assert summary["resumed_from"] == 3 and summary["steps"] == 6
  (record,) = [json.loads(l) for l in open(tmp_path / "resumes.jsonl")]
  assert record["changes"] == {"train.steps": [3, 6]}
  assert json.load(open(tmp_path / "config.json"))["train"]["steps"] == 6
  with pytest.raises(train.ConfigMismatchError, match="model.hidden: 16 -> 32"):
    bigger = tiny("exprnn", steps=8)
    bigger.model.hidden = 32
    bigger.train.allow_resume_changes = True
    train.train_and_evaluate(bigger, workdir)


def test_cli_reports_a_config_mismatch_in_one_line(tmp_path):
  base = [sys.executable, "-m", "experiments.main", "--config=configs/copy.py:rnn",
          f"--workdir={tmp_path}", "--config.train.steps=2", "--config.train.eval_every=2",
          "--config.train.eval_size=8", "--config.train.progress_bar=False",
          "--config.task.options.T=8", "--config.model.hidden=8"]
  subprocess.run(base, check=True, cwd=ROOT, capture_output=True, timeout=600)
  out = subprocess.run(base + ["--config.task.options.T=9"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
  assert out.returncode == 2
  assert "task.options.T: 8 -> 9" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("args, message", [
    (["--config=configs/copy.py:lvff"], "unknown model 'lvff'; valid models are"),
    (["--config=configs/nope.py:lvf"], "no such config file; give a path or the name of a "
                                       "shipped config: ['adding.py'"),
    (["--config=copy.py:lvf", "--config.model.hiddn=3"],
     "--config.model.hiddn: no such config field ('hiddn' Did you mean \"hidden\""),
])
def test_cli_bad_config_arguments_fail_in_one_line(tmp_path, args, message):
  out = subprocess.run([sys.executable, "-m", "experiments.main", f"--workdir={tmp_path}",
                        *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert out.returncode == 2, out.stderr
  assert message in out.stderr and "Traceback" not in out.stderr
  assert len(out.stderr.strip().splitlines()) == 1


def test_summary_counts_the_seconds_of_every_part_of_a_resumed_run(tmp_path):
  first = train.train_and_evaluate(tiny("rnn", steps=2), str(tmp_path))
  second = train.train_and_evaluate(tiny("rnn", steps=4), str(tmp_path))
  assert first["seconds_total"] == first["seconds"]
  # the summary rounds seconds to 2 decimals: round(r1 + e2, 2) is r1 + round(e2, 2) but at a
  # tie of the binary sum, where they differ by one unit, 0.01; 0.02 is two units
  np.testing.assert_allclose(second["seconds_total"], first["seconds"] + second["seconds"],
                             atol=0.02)  # two units of the summary's 2 decimals


def test_summary_line_gives_the_best_validation_step_or_says_none_ran(tmp_path):
  summary = train.train_and_evaluate(tiny("rnn", steps=3), str(tmp_path))
  line = loop.format_summary(summary)
  test = summary["test_at_best_validation"]
  assert f"test loss {test['loss']:.4g}" in line
  assert f"at best validation step {summary['best_validation_step']}" in line
  # a run stopped (SIGTERM) before its first validation has no best step and no test metrics
  stopped = dict(summary, best_validation_step=None, test_at_best_validation=None)
  line = loop.format_summary(stopped)
  assert "no validation yet" in line and "nan" not in line and "None" not in line
  assert f"baseline {summary['baseline_loss']:.4g}" in line


def test_compare_labels_losses_above_the_baseline(tmp_path, monkeypatch, capsys):
  from lvf_jax.train import compare  # pylint: disable=g-import-not-at-top
  c = tiny("rnn", steps=2)
  c.runner = "compare"
  c.compare = {"a": {"model": {"name": "rnn"}}}
  fake = {"model": "rnn", "parameters": 1, "steps": 2, "seconds": 1.0, "baseline_loss": 1.0}
  for loss, label in ((0.2, "below baseline"), (1.0, "at baseline"), (3.0, "above baseline")):
    monkeypatch.setattr(compare.loop, "train_and_evaluate",
                        lambda cfg, wd, loss=loss: dict(fake, test_at_best_validation={
                            "loss": loss}))
    monkeypatch.setattr(compare, "_plot", lambda *a: None)
    out = compare.run(c, str(tmp_path))
    assert out["table"].splitlines()[-1].endswith(label)


def test_missing_tensorboardx_is_said_once(tmp_path, monkeypatch, capsys):
  import builtins  # pylint: disable=g-import-not-at-top
  from lvf_jax.train import reporting  # pylint: disable=g-import-not-at-top
  real_import = builtins.__import__

  def no_tensorboardx(name, *args, **kwargs):
    if name.startswith("tensorboardX"):
      raise ImportError(name)
    return real_import(name, *args, **kwargs)

  monkeypatch.setattr(builtins, "__import__", no_tensorboardx)
  writer = reporting.MetricWriter(str(tmp_path), tensorboard=True)
  writer.close()
  assert "tensorboardX is not installed" in capsys.readouterr().out


def test_a_field_newer_than_the_saved_config_matches_at_its_default(tmp_path):
  """A workdir written before a config field existed resumes when the field is at its
  default (and stops when it is not)."""
  workdir = str(tmp_path)
  train.train_and_evaluate(tiny("rnn", steps=2, allow_resume_changes=False), workdir)
  saved = json.load(open(tmp_path / "config.json"))
  del saved["train"]["allow_resume_changes"]  # as a version without the field wrote it
  json.dump(saved, open(tmp_path / "config.json", "w"))
  assert train.train_and_evaluate(tiny("rnn", steps=2, allow_resume_changes=False),
                                  workdir)["resumed_from"] == 2
  del saved["model"]["input_projection"]
  json.dump(saved, open(tmp_path / "config.json", "w"))
  hoisted = tiny("rnn", steps=2)
  hoisted.model.input_projection = "hoisted"  # not the default 'auto'
  with pytest.raises(train.ConfigMismatchError,
                     match=r"model.input_projection: '<absent>' -> 'hoisted'"):
    train.train_and_evaluate(hoisted, workdir)


def _flip_a_byte_of_the_largest_file(directory):
  files = [os.path.join(d, f) for d, _, fs in os.walk(directory) for f in fs]
  path = max(files, key=os.path.getsize)
  data = bytearray(open(path, "rb").read())
  data[len(data) // 2] ^= 0xFF
  open(path, "wb").write(bytes(data))
  return path


def test_a_damaged_latest_checkpoint_falls_back_to_the_previous_step(tmp_path, capsys):
  straight, damaged = str(tmp_path / "straight"), str(tmp_path / "damaged")
  train.train_and_evaluate(tiny("rnn", steps=9), straight)
  train.train_and_evaluate(tiny("rnn", steps=6), damaged)  # checkpoints at steps 3 and 6
  _flip_a_byte_of_the_largest_file(os.path.join(damaged, "checkpoints", "6"))
  capsys.readouterr()
  summary = train.train_and_evaluate(tiny("rnn", steps=9), damaged)
  err = capsys.readouterr().err
  assert summary["resumed_from"] == 3
  assert "checkpoint of step 6 is damaged" in err and "Traceback" not in err
  assert os.path.isdir(os.path.join(damaged, "checkpoints", "damaged-6"))  # kept, aside
  a, b = _final_state(tiny("rnn", steps=9), straight), _final_state(tiny("rnn", steps=9),
                                                                    damaged)
  assert int(b.step) == 9
  for x, y in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
