"""``make_optimizer(config)``: the papers' optimiser set-ups as one optax transformation."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import jax
import optax

from lvf_jax import _validation
from lvf_jax.optim import labels
from lvf_jax.optim.cayley import TWO_KERNEL_UPDATES, neumann_cayley, scornn
from lvf_jax.optim.multiplicative import multiplicative_cayley

OPTIMIZERS = ("rmsprop", "adam", "sgd", "adagrad")
ORTHOGONAL_METHODS = ("trivialization", "scornn", "neumann_cayley", "multiplicative")
SCHEDULES = ("constant", "step", "cosine")
UNITARY_GRADIENTS = ("raw", "rms")
#: The steps the Neumann series of ``'neumann_cayley'`` can take (``neumann_step``).
NEUMANN_STEPS = ("actual", "sgd")

#: Fields of the ``make_optimizer`` config and their defaults (see :func:`make_optimizer`).
DEFAULTS: dict[str, Any] = {
    "optimizer": "rmsprop",
    "learning_rate": 1e-3,
    "orth_optimizer": None,
    "lr_orth": None,
    "lr_vector_field": None,
    "lr_divergence": None,
    "orthogonal_method": "trivialization",
    "rho": 0,
    "neumann_order": 2,
    "reset_every": 100,
    "neumann_threshold": 0.5,
    "neumann_step": "actual",
    "two_kernel_update": "own",
    "reorthonormalize_every": 100,
    "unitary_gradient": "raw",
    "clip_norm": None,
    "lr_schedule": "constant",
    "lr_decay": 1.0,
    "lr_decay_steps": 1,
    "total_steps": None,
    "warmup_steps": 0,
    "rmsprop_decay": 0.99,
    "adam_b1": 0.9,
    "adam_b2": 0.999,
    "eps": 1e-8,
    "momentum": 0.0,
    "adagrad_initial_accumulator": 0.1,
    "readout_weight_decay": 0.0,
}


def default_config():
  """An ``ml_collections.ConfigDict`` holding :data:`DEFAULTS` (``None`` fields typed)."""
  import ml_collections  # pylint: disable=g-import-not-at-top
  cfg = ml_collections.ConfigDict()
  for k, v in DEFAULTS.items():
    if v is None:
      cfg[k] = ml_collections.FieldReference(None, field_type=str if k == "orth_optimizer"
                                             else (int if k == "total_steps" else float))
    else:
      cfg[k] = v
  return cfg


def _as_dict(fn: str, config: Any) -> dict[str, Any]:
  if hasattr(config, "to_dict"):
    config = config.to_dict()
  if not isinstance(config, Mapping):
    raise ValueError(
        f"{fn}: argument 'config' must be a dict or ml_collections.ConfigDict; got "
        f"{type(config).__name__}.")
  unknown = sorted(set(config) - set(DEFAULTS))
  if unknown:
    raise ValueError(
        f"{fn}: unknown config field(s) {unknown}; allowed fields are {sorted(DEFAULTS)}.")
  out = dict(DEFAULTS)
  out.update(config)
  return out


def _number(fn: str, name: str, value: Any, *, low: float = 0.0, strict: bool = True,
            high: float = float("inf")) -> float:
  ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and \
      (value > low if strict else value >= low) and value <= high
  if not ok:
    bound = f"{'>' if strict else '>='} {low}" + (f" and <= {high}" if high < float("inf") else "")
    raise ValueError(f"{fn}: config field '{name}' must be a number {bound}; got {value!r}.")
  return float(value)


def _schedule(fn: str, c: dict[str, Any], peak: float):
  kind = _validation.check_choice(fn, "lr_schedule", c["lr_schedule"], SCHEDULES)
  warmup = _validation.check_concrete_int(fn, "warmup_steps", c["warmup_steps"], minimum=0)
  if kind == "constant":
    sched = optax.constant_schedule(peak)
  elif kind == "step":
    decay = _number(fn, "lr_decay", c["lr_decay"], high=1.0)
    steps = _validation.check_concrete_int(fn, "lr_decay_steps", c["lr_decay_steps"], minimum=1)
    sched = optax.exponential_decay(peak, steps, decay, staircase=True)
  else:
    total = _validation.check_concrete_int(fn, "total_steps", c["total_steps"], minimum=1)
    sched = optax.cosine_decay_schedule(peak, max(total - warmup, 1))
  if kind == "constant" and not warmup:
    return peak
  if warmup:
    sched = optax.join_schedules(
        [optax.linear_schedule(0.0, peak, warmup), sched], [warmup])
  return sched


def _base(fn: str, name: str, kind: str, lr: Any, c: dict[str, Any]):
  _validation.check_choice(fn, name, kind, OPTIMIZERS)
  eps = _number(fn, "eps", c["eps"], strict=False)
  momentum = _number(fn, "momentum", c["momentum"], strict=False, high=1.0)
  if kind == "rmsprop":
    decay = _number(fn, "rmsprop_decay", c["rmsprop_decay"], high=1.0)
    # PyTorch's RMSprop (expRNN, scoRNN and nnRNN code): eps outside the square root.
    return optax.rmsprop(lr, decay=decay, eps=eps, eps_in_sqrt=False,
                         momentum=momentum or None)
  if kind == "adam":
    return optax.adam(lr, b1=_number(fn, "adam_b1", c["adam_b1"], strict=False, high=1.0),
                      b2=_number(fn, "adam_b2", c["adam_b2"], strict=False, high=1.0), eps=eps)
  if kind == "adagrad":
    # Duchi, Hazan, Singer 2011: g / sqrt(sum of past g^2), the sum started at a constant.
    acc = _number(fn, "adagrad_initial_accumulator", c["adagrad_initial_accumulator"],
                  strict=False)
    return optax.adagrad(lr, initial_accumulator_value=acc, eps=eps)
  return optax.sgd(lr, momentum=momentum or None)


def _no_orthogonal_params(fn: str) -> optax.GradientTransformation:
  def init_fn(params):
    names = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(params)[0]]
    if names:
      raise ValueError(
          f"{fn}: orthogonal_method='trivialization' cannot train parameters stored as "
          f"orthogonal matrices {names}; choose orthogonal_method in "
          f"{ORTHOGONAL_METHODS[1:]} or build the model with skew parameters.")
    return optax.EmptyState()

  return optax.GradientTransformation(init_fn, lambda u, s, p=None: (u, s))


def make_optimizer(config: Any) -> optax.GradientTransformationExtraArgs:
  """The papers' optimiser set-ups for any lvf_jax model, as one optax transformation.

  Parameters are grouped by :func:`lvf_jax.optim.param_labels` and trained by
  ``optax.partition``:

  * ``'default'``: ``optimizer`` at ``learning_rate``;
  * ``'vector_field'``: ``optimizer`` at ``lr_vector_field`` (default ``learning_rate``);
  * ``'divergence'`` (the divergence of a ``separate_divergence`` lvfRNN field):
    ``optimizer`` at ``lr_divergence`` (default ``lr_vector_field``);
  * ``'skew'`` (trivialised generators): ``orth_optimizer`` at ``lr_orth``;
  * ``'orthogonal'`` (matrices stored directly): ``orthogonal_method`` --
    ``'scornn'`` (:func:`scornn`, inner ``orth_optimizer`` at ``lr_orth``),
    ``'neumann_cayley'`` (:func:`neumann_cayley`, same inner), ``'multiplicative'``
    (:func:`multiplicative_cayley` at ``lr_orth``), or ``'trivialization'`` (no such
    parameters allowed; ``init`` raises if there are any);
  * ``'unitary'`` (complex unitary matrices stored as ``[Re W, Im W]``, the full-capacity
    uRNN): always :func:`multiplicative_cayley` ``(unitary=True)`` at ``lr_orth``, whatever
    ``orthogonal_method`` is, on the raw (clipped) gradient as in Wisdom et al. (2016,
    arXiv:1611.00035, eqs 8-9), or on the gradient divided elementwise by its RMSprop
    root mean square (``unitary_gradient='rms'``).

  Gradients are first clipped to global norm ``clip_norm`` (all groups together). Every
  learning rate follows the same schedule shape (``lr_schedule``). ``config`` is a dict or
  an ``ml_collections.ConfigDict`` (see :func:`default_config`).

  Config fields:
    optimizer: ``'rmsprop'`` (default; PyTorch style, eps outside the sqrt) | ``'adam'`` |
      ``'sgd'`` | ``'adagrad'`` (Duchi, Hazan, Singer 2011; one of the AntisymmetricRNN
      paper's two optimisers, Chang et al. 2019, arXiv:1902.09689, App. C).
    learning_rate: peak learning rate of the non-orthogonal parameters (default 1e-3).
    orth_optimizer: optimiser for ``skew`` and the inner optimiser of the Riemannian
      methods (default: ``optimizer``; expRNN/scoRNN use ``'rmsprop'``).
    lr_orth: learning rate of the orthogonal group (default ``learning_rate / 10``).
    lr_vector_field: learning rate of ``vector_field`` (default ``learning_rate``).
    lr_divergence: learning rate of ``vector_field_divergence`` (default
      ``lr_vector_field``): one step moves each ``(div V)_i`` by about this rate.
    orthogonal_method: ``'trivialization'`` (default) | ``'scornn'`` |
      ``'neumann_cayley'`` | ``'multiplicative'``.
    rho: number of -1 entries of scoRNN's ``D`` for every orthogonal matrix (default 0).
    neumann_order: 1 | 2 (default) | 3.
    reset_every: exact inverse every this many updates (Neumann; default 100; 0 = only
      when the validity check fails).
    neumann_threshold: validity threshold on ``||Ainv dA||_F`` in (0, 1] (default 0.5).
    neumann_step: the step the Neumann series takes: ``'actual'`` (default; Alg. 1) or
      ``'sgd'``, ``lr_orth * dL/dA`` as the NC-GRU authors' released code
      (:func:`neumann_cayley`'s ``sgd_series_lr``; ``W`` then leaves the orthogonal group
      between exact resets).
    two_kernel_update: ``'own'`` (default; Alg. 1 for each orthogonal matrix) or
      ``'released'``, NC-GRU(U_c, U_r)'s update in the authors' released code
      (:func:`neumann_cayley`'s ``two_kernel_update``; ``'neumann_cayley'`` only).
    reorthonormalize_every: polar projection period of ``'multiplicative'`` and of the
      ``'unitary'`` group (default 100; 0 = never).
    unitary_gradient: the gradient the ``'unitary'`` group's Cayley step takes: ``'raw'``
      (default) or ``'rms'``, ``g / (sqrt(nu) + eps)`` with ``nu`` RMSprop's running mean of
      ``g^2`` at ``rmsprop_decay`` from 0 (the full-capacity uRNN authors' pixel-MNIST
      runs, whose ``lr_orth`` is 1e-6 for this normalised gradient).
    clip_norm: global gradient-norm clip (default ``None`` = no clipping).
    lr_schedule: ``'constant'`` (default) | ``'step'`` (multiply by ``lr_decay`` every
      ``lr_decay_steps`` updates, staircase) | ``'cosine'`` (to 0 at ``total_steps``).
    lr_decay, lr_decay_steps, total_steps: see ``lr_schedule``.
    warmup_steps: linear warm-up from 0 (default 0).
    rmsprop_decay: RMSprop's ``alpha`` (default 0.99, PyTorch's).
    adam_b1, adam_b2: Adam's betas (default 0.9, 0.999; nnRNN PTB uses 0.0, 0.9).
    eps: epsilon of RMSprop / Adam / Adagrad (default 1e-8).
    momentum: RMSprop / SGD momentum (default 0).
    adagrad_initial_accumulator: Adagrad's starting sum of squared gradients (default 0.1,
      optax's and TensorFlow's; PyTorch starts at 0).
    readout_weight_decay: ``wd``: ``wd * K`` is added to the gradient of every readout
      kernel ``K`` (a ``kernel`` inside a module named ``head``) before clipping, the
      gradient of ``wd / 2 ||K||^2`` added to the loss, as the NC-GRU authors' code does for
      its output matrix (Mucllari et al. 2022, arXiv:2208.06496; default 0: none).

  Returns:
    ``optax.GradientTransformationExtraArgs``; call ``update(grads, state, params)``.

  Example (expRNN's set-up: RMSprop, ``lr_orth = lr / 10``)::

    tx = make_optimizer({'optimizer': 'rmsprop', 'learning_rate': 1e-3})
  """
  fn = "make_optimizer"
  c = _as_dict(fn, config)
  lr = _number(fn, "learning_rate", c["learning_rate"])
  lr_orth = lr / 10 if c["lr_orth"] is None else _number(fn, "lr_orth", c["lr_orth"])
  lr_vf = lr if c["lr_vector_field"] is None else _number(
      fn, "lr_vector_field", c["lr_vector_field"])
  lr_div = lr_vf if c["lr_divergence"] is None else _number(
      fn, "lr_divergence", c["lr_divergence"])
  kind = _validation.check_choice(fn, "optimizer", c["optimizer"], OPTIMIZERS)
  orth_kind = kind if c["orth_optimizer"] is None else c["orth_optimizer"]
  _validation.check_choice(fn, "orth_optimizer", orth_kind, OPTIMIZERS)
  method = _validation.check_choice(fn, "orthogonal_method", c["orthogonal_method"],
                                    ORTHOGONAL_METHODS)
  _neumann_only(fn, c, method)

  sched, sched_orth, sched_vf, sched_div = (_schedule(fn, c, v)
                                            for v in (lr, lr_orth, lr_vf, lr_div))
  orth_inner = _base(fn, "orth_optimizer", orth_kind, sched_orth, c)
  every = _validation.check_concrete_int(fn, "reorthonormalize_every",
                                         c["reorthonormalize_every"], minimum=0, allow_none=True)
  if method == "trivialization":
    orth = _no_orthogonal_params(fn)
  elif method == "multiplicative":
    orth = multiplicative_cayley(sched_orth, reorthonormalize_every=every)
  else:
    rho = _validation.check_concrete_int(fn, "rho", c["rho"], minimum=0)
    if method == "scornn":
      orth = scornn(orth_inner, rho)
    else:
      sgd = _validation.check_choice(fn, "neumann_step", c["neumann_step"],
                                     NEUMANN_STEPS) == "sgd"
      two = _validation.check_choice(fn, "two_kernel_update", c["two_kernel_update"],
                                     TWO_KERNEL_UPDATES)
      orth = neumann_cayley(orth_inner, rho, order=c["neumann_order"],
                            reset_every=c["reset_every"], threshold=c["neumann_threshold"],
                            sgd_series_lr=lr_orth if sgd else None, two_kernel_update=two)
  unitary = multiplicative_cayley(sched_orth, reorthonormalize_every=every, unitary=True)
  if _validation.check_choice(fn, "unitary_gradient", c["unitary_gradient"],
                              UNITARY_GRADIENTS) == "rms":
    decay = _number(fn, "rmsprop_decay", c["rmsprop_decay"], high=1.0)
    eps = _number(fn, "eps", c["eps"], strict=False)
    unitary = optax.chain(optax.scale_by_rms(decay=decay, eps=eps, eps_in_sqrt=False),
                          unitary)
  tx = optax.partition({
      labels.DEFAULT: _base(fn, "optimizer", kind, sched, c),
      labels.VECTOR_FIELD: _base(fn, "optimizer", kind, sched_vf, c),
      labels.DIVERGENCE: _base(fn, "optimizer", kind, sched_div, c),
      labels.SKEW: orth_inner,
      labels.ORTHOGONAL: orth,
      labels.UNITARY: unitary,
  }, labels.param_labels)
  if c["clip_norm"] is not None:
    tx = optax.chain(optax.clip_by_global_norm(_number(fn, "clip_norm", c["clip_norm"])), tx)
  wd = _number(fn, "readout_weight_decay", c["readout_weight_decay"], strict=False)
  if wd > 0:
    tx = optax.chain(optax.add_decayed_weights(wd, mask=readout_kernels), tx)
  return optax.with_extra_args_support(tx)


def _neumann_only(fn: str, c: dict, method: str) -> None:
  """Raises ValueError where an option of ``'neumann_cayley'`` alone is set away from its
  default with another ``orthogonal_method`` (which would ignore it)."""
  if method == "neumann_cayley":
    return
  for key in ("neumann_step", "two_kernel_update"):
    if c[key] != DEFAULTS[key]:
      raise ValueError(
          f"{fn}: config field {key!r} applies to orthogonal_method='neumann_cayley' only "
          f"(default {DEFAULTS[key]!r} otherwise); got {key}={c[key]!r} with "
          f"orthogonal_method={method!r}.")


def readout_kernels(params: Any) -> Any:
  """``params``'s tree of booleans: True at every ``kernel`` inside a module named ``head``
  (the readout of :mod:`lvf_jax.models`)."""
  def is_readout(path, _):
    names = [getattr(k, "key", None) for k in path]
    return bool(names) and names[-1] == "kernel" and "head" in names[:-1]
  return jax.tree_util.tree_map_with_path(is_readout, params)
