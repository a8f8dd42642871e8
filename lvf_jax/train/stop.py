"""A stop request by signal: SIGTERM or SIGINT ends a training run at its next step, with a
checkpoint, instead of killing it where it stands.

A batch scheduler ends a job with SIGTERM (and SIGKILL a grace period later); Ctrl-C and a
notebook's "interrupt" send SIGINT. :class:`StopRequest` catches both while a run trains:
the first signal only sets :attr:`StopRequest.signal`, and the training loop then finishes
the step it is in, saves a checkpoint and its summary and raises :class:`StoppedBySignal`;
running it again resumes there.
The first signal also puts the previous handlers back, so a second signal acts as it would
without lvf_jax (SIGINT raises ``KeyboardInterrupt``, SIGTERM ends the process). The
previous handlers are restored when the run ends, too.

Signal handlers belong to the main thread: in another thread (or with ``enabled=False``)
:class:`StopRequest` installs nothing and never requests a stop.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any, Optional

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StoppedBySignal(Exception):
  """Raised by ``train_and_evaluate`` after a signal stopped the run and its checkpoint and
  summary were written (also when the signal came after the last step: the run is then
  complete, and its caller is still asked to stop).

  Attributes:
    signal: the signal's name (``'SIGTERM'``, ``'SIGINT'``).
    summary: the run's summary (``steps``: the step it stopped at and saved).
    exit_status: ``128 + signum``, the shell's status for a process ended by the signal.
  """

  def __init__(self, signal_name: str, summary: dict[str, Any]):
    self.signal, self.summary = signal_name, summary
    self.exit_status = exit_status(signal_name)
    steps, budget = summary["steps"], summary["steps_budget"]
    super().__init__(
        f"stopped at step {steps} of {budget} by {signal_name} (checkpointed); run again "
        "with the same workdir to resume." if steps < budget else
        f"{signal_name} received as the run ended: all {budget} steps done, summary written.")


class StopRequest:
  """Context manager: while it is open, SIGTERM and SIGINT request a stop.

  Attributes:
    signal: the name of the first signal received (``'SIGTERM'``, ``'SIGINT'``), or None.
  """

  def __init__(self, enabled: bool = True):
    self.enabled = bool(enabled)
    self.signal: Optional[str] = None
    self._previous: dict[int, Any] = {}

  def install(self) -> "StopRequest":
    """Installs the handlers (nothing outside the main thread or when disabled); returns
    ``self``."""
    if self.enabled and threading.current_thread() is threading.main_thread():
      for signum in SIGNALS:
        self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def restore(self) -> None:
    """Puts back the handlers :meth:`install` replaced (a no-op when none are left)."""
    for signum, handler in self._previous.items():
      signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    self._previous = {}

  def __enter__(self) -> "StopRequest":
    return self.install()

  def __exit__(self, *exc_info) -> None:
    self.restore()

  @property
  def requested(self) -> bool:
    """Whether a signal has asked the run to stop."""
    return self.signal is not None

  def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
    del frame
    self.signal = signal.Signals(signum).name
    self.restore()  # a second signal acts as it would without a stop request


def exit_status(name: Optional[str]) -> int:
  """The shell's exit status of a process ended by the signal ``name``: ``128 + signum``
  (143 for ``'SIGTERM'``, 130 for ``'SIGINT'``); 0 for None."""
  return 0 if name is None else 128 + int(signal.Signals[name])
