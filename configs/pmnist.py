"""Permuted sequential MNIST (Le, Jaitly and Hinton 2015, arXiv:1504.00941):
``--config=configs/pmnist.py:<model>``.

As ``configs/mnist.py`` with the fixed pixel permutation ``RandomState(92916).permutation(784)``
(``--config.task.options.permutation_seed``); expRNN's pMNIST learning rate for n 170 is
1e-3 (n 360: 7e-4, n 512: 5e-4). nnRNN's n 512 set-up is its psMNIST one.
"""

import os
import runpy

_MNIST = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mnist.py"))

DATASET = "pmnist"
PRESETS = _MNIST["presets"](1e-3)


def get_config(model: str = "exprnn"):
  return _MNIST["dataset_config"](DATASET, model, PRESETS, options=_MNIST["OPTIONS"],
                                  train=_MNIST["TRAIN"])
