"""SIGTERM / SIGINT stop a run after its step, checkpointed: the loop, the CLI, the harness."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import jax
import numpy as np
import pytest

from lvf_jax import train
from lvf_jax.train import reporting, stop
from test_train import ROOT, _final_state, tiny


def signal_at_train_step(monkeypatch, signum: int, at: int) -> None:
  """Sends ``signum`` to this process right after the training record of step ``at``."""
  write = reporting.MetricWriter.write

  def write_then_signal(self, step, split, metrics):
    record = write(self, step, split, metrics)
    if split == "train" and step == at:
      os.kill(os.getpid(), signum)
    return record

  monkeypatch.setattr(reporting.MetricWriter, "write", write_then_signal)


def test_stop_request_catches_the_first_signal_and_restores_the_handlers():
  # Python's own SIGINT handler before the request (a pytest-xdist worker ignores SIGINT)
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  try:
    _catch_first_signal_and_restore()
  finally:
    signal.signal(signal.SIGINT, previous)


def _catch_first_signal_and_restore():
  before = {s: signal.getsignal(s) for s in stop.SIGNALS}
  with stop.StopRequest() as request:
    assert not request.requested
    assert all(signal.getsignal(s) == request._handle for s in stop.SIGNALS)
    os.kill(os.getpid(), signal.SIGTERM)
    assert request.signal == "SIGTERM" and request.requested
    # a second signal would act as without the request: the handlers are back already
    assert {s: signal.getsignal(s) for s in stop.SIGNALS} == before
    with pytest.raises(KeyboardInterrupt):
      os.kill(os.getpid(), signal.SIGINT)
  assert {s: signal.getsignal(s) for s in stop.SIGNALS} == before


@pytest.mark.parametrize("on_main_thread", [True, False])
def test_stop_request_installs_nothing_when_disabled_or_off_the_main_thread(on_main_thread):
  before = {s: signal.getsignal(s) for s in stop.SIGNALS}
  seen = {}

  def install():  # disabled on the main thread; enabled on another
    request = stop.StopRequest(enabled=not on_main_thread).install()
    seen["handlers"] = {s: signal.getsignal(s) for s in stop.SIGNALS}
    request.restore()

  if on_main_thread:
    install()
  else:
    worker = threading.Thread(target=install)
    worker.start()
    worker.join()
  assert seen["handlers"] == before


def test_exit_status_is_128_plus_the_signal_number():
  assert stop.exit_status("SIGTERM") == 128 + signal.SIGTERM == 143
  assert stop.exit_status("SIGINT") == 128 + signal.SIGINT == 130
  assert stop.exit_status(None) == 0


def test_a_signal_stops_the_run_after_its_step_checkpointed_and_it_resumes_to_the_same_end(
    tmp_path, monkeypatch):
  straight, split = str(tmp_path / "straight"), str(tmp_path / "split")
  c = tiny("rnn", steps=6)
  train.train_and_evaluate(c, straight)
  before = signal.getsignal(signal.SIGTERM)
  with monkeypatch.context() as m:
    signal_at_train_step(m, signal.SIGTERM, at=2)
    with pytest.raises(train.StoppedBySignal, match="stopped at step 3 of 6 by SIGTERM") as e:
      train.train_and_evaluate(c, split)
  assert signal.getsignal(signal.SIGTERM) == before
  assert e.value.signal == "SIGTERM" and e.value.exit_status == 143
  part = e.value.summary
  assert part["steps"] == 3 and part["stopped_by_signal"] == "SIGTERM"
  assert not part["stopped_at_time_limit"]
  with open(os.path.join(split, "summary.json")) as f:
    assert json.load(f)["steps"] == 3
  records = [json.loads(l) for l in open(os.path.join(split, "metrics.jsonl"))]
  # the step is logged and saved, not evaluated (eval_every=3 would evaluate it)
  assert {r["split"] for r in records if r["step"] == 3} == {"train"}
  assert _final_state(c, split).step == 3
  rest = train.train_and_evaluate(c, split)
  assert rest["resumed_from"] == 3 and rest["steps"] == 6 and rest["stopped_by_signal"] is None
  a, b = _final_state(c, straight), _final_state(c, split)
  for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_signal_during_the_last_step_still_stops_the_caller_after_the_complete_run(
    tmp_path, monkeypatch):
  signal_at_train_step(monkeypatch, signal.SIGTERM, at=4)
  before = signal.getsignal(signal.SIGTERM)
  with pytest.raises(train.StoppedBySignal, match="SIGTERM received as the run ended: all 4 "
                                                  "steps done, summary written") as e:
    train.train_and_evaluate(tiny("rnn", steps=4), str(tmp_path))
  assert signal.getsignal(signal.SIGTERM) == before
  assert e.value.summary["steps"] == 4 and e.value.exit_status == 143
  with open(tmp_path / "summary.json") as f:
    assert json.load(f)["stopped_by_signal"] == "SIGTERM"


def test_stop_on_signal_false_leaves_the_handlers_alone(tmp_path, monkeypatch):
  seen = []
  write = reporting.MetricWriter.write

  def record_handler(self, step, split, metrics):
    seen.append(signal.getsignal(signal.SIGTERM))
    return write(self, step, split, metrics)

  monkeypatch.setattr(reporting.MetricWriter, "write", record_handler)
  before = signal.getsignal(signal.SIGTERM)
  train.train_and_evaluate(tiny("rnn", steps=2, stop_on_signal=False), str(tmp_path))
  assert seen and all(h == before for h in seen)


def test_stop_on_signal_must_be_a_bool():
  c = tiny("rnn")
  c.train = dict(c.train.to_dict(), stop_on_signal="yes")  # a config built with a new type
  with pytest.raises(ValueError,
                     match=r"'train.stop_on_signal' must be True or False; got 'yes'"):
    train.validate_config(c)


def test_cli_exits_with_128_plus_the_signal_and_keeps_the_checkpoint(tmp_path):
  wd = tmp_path / "run"
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  proc = subprocess.Popen(
      [sys.executable, "-m", "experiments.main", "--config=configs/copy.py:rnn",
       f"--workdir={wd}", "--config.train.steps=1000000", "--config.task.options.T=6",
       "--config.model.hidden=8", "--config.train.batch_size=4", "--config.train.log_every=1",
       "--config.train.eval_every=1000000", "--config.train.eval_size=8",
       "--config.train.progress_bar=False", "--config.train.tensorboard=False"],
      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  metrics = wd / "metrics.jsonl"
  deadline = time.time() + 300
  while time.time() < deadline and proc.poll() is None and not (
      metrics.exists() and metrics.stat().st_size > 0):
    time.sleep(0.2)
  assert proc.poll() is None, proc.communicate()[1][-2000:]
  proc.send_signal(signal.SIGINT)
  out, err = proc.communicate(timeout=300)
  assert proc.returncode == 130, err[-2000:]
  assert "by SIGINT (checkpointed); run again with the same workdir to resume" in err
  assert "Traceback" not in err
  with open(wd / "summary.json") as f:
    summary = json.load(f)
  assert summary["stopped_by_signal"] == "SIGINT" and 0 < summary["steps"] < 1000000
  assert sorted(os.listdir(wd / "checkpoints")) and str(summary["steps"]) in os.listdir(
      wd / "checkpoints")


def test_reproduce_writes_the_partial_result_and_page_and_exits_143(tmp_path, monkeypatch):
  from experiments.reproduce import __main__ as reproduce_main  # pylint: disable=g-import-not-at-top
  from experiments.reproduce import harness, rows  # pylint: disable=g-import-not-at-top
  from test_reproduce import small_copy_rows  # pylint: disable=g-import-not-at-top
  small_copy_rows(monkeypatch, log_every=1)
  signal_at_train_step(monkeypatch, signal.SIGTERM, at=2)
  work, pages = tmp_path / "runs", tmp_path / "pages"
  status = reproduce_main.main(["lvf-t4", "--rows", "copy-rnn,copy-lvf", "--steps", "6",
                                "--workdir", str(work), "--out", str(pages)])
  assert status == 143
  table = rows.get("lvf-t4")
  result = harness.read_result(harness.row_dir(table, table.row("copy-rnn"), str(work), 0))
  assert result["steps"] == 3 and result["budget_steps"] == 6
  assert not os.path.exists(harness.row_dir(table, table.row("copy-lvf"), str(work), 0))
  assert "3 of" in open(pages / "lvf-t4.md").read()
