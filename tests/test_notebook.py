"""notebooks/quickstart.ipynb runs top to bottom (with a few training steps)."""

import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
  monkeypatch.setenv("LVF_QUICKSTART_STEPS", "4")
  monkeypatch.setenv("LVF_QUICKSTART_WORKDIR", str(tmp_path / "run"))
  monkeypatch.setenv("MPLBACKEND", "Agg")
  nb = nbformat.read(NOTEBOOK, as_version=4)
  client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                   resources={"metadata": {"path": str(tmp_path)}})
  client.execute()
  outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                    for o in c.get("outputs", []))
  assert "orthogonality error of C_V" in outputs
  assert (tmp_path / "run" / "summary.json").exists()
