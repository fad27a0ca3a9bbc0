from typing import Any, Literal, Optional

import dask.array as da

from . import Epilogue

__all__ = ["take_along_axis", "take", "gather_nd", "embedding_lookup"]

_Mode = Literal["raise", "clip", "clamp", "wrap"]

def take_along_axis(x: Any, indices: Any, axis: int, mode: _Mode = ...) -> da.Array: ...
def take(x: Any, indices: Any, axis: int = ..., mode: _Mode = ...) -> da.Array: ...
def gather_nd(x: Any, indices: Any, batch_dims: int = ..., mode: _Mode = ...) -> da.Array: ...
def embedding_lookup(table: Any, ids: Any, mode: _Mode = ...,
                     epilogue: Optional[Epilogue] = ...) -> da.Array: ...
