"""Smoke tests of the benchmark scripts on tiny shapes (they must keep running; no timing
is asserted)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))

import cells as cells_bench  # noqa: E402


def test_cells_benchmark_writes_every_requested_row(tmp_path):
  out = tmp_path / "cells.md"
  rc = cells_bench.main(["--cells", "exprnn", "gru", "--n", "8", "--T", "4", "--batch", "2",
                         "--repeats", "1", "--warmup", "0", "--fused", "--explain",
                         "--out", str(out)])
  assert rc == 0
  text = out.read_text()
  assert "fused=True" in text
  rows = [r for r in text.splitlines() if r.startswith("| ") and "---" not in r][1:]
  labels = [r.split("|")[1].strip() for r in rows]
  assert labels == ["exprnn", "gru", "products x 1", "products x 3", "products x 4"]
  cols = [c.strip() for c in rows[0].split("|")[1:-1]]
  # exprnn has a prepare (expm) and both paths were timed: every column is a number.
  assert all(c not in ("", "-") for c in cols[4:]), cols
  # Flax's GRU has no prepare: its prepare columns are '-'.
  assert rows[1].split("|")[-3].strip() == "-"


def test_cells_prepare_timing_is_positive():
  from lvf_jax import cells
  med, low = cells_bench.time_prepare(cells.make_cell("scornn", 6), 6, 3, 2, 0)
  assert 0 < low <= med
  assert cells_bench.time_prepare(cells.make_cell("lstm", 6), 6, 3, 1, 0) is None


def test_cells_benchmark_rejects_unknown_cell():
  with pytest.raises(SystemExit):
    cells_bench.main(["--cells", "transformer"])
