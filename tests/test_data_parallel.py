"""train_and_evaluate over the local devices (``train.mesh``): the batch split over a
``("data",)`` mesh with Explicit axes gives the single-device metrics (conftest sets 4 host
devices)."""

import json
import os
import runpy
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from lvf_jax import train
from lvf_jax.train import loop, parallel
from lvf_jax.data import paths
from lvf_jax.train.config import make_config, set_field
import tolerances as tol

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def losses(workdir):
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    records = [json.loads(line) for line in f]
  return [(r["step"], r["split"], r["loss"]) for r in records if "loss" in r]


# float32 losses of one model: the device split reorders only the sums over the batch (8
# examples, x <= 20 positions for PTB: <= 160 terms) of the losses and of the gradients
# before them (the runs differ by <= 5e-7)
def same(a, b, rtol=tol.F32["rtol"]):
  assert [x[:2] for x in a] == [x[:2] for x in b]
  np.testing.assert_allclose([x[2] for x in a], [x[2] for x in b], rtol=rtol)


def copy_config(mesh, steps=6, model="lvf"):
  return make_config("copy", {"T": 8}, model, 8, train=dict(
      steps=steps, batch_size=8, eval_every=3, eval_size=16, eval_batch_size=8, log_every=1,
      checkpoint_every=3, progress_bar=False, tensorboard=False, plot=False, mesh=mesh))


@pytest.mark.parametrize("model", ["lvf", pytest.param("scornn", marks=pytest.mark.slow)])
def test_four_devices_give_the_single_device_metrics(tmp_path, capsys, model):
  assert jax.local_device_count() >= 4
  train.train_and_evaluate(copy_config("", model=model), str(tmp_path / "one"))
  capsys.readouterr()
  train.train_and_evaluate(copy_config("data=-1", model=model), str(tmp_path / "four"))
  assert "data parallel over 4 devices" in capsys.readouterr().out
  same(losses(tmp_path / "one"), losses(tmp_path / "four"))


def test_a_sharded_run_resumes_to_the_uninterrupted_one(tmp_path):
  train.train_and_evaluate(copy_config(""), str(tmp_path / "straight"))
  train.train_and_evaluate(copy_config("data=-1", steps=3), str(tmp_path / "split"))
  c = copy_config("data=-1")
  c.train.allow_resume_changes = True
  assert train.train_and_evaluate(c, str(tmp_path / "split"))["resumed_from"] == 3
  same(losses(tmp_path / "straight"), losses(tmp_path / "split"))


@pytest.mark.skipif(not (paths.raw_data_dir() / "ptb").is_dir(),
                    reason=f"PTB not found under {paths.raw_data_dir()} (set {paths.DATA_DIR_ENV})")
def test_a_host_fed_dataset_with_truncated_bptt_carries_its_sharded_state(tmp_path):
  path = os.path.join(ROOT, "configs", "ptb_char.py")
  runs = []
  for mesh in ("", "data=-1"):
    c = runpy.run_path(path)["get_config"]("lstm")
    for key, value in {"train.steps": 4, "train.batch_size": 8, "train.eval_every": 2,
                       "train.log_every": 1, "model.hidden": 16, "task.options.bptt": 20,
                       "task.options.max_train_tokens": 5000,
                       "task.options.max_eval_tokens": 3000, "train.mesh": mesh,
                       "train.progress_bar": False, "train.tensorboard": False,
                       "train.plot": False}.items():
      set_field(c, key, value)
    workdir = str(tmp_path / f"run{len(runs)}")
    train.train_and_evaluate(c, workdir)
    runs.append(losses(workdir))
  same(*runs)


def test_bad_meshes_and_batches_fail_before_compiling(tmp_path):
  with pytest.raises(ValueError, match=r"'train.mesh' must be '' \(one device\), 'auto', "):
    parallel.make_mesh("model=2")
  with pytest.raises(ValueError, match=r"1 <= k <= 4; got 'data=9'"):
    parallel.make_mesh("data=9")
  assert parallel.make_mesh("data=1") is None and parallel.make_mesh("") is None
  c = copy_config("data=-1")
  c.train.batch_size = 6
  with pytest.raises(ValueError, match=r"'train.batch_size' \(6\) must divide by the 4 "):
    train.train_and_evaluate(c, str(tmp_path))
  assert not os.path.exists(tmp_path / "checkpoints")


def test_auto_mesh_uses_every_accelerator_and_one_cpu(monkeypatch, capsys):
  assert jax.device_count() == 4
  assert parallel.make_mesh("auto", 8) is None  # host devices of one CPU process
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  mesh = parallel.make_mesh("auto", 8)
  assert mesh is not None and mesh.shape[parallel.AXIS] == 4
  assert parallel.make_mesh("auto", 6) is None
  assert "batch of 6 does not divide by the 4 devices" in capsys.readouterr().out
  assert train.base_config().train.mesh == "auto"


def test_a_run_resumes_on_another_mesh_without_allowing_changes(tmp_path):
  c = copy_config("")
  c.train.allow_resume_changes = False
  c.train.steps = 2
  train.train_and_evaluate(c, str(tmp_path))
  c.train.mesh = "data=-1"
  c.train.steps = 2
  summary = train.train_and_evaluate(c, str(tmp_path))  # nothing left to train: no mismatch
  assert summary["steps"] == 2


def test_cli_logs_its_devices_and_matches_one_device(tmp_path):
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS="--xla_force_host_platform_device_count=4")
  args = ["--config=configs/copy.py:exprnn", "--config.train.steps=4",
          "--config.train.batch_size=8", "--config.train.eval_every=2",
          "--config.train.eval_size=16", "--config.train.eval_batch_size=8",
          "--config.train.log_every=1", "--config.task.options.T=6",
          "--config.model.hidden=8", "--config.train.progress_bar=False",
          "--config.train.plot=False"]
  out = {}
  for name, mesh in (("one", ""), ("four", "data=-1")):
    r = subprocess.run([sys.executable, "-m", "experiments.main",
                        f"--workdir={tmp_path / name}", *args, f"--config.train.mesh={mesh}"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out[name] = r.stdout
  assert "data parallel over 4 devices" in out["four"] and "data parallel" not in out["one"]
  same(losses(tmp_path / "one"), losses(tmp_path / "four"))


def _free_port():
  import socket  # pylint: disable=g-import-not-at-top
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _start(command, env, log):
  with open(log.with_suffix(".out"), "w") as out, open(log.with_suffix(".err"), "w") as err:
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err)


def _tail(log, chars=3000):
  """A process's output: the end of stdout; stderr from faulthandler's dump (the innermost
  frames first) when there is one, else its end."""
  err = log.with_suffix(".err").read_text()
  dump = err.find("Fatal Python error")
  return (f"stdout: {log.with_suffix('.out').read_text()[-chars:]}\n"
          f"stderr: {err[dump:dump + 2 * chars] if dump >= 0 else err[-chars:]}")


def _two_processes(tmp_path, args, env, seconds=300):
  """The command in two processes, outputs to files (so that neither blocks on a full pipe
  while the other waits in a collective); returns their stdouts. A process that fails stops
  the other and fails the test with its output; a hang (both alive after ``seconds``) sends
  each SIGABRT (faulthandler prints every thread's stack) and fails with both."""
  env = dict(env, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
  address = f"127.0.0.1:{_free_port()}"
  logs = [tmp_path / f"process{i}" for i in range(2)]
  procs = [_start([sys.executable, "-m", "experiments.main", f"--workdir={tmp_path / 'two'}",
                   *args, f"--config.distributed.coordinator_address={address}",
                   "--config.distributed.num_processes=2", f"--config.distributed.process_id={i}"],
                  env, logs[i]) for i in range(2)]
  deadline = time.monotonic() + seconds
  while True:
    failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
    if failed:
      for p in procs:
        p.kill()
      pytest.fail(f"process {failed[0]} failed:\n" + _tail(logs[failed[0]]))
    if all(p.poll() is not None for p in procs) or time.monotonic() >= deadline:
      break
    time.sleep(0.5)
  if any(p.poll() is None for p in procs):
    for p in procs:
      p.send_signal(signal.SIGABRT)
    for p in procs:
      try:
        p.wait(timeout=60)
      except subprocess.TimeoutExpired:
        p.kill()
    pytest.fail("the two-process run hung:\n" + "\n".join(_tail(log) for log in logs))
  return [log.with_suffix(".out").read_text() for log in logs]


COMMON = ["--config.train.steps=4", "--config.train.batch_size=8",
          "--config.train.eval_every=2", "--config.train.eval_batch_size=8",
          "--config.train.log_every=1", "--config.train.checkpoint_every=2",
          "--config.model.hidden=8", "--config.train.progress_bar=False",
          "--config.train.plot=False", "--config.train.mesh=data=-1"]
TWO_PROCESS_RUNS = {
    # a synthetic task: the batch is drawn inside the step from the same key everywhere
    "copy": ["--config=configs/copy.py:lvf", "--config.train.eval_size=16",
             "--config.task.options.T=6"],
    # a dataset: each process reads only the rows of every training batch its devices hold
    "mnist": ["--config=configs/mnist.py:rnn", "--config.task.options.max_train_examples=40",
              "--config.task.options.max_eval_examples=16"],
}


@pytest.mark.parametrize("run", [
    # the synthetic task's data parallelism is checked in one process above: two processes
    # of it run with -m slow; the default suite keeps the dataset's per-process rows
    pytest.param("copy", marks=pytest.mark.slow),
    pytest.param("mnist", marks=pytest.mark.skipif(
        not (paths.raw_data_dir() / "mnist").is_dir(), reason="no MNIST in the data dir"))])
def test_two_processes_of_two_devices_equal_one_process_of_four(tmp_path, run):
  """jax.distributed on 127.0.0.1 with CPU collectives: the same command in two processes
  (two host devices each) trains the run one process with four devices trains."""
  args = [*TWO_PROCESS_RUNS[run], *COMMON]
  if run == "mnist":  # prepared by the one-process run, read by the two processes
    args.append(f"--config.task.options.tfds_dir={tmp_path / 'tfds'}")

  def env(devices):
    return dict(os.environ, JAX_PLATFORMS="cpu",
                XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")

  one = subprocess.run([sys.executable, "-m", "experiments.main",
                        f"--workdir={tmp_path / 'one'}", *args], cwd=ROOT, env=env(4),
                       capture_output=True, text=True, timeout=600)
  assert one.returncode == 0, one.stderr[-2000:]
  outs = _two_processes(tmp_path, args, env(2))
  assert "data parallel over 4 devices" in outs[0]
  if os.environ.get("JAX_COMPILATION_CACHE_DIR"):  # the conftest's cache: each process turns
    assert all("persistent compilation cache off" in out for out in outs)  # it off
  if run == "mnist":
    assert "process 1 builds rows 4:8 of every training batch" in outs[1]
  same(losses(tmp_path / "one"), losses(tmp_path / "two"))
  assert (tmp_path / "two" / "summary.json").exists()


def test_the_loop_asks_one_placement_object():
  """The training loop reads as training: every question of where arrays live goes through
  ``parallel.Placement`` (plus the runtime's start before anything touches JAX)."""
  import ast
  import pathlib
  source = (pathlib.Path(loop.__file__)).read_text()
  used = {node.attr for node in ast.walk(ast.parse(source))
          if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
          and node.value.id == "parallel"}
  assert used == {"Placement", "initialize"}, used


def test_a_multi_process_cpu_run_turns_the_persistent_cache_off(capsys):
  """Cross-process CPU programs read back from JAX's persistent cache hang (jax 0.12): the
  runtime's start turns the cache off, saying so when it was on (a cache folder is set)."""
  before = jax.config.jax_enable_compilation_cache
  try:
    jax.config.update("jax_enable_compilation_cache", True)
    parallel._without_persistent_cache()  # pylint: disable=protected-access
    assert not jax.config.jax_enable_compilation_cache
    said = "persistent compilation cache off" in capsys.readouterr().out
    assert said == bool(jax.config.jax_compilation_cache_dir)
  finally:
    jax.config.update("jax_enable_compilation_cache", before)


def test_a_placement_without_a_mesh_is_one_device():
  place = parallel.Placement()
  batch = {"x": np.ones((4, 3))}
  assert place.shard(batch) is batch and place.devices == 1 and place.rows is None
  assert place.reading(4, host_fed=True).rows is None  # one process reads every row
  assert place.agree(True) and not place.any_process(False)
