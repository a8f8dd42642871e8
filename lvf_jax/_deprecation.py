"""Old names of renamed public modules and objects, kept for one release with a warning."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable


def renamed_getattr(package: str, namespace: dict, *, modules: dict = None,
                    names: dict = None) -> Callable[[str], Any]:
  """A module-level ``__getattr__`` for ``package`` that serves its old names.

  Args:
    package: the package's ``__name__``.
    namespace: the package's ``globals()`` (where a renamed object now lives).
    modules: old submodule name -> new submodule name (imported on use).
    names: old attribute name -> new attribute name in ``namespace``.

  Returns:
    ``__getattr__(name)``: the new object with a ``DeprecationWarning`` naming both, or
    ``AttributeError`` for a name that was never there.
  """
  modules, names = dict(modules or {}), dict(names or {})

  def __getattr__(name: str) -> Any:
    new = modules.get(name) or names.get(name)
    if new is None:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(f"{package}.{name} is deprecated: use {package}.{new}", DeprecationWarning,
                  stacklevel=2)
    if name in modules:
      return importlib.import_module(f"{package}.{new}")
    return namespace[new]

  return __getattr__
