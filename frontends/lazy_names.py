"""Graph inputs named after the user's tensors: ``module.mncore()`` names its
parameters and buffers (``model.0.weight``), and a step's ``func.func @main`` reads
them by those names in dumps and the IR, where it would read ``%in3``."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from mncore_ir.frontends.lazy_tensor import DeviceData, LazyError, LazyStorage, LazyTensor

#: The names :func:`name_inputs` gave, by the storage of the named tensor (it outlives
#: the buffers it holds), and by each buffer a named tensor was seen to hold.
_NAMED_STORAGES: weakref.WeakKeyDictionary[LazyStorage, str] = weakref.WeakKeyDictionary()
_NAMED_BUFFERS: weakref.WeakKeyDictionary[DeviceData, str] = weakref.WeakKeyDictionary()


def name_inputs(named: Iterable[tuple[str, torch.Tensor]]) -> None:
    """Name device tensors (``module.named_parameters()`` after ``.mncore()``) as graph
    inputs: a step's ``func.func @main`` then reads ``%model.0.weight`` where it would
    read ``%in3``, in dumps and the IR. The graph's cache key does not change. A view of
    part of a buffer is skipped (the graph reads the whole); one of all of it (what a
    ``Parameter`` is: a ``detach``) names it. The name follows the tensor to the buffers
    it holds when a step is compiled or :func:`note_named_buffers` is called; an input
    with no name known stays ``inN``."""
    for name, tensor in named:
        if not isinstance(tensor, LazyTensor):
            raise LazyError(f"name_inputs: {name!r} is on {tensor.device}, not the mncore "
                            "device: name tensors after moving them (.mncore())")
        if _whole(tensor):
            _NAMED_STORAGES[tensor._storage_] = name
    note_named_buffers()


def _whole(tensor: LazyTensor) -> bool:
    """Whether ``tensor`` sees all of its storage's value, element for element (same
    shape, strides and dtype as the base of its views: a view of all of it)."""
    if not tensor._views:
        return True
    base = tensor._views[0].base_meta
    return (tensor.shape, tensor.stride(), tensor.dtype) == (base.shape, base.stride(),
                                                              base.dtype)


def note_named_buffers() -> None:
    """Remember the buffer each named tensor holds now. A step that updates a parameter
    holds its new value, not the buffer the graph reads, when it is compiled: calling
    this after ``sync()`` gives the new buffers (they are the next step's inputs) their
    names. Costs nothing while no tensor is named."""
    if not _NAMED_STORAGES:
        return
    for storage, name in _NAMED_STORAGES.items():  # guarded against collection
        value = storage.value
        if type(value) is DeviceData:
            _NAMED_BUFFERS[value] = name


def input_names(inputs: Sequence[Any]) -> list[str]:
    """A step's argument names, for its ``inputs`` (buffers and scalars): a named
    buffer's name (once per graph), else ``inN``."""
    note_named_buffers()
    names = [f"in{i}" for i in range(len(inputs))]
    if _NAMED_BUFFERS:
        used: set[str] = set()
        for i, x in enumerate(inputs):
            name = _NAMED_BUFFERS.get(x) if isinstance(x, DeviceData) else None
            if name is not None and name not in used:
                names[i] = name
                used.add(name)
    return names
