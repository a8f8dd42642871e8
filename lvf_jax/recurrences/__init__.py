"""Recurrences with a hand-written VJP: the sequential work only, big matmuls outside.

Plain reverse-mode autodiff of a ``jax.lax.scan`` over ``h_t = sigma(h_{t-1} K + u_t)``
computes, at every time step of its backward loop, the state cotangent
``dh_{t-1} = dz_t K^T`` (unavoidable: sequential) **and** a small weight-gradient product
``dK += h_{t-1}^T dz_t`` (avoidable: it does not feed the recursion). It also stores more
residuals than needed. The functions here run

* a forward ``lax.scan`` that does one ``(B, n) x (n, n)`` product per step and stores only
  the carries ``H = (h_1, ..., h_T)`` (which are the outputs anyway);
* a backward ``lax.scan`` that propagates **only** the state cotangent (one ``(B, n) x
  (n, n)`` product per step, the elementwise derivative fused into the loop) and writes
  the pre-activation cotangents shifted by one step, ``S_t = dz_{t+1}``, over the output
  cotangents ``dy_t`` it has just read (in place: no sequence-long buffer of its own), so
  that the weight gradient needs no shifted copy of the states;
* after the loop, **one** large product ``dK = sum_t h_{t-1}^T dz_t = H^T S + h_0^T dz_0``
  over all ``T * B`` rows (the modReLU bias gradient is accumulated in the loop). The
  input cotangent ``du = dZ``, which the loop also emits (the one new sequence of the
  backward pass), lets the caller's autodiff turn ``dW = X^T dZ`` into one large product
  as well when ``u = x W`` is the hoisted input projection.

Covered recurrences (row-vector convention ``h_t = sigma(h_{t-1} K + u_t + b)``):

* :func:`rnn_scan` -- ``h_t = sigma(h_{t-1} K + u_t, b)`` with ``sigma`` in
  ``'tanh'`` (``tanh(z + b)``), ``'modrelu'`` (``sign(z) relu(|z| + b)``, Arjovsky et al.
  2016 eq 8 / expRNN), ``'identity'`` (``z + b``) and ``'relu'`` (``relu(z + b)``). Cells:
  :class:`~lvf_jax.cells.TanhRNNCell` / ``OrthInitRNNCell`` (tanh, bias inside ``u``),
  ``ExpRNNCell`` / ``ScoRNNCell`` (expRNN eq 3, scoRNN eq 5; modReLU or tanh),
  ``NNRNNCell`` (nnRNN eq 4), ``LVFRNNCell`` (lvfRNN eq 5 / 16: ``K = C_V^T``).
  The derivative ``sigma'`` is a function of the *output* ``h_t`` for all four
  activations (``1 - h^2``; ``[h != 0]``; ``1``; ``[h > 0]``), so nothing besides the
  outputs is stored and nothing is recomputed. ``'modrelu_split'`` is the complex modReLU
  of a state carried as ``[Re h | Im h]`` (``URNNCell``, complex ``EURNNCell``; bias
  ``(n / 2,)``): its ``2 x 2`` Jacobian per unit is a function of the output too.
* :func:`euler_scan` -- ``h_t = h_{t-1} + eps tanh(h_{t-1} K + u_t)`` (AntisymmetricRNN,
  Chang et al. 2019, arXiv:1902.09689, eq 12, with ``K = (W - W^T - gamma I)^T``).
* :func:`gated_euler_scan` -- ``h_t = h_{t-1} + eps sigmoid(a_t + u^z_t) * tanh(a_t +
  u^h_t)``, ``a_t = h_{t-1} K`` (gated AntisymmetricRNN, eq 13).

For the Euler variants the derivative is not a stable function of the outputs: the scans
keep their activations in the buffers of their projected inputs, and the backward pass
writes the input cotangents over them (no extra compute and no extra memory). Wrap the
layer in ``checkpoint=True`` when memory is short.

Input projection: pass ``u = x W`` (hoisted: one large product; the default, best when the
input width ``d`` is comparable to ``n``) or, for narrow inputs (tokens, pixels: ``d`` much
smaller than ``n``), pass the raw ``x`` with ``rnn_scan(..., input_kernel=W)``: ``x_t W``
is then computed inside the loop, which saves writing and re-reading the ``(T, B, n)``
projected sequence, while ``dW = X^T dZ`` and ``dX = dZ W^T`` stay one large product each.

Memory: the residuals are the carries ``H`` (the outputs) plus, for the Euler scans, the
activations, in the buffers of the projected inputs (plain autodiff of the same
modReLU scan kept five ``T B n`` float arrays and one boolean one in the compiled HLO,
jax 0.10.2). For very long sequences run the scan through :func:`segment_scan`: the
carry is kept every ``k`` steps only and each segment is recomputed in the backward pass
(``Recurrent(segment_length=...)``).

The gated cells' scans (:func:`lstm_scan`, :func:`gru_scan` with the GORU's modReLU
candidate, :func:`ncgru_scan`) follow the same design (:mod:`lvf_jax.recurrences.gated`).
Each cell of :mod:`lvf_jax.cells` names the scan that computes it
(``StructuredCell.fused_scan``). The package is Flax-free: pure functions of arrays.

Masking: ``mask`` (boolean ``(T, *batch)``) or ``seq_lengths`` (int ``(*batch,)``) follow
:class:`lvf_jax.layers.Recurrent`: where the mask is False the carry is frozen and the
output is zero. ``reverse=True`` processes ``t = T-1, ..., 0`` with outputs aligned with
the inputs.

All functions take **time-major** inputs ``u: (T, *batch, k)`` and return
``(final_carry, outputs)`` with outputs time-major ``(T, *batch, n)``. They are pure, and
compose with ``jit``, ``vmap``, ``grad`` (first order; the hand-written backward pass is
not itself differentiable a second time) and ``jax.checkpoint``.
"""

from lvf_jax.recurrences._common import (check_seq_lengths, dot_rows, explicitly_sharded,
                                         shard_batch_like, typed_sharding)
from lvf_jax.recurrences.euler import euler_scan, gated_euler_scan
from lvf_jax.recurrences.gated import CANDIDATES, gru_scan, lstm_scan, ncgru_scan
from lvf_jax.recurrences.persistent import persistent_rnn_scan
from lvf_jax.recurrences.rnn import ACTIVATIONS, rnn_scan
from lvf_jax.recurrences.segments import (auto_segment_length, check_segment_length,
                                          segment_scan)

__all__ = ["ACTIVATIONS", "CANDIDATES", "auto_segment_length", "check_segment_length",
           "check_seq_lengths", "dot_rows", "euler_scan", "explicitly_sharded",
           "gated_euler_scan", "gru_scan", "lstm_scan", "ncgru_scan", "persistent_rnn_scan",
           "rnn_scan",
           "segment_scan", "shard_batch_like", "typed_sharding"]
