"""Entry point in the style of the Flax examples.

    python -m experiments.main --config=configs/copy.py:lvf --workdir=/tmp/copy_lvf
"""

from lvf_jax.train.cli import run

if __name__ == "__main__":
  run()
