"""The notebooks in notebooks/ run top to bottom in a Jupyter kernel with small settings, and
every code cell that plots shows its figure inline.

The kernels run with the environment's own matplotlib backend: MPLBACKEND is removed, so
ipykernel selects its inline backend, as Colab and Jupyter do. A code cell plots if its source
matches ``PLOTTING`` (pyplot or a figure object); it passes only with an ``image/png`` output.
The kernels import the lvf_jax of this checkout (its root is put first on PYTHONPATH), so the
install cell at the top of each notebook must do nothing.
"""

import copy
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
#: Every notebook, with the environment that gives it small settings.
SMALL_SETTINGS = {
    "quickstart.ipynb": {"LVF_QUICKSTART_STEPS": "4"},
    "geometry.ipynb": {},
    "dynamics.ipynb": {"LVF_DYNAMICS_STEPS": "4", "LVF_DYNAMICS_T": "20"},
}
#: A code cell plots if its source uses pyplot or a figure object.
PLOTTING = re.compile(r"\bplt\.|\.plot\(|\bfig\b")
TIMEOUT_S = 300  # per cell
COLAB_URL = "https://colab.research.google.com/github/OWNER/lvf_jax/blob/main/notebooks/{}"


def read(name):
  return nbformat.read(NOTEBOOKS / name, as_version=4)


def code_cells(nb):
  return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def plotting_cells(nb):
  return [(i, c) for i, c in code_cells(nb) if PLOTTING.search(c.source)]


def has_image(cell):
  return any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def cells_without_image(nb):
  """Indices of the plotting cells that have no inline image among their outputs."""
  return [i for i, c in plotting_cells(nb) if not has_image(c)]


def text_of(cells):
  return "".join(o.get("text", "") for c in cells for o in c.get("outputs", []))


def install_cell(nb):
  return code_cells(nb)[0][1]


@pytest.fixture
def kernel_env(monkeypatch):
  """The environment of the kernels: no MPLBACKEND, this checkout first on PYTHONPATH, and
  the one CPU device of a plain process (conftest.py forces several for the sharding tests)."""
  monkeypatch.delenv("MPLBACKEND", raising=False)
  flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "",
                 os.environ.get("XLA_FLAGS", "")).strip()
  monkeypatch.setenv("XLA_FLAGS", flags)
  path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
  monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
  return monkeypatch


def client_for(nb, cwd):
  return nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                 resources={"metadata": {"path": str(cwd)}})


def execute(nb, cwd):
  client_for(nb, cwd).execute()
  return nb


# ------------------------------------------------------------------ static checks


def test_every_notebook_has_small_settings_and_a_colab_badge():
  assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(SMALL_SETTINGS)
  readme = (NOTEBOOKS / "README.md").read_text()
  assert readme.count("colab-badge.svg") == len(SMALL_SETTINGS)
  for name in SMALL_SETTINGS:
    assert COLAB_URL.format(name) in readme, name


def test_notebooks_share_a_non_editable_install_cell_and_set_no_backend():
  sources = {name: install_cell(read(name)).source for name in SMALL_SETTINGS}
  first = next(iter(sources.values()))
  assert all(s == first for s in sources.values()), "the install cells differ"
  assert re.search(r'^LVF_JAX_SOURCE = "git\+https://github\.com/OWNER/lvf_jax"$', first, re.M)
  assert '"-e"' not in first and "--editable" not in first and "%pip" not in first
  for name in SMALL_SETTINGS:
    nb = read(name)
    assert len(plotting_cells(nb)) >= 2, name
    for _, cell in code_cells(nb):
      for forbidden in ("matplotlib.use", "%matplotlib", "MPLBACKEND", "switch_backend"):
        assert forbidden not in cell.source, (name, forbidden)


class _File:
  def __init__(self, path):
    self.path = path

  def locate(self):
    return self.path


class _Dist:
  def __init__(self, name, version, files):
    self.metadata, self.version, self.files = {"Name": name}, version, [_File(f) for f in files]


def _run_install_cell(monkeypatch, tmp_path, *, importable, pip_rc=0, replace_imported=False):
  """Executes the install cell with lvf_jax (not) importable, pip replaced by a stub and two
  stand-in distributions: 'imported_pkg', whose module this process has imported, and
  'other_pkg', which the stub always upgrades. Returns the pip commands and the namespace."""
  import importlib.metadata
  import importlib.util
  import types

  state = {"installed": importable}
  calls = []
  real_find_spec = importlib.util.find_spec
  module = types.ModuleType("imported_pkg")
  module.__file__ = str(tmp_path / "imported_pkg" / "__init__.py")
  monkeypatch.setitem(sys.modules, "imported_pkg", module)

  def find_spec(name, *args, **kwargs):
    if name == "lvf_jax" and not state["installed"]:
      return None
    return real_find_spec(name, *args, **kwargs)

  def distributions():
    done = state["installed"]
    return [_Dist("imported_pkg", "2" if done and replace_imported else "1", [module.__file__]),
            _Dist("other_pkg", "2" if done else "1", [str(tmp_path / "other_pkg.py")])]

  def run(args, **kwargs):
    calls.append(list(args))
    state["installed"] = pip_rc == 0
    return subprocess.CompletedProcess(args, pip_rc, "", "pip: stub error\n" if pip_rc else "")

  monkeypatch.setattr(importlib.util, "find_spec", find_spec)
  monkeypatch.setattr(importlib.metadata, "distributions", distributions)
  monkeypatch.setattr(subprocess, "run", run)
  namespace = {}
  exec(install_cell(read("quickstart.ipynb")).source, namespace)
  return calls, namespace


def test_install_cell_installs_only_when_lvf_jax_is_missing(monkeypatch, tmp_path, capsys):
  calls, _ = _run_install_cell(monkeypatch, tmp_path, importable=True)
  assert calls == [] and capsys.readouterr().out == ""

  # other_pkg is upgraded, but this kernel imported nothing from it: no restart
  calls, namespace = _run_install_cell(monkeypatch, tmp_path, importable=False)
  assert calls == [[sys.executable, "-m", "pip", "install", "-q", namespace["LVF_JAX_SOURCE"]]]
  assert "no restart needed" in capsys.readouterr().out


def test_install_cell_asks_for_a_restart_only_when_pip_replaced_an_imported_package(
    monkeypatch, tmp_path):
  with pytest.raises(RuntimeError, match=r"Restart the runtime.*\(imported_pkg\)"):
    _run_install_cell(monkeypatch, tmp_path, importable=False, replace_imported=True)
  with pytest.raises(RuntimeError, match="failed"):
    _run_install_cell(monkeypatch, tmp_path, importable=False, pip_rc=1)


def test_missing_inline_image_fails_the_check():
  nb = nbformat.v4.new_notebook(cells=[
      nbformat.v4.new_code_cell("x = 1"),
      nbformat.v4.new_code_cell("plt.plot([0, 1]); plt.show()"),
      nbformat.v4.new_code_cell("fig, ax = plt.subplots()"),
  ])
  image = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                       "text/plain": "<Figure>"})
  assert cells_without_image(nb) == [1, 2]
  nb.cells[1].outputs = [image]
  assert cells_without_image(nb) == [2]
  nb.cells[2].outputs = [copy.deepcopy(image)]
  assert cells_without_image(nb) == []
  nb.cells[2].outputs[0]["data"].pop("image/png")  # a figure shown only as text
  assert cells_without_image(nb) == [2]


# --------------------------------------------------------------- executed in a kernel


def _tiny_plot_notebook(*middle):
  cells = [nbformat.v4.new_code_cell("import matplotlib, matplotlib.pyplot as plt\n"
                                     "print('backend', matplotlib.get_backend())")]
  cells += [nbformat.v4.new_code_cell(s) for s in middle]
  cells.append(nbformat.v4.new_code_cell("plt.plot([0, 1], [1, 0]); plt.show()\n"
                                         "print('backend', matplotlib.get_backend())"))
  return nbformat.v4.new_notebook(cells=cells)


def test_agg_backend_fails_the_check(tmp_path, kernel_env):
  """The check detects a kernel that draws off screen (the backend this suite must not set)."""
  kernel_env.setenv("MPLBACKEND", "Agg")
  nb = execute(_tiny_plot_notebook(), tmp_path)
  assert "backend agg" in text_of(nb.cells).lower()
  assert cells_without_image(nb) == [1]


def test_plot_after_training_is_inline(tmp_path, kernel_env):
  """train_and_evaluate (which also writes curves.png) leaves the kernel's backend alone."""
  workdir = tmp_path / "run"
  nb = execute(_tiny_plot_notebook(
      "import lvf_jax\n"
      "from lvf_jax import train\n"
      "from lvf_jax.train.config import make_config\n"
      "print('lvf_jax from', lvf_jax.__file__)\n"
      "config = make_config('copy', {'T': 3, 'K': 2}, 'rnn', 8, train=dict(\n"
      "    steps=2, batch_size=4, eval_every=2, eval_size=8, eval_batch_size=8, log_every=1,\n"
      "    checkpoint_every=2, tensorboard=False, progress_bar=False, plot=True))\n"
      f"summary = train.train_and_evaluate(config, {str(workdir)!r})"), tmp_path)
  before, training, after = (text_of([c]) for c in nb.cells)
  assert f"lvf_jax from {ROOT}" in training
  assert "inline" in before and before == after, (before, after)
  assert (workdir / "curves.png").exists() and json.loads(
      (workdir / "summary.json").read_text())["steps"] == 2
  assert cells_without_image(nb) == [] and has_image(nb.cells[-1])


def test_quickstart_notebook_executes(tmp_path, kernel_env):
  for key, value in SMALL_SETTINGS["quickstart.ipynb"].items():
    kernel_env.setenv(key, value)
  runs = tmp_path / "runs"
  runs.mkdir()
  kernel_env.setenv("LVF_QUICKSTART_TMPDIR", str(runs))
  nb = read("quickstart.ipynb")
  client = client_for(nb, tmp_path)
  train_index = next(i for i, c in code_cells(nb) if "train_and_evaluate(" in c.source)
  with client.setup_kernel():
    for i, cell in enumerate(nb.cells):
      client.execute_cell(cell, i)
    # a rerun of the training and plotting cells trains again, in a new workdir
    rerun = [copy.deepcopy(c) for c in nb.cells[train_index:]]
    for i, cell in enumerate(rerun, start=train_index):
      client.execute_cell(cell, i)

  assert install_cell(nb).outputs == []
  assert "orthogonality error of C_V" in text_of(nb.cells)
  assert cells_without_image(nb) == []
  assert [i for i, c in enumerate(rerun, start=train_index)
          if PLOTTING.search(c.source) and not has_image(c)] == []
  summaries = [json.loads(p.read_text()) for p in sorted(runs.glob("*/summary.json"))]
  assert len(summaries) == 2, sorted(runs.iterdir())
  steps = int(SMALL_SETTINGS["quickstart.ipynb"]["LVF_QUICKSTART_STEPS"])
  assert all(s["steps"] == steps and s["resumed_from"] is None for s in summaries), summaries


def test_geometry_notebook_executes(tmp_path, kernel_env):
  nb = execute(read("geometry.ipynb"), tmp_path)
  assert install_cell(nb).outputs == []
  assert cells_without_image(nb) == []
  text = text_of(nb.cells)
  for line in ("dim VF_n             =  28", "the same fields: True", "not in VF_3",
               "normality error ||D^T D - D D^T||_F, div V = 0"):
    assert line in text, line


@pytest.mark.slow  # trains four models; the other notebooks execute in the default suite
def test_dynamics_notebook_executes(tmp_path, kernel_env):
  for key, value in SMALL_SETTINGS["dynamics.ipynb"].items():
    kernel_env.setenv(key, value)
  nb = execute(read("dynamics.ipynb"), tmp_path)
  assert install_cell(nb).outputs == []
  assert cells_without_image(nb) == []
  assert len(plotting_cells(nb)) >= 5
  text = text_of(nb.cells)
  for name in ("lvf-t4-copy-nnrnn", "lvf-t4-copy-lvf-divfree", "tanh RNN trained here",
               "expRNN trained here"):
    assert name in text, name
