"""The README's diagnostics figure: released copy-task models (lvfRNN Table 4) seen through
:mod:`lvf_jax.diagnostics`.

``python -m experiments.diagnostics_figure --out docs/figures/diagnostics.png``

Left: the eigenvalues of each trained model's transition matrix against the unit circle.
Right: ``||dh_T/dh_t||_F`` over the 220 steps of copy-task sequences (T = 200): how much of the
last state still depends on the state at step ``t``, the factor every gradient from the end of
the sequence is multiplied by on its way back to ``t``.
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp

from lvf_jax import diagnostics, zoo
from lvf_jax.train import builders

MODELS = (("lvf-t4-copy-nnrnn", "nnRNN"), ("lvf-t4-copy-urnn", "uRNN"),
          ("lvf-t4-copy-lvf-divfree", "lvfRNN, div V = 0"),
          ("lvf-t4-copy-lvf-separate-rates", "lvfRNN, div V free"))


def model_diagnostics(name: str, batch_size: int = 4, seed: int = 0):
  """``(eigenvalues, ||dh_T/dh_t||_F over t)`` of the released model ``name`` on a copy
  batch."""
  model, variables, config = zoo.load(name)
  pipeline = builders.build_pipeline(config)
  batch = pipeline.task.sample(jax.random.key(seed), batch_size)
  params = variables["params"]
  cell = model.cells[0]
  cell_params = params["rnn"]["layer_0"]["cell"]
  matrix = diagnostics.transition_matrices(cell, cell_params)["recurrent"]
  norms = diagnostics.state_jacobian_norms(cell, cell_params, batch.inputs)
  return diagnostics.eigenvalues(matrix), norms


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", default="docs/figures/diagnostics.png")
  args = parser.parse_args(argv)
  from matplotlib.figure import Figure  # pylint: disable=g-import-not-at-top
  fig = Figure(figsize=(10, 4))
  spec_ax, flow_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.5]})
  flows = {}
  for name, label in MODELS:
    eig, norms = model_diagnostics(name)
    diagnostics.plot_spectrum(eig, spec_ax, label=label, s=8)
    flows[label] = jnp.maximum(norms, 1e-30)
  diagnostics.plot_gradient_flow(flows, flow_ax, ylabel=r"$\|\partial h_T / \partial h_t\|_F$")
  spec_ax.legend(fontsize=7, loc="lower left")
  flow_ax.legend(fontsize=8)
  spec_ax.set_title("eigenvalues of the trained transition matrix", fontsize=9)
  flow_ax.set_title("dependence of the last state on h_t (copy task, T = 200)", fontsize=9)
  fig.tight_layout()
  fig.savefig(args.out, dpi=90)
  write_provenance(args.out, argv)
  print(args.out)


def write_provenance(figure: str, argv) -> str:
  """Writes ``<figure>.txt``: the command, commit, machine and date that drew ``figure``."""
  import sys  # pylint: disable=g-import-not-at-top
  from experiments.reproduce import harness  # pylint: disable=g-import-not-at-top
  args = sys.argv[1:] if argv is None else list(argv)
  path = os.path.splitext(figure)[0] + ".txt"
  with open(path, "w") as f:
    command = " ".join(["python -m experiments.diagnostics_figure", *args])
    f.write(f"`{command}` at {harness.git_commit()}, {harness.machine()}, {harness.utc_now()}\n")
  return path


if __name__ == "__main__":
  main()
