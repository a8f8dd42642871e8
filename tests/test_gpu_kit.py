"""The GPU benchmark and the GPU kit, dry-run on the CPU (tiny settings, smoke rows)."""

import json
import os
import shutil
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import gpu as gpu_bench  # noqa: E402  (benchmarks/gpu.py)

from experiments import gpu_kit  # noqa: E402
from lvf_jax.recurrences import persistent  # noqa: E402


def _has_torch():
  try:
    import torch  # noqa: F401
    return True
  except ImportError:
    return False


def test_benchmark_record_and_page(tmp_path):
  out = tmp_path / "gpu.json"
  assert gpu_bench.main(["--tiny", "--settings", "copy_b10", "lstm_n1024", "--budget", "0.5",
                         "--repeats", "2", "--json", str(out)]) == 0
  record = json.loads(out.read_text())
  assert record["backend"] == "cpu" and record["tiny"] and list(record["peaks"]) == ["fp32"]
  by_setting = {r["setting"]: r for r in record["results"]}
  torch_variants = {"torch_loop", "cudnn_lstm"}
  for name, wanted in (("copy_b10", gpu_bench.EXPRNN_VARIANTS),
                       ("lstm_n1024", gpu_bench.LSTM_VARIANTS)):
    r = by_setting[name]
    measured = set(r["variants"])
    expected = set(wanted) if _has_torch() else set(wanted) - torch_variants
    assert measured == expected, (name, measured, r["skipped"])
    assert set(r["skipped"]) == set(wanted) - measured
    for row in r["variants"].values():
      # the ratio and the label follow from the times and the floor
      assert row["time_over_floor"] == pytest.approx(row["median_ms"] / row["floor_ms"])
      assert row["bound"] == ("launch-bound" if row["time_over_floor"] > gpu_bench.LAUNCH_BOUND
                              else "compute/memory")
  text = gpu_bench.page(record)
  assert "Tiny settings" in text and "copy, T = 5, n = 8, batch 2" in text
  rows = [line for line in text.splitlines() if line.startswith("| copy, T = 5")]
  assert len(rows) == len(by_setting["copy_b10"]["variants"]) + 1  # + the kernel's row


def test_model_flops_match_xla_count_of_an_unrolled_tanh_rnn():
  """The benchmark's FLOP formula against XLA's own count of the products of a fully
  unrolled tanh RNN's training gradient (elementwise work makes XLA's count a bit larger)."""
  s = dict(T=4, n=64, B=16, d_in=8, classes=8, every_step=True, cell="tanh")
  k = jax.random.split(jax.random.key(0), 5)
  p = {"w": jax.random.normal(k[0], (64, 64)), "w_in": jax.random.normal(k[1], (8, 64)),
       "w_out": jax.random.normal(k[2], (8, 64))}
  x = jax.random.normal(k[3], (4, 16, 8))

  def loss(p):
    def step(h, x_t):
      h = jnp.tanh(x_t @ p["w_in"] + h @ p["w"])
      return h, h
    hs = jax.lax.scan(step, jnp.zeros((16, 64)), x, unroll=True)[1]
    return jnp.sum((hs.reshape(64, 64) @ p["w_out"].T) ** 2)

  cost = jax.jit(jax.grad(loss)).lower(p).compile().cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  formula = gpu_bench.model_flops(s)
  # XLA drops the state cotangent of the first step (h0 is a constant): 2 B n^2 fewer
  assert 0.9 * formula <= cost["flops"] <= 1.25 * formula, (formula, cost["flops"])


def test_lstm_variants_compute_one_model():
  s = gpu_bench.setting_of("lstm_n1024", tiny=True)
  _, losses = gpu_bench._lstm_jax_models(s)  # pylint: disable=protected-access
  (fused, params), (plain, _) = losses["lvf_jax_lstm"], losses["jax_lstm_scan"]
  lf, gf = jax.value_and_grad(fused)(params)
  lp, gp = jax.value_and_grad(plain)(params)
  eps = float(jnp.finfo(jnp.float32).eps)
  tol = 10 * s["T"] * np.sqrt(s["n"]) * eps  # T dependent steps of length-n sums
  assert abs(float(lf - lp)) <= tol * abs(float(lp))
  for key in params:
    err = np.linalg.norm(gf[key] - gp[key]) / np.linalg.norm(gp[key])
    assert err <= tol, (key, err)


@pytest.mark.skipif(not _has_torch(), reason="PyTorch is an optional benchmark dependency")
def test_torch_peer_check_agrees_and_can_fail(monkeypatch):
  import torch_peer
  s = gpu_bench.setting_of("mnist_n170", tiny=True)
  check = gpu_bench.check_torch_peer(s, "cpu")
  assert check["checked"] and check["passed"], check
  peer = torch_peer.exprnn_loss_and_grads

  def shifted(params, *args, **kwargs):  # a peer whose modReLU bias is off by 1e-6
    return peer(dict(params, bias=params["bias"] + 1e-6), *args, **kwargs)

  monkeypatch.setattr(torch_peer, "exprnn_loss_and_grads", shifted)
  assert not gpu_bench.check_torch_peer(s, "cpu")["passed"]


def test_wheel_commands_pin_every_package(tmp_path):
  cmds = gpu_kit.wheel_commands(str(tmp_path))
  pins = [c[-1] for c in cmds]
  assert pins == [f"{n}=={v}" for n, (v, _) in gpu_kit.WHEELS.items()]
  for cmd in cmds:
    name = cmd[-1].split("==")[0]
    assert ("wheel" in cmd) == (name in gpu_kit.SOURCE_ONLY)
    if name not in gpu_kit.SOURCE_ONLY:
      assert "--only-binary=:all:" in cmd and cmd[cmd.index("--python-version") + 1] == "3.12"


def test_copy_data_takes_the_rows_files_and_names_a_missing_folder(tmp_path):
  src = tmp_path / "data"
  for folder, files in (("ptb", ("ptb.char.train.txt", "ptb.train.txt", "README.md")),
                        ("mnist", ("train-images-idx3-ubyte.gz", "README.md"))):
    (src / folder).mkdir(parents=True)
    for f in files:
      (src / folder / f).write_text(f)
  copied = gpu_kit.copy_data(str(src), str(tmp_path / "kit"))
  assert sorted(copied) == ["mnist/README.md", "mnist/train-images-idx3-ubyte.gz",
                            "ptb/README.md", "ptb/ptb.char.train.txt"]
  (src / "mnist" / "train-images-idx3-ubyte.gz").unlink()
  with pytest.raises(FileNotFoundError, match=r"mnist/\*\.gz"):
    gpu_kit.copy_data(str(src), str(tmp_path / "kit2"))


def test_lanes_stop_running_jobs_at_the_deadline(tmp_path, monkeypatch):
  monkeypatch.setattr(gpu_kit, "job_command",
                      lambda *a: [sys.executable, "-c", "import time; time.sleep(60)"])
  jobs = [gpu_kit.Job("t", f"r{i}") for i in range(3)]
  done = gpu_kit.run_lanes(jobs, 2, gpu_kit.Clock(4.0), str(tmp_path), dict(os.environ),
                           dry_run=True, margin=2.0, min_job_s=0, log=lambda m: None)
  assert [d["job"]["row"] for d in done] == ["r0", "r1"]  # r2 never started
  assert all(d["rc"] == -15 and d["seconds"] < 10 for d in done)


def test_merge_keeps_the_run_with_more_steps(tmp_path):
  def make(root, steps):
    d = root / "runs" / "lvf-t1" / "ptb-lvf" / "seed0"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps({"steps": steps}))
    return d

  make(tmp_path / "back", 100)
  make(tmp_path / "here", 262)
  assert gpu_kit.merge_runs(str(tmp_path / "back"), str(tmp_path / "here" / "runs")) == []
  make(tmp_path / "back2", 13100)
  merged = gpu_kit.merge_runs(str(tmp_path / "back2"), str(tmp_path / "here" / "runs"))
  assert merged == [("lvf-t1", "ptb-lvf")]
  result = tmp_path / "here" / "runs" / "lvf-t1" / "ptb-lvf" / "seed0" / "result.json"
  assert json.loads(result.read_text())["steps"] == 13100


def test_dry_run_then_collect(tmp_path):
  out = tmp_path / "out"
  summary = gpu_kit.run(str(out), 300, lanes=1, benchmark_budget=0.5, dry_run=True,
                        sync_every=1, margin=5, kit=str(tmp_path / "kit"),
                        jobs=(gpu_kit.Job("lvf-t4", "copy-rnn"),))
  assert summary["benchmark_rc"] == 0
  assert [j["rc"] for j in summary["jobs"]] == [0]
  assert sorted(os.listdir(out)) == ["gpu.json", "kit.log", "kit.tar.gz"]
  docs = tmp_path / "docs"
  docs.mkdir()
  (docs / "GPU.md").write_text(f"# before\n\n{gpu_kit.STATIC_FROM}\n\nBy hand.\n")
  expm = tmp_path / "expm.json"
  expm.write_text(json.dumps({"command": "python benchmarks/expm.py --ablate-stored",
                              "measured": "then", "device": "cpu", "rows": [
      dict(n=8, generator="g", barrier=b, ms=ms, orth_err=1e-7)
      for b, ms in (("stored", 3.0), ("identity", 2.0))]}))
  selection = tmp_path / "persistent_faster.json"
  shutil.copy(persistent.MEASURED_FASTER, selection)
  result = gpu_kit.collect(str(out), runs=str(tmp_path / "runs"), pages=str(tmp_path / "pages"),
                           docs=str(docs), selection=str(selection), expm=str(expm),
                           log=lambda m: None)
  page = (docs / "GPU.md").read_text()
  assert "# before" not in page and page.endswith(f"{gpu_kit.STATIC_FROM}\n\nBy hand.\n")
  assert "| 8 | g | 3.000 | 2.000 | 1.50 | 1.0e-07 |" in page
  assert (docs / "results" / "expm_gpu.json").exists()
  # the records keep no folder of the machine that ran them (the dry run wrote under tmp_path)
  assert str(tmp_path) not in (docs / "results" / "gpu.json").read_text() + page
  assert result["merged"] == [("lvf-t4", "copy-rnn")] and result["benchmark"]
  assert (tmp_path / "runs" / "lvf-t4" / "copy-rnn" / "seed0" / "result.json").exists()
  # a dry run's smoke record never enters the archive of results
  archive = json.loads((tmp_path / "pages" / "results" / "lvf-t4.json").read_text())
  assert "copy-rnn" not in archive["rows"]
  assert (docs / "results" / "gpu.json").exists()
  assert "Tiny settings" in (docs / "GPU.md").read_text()
  # a CPU's tiny record selects the kernel nowhere, and says which record it read
  chosen = json.loads(selection.read_text())
  assert chosen["faster"] == {} and chosen["record"].startswith("docs/results/gpu.json: cpu")
  assert "selects the persistent kernel nowhere" in (docs / "GPU.md").read_text()


def test_lanes_kill_jobs_that_ignore_the_stop_within_the_deadline(tmp_path, monkeypatch):
  """Three jobs that ignore SIGTERM share one grace of half the margin, so the lanes end
  before the deadline (not one grace per job after it)."""
  stubborn = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
              "time.sleep(60)")
  monkeypatch.setattr(gpu_kit, "job_command", lambda *a: [sys.executable, "-c", stubborn])
  start = time.monotonic()
  done = gpu_kit.run_lanes([gpu_kit.Job("t", f"r{i}") for i in range(3)], 3,
                           gpu_kit.Clock(4.0), str(tmp_path), dict(os.environ), dry_run=True,
                           margin=2.0, min_job_s=0, log=lambda m: None)
  elapsed = time.monotonic() - start
  assert len(done) == 3 and all(d["rc"] < 0 for d in done)  # killed (or terminated early)
  # SIGTERM at 4 - 2 = 2 s, the kill 1 s later; 0.5 s for the polling and the processes
  assert elapsed <= 4.0 + 0.5, elapsed


def test_kit_starts_on_the_standard_library_before_its_wheels():
  """On the GPU machine ``python -m experiments.gpu_kit run`` starts before the kit's wheels
  are installed: with those packages (and lvf_jax) unimportable, the module loads and its
  command line answers."""
  blocked = tuple(m.split(".")[0] for _, m in gpu_kit.WHEELS.values()
                  if m != "google.api") + ("lvf_jax",)
  code = (
      "import importlib.abc, runpy, sys\n"
      "class Block(importlib.abc.MetaPathFinder):\n"
      "  def find_spec(self, name, path=None, target=None):\n"
      f"    if name.split('.')[0] in {blocked!r}:\n"
      "      raise ImportError('blocked: ' + name)\n"
      "sys.meta_path.insert(0, Block())\n"
      "sys.argv = ['gpu_kit', 'run', '--help']\n"
      "runpy.run_module('experiments.gpu_kit', run_name='__main__')\n")
  done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                        text=True, timeout=120)
  assert done.returncode == 0, done.stderr
  assert "--deadline" in done.stdout


def _gpu_record(persistent_s, xla_s, *, widths=(128,), backend="gpu", tiny=False):
  results = [{"setting": f"s{n}", "precision": p, "shape": dict(n=n, cell="exprnn"),
              "variants": {"persistent": {"seconds": persistent_s},
                           "lvf_jax_tanh": {"seconds": xla_s}}, "skipped": {}}
             for n in widths for p in ("fp32", "tf32")]
  results.append({"setting": "lstm", "precision": "fp32", "shape": dict(n=1024, cell="lstm"),
                  "variants": {}, "skipped": {}})
  return {"backend": backend, "tiny": tiny, "device": "NVIDIA H200", "results": results}


def test_persistent_faster_needs_every_paired_repetition():
  fast, slow = [1.0] * 5, [2.0] * 5
  assert gpu_bench.persistent_faster(_gpu_record(fast, slow, widths=(128, 170))) == {
      "NVIDIA H200": {"fp32": [128, 256], "tf32": [128, 256]}}  # 170 pads to 256
  record = _gpu_record(fast, slow)
  record["results"][0]["variants"]["persistent"]["seconds"] = [3.0] * 5  # fp32: slower
  assert gpu_bench.persistent_faster(record) == {"NVIDIA H200": {"tf32": [128]}}
  one_slower = [1.0] * 4 + [2.5]
  assert gpu_bench.persistent_faster(_gpu_record(one_slower, slow)) == {}
  assert gpu_bench.persistent_faster(_gpu_record(fast[:4], slow[:4])) == {}  # too few
  assert gpu_bench.persistent_faster(_gpu_record(fast, slow, backend="cpu")) == {}
  assert gpu_bench.persistent_faster(_gpu_record(fast, slow, tiny=True)) == {}
  record = _gpu_record(fast, slow)
  del record["results"][1]["variants"]["persistent"]  # the kernel failed at tf32
  assert gpu_bench.persistent_faster(record) == {"NVIDIA H200": {"fp32": [128]}}


def test_install_wheels_installs_only_what_the_image_lacks(tmp_path, monkeypatch):
  wheels = tmp_path / "kit" / "wheels"
  wheels.mkdir(parents=True)
  for name in ("ml_collections-1.1.0-py3-none-any.whl", "six-1.17.0-py2.py3-none-any.whl",
               "dm_tree-0.1.10-cp312-cp312-manylinux_2_28_x86_64.whl"):
    (wheels / name).write_bytes(b"")
  calls = []
  monkeypatch.setattr(gpu_kit.subprocess, "run", lambda cmd, check: calls.append(cmd))
  monkeypatch.setattr(gpu_kit, "_importable", lambda module: module == "six")
  site = gpu_kit.install_wheels(str(tmp_path / "kit"), str(tmp_path / "site"), lambda m: None)
  assert site == str(tmp_path / "site") and len(calls) == 1
  assert sorted(os.path.basename(a) for a in calls[0] if a.endswith(".whl")) == [
      "dm_tree-0.1.10-cp312-cp312-manylinux_2_28_x86_64.whl",
      "ml_collections-1.1.0-py3-none-any.whl"]
  monkeypatch.setattr(gpu_kit, "_importable", lambda module: True)
  assert gpu_kit.install_wheels(str(tmp_path / "kit"), str(tmp_path / "s2"), print) is None
  assert len(calls) == 1


def test_importable_asks_without_importing():
  assert gpu_kit._importable("json") and not gpu_kit._importable("no_such_module_here")


def test_merge_joins_runs_of_one_device_and_refuses_another():
  one = _gpu_record([1.0] * 5, [2.0] * 5)
  two = _gpu_record([3.0] * 5, [2.0] * 5, widths=(64,))
  for r, when in ((one, "first"), (two, "second")):
    r.update(command=f"python benchmarks/gpu.py {when}", measured=when, commit=when, peaks={})
  merged = gpu_bench.merge([one, two])
  assert merged["results"] == one["results"] + two["results"]
  assert [r["command"] for r in merged["runs"]] == ["python benchmarks/gpu.py first",
                                                   "python benchmarks/gpu.py second"]
  assert gpu_bench.persistent_faster(merged) == {"NVIDIA H200": {"fp32": [128], "tf32": [128]}}
  with pytest.raises(ValueError, match="share backend, device and tiny"):
    gpu_bench.merge([one, dict(two, device="NVIDIA H100")])
