"""The copy ablation's page (``experiments/copy_ablation.py``): its findings follow the
verdicts of the harness's records, and the committed page is its records'."""

import os

from experiments import copy_ablation as study
from experiments.reproduce.tables.lvf import COPY_CHANGES


def _seed(accuracy, loss, steps=10000, diverged=None):
  return {"metrics": {"test_accuracy": accuracy, "test_loss": loss}, "steps": steps,
          "diverged_at": diverged, "last": {"metrics": {"val_accuracy": accuracy / 100}},
          "diagnostics": {"field_divergence": 0.5}}


def _row(*seeds):
  return {"seeds": {str(i): s for i, s in enumerate(seeds)}}


def test_the_findings_name_what_reaches_the_paper_and_what_the_preset_needs():
  good = _row(*[_seed(96.5, 0.015)] * 3)
  stored = {"copy-lvf-separate-rates": good,
            "copy-lvf-abl-lr": good,  # alone it reaches the paper (95 %, CE 0.021)
            "copy-lvf-abl-no-penalty": _row(*[_seed(40.0, 0.08)] * 3),  # falls short
            "copy-lvf-abl-no-cosine": good,
            "copy-lvf-abl-separate": _row(*[_seed(96.5, 0.015, steps=4000)] * 3)}  # partial
  text = "\n".join(study.finding_lines(stored))
  assert "of the 3 ablation rows" in text.lower()
  assert "reach the paper alone: lr;" in text
  assert "falls short of it: penalty." in text
  assert "`copy-lvf-abl-separate`" in text.split("not yet judged")[1]
  assert "No ablation row" in "\n".join(study.finding_lines({}))


def test_a_diverged_seed_is_counted_and_left_out_of_the_means():
  s = study.summary({"copy-lvf-abl-lr": _row(_seed(96.0, 0.015), _seed(90.0, 0.03),
                                             _seed(0.0, 0.0, diverged=12))}, "copy-lvf-abl-lr")
  assert (s["seeds"], s["diverged"], s["best"]) == (3, 1, "93")
  assert s["verdict"] not in study.REACHES


def test_every_change_has_both_rows_in_the_table():
  lines = study.table_lines({})
  for key, *_ in COPY_CHANGES:
    assert sum(f"`copy-lvf-abl-{key}`" in line or f"`copy-lvf-abl-no-{key}`" in line
               for line in lines) == 2


def test_the_committed_page_is_its_records(tmp_path):
  path = study.write_page(str(tmp_path / "page.md"))
  with open(path) as f, open(study.PAGE) as g:
    assert f.read() == g.read()
  assert os.path.basename(study.PAGE) == "COPY_ABLATION.md"
