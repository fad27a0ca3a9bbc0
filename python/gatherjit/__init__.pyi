# Type stubs of the gatherjit package (see __init__.py for the docstrings).
from typing import Any, Dict, Literal, Optional, Sequence, Tuple, Union

import os
import numpy as np
import numpy.typing as npt

Mode = Literal["raise", "clip", "clamp"]  # a compiled kernel's
CallMode = Literal["raise", "wrap", "clip", "clamp"]  # the functions' (numpy's "wrap" too)
Device = Optional[str]  # None or "cpu", "cuda" or "cuda:N"
Layout = Union[Tuple[Sequence[int], npt.DTypeLike], Tuple[Sequence[int], npt.DTypeLike, Optional[Sequence[int]]]]

__all__ = ["take_along_axis", "take", "gather_nd", "compile", "Epilogue", "Kernel", "set_threads",
           "set_specialize", "set_epilogue_limits", "set_cache_dir", "cache_dir",
           "set_output_pool", "wait_background", "stats"]

EPILOGUES: bool
__version__: str

class Epilogue:
    """A C function fused into a kernel."""
    source: str
    function: str
    params: bytes
    row_out: Optional[int]
    file_name: str
    checked: bool
    def __init__(self, source: str, function: str, params: Any = ..., row_out: Optional[int] = ...,
                 file_name: str = ..., checked: bool = ...) -> None: ...
    @classmethod
    def from_file(cls, path: str, function: str, params: Any = ...,
                  row_out: Optional[int] = ..., checked: bool = ...) -> "Epilogue": ...

class Kernel:
    """A gather compiled for one layout of its operands (made by compile)."""
    @property
    def op(self) -> str: ...
    @property
    def output_shape(self) -> list[int]: ...
    @property
    def output_dtype(self) -> np.dtype[Any]: ...
    @property
    def symbol(self) -> str: ...
    @property
    def opt_level(self) -> str: ...
    @property
    def tier(self) -> str: ...  # "generic", "family" or "specialized": the code that runs now
    def __dask_tokenize__(self) -> Any: ...
    def __call__(self, data: npt.ArrayLike, indices: npt.ArrayLike,
                 out: Optional[np.ndarray] = ...) -> np.ndarray: ...
    def ir(self) -> str: ...
    def asm(self) -> str: ...
    def save_object(self, path: Union[str, bytes, "os.PathLike[str]"], name: str = ...,
                    header: Optional[Union[str, bytes, "os.PathLike[str]"]] = ...) -> None: ...

def take_along_axis(data: npt.ArrayLike, indices: npt.ArrayLike, axis: Optional[int],
                    out: Optional[np.ndarray] = ..., mode: CallMode = ...,
                    epilogue: Optional[Epilogue] = ..., device: Device = ...) -> np.ndarray: ...
def take(data: npt.ArrayLike, indices: npt.ArrayLike, axis: Optional[int] = ...,
         out: Optional[np.ndarray] = ..., mode: CallMode = ...,
         epilogue: Optional[Epilogue] = ...,
         device: Device = ...) -> Union[np.ndarray, np.generic]: ...  # one element: a scalar
def gather_nd(data: npt.ArrayLike, indices: npt.ArrayLike, batch_dims: int = ...,
              out: Optional[np.ndarray] = ..., mode: CallMode = ...,
              epilogue: Optional[Epilogue] = ..., device: Device = ...) -> np.ndarray: ...
def compile(op: Union[Literal["gather_elements", "gather", "gather_nd"], Dict[str, Any]],
            data: Optional[Layout] = ..., indices: Optional[Layout] = ..., axis: int = ...,
            mode: Mode = ...,
            batch_dims: Optional[int] = ...,
            epilogue: Optional[Epilogue] = ...) -> Kernel: ...
def set_threads(threads: int) -> bool: ...
def set_specialize(mode: str) -> bool: ...
def set_cache_dir(path: Optional[Union[str, "os.PathLike[str]"]]) -> bool: ...
def cache_dir() -> str: ...
def set_epilogue_limits(seconds: float = ..., memory_bytes: int = ..., isolated: bool = ...,
                        checked: bool = ...) -> bool: ...
def wait_background() -> None: ...
def set_output_pool(bytes: int, linger: Optional[float] = None) -> int: ...
def stats(device: Union[str, bool, None] = "cpu") -> Dict[str, Any]: ...
