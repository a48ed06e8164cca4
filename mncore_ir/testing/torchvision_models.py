"""torchvision's models, imported beside this project's torch build.

The torchvision 0.28.0 wheel on PyPI (the release for torch 2.13) carries C++ operators
built against torch's CUDA build, which do not load beside the CPU build; its
``_meta_registrations`` then fail at import, registering fake kernels for operators
(``torchvision::nms``, ``roi_align``, ...) that were never defined. The models are pure
Python and use none of them, so the module is left out before torchvision is imported
and the models are torchvision's own, unmodified."""

from __future__ import annotations

import sys
import types

sys.modules.setdefault("torchvision._meta_registrations",
                       types.ModuleType("torchvision._meta_registrations"))

import torchvision  # noqa: E402

models = torchvision.models
__all__ = ["models", "torchvision"]
