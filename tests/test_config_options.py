"""Every cell and optimiser option is a config field of every preset, settable from the CLI."""

import dataclasses
import glob
import json
import os
import runpy
import subprocess
import sys

import pytest

from lvf_jax import cells, optim, train
from lvf_jax.train import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_FILES = sorted(p for p in glob.glob(os.path.join(ROOT, "configs", "*.py"))
                      if not os.path.basename(p).startswith("_"))


def presets_of(path):
  """``(name, config)`` of every preset of a config file (``None`` for a file without)."""
  module = runpy.run_path(path)
  names = list(module.get("PRESETS") or {}) or [None]
  return [(n, module["get_config"](n) if n else module["get_config"]()) for n in names]


@pytest.mark.parametrize("path", CONFIG_FILES, ids=os.path.basename)
def test_every_preset_has_every_option_of_its_cell_and_of_the_optimizer(path):
  for name, c in presets_of(path):
    options = cells.cell_options(c.model.name)
    assert set(options) <= set(c.model.cell), (name, set(options) - set(c.model.cell))
    assert set(optim.DEFAULTS) <= set(c.optim), (name, set(optim.DEFAULTS) - set(c.optim))
    for key in set(c.model.cell) - set(options):  # a preset sets only the cell's own fields
      assert key in cells.cell_fields(c.model.name), (name, key)


@pytest.mark.parametrize("name", sorted(cells.CELLS))
def test_cell_options_are_the_constructors_scalar_fields_with_their_defaults(name):
  fields = {f.name: f for f in dataclasses.fields(cells.CELLS[name])}
  for key, (kind, default) in cells.cell_options(name).items():
    assert fields[key].default == default
    assert default is None or type(default) is kind
  cell = cells.make_cell(name, 4, **{k: d for k, (_, d) in cells.cell_options(name).items()
                                     if d is not None})
  assert cell.features == 4


def test_make_cell_lists_the_options_of_the_cell_on_an_unknown_one():
  with pytest.raises(ValueError, match=r"cell 'lvf' takes no option\(s\) \['rho'\]; its "
                                       r"options are \['activation', 'center_input_init', 'div_penalty'"):
    cells.make_cell("lvf", 4, rho=3)


def test_config_of_another_model_names_the_foreign_options():
  c = config_lib.make_config("copy", {"T": 5}, "lvf", 8)
  c.model.name = "gru"
  with pytest.raises(ValueError, match=r"'model.cell' sets \['activation', 'center_input_init', "
                                       r"'div_penalty'.*"
                                       r"cell 'gru' \(model.name\) does not take"):
    train.validate_config(c)


def test_a_preset_value_replaces_a_typed_none_default():
  c = config_lib.make_config("copy", {"T": 5}, "scornn", 8, cell={"rho": 3},
                             optim={"clip_norm": 1, "lr_orth": 1e-4})
  assert c.model.cell.rho == 3 and c.optim.clip_norm == 1 and c.optim.lr_orth == 1e-4
  c = config_lib.make_config("copy", {"T": 5}, "scornn", 8)
  assert c.model.cell.rho is None and c.optim.clip_norm is None
  c.model.cell.rho = 2  # a typed placeholder takes a value of its type
  c.optim.clip_norm = 0.5
  with pytest.raises(TypeError):
    c.model.cell.rho = "two"


def run_cli(workdir, config, *args):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  return subprocess.run(
      [sys.executable, "-m", "experiments.main", f"--config={config}", f"--workdir={workdir}",
       "--config.train.steps=2", "--config.train.eval_every=2", "--config.train.log_every=1",
       "--config.train.eval_size=8", "--config.train.batch_size=4",
       "--config.train.progress_bar=False", "--config.train.plot=False",
       "--config.task.options.T=6", "--config.model.hidden=8", *args],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_cli_sets_cell_and_optimizer_options_the_preset_does_not_name(tmp_path):
  # copy.py:lvf names neither div_penalty nor clip_norm nor total_steps.
  r = run_cli(tmp_path, "configs/copy.py:lvf", "--config.model.cell.divergence_free=False",
              "--config.model.cell.div_penalty=0.5", "--config.optim.clip_norm=0.25",
              "--config.optim.lr_schedule=cosine", "--config.optim.total_steps=7")
  assert r.returncode == 0, r.stderr[-2000:]
  saved = json.loads((tmp_path / "config.json").read_text())
  assert saved["model"]["cell"]["div_penalty"] == 0.5
  assert saved["optim"]["clip_norm"] == 0.25 and saved["optim"]["total_steps"] == 7
  records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
  penalties = [r["regularization"] for r in records if r.get("split") == "train"]
  assert penalties and all(p > 0 for p in penalties)  # the divergence penalty reaches the loss


def test_cli_runs_dtriv_with_the_base_option_of_exprnn(tmp_path):
  r = run_cli(tmp_path, "configs/copy.py:exprnn", "--config.model.cell.use_base=True",
              "--config.optim.dtriv_every=1")
  assert r.returncode == 0, r.stderr[-2000:]
  assert json.loads((tmp_path / "config.json").read_text())["model"]["cell"]["use_base"]


def test_a_workdir_written_before_the_options_existed_resumes(tmp_path):
  # a config written before 'parametrization' existed (and before 'exp' was the default map)
  # was trained with the paper's field under Euler's map
  c = config_lib.make_config("copy", {"T": 5}, "lvf", 8,
                             cell={"tau": 0.5, "parametrization": "paper", "integrator": "euler"},
                             train=dict(steps=2, batch_size=4, eval_every=2, eval_size=8,
                                        progress_bar=False, plot=False, tensorboard=False))
  train.train_and_evaluate(c, str(tmp_path))
  path = tmp_path / "config.json"
  saved = json.loads(path.read_text())
  saved["model"]["cell"] = {"tau": 0.5}  # as written when a config held the preset's keys only
  for key in ("clip_norm", "lr_schedule", "adam_b1", "total_steps"):
    del saved["optim"][key]
  for key in ("input_dropout", "output_dropout"):
    del saved["model"][key]
  path.write_text(json.dumps(saved))
  c.train.steps = 4
  c.train.allow_resume_changes = True
  assert train.train_and_evaluate(c, str(tmp_path))["steps"] == 4
  c.model.cell.parametrization = "natural"  # not what it was trained with: a difference
  c.train.steps = 6
  with pytest.raises(train.ConfigMismatchError,
                     match=r"model.cell.parametrization: 'paper' -> 'natural'"):
    train.train_and_evaluate(c, str(tmp_path))
  c.model.cell.parametrization = "paper"
  c.model.cell.div_penalty = 0.1  # a changed option is still a difference
  c.train.steps = 6
  with pytest.raises(train.ConfigMismatchError, match=r"model.cell.div_penalty: 0.0 -> 0.1"):
    train.train_and_evaluate(c, str(tmp_path))


def test_the_configs_readme_lists_every_option_of_every_cell_and_of_the_optimizer():
  with open(os.path.join(ROOT, "configs", "README.md")) as f:
    text = f.read()
  for name in cells.CELLS:
    line = next(l for l in text.splitlines() if l.startswith(f"| `{name}` |"))
    for key in cells.cell_options(name):
      assert f"`{key}`" in line, (name, key)
  for key in optim.DEFAULTS:
    assert f"`{key}`" in text, key


def test_a_preset_states_rho_once_and_the_optimizer_takes_the_cells():
  c = config_lib.make_config("copy", {"T": 10}, "ncgru", 16, cell=dict(rho=5),
                             optim=dict(orthogonal_method="neumann_cayley"))
  assert c.optim.rho == c.model.cell.rho == 5
  for method in ("trivialization", "multiplicative"):  # no D: rho stays at its default
    c = config_lib.make_config("copy", {"T": 10}, "ncgru", 16, cell=dict(rho=5),
                               optim=dict(orthogonal_method=method))
    assert c.optim.rho == optim.DEFAULTS["rho"]


def test_an_optimizer_rho_other_than_the_cells_is_an_error():
  c = config_lib.make_config("copy", {"T": 10}, "ncgru", 16, cell=dict(rho=5),
                             optim=dict(orthogonal_method="neumann_cayley"))
  c.model.cell.rho = 6  # as --config.model.cell.rho=6 would, after the preset filled optim.rho
  with pytest.raises(ValueError, match=r"'optim.rho' \(5\) must equal 'model.cell.rho' \(6\)"):
    train.build_optimizer(c)
  c.optim.rho = 6
  train.build_optimizer(c)


def test_default_preset_is_deprecated():
  from lvf_jax.train import presets
  with pytest.warns(DeprecationWarning, match="default_preset is deprecated"):
    assert presets.default_preset("scornn", 40)["cell"] == {"rho": 4}
