"""The package as a user installs it: lazy subpackages, shipped configs, licence and typing
markers, the command line's help, and a source tree free of machine paths."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from lvf_jax.train import cli

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(code: str, cwd=None, env=None) -> str:
  return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                        text=True, cwd=cwd, env=env, timeout=600).stdout


def test_import_is_lazy_and_every_subpackage_is_reachable():
  out = _python(
      "import sys, lvf_jax\n"
      "heavy = [m for m in ('flax', 'tensorflow_datasets', 'matplotlib') if m in sys.modules]\n"
      "print(heavy)\n"
      "print(sorted(m for m in lvf_jax.__all__ if m != '__version__' and\n"
      "             getattr(lvf_jax, m).__name__ == 'lvf_jax.' + m))\n", cwd=str(ROOT))
  heavy, reached = out.strip().splitlines()
  assert heavy == "[]"
  assert eval(reached) == sorted(  # noqa: S307 -- our own printed list
      ["cells", "data", "diagnostics", "geometry", "layers", "models", "optim", "recurrences",
       "regularization", "tasks", "train", "zoo"])
  with pytest.raises(AttributeError, match="no attribute 'cellz'"):
    import lvf_jax
    lvf_jax.cellz  # noqa: B018


def test_shipped_configs_resolve_by_file_name(tmp_path):
  shipped = cli.shipped_configs_dir()
  assert shipped is not None and os.path.isfile(os.path.join(shipped, "copy.py"))
  assert cli.resolve_config_arg("copy.py:lvf") == os.path.join(shipped, "copy.py") + ":lvf"
  assert cli.resolve_config_arg("configs/jsb.py:rnn").endswith("jsb.py:rnn")
  own = tmp_path / "copy.py"  # an existing file of the same name wins
  own.write_text("")
  assert cli.resolve_config_arg(f"{own}:lvf") == f"{own}:lvf"
  assert cli.resolve_config_arg("nope.py:lvf") == "nope.py:lvf"  # absl names the missing file
  assert cli.resolve_argv(["x", "--config", "copy.py:rnn", "--workdir=w"])[2] == \
      os.path.join(shipped, "copy.py") + ":rnn"


def test_help_lists_config_and_workdir(tmp_path):
  out = subprocess.run(
      [sys.executable, "-c", "import sys; sys.argv[0] = 'lvf-jax'; "
       "from lvf_jax.train.cli import run; run()", "--help"],
      capture_output=True, text=True, cwd=str(tmp_path), timeout=600,
      env={**os.environ, "PYTHONPATH": str(ROOT)})
  assert "--config" in out.stdout + out.stderr and "--workdir" in out.stdout + out.stderr


def test_licence_and_typing_marker_are_shipped():
  text = (ROOT / "LICENSE").read_text()
  assert "Apache License" in text and "Version 2.0" in text
  cfg = (ROOT / "setup.cfg").read_text()
  assert "license = Apache-2.0" in cfg and "lvf_jax = py.typed" in cfg
  assert (ROOT / "lvf_jax" / "py.typed").exists()
  assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")


MACHINE_PATH = re.compile(r"(/work/|/home/\w|/root/|/Users/\w|C:\\\\)")
TRACKER = re.compile(r"\b(issue \d|issue #\d|session \d|sessions \d|work[- ]log|REFERENCE\.md|"
                     r"REFERENCE §)", re.I)


@pytest.mark.parametrize("tree", ["lvf_jax", "configs", "experiments", "benchmarks", "docs"])
def test_sources_name_no_machine_paths_and_no_tracker(tree):
  bad = []
  for path in sorted((ROOT / tree).rglob("*")):
    if path.suffix not in (".py", ".md", ".json", ".cfg") or "__pycache__" in path.parts:
      continue
    for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
      if MACHINE_PATH.search(line) or TRACKER.search(line):
        bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
  assert not bad, "\n".join(bad)


def test_results_page_stays_a_page_of_current_figures():
  assert (ROOT / "docs" / "RESULTS.md").stat().st_size <= 30_000


@pytest.mark.slow
def test_a_non_editable_install_trains_a_shipped_preset_by_name(tmp_path):
  target = tmp_path / "site"
  subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                  "--no-build-isolation", "--target", str(target), str(ROOT)],
                 check=True, timeout=600)
  env = {**os.environ, "PYTHONPATH": str(target)}
  run = tmp_path / "run"
  subprocess.run(
      [sys.executable, "-c", "import sys; sys.argv[0] = 'lvf-jax'; "
       "from lvf_jax.train.cli import run; run()", "--config=copy.py:lvf",
       f"--workdir={run}", "--config.train.steps=2", "--config.train.eval_every=2",
       "--config.train.eval_size=8", "--config.train.progress_bar=False"],
      check=True, cwd=str(tmp_path), env=env, timeout=900)
  assert (run / "summary.json").exists()
