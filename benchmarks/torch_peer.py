"""PyTorch peer of the benchmark models, written the way the reference code does it.

The expRNN reference implementation (Lezcano-Casado & Martinez-Rubio 2019) and the nnRNN
code that reuses it run a **Python loop over time**, call the cell once per step
(``input_kernel(x_t) + F.linear(h, B)`` then modReLU), evaluate the orthogonal matrix
``B = expm(A)`` **once per training iteration** (``torch.matrix_exp`` of the skew
generator), and let autograd differentiate through the loop; the optimiser is RMSprop.
This module is our own code written in that style (not a copy of theirs), so that
``benchmarks/speed.py`` and ``benchmarks/gpu.py`` can time it side by side with lvf_jax in
one process; :func:`exprnn_loss_and_grads` evaluates it at lvf_jax's parameters for the check
that both compute the same loss and gradients. :class:`LSTMModel` is ``torch.nn.LSTM``
(cuDNN's kernels on a GPU) with the same readout.

Optional dependency: ``pip install torch`` (the CPU build is enough; the ``torch`` extra of
``setup.cfg``). Nothing in the library imports this file.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class ModReLU(nn.Module):
  """``sign(z) relu(|z| + b)`` (Arjovsky et al. 2016 eq 8), bias ``U(-0.01, 0.01)``."""

  def __init__(self, n: int):
    super().__init__()
    self.b = nn.Parameter(torch.empty(n).uniform_(-0.01, 0.01))

  def forward(self, z):
    return torch.sign(z) * F.relu(torch.abs(z) + self.b)


class ExpRNN(nn.Module):
  """expRNN cell ``h_t = modReLU(x_t W_in + h_{t-1} B^T)``, ``B = expm(A - A^T)``."""

  def __init__(self, d_in: int, n: int):
    super().__init__()
    self.n = n
    self.input_kernel = nn.Linear(d_in, n, bias=False)
    a = torch.zeros(n, n)
    # Henaff-style init: 2x2 rotation blocks with angles U(-pi, pi).
    angles = torch.empty(n // 2).uniform_(-torch.pi, torch.pi)
    idx = torch.arange(0, 2 * (n // 2), 2)
    a[idx, idx + 1] = angles
    self.skew = nn.Parameter(a)
    self.nonlinearity = ModReLU(n)

  def orthogonal(self):
    a = torch.triu(self.skew, diagonal=1)
    return torch.matrix_exp(a - a.t())

  def cell(self, x_t, h, b_matrix):
    return self.nonlinearity(self.input_kernel(x_t) + F.linear(h, b_matrix))


class TanhRNN(nn.Module):
  """Plain ``h_t = tanh(x_t W_in + h_{t-1} W + b)`` (autograd, Python loop)."""

  def __init__(self, d_in: int, n: int):
    super().__init__()
    self.n = n
    self.input_kernel = nn.Linear(d_in, n, bias=True)
    self.recurrent = nn.Linear(n, n, bias=False)
    nn.init.orthogonal_(self.recurrent.weight)

  def orthogonal(self):
    return self.recurrent.weight

  def cell(self, x_t, h, w):
    return torch.tanh(self.input_kernel(x_t) + F.linear(h, w))


class Model(nn.Module):
  """Recurrent layer + linear readout, at every step (copy) or at the last step (MNIST)."""

  def __init__(self, cell: str, d_in: int, n: int, n_classes: int, every_step: bool):
    super().__init__()
    self.rnn = ExpRNN(d_in, n) if cell == "exprnn" else TanhRNN(d_in, n)
    self.lin = nn.Linear(n, n_classes)
    self.every_step = every_step

  def forward(self, x):  # x: (T, B, d_in), time-major like the reference loop
    b_matrix = self.rnn.orthogonal()  # once per iteration
    h = x.new_zeros(x.shape[1], self.rnn.n)
    outputs = []
    for x_t in x:  # the Python loop over time
      h = self.rnn.cell(x_t, h, b_matrix)
      if self.every_step:
        outputs.append(self.lin(h))
    if self.every_step:
      return torch.stack(outputs)
    return self.lin(h)


class LSTMModel(nn.Module):
  """``torch.nn.LSTM`` (cuDNN's fused kernels on a GPU) + linear readout: the recurrent layer
  a PyTorch user picks first."""

  def __init__(self, d_in: int, n: int, n_classes: int, every_step: bool):
    super().__init__()
    self.lstm = nn.LSTM(d_in, n)
    self.lin = nn.Linear(n, n_classes)
    self.every_step = every_step

  def forward(self, x):  # x: (T, B, d_in)
    hs, _ = self.lstm(x)
    return self.lin(hs if self.every_step else hs[-1])


CELLS = ("exprnn", "tanh", "lstm")


def make_model(cell: str, d_in: int, n: int, n_classes: int, every_step: bool) -> nn.Module:
  """The model of ``cell``, one of :data:`CELLS`."""
  if cell not in CELLS:
    raise ValueError(f"torch_peer: argument 'cell' must be one of {CELLS}; got {cell!r}.")
  if cell == "lstm":
    return LSTMModel(d_in, n, n_classes, every_step)
  return Model(cell, d_in, n, n_classes, every_step)


def load_exprnn(model: Model, params: dict) -> None:
  """Copies the parameters of ``benchmarks/speed.py``'s expRNN model (NumPy arrays: ``skew``
  (n, n), ``w_in`` (d, n), ``bias`` (n,), ``w_out`` (C, n), ``b_out`` (C,)) into ``model``."""
  named = exprnn_parameters(model)
  with torch.no_grad():
    for key, value in params.items():
      tensor, transposed = named[key]
      source = torch.from_numpy(np.array(value.T if transposed else value))  # a writable copy
      tensor.copy_(source.to(tensor.dtype))


def exprnn_parameters(model: Model) -> dict:
  """``{name in speed.py's model: (tensor, transposed)}`` of an expRNN ``Model``."""
  return {"skew": (model.rnn.skew, False), "w_in": (model.rnn.input_kernel.weight, True),
          "bias": (model.rnn.nonlinearity.b, False), "w_out": (model.lin.weight, False),
          "b_out": (model.lin.bias, False)}


def exprnn_loss_and_grads(params: dict, x, y, every_step: bool, device: str = "cpu",
                          dtype: str = "float32"):
  """The loss and the gradients (NumPy, named and laid out as ``params``) of the expRNN
  model at ``params`` on the batch ``x (T, B, d)``, ``y`` (NumPy), computed in ``dtype``."""
  n, d = params["skew"].shape[0], params["w_in"].shape[0]
  model = Model("exprnn", d, n, params["w_out"].shape[0], every_step).to(
      device=device, dtype=getattr(torch, dtype))
  load_exprnn(model, params)
  logits = model(torch.from_numpy(np.array(x)).to(device=device, dtype=getattr(torch, dtype)))
  target = torch.as_tensor(y).long().to(device)
  loss = nn.CrossEntropyLoss()(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
  loss.backward()
  grads = {}
  for key, (tensor, transposed) in exprnn_parameters(model).items():
    g = tensor.grad.detach().cpu().numpy()
    grads[key] = g.T if transposed else g
  return float(loss.detach().cpu()), grads


def make_train_step(cell: str, d_in: int, n: int, n_classes: int, every_step: bool,
                    lr: float = 1e-3, seed: int = 0, device: str = "cpu"):
  """Returns ``step(x, y) -> loss`` (forward, ``backward()``, ``RMSprop.step()``)."""
  torch.manual_seed(seed)
  model = make_model(cell, d_in, n, n_classes, every_step).to(device)
  opt = torch.optim.RMSprop(model.parameters(), lr=lr)
  loss_fn = nn.CrossEntropyLoss()

  def step(x, y):
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss

  return step
