# Type stubs of gatherjit.torch (see torch.py for the docstrings).
from typing import Literal

import torch

__all__ = ["register", "gather_elements", "gather", "gather_nd"]

Mode = Literal["raise", "clip", "clamp", "wrap"]

def register() -> None: ...
def gather_elements(data: torch.Tensor, indices: torch.Tensor, axis: int,
                    mode: Mode = ...) -> torch.Tensor: ...
def gather(data: torch.Tensor, indices: torch.Tensor, axis: int = ...,
           mode: Mode = ...) -> torch.Tensor: ...
def gather_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int = ...,
              mode: Mode = ...) -> torch.Tensor: ...
