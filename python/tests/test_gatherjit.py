"""gatherjit's Python package against numpy: every dtype, ranks, axes,
strided views, both policies, out=, errors, compiled kernels and pickling."""

import os
import pickle
import re
import signal
import sys
import threading
import time

import numpy as np
import pytest

import gatherjit as gj

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8",
          "uint64", "uint32", "uint16", "uint8", "bool", "complex64", "complex128", "S5"]
INDEX_DTYPES = ["int64", "int32", "uint64", "uint32"]


def random_array(rng, shape, dtype):
    if np.dtype(dtype).kind == "S":
        return rng.integers(0, 1000, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def valid_indices(rng, shape, size, dtype):
    signed = np.dtype(dtype).kind == "i"
    low = -size if signed else 0
    return rng.integers(low, size, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_take_along_axis_matches_numpy(dtype, index_dtype):
    rng = np.random.default_rng(abs(hash((dtype, index_dtype))) % 2**32)
    for rank in range(1, 5):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=rank))
        data = random_array(rng, shape, dtype)
        for axis in range(-rank, rank):
            ishape = list(shape)
            ishape[axis] = int(rng.integers(1, 6))
            idx = valid_indices(rng, ishape, shape[axis], index_dtype)
            np.testing.assert_array_equal(gj.take_along_axis(data, idx, axis),
                                          np.take_along_axis(data, idx.astype(np.int64), axis))


@pytest.mark.parametrize("dtype", ["float32", "int8", "complex128"])
def test_take_matches_numpy(dtype):
    rng = np.random.default_rng(7)
    data = random_array(rng, (5, 6, 7), dtype)
    for axis in (0, 1, 2, -1):
        for ishape in ((), (3,), (2, 4)):
            idx = valid_indices(rng, ishape, data.shape[axis], "int64")
            np.testing.assert_array_equal(gj.take(data, idx, axis), np.take(data, idx, axis))
    idx = valid_indices(rng, (9,), data.size, "int32")
    np.testing.assert_array_equal(gj.take(data, idx, axis=None), np.take(data, idx))


def numpys_outcome(call):
    """The result of `call`, or the class of the error it raised."""
    try:
        return call()
    except Exception as e:
        return type(e)


def test_random_takes_and_their_errors_match_numpy():
    # Random data (dtypes, ranks 1-5 with empty dimensions, transposed and
    # reversed views), axes, index types and indices in and out of range,
    # in every mode: each result is numpy's, and each error is of a class
    # numpy raises.
    rng = np.random.default_rng(20261127)
    dtypes = [np.float32, np.float64, np.int8, np.uint16, np.int64, np.complex64, np.bool_,
              np.float16]
    index_dtypes = [np.int32, np.int64, np.uint8, np.int16, np.uint32]
    errors = 0
    for case in range(400):
        rank = int(rng.integers(1, 6))
        data = (rng.standard_normal(tuple(int(s) for s in rng.integers(0, 5, size=rank))) *
                10).astype(dtypes[case % len(dtypes)])
        if rank > 1 and rng.random() < 0.3:
            data = np.swapaxes(data, 0, rank - 1)
        if rng.random() < 0.2:
            data = data[..., ::-1]
        if rng.random() < 0.2:
            # Every other element of a larger array, reversed along one axis
            # (an empty view of it too, which keeps its negative stride).
            flip = int(rng.integers(0, rank))
            large = np.zeros(tuple(2 * s + 1 for s in data.shape), data.dtype)
            view = large[tuple(slice(None, None, -2 if d == flip else 2) for d in range(rank))]
            view = view[tuple(slice(0, s) for s in data.shape)]
            view[...] = data
            data = view
        axis = int(rng.integers(-rank, rank))
        size = data.shape[axis]
        mode = ("raise", "clip", "wrap")[case % 3]
        index_dtype = index_dtypes[int(rng.integers(0, len(index_dtypes)))]
        signed = np.dtype(index_dtype).kind == "i"
        # (numpy 1.24's take never returns from mode="wrap" on an empty axis.)
        if mode == "wrap" and size == 0:
            continue
        ishape = tuple(int(s) for s in rng.integers(0, 4, size=int(rng.integers(0, 3))))
        idx = rng.integers(-size - 2 if signed else 0, size + 2, size=ishape).astype(index_dtype)
        want_take = numpys_outcome(lambda: np.take(data, idx, axis=axis, mode=mode))
        along = list(data.shape)
        along[axis] = int(rng.integers(0, 4))
        idx2 = rng.integers(-size - 1, size + 1, size=along)
        want_along = numpys_outcome(lambda: np.take_along_axis(data, idx2, axis))
        for want, call in ((want_take, lambda: gj.take(data, idx, axis=axis, mode=mode)),
                           (want_along, lambda: gj.take_along_axis(data, idx2, axis))):
            context = f"case {case}: {data.dtype} {data.shape} axis {axis} {mode} {idx.dtype}"
            if isinstance(want, type):
                errors += 1
                with pytest.raises(want):
                    call()
                continue
            got = call()
            assert np.asarray(got).dtype == np.asarray(want).dtype, context
            np.testing.assert_array_equal(got, want, err_msg=context)
    assert errors > 50, "too few cases exercise errors"


def test_a_take_of_one_element_is_numpys_scalar():
    data = np.arange(12.0, dtype=">f4").reshape(3, 4)
    # One element (a scalar index from the flattened data, or into a row):
    # numpy gives a scalar of the data's type in native byte order.
    for got, want in [(gj.take(data, 5, axis=None), np.take(data, 5)),
                      (gj.take(data[1], np.array(2)), np.take(data[1], np.array(2))),
                      (gj.take(data[1], -1, mode="wrap"), np.take(data[1], -1, mode="wrap"))]:
        assert type(got) is type(want) is np.float32
        assert got == want
    # Anything of rank 1 or more stays an array, and out= is returned.
    assert isinstance(gj.take(data, 1, axis=0), np.ndarray)
    out = np.empty((), ">f4")
    assert gj.take(data, 5, axis=None, out=out) is out and out == 5.0


def test_gather_nd_matches_advanced_indexing():
    rng = np.random.default_rng(3)
    data = random_array(rng, (6, 5, 4), "float32")
    for t in (1, 2, 3):
        idx = np.stack([rng.integers(0, data.shape[k], size=(7, 2)) for k in range(t)], -1)
        np.testing.assert_array_equal(gj.gather_nd(data, idx), data[tuple(np.moveaxis(idx, -1, 0))])
    # batch_dims = 1: each batch gathers from its own slice.
    idx = rng.integers(0, 5, size=(6, 3, 1))
    expected = np.stack([data[b][idx[b, :, 0]] for b in range(6)])
    np.testing.assert_array_equal(gj.gather_nd(data, idx, batch_dims=1), expected)


def test_strided_views_run_in_place_without_copies():
    rng = np.random.default_rng(11)
    base = random_array(rng, (40, 30), "float32")
    view = base.T[::2, 1:]  # Transposed, stepped, offset: no copy is made.
    idx = valid_indices(rng, (15, 7), view.shape[1], "int64")
    out_base = np.zeros((20, 15), dtype=np.float32)
    out = out_base.T[:, ::2][:, :7]  # A strided output.
    assert out.shape == (15, 7)
    result = gj.take_along_axis(view, idx, 1, out=out)
    assert result is out
    np.testing.assert_array_equal(out, np.take_along_axis(view, idx, 1))
    # Only out's elements were written.
    untouched = np.ones_like(out_base, dtype=bool)
    untouched.T[:, ::2][:, :7] = False
    assert not out_base[untouched].any()


def test_numpy_broadcasting_of_take_along_axis():
    data = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3]])  # Broadcast over the rows.
    np.testing.assert_array_equal(gj.take_along_axis(data, idx, 1),
                                  np.take_along_axis(data, idx, 1))
    # Shapes that do not broadcast raise what numpy raises (IndexError),
    # which is also a ValueError.
    with pytest.raises(IndexError):
        np.take_along_axis(data, np.zeros((2, 2), np.int64), 1)
    for error in (IndexError, ValueError):
        with pytest.raises(error, match=r"data \(3, 4\) and indices \(2, 2\) do not broadcast "
                                        "at dimension 0"):
            gj.take_along_axis(data, np.zeros((2, 2), np.int64), 1)
    # A size of 1 broadcasts against a size of 0 too, on either side: an
    # empty result of numpy's shape.
    for d_shape, i_shape, axis in [((3, 0), (0, 1), 0), ((0, 2, 4), (1, 2, 1), 2),
                                   ((1, 2, 0), (1, 1, 1), 0), ((0, 1), (1, 3), 1)]:
        d = np.ones(d_shape, np.float32)
        i = np.zeros(i_shape, np.int64)
        got, want = gj.take_along_axis(d, i, axis), np.take_along_axis(d, i, axis)
        assert got.shape == want.shape, (d_shape, i_shape)
    # Ranks that differ: numpy's ValueError, in take_along_axis's words.
    with pytest.raises(ValueError, match="take_along_axis: indices of rank 1 and data of rank 2; "
                                         "the ranks must be equal"):
        gj.take_along_axis(data, np.zeros(2, np.int64), 1)


def test_modes():
    data = np.arange(5.0)
    idx = np.array([0, 7, -1, -9])
    with pytest.raises(IndexError, match=r"^indices\[1\] = 7 is out of range for axis 0 of size 5"):
        gj.take(data, idx)
    # clamp: negative indices wrap once, then every index is clamped.
    np.testing.assert_array_equal(gj.take(data, idx, mode="clamp"), [0.0, 4.0, 4.0, 0.0])
    # clip: numpy's, which does not wrap negative indices.
    for dtype in INDEX_DTYPES:
        i = np.array([0, 7, 2, 4], dtype=dtype) if dtype[0] == "u" else idx.astype(dtype)
        np.testing.assert_array_equal(gj.take(data, i, mode="clip"),
                                      np.take(data, i.astype(np.int64), mode="clip"))
    rng = np.random.default_rng(2)
    grid = rng.standard_normal((6, 9))
    far = rng.integers(-20, 20, size=(6, 12))
    np.testing.assert_array_equal(gj.take_along_axis(grid, far, 1, mode="clip"),
                                  np.take_along_axis(grid, np.clip(far, 0, 8), 1))
    with pytest.raises(ValueError, match="mode"):
        gj.take(data, idx, mode="wrapp")


def test_bad_input_is_an_exception():
    data = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="axis"):
        gj.take_along_axis(data, np.zeros((3, 4), dtype=np.int64), 2)
    # Indices that are not integers: numpy's take raises TypeError, its
    # take_along_axis IndexError; gatherjit's error is both.
    for bad in (np.zeros(2, dtype=np.float32), np.zeros(2, dtype=bool)):
        with pytest.raises(TypeError, match="indices must be integers, not"):
            gj.take(data, bad)
        with pytest.raises(IndexError, match="indices must be integers"):
            gj.take_along_axis(data, bad.reshape(1, 2), 1)
        with pytest.raises(TypeError, match="indices must be integers"):
            gj.take(data, bad, mode="wrap")
    with pytest.raises(ValueError, match="out has shape"):
        gj.take(data, np.zeros(2, dtype=np.int64), out=np.zeros((3, 3), dtype=np.float32))
    # An out of another dtype: a ValueError, and a TypeError as numpy's take
    # raises for an out it cannot cast to.
    for error in (ValueError, TypeError):
        with pytest.raises(error, match="out has dtype float64; the result's is float32$"):
            gj.take(data, np.zeros(2, dtype=np.int64), out=np.zeros((2, 4), dtype=np.float64))
    with pytest.raises(ValueError, match="read-only"):
        out = np.zeros((2, 4), dtype=np.float32)
        out.flags.writeable = False
        gj.take(data, np.zeros(2, dtype=np.int64), out=out)


class _Measured(np.ndarray):
    """A subclass carrying an attribute, as unit-carrying arrays do."""

    def __array_finalize__(self, obj):
        self.unit = getattr(obj, "unit", None)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_numpy_subclasses_come_back_as_numpy_gives_them():
    matrix = np.matrix(np.arange(12).reshape(3, 4))
    for indices, axis in (([2, 0], 1), ([2, 0], 0), ([1, 2], None), (1, None)):
        expected = np.take(matrix, indices, axis=axis)
        got = gj.take(matrix, indices, axis=axis)
        assert type(got) is type(expected) is np.matrix
        np.testing.assert_array_equal(got, expected)
        assert got.shape == expected.shape
    along = np.matrix([[0], [3], [1]])
    got = gj.take_along_axis(matrix, along, axis=1)
    assert type(got) is np.matrix
    np.testing.assert_array_equal(got, np.take_along_axis(matrix, along, axis=1))
    records = np.rec.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])
    got = gj.take(records, [1, 0, 1])
    assert type(got) is np.recarray
    assert got.a.tolist() == [3, 1, 3] and got.b.tolist() == [4.0, 2.0, 4.0]
    measured = np.arange(12.0).reshape(3, 4).view(_Measured)
    measured.unit = "m"
    ids = np.array([[3, 0], [1, 1], [2, 0]])
    for got, expected in ((gj.take(measured, [2, 0], axis=1), np.take(measured, [2, 0], axis=1)),
                          (gj.take_along_axis(measured, ids, axis=1),
                           np.take_along_axis(measured, ids, axis=1)),
                          (gj.gather_nd(measured, np.array([[2, 1], [0, 3]])),
                           measured[[2, 0], [1, 3]])):
        assert type(got) is type(expected) is _Measured
        assert got.unit == expected.unit == "m"
        np.testing.assert_array_equal(got, expected)
    assert type(gj.take(measured, 5, axis=None)) is type(np.take(measured, 5)) is np.float64


def test_masked_arrays_are_refused_rather_than_their_masks_dropped():
    masked = np.ma.masked_array(np.arange(6.0).reshape(2, 3), mask=[[0, 1, 0], [1, 0, 0]])
    ids = np.array([[2, 1, 0], [0, 0, 1]])
    calls = {
        "data": [lambda: gj.take(masked, [1, 0]),
                 lambda: gj.take(masked, [1, 0], axis=None),
                 lambda: gj.take_along_axis(masked, ids, 1),
                 lambda: gj.gather_nd(masked, np.array([[1, 2]])),
                 lambda: gj.compile("gather", masked, np.array([0]))(masked, np.array([0]))],
        "indices": [lambda: gj.take(masked.data, np.ma.masked_array(ids, mask=ids > 1), axis=1)],
        "out": [lambda: gj.take(masked.data, [1, 0], out=np.ma.masked_array(np.zeros((2, 3))))],
    }
    for name, made in calls.items():
        for call in made:
            with pytest.raises(TypeError, match=rf"^{name} is a numpy masked array; .*"
                               rf"numpy\.ma\.getmaskarray\({name}\)"):
                call()
    # Other subclasses are gathered as their arrays, as before.
    class Tagged(np.ndarray):
        pass
    got = gj.take(np.arange(4.0).view(Tagged), [3, 1])
    assert got.tolist() == [3.0, 1.0]
    k = gj.compile("gather", np.arange(4.0), np.array([0, 0]))
    assert k(np.arange(4.0).view(Tagged), np.array([2, 1]).view(Tagged)).tolist() == [2.0, 1.0]


def test_negative_strides_are_copied_not_misread():
    data = np.arange(10.0)[::-1]
    idx = np.array([0, 9, 4])
    np.testing.assert_array_equal(gj.take(data, idx), np.take(data, idx))


def test_empty_arrays_with_negative_strides_run_as_numpy_runs_them():
    # numpy calls an array without elements contiguous whatever its strides,
    # so no copy makes them forward ones: such an operand is still taken.
    table = np.arange(28, dtype=np.float32).reshape(1, 7, 4)
    empty = table[0:0, ::-2]
    assert empty.shape == (0, 4, 4) and empty.strides[1] < 0
    for got, want in [
        (gj.take(empty, [0, 3], axis=1), np.take(empty, [0, 3], axis=1)),
        (gj.take_along_axis(empty, np.zeros((0, 4, 2), np.int64), axis=2),
         np.take_along_axis(empty, np.zeros((0, 4, 2), np.int64), axis=2)),
        (gj.gather_nd(empty, np.zeros((0, 1), np.int64)), np.zeros((0, 4, 4), np.float32)),
    ]:
        assert got.shape == want.shape and got.dtype == want.dtype
    out = np.zeros((1, 2, 4), np.float32)[0:0, ::-1]
    assert gj.take(empty, [0, 3], axis=1, out=out) is out
    k = gj.compile("gather", data=empty, indices=np.array([1, 2]), axis=1)
    assert k(empty, np.array([1, 2])).shape == (0, 2, 4)
    assert k(np.zeros((0, 4, 4), np.float32), np.array([1, 2])).shape == (0, 2, 4)
    # Nothing before the axis has elements: numpy checks no index.
    assert gj.take(empty, [4], axis=1).shape == np.take(empty, [4], axis=1).shape == (0, 1, 4)


def test_compiled_kernels_check_layouts_and_pickle():
    k = gj.compile("gather", data=((100, 8), "float32"), indices=((5,), "int32"), axis=0)
    data = np.arange(800, dtype=np.float32).reshape(100, 8)
    idx = np.array([99, 0, -1, 50, 3], dtype=np.int32)
    out = np.empty((5, 8), dtype=np.float32)
    assert k(data, idx, out=out) is out
    np.testing.assert_array_equal(out, data[idx])
    assert k.output_shape == [5, 8]
    assert "define" in k.ir() and k.symbol in k.asm()
    again = pickle.loads(pickle.dumps(k))
    np.testing.assert_array_equal(again(data, idx), data[idx])
    # The error names the array's layout and the kernel's.
    with pytest.raises(ValueError, match=re.escape(
            "data: the array's shape, dtype or strides differ from the kernel's (float32 "
            "(100, 8), strides (8, 1) elements): the array is float32 (100, 4), strides (8, 2) "
            "elements; compile a kernel for it")):
        k(data[:, ::2], idx)
    with pytest.raises(ValueError, match=re.escape("int32 (5,), strides (1,) elements): the "
                                                   "array is int64 (5,), strides (1,) elements")):
        k(data, idx.astype(np.int64))
    # Strides that are no whole number of elements are named in bytes.
    odd = np.ndarray((100, 8), np.float32, np.zeros(4000, np.uint8), 1, (33, 4))
    with pytest.raises(ValueError, match=re.escape("the array is float32 (100, 8), strides "
                                                   "(33, 4) bytes;")):
        k(odd, idx)
    # Only leading ones may be left out: an array of a lower rank holds
    # fewer elements than the kernel would read.
    with pytest.raises(ValueError, match="^data: the array's shape"):
        k(data[0], idx)
    with pytest.raises(ValueError, match="^indices: the array's shape"):
        gj.compile("gather_elements", data=((2, 3), "float64"), indices=((2, 1), "int64"),
                   axis=1)(np.arange(6.).reshape(2, 3), np.array([2]))
    # A layout a kernel cannot read is named with the operand it describes.
    with pytest.raises(ValueError, match=r"^data: the layout's strides \(-8, 1\) holds -8.*"
                                         r"negative strides"):
        gj.compile("gather", data[::-1], idx, 0)
    with pytest.raises(ValueError, match=r"^indices: the layout's shape \(-5,\) holds -5"):
        gj.compile("gather", data, ((-5,), "int32"), 0)
    nd = gj.compile("gather_nd", data=((4, 5), "int16"), indices=((3, 2), "int64"))
    d = np.arange(20, dtype=np.int16).reshape(4, 5)
    t = np.array([[0, 0], [3, 4], [-1, -2]])
    np.testing.assert_array_equal(nd(d, t), [0, 19, 18])


def test_a_kernel_takes_its_operands_by_position_or_by_keyword():
    k = gj.compile("gather", data=((10, 3), "int32"), indices=((4,), "int64"), axis=0)
    data = np.arange(30, dtype=np.int32).reshape(10, 3)
    idx = np.array([9, 0, -1, 2])
    want = data[idx]
    for call in (lambda out: k(data, idx, out), lambda out: k(data, idx, out=out),
                 lambda out: k(data, indices=idx, out=out),
                 lambda out: k(out=out, indices=idx, data=data),
                 lambda out: k.__call__(data, idx, out=out)):
        out = np.zeros((4, 3), dtype=np.int32)
        assert call(out) is out
        np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(k(indices=idx, data=data), want)
    # Python's own errors for the arguments, in Python's words.
    for args, kwargs, message in [
            ((data,), {}, "missing required argument 'indices'"),
            ((), {"indices": idx}, "missing required argument 'data'"),
            ((data, idx, None, 1), {}, "takes from 2 to 3 positional arguments but 4 were given"),
            ((data, idx), {"output": None}, "got an unexpected keyword argument 'output'"),
            ((data, idx), {"indices": idx}, "got multiple values for argument 'indices'")]:
        with pytest.raises(TypeError, match=r"^Kernel\.__call__\(\) " + message):
            k(*args, **kwargs)
    # Errors of the call itself are the binding's: a bad index names its place.
    with pytest.raises(IndexError, match=r"= 10 \(position 2\) is out of range"):
        k(data, np.array([0, 1, 10, 2]), out=np.zeros((4, 3), dtype=np.int32))


def test_the_functions_take_their_arguments_as_python_functions_do():
    import inspect
    data = np.arange(12, dtype=np.int64).reshape(3, 4)
    rows, cols = np.array([2, -1]), np.array([[3], [0], [1]])
    tuples = np.array([[0, 3], [2, 1]])
    for f, args, want in [(gj.take, (data, rows), data[rows]),
                          (gj.take_along_axis, (data, cols, 1), np.take_along_axis(data, cols, 1)),
                          (gj.gather_nd, (data, tuples), data[tuples[:, 0], tuples[:, 1]])]:
        names = list(inspect.signature(f).parameters)
        assert names[:2] == ["data", "indices"] and names[3:] == [
            "out", "mode", "epilogue", "device"]
        assert pickle.loads(pickle.dumps(f)) is f
        assert f.__doc__ and f.__name__ in repr(f)
        by_name = dict(zip(names, args))
        calls = [lambda **kw: f(*args, **kw), lambda **kw: f(**by_name, **kw),
                 lambda **kw: f(*args[:1], **{k: v for k, v in by_name.items() if k != "data"},
                                **kw)]
        for call in calls:
            np.testing.assert_array_equal(call(), want)
            np.testing.assert_array_equal(call(mode="clamp", device="cpu", epilogue=None), want)
            out = np.zeros_like(want)
            assert call(out=out) is out
            np.testing.assert_array_equal(out, want)
        # Other operands go the general way, to the same result.
        np.testing.assert_array_equal(f(data.tolist(), *[a.tolist() for a in args[1:2]],
                                        *args[2:]), want)
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\) got an unexpected keyword "
                                            r"argument 'outt'"):
            f(*args, outt=None)
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\) got multiple values for "
                                            r"argument 'data'"):
            f(*args, data=data)
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\) missing 1 required positional "
                                            r"argument: 'indices'"):
            f(data, **{k: v for k, v in by_name.items() if k not in ("data", "indices")})
    with pytest.raises(IndexError, match=r"^indices\[1\] = 5 is out of range for axis 0 of size "
                                         r"3"):
        gj.take(data, np.array([0, 5]))
    # Through the general path too, where data is a list.
    with pytest.raises(IndexError, match=r"^indices\[0, 1\] = 4 is out of range for axis 1 of "
                                         r"size 4"):
        gj.take_along_axis(data.tolist(), np.array([[0, 4]]), 1)


def test_save_object_writes_an_elf_object(tmp_path):
    k = gj.compile("gather_elements", data=((4, 4), "float32"), indices=((4, 2), "int64"), axis=1)
    k.save_object(str(tmp_path / "k.o"), "my_gather", str(tmp_path / "k.h"))
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    assert "my_gather_range" in (tmp_path / "k.h").read_text()
    # Paths as pathlib gives them, or bytes; anything else is a TypeError
    # naming the argument.
    k.save_object(tmp_path / "p.o", "other", header=tmp_path / "p.h")
    assert (tmp_path / "p.o").read_bytes()[:4] == b"\x7fELF"
    assert "other_range" in (tmp_path / "p.h").read_text()
    k.save_object(bytes(tmp_path / "b.o"))
    assert (tmp_path / "b.o").read_bytes()[:4] == b"\x7fELF"
    with pytest.raises(TypeError, match="^path must be a path .*; got int"):
        k.save_object(3)
    with pytest.raises(TypeError, match="^name must be a str: a C identifier; got NoneType"):
        k.save_object(tmp_path / "n.o", None)
    with pytest.raises(TypeError, match="^header must be a path .*; got float"):
        k.save_object(tmp_path / "n.o", "n", 1.5)


def test_the_cache_serves_repeated_calls():
    data = np.zeros((7, 3), dtype=np.float64)
    idx = np.zeros((7, 3), dtype=np.int64)
    gj.take_along_axis(data, idx, 0)
    before = gj.stats()
    for _ in range(10):
        gj.take_along_axis(data, idx, 0)
    after = gj.stats()
    # Repeats are served before the runtime's cache, by the call's layout.
    assert after["misses"] == before["misses"]
    assert after["hits"] == before["hits"]


def test_calls_that_differ_only_in_layout_get_their_own_kernels():
    # Same shapes, other dtypes, byte orders, strides, out= layouts, axes
    # and modes: each call must run the kernel compiled for it.
    rng = np.random.default_rng(11)
    base = rng.standard_normal((6, 6))
    idx = rng.integers(-6, 6, size=(6, 6))
    want = np.take_along_axis(base, idx, 1)
    for data in (base, base.astype(np.float32), base.astype(">f8"), base.T.copy().T,
                 np.asfortranarray(base)):
        for indices in (idx, idx.astype(np.int32), idx.astype(">i8"), np.asfortranarray(idx)):
            got = gj.take_along_axis(data, indices, 1)
            np.testing.assert_array_equal(got, want.astype(data.dtype))
            assert got.dtype == data.dtype
    np.testing.assert_array_equal(gj.take_along_axis(base, idx, 0),
                                  np.take_along_axis(base, idx, 0))
    np.testing.assert_array_equal(gj.take_along_axis(base, idx + 6, 1, mode="clip"),
                                  np.take_along_axis(base, np.clip(idx + 6, 0, 5), 1))
    with pytest.raises(IndexError):
        gj.take_along_axis(base, idx + 6, 1)
    out_c, out_f = np.empty((6, 6)), np.empty((6, 6), order="F")
    for out in (out_c, out_f, out_c, out_f):
        out[...] = 0
        assert gj.take_along_axis(base, idx, 1, out=out) is out
        np.testing.assert_array_equal(out, want)


def test_kernels_tokenize_by_their_spec_for_dask():
    a = gj.compile("gather", ((10, 2), "float32"), ((3,), "int64"))
    b = gj.compile("gather", ((10, 2), "float32"), ((3,), "int64"))
    c = gj.compile("gather", ((10, 2), "float32"), ((4,), "int64"))
    assert a.__dask_tokenize__() == b.__dask_tokenize__() != c.__dask_tokenize__()


def test_a_kernels_repr_says_what_it_was_compiled_for():
    k = gj.compile("gather", ((10, 2), "float32"), ((3,), "int64"), axis=1, mode="clip")
    assert repr(k) == ("<gatherjit.Kernel 'gather', data=((10, 2), 'float32'), "
                       "indices=((3,), 'int64'), axis=1, mode='clip': output (10, 3) float32, "
                       f"tier {k.tier}>")
    view = np.zeros((6, 8), np.int16)[::2, 1::3]
    nd = gj.compile("gather_nd", view, ((5, 2), "int32"))
    assert repr(nd).startswith("<gatherjit.Kernel 'gather_nd', data=((3, 3), 'int16', (16, 3)), "
                               "indices=((5, 2), 'int32'), batch_dims=0, mode='raise': "
                               "output (5,) int16, tier ")
    again = pickle.loads(pickle.dumps(nd))
    assert repr(again).split(": output")[0] == repr(nd).split(": output")[0]
    desc = gj.compile({"operator": "GATHER", "axis": 0, "index_dimensions": 1,
                       "input": {"data_type": "UINT8", "sizes": [3, 4]},
                       "indices": {"data_type": "INT32", "sizes": [1, 2]},
                       "output": {"data_type": "UINT8", "sizes": [2, 4]}})
    assert repr(desc).startswith("<gatherjit.Kernel GATHER descriptor: output (2, 4) uint8, tier ")


def test_descriptor_dicts_in_the_format_of_run():
    # DirectML's GATHER_ND1 Example 2: 3 batches of 2x2, 2-coordinate tuples.
    k = gj.compile({"operator": "GATHER_ND1", "batch_dimension_count": 1,
                    "input_dimension_count": 3, "indices_dimension_count": 3,
                    "input": {"data_type": "FLOAT32", "sizes": [1, 3, 2, 2]},
                    "indices": {"data_type": "UINT32", "sizes": [1, 3, 2, 2]},
                    "output": {"data_type": "FLOAT32", "sizes": [1, 1, 3, 2]}})
    data = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    idx = np.array([0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0], dtype=np.uint32).reshape(1, 3, 2, 2)
    expected = np.array([0, 3, 7, 4, 9, 10], dtype=np.float32).reshape(1, 1, 3, 2)
    np.testing.assert_array_equal(k(data, idx), expected)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(k))(data, idx), expected)
    # DirectML's default policy is clamp: 5 reads the last element.
    np.testing.assert_array_equal(k(data, np.full_like(idx, 5))[0, 0, 0], [3, 3])
    # Arrays without the descriptor's leading ones stand for it too.
    np.testing.assert_array_equal(k(data[0], idx[0]), expected)
    with pytest.raises(ValueError, match="operator"):
        gj.compile({"operator": "SCATTER"})


def test_big_endian_arrays_give_numpys_results():
    # Indices are read as native integers: a big-endian array is converted,
    # never misread. Big-endian data is moved as it is, dtype and all.
    rng = np.random.default_rng(4)
    data = rng.standard_normal((6, 5)).astype(">f4")
    idx = rng.integers(-6, 6, size=(3,)).astype(">i8")
    got = gj.take(data, idx)
    np.testing.assert_array_equal(got, np.take(data, idx, axis=0))
    assert got.dtype == np.dtype(">f4")
    k = gj.compile("gather", ((6, 5), "float32"), ((3,), "int64"))
    np.testing.assert_array_equal(k(data.astype("<f4"), idx), np.take(data, idx, axis=0))


def test_set_threads_applies_before_the_first_kernel_only():
    import subprocess
    import sys
    code = ("import numpy as np, gatherjit as gj\n"
            "first = gj.set_threads(1)\n"
            "assert gj.take(np.arange(5), np.array([4]))[0] == 4\n"
            "print(first, gj.set_threads(2))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_new_shapes_run_at_once_and_hot_ones_are_specialized():
    import subprocess
    import sys
    # A fresh process: the first kernel of a new shape runs the generic
    # loop, compiles nothing, and moves to its specialized code once hot.
    code = (
        "import numpy as np, gatherjit as gj\n"
        "rng = np.random.default_rng(3)\n"
        "data = rng.standard_normal((40, 64)).astype('f4')\n"
        "idx = rng.integers(-64, 64, size=(40, 16))\n"
        "want = np.take_along_axis(data, idx % 64, axis=1)\n"
        "k = gj.compile('gather_elements', ((40, 64), 'float32'), ((40, 16), 'int64'), 1)\n"
        "print(k.tier, gj.stats()['compile_ms'] == 0, gj.stats()['generic_entries'])\n"
        "for _ in range(5):\n"
        "    assert np.array_equal(k(data, idx), want)\n"
        "gj.wait_background()\n"
        "print(k.tier, gj.stats()['specializations'], gj.stats()['generic_entries'])\n"
        "assert np.array_equal(k(data, idx), want)\n"
        "# A second shape of the family has its kernel compiled; a third runs\n"
        "# it from the first call.\n"
        "gj.compile('gather_elements', ((35, 64), 'float32'), ((35, 16), 'int64'), 1)\n"
        "gj.wait_background()\n"
        "k2 = gj.compile('gather_elements', ((30, 64), 'float32'), ((30, 16), 'int64'), 1)\n"
        "print(k2.tier, gj.stats()['family_kernels'])\n"
        "assert np.array_equal(k2(data[:30], idx[:30]), want[:30])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["generic", "True", "1", "specialized", "1", "0", "family", "1"]


def test_set_specialize_chooses_the_mode_before_the_first_kernel():
    import subprocess
    import sys
    code = ("import numpy as np, gatherjit as gj\n"
            "try:\n"
            "    gj.set_specialize('eager')\n"
            "except ValueError as e:\n"
            "    print('refused' if 'eager' in str(e) else 'wrong message')\n"
            "first = gj.set_specialize('compile')\n"
            "k = gj.compile('gather', ((5,), 'int64'), ((1,), 'int64'))\n"
            "assert k(np.arange(5), np.array([4]))[0] == 4\n"
            "print(first, k.tier, gj.set_specialize('never'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["refused", "True", "specialized", "False"]


def test_exiting_while_shapes_are_specialized_is_clean():
    import subprocess
    import sys
    # Sixteen shapes become hot at once and the interpreter exits while the
    # background thread compiles them: it must stop before LLVM's statics go.
    code = ("import numpy as np, gatherjit as gj\n"
            "data = np.arange(64, dtype=np.float32).reshape(1, 64)\n"
            "idx = (np.arange(16) * 5 % 64).reshape(1, 16)\n"
            "for j in range(1000):\n"
            "    k = j % 16 + 1\n"
            "    assert np.array_equal(gj.take_along_axis(data, idx[:, :k], 1), idx[:, :k])\n")
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert (out.returncode, out.stderr) == (0, "")


def test_out_overlapping_an_operand_gives_numpys_result():
    # out is the data, a shifted view of it, or the indices' own memory.
    for shift in (0, 2):
        buf = np.arange(12, dtype=np.float32)
        want = buf.copy()
        want[shift:shift + 10] = np.take(buf[:10], np.arange(9, -1, -1))
        gj.take(buf[:10], np.arange(9, -1, -1), 0, out=buf[shift:shift + 10])
        np.testing.assert_array_equal(buf, want)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 2, 1, 0]] * 3)
    want = np.take_along_axis(a, idx, 1)
    gj.take_along_axis(a, idx, 1, out=a)
    np.testing.assert_array_equal(a, want)
    table = np.arange(10, dtype=np.int64).reshape(5, 2) * 10
    ids = np.array([[4], [0], [2]], dtype=np.int64)
    store = np.zeros(6, dtype=np.int64)
    store[:3] = ids[:, 0]
    want = table[ids[:, 0]]
    got = gj.gather_nd(table, store[:3].reshape(3, 1), out=store.reshape(3, 2))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(store.reshape(3, 2), want)


def test_an_out_of_negative_strides_is_written_as_numpy_writes_it():
    # A reversed view (numpy's negative strides), also one over the data
    # itself: every element written, nothing beside it.
    a = np.arange(12.).reshape(3, 4)
    base = np.full((4, 4), -1.0)
    out = base[::-1][:2]  # rows 3 and 2, in that order
    assert gj.take(a, [2, 0], 0, out=out) is out
    np.testing.assert_array_equal(out, np.take(a, [2, 0], 0))
    np.testing.assert_array_equal(base[:2], np.full((2, 4), -1.0))
    cols = np.zeros((3, 8))
    idx = np.array([[3, 0, 1, 1]] * 3)
    gj.take_along_axis(a, idx, 1, out=cols[:, ::-2])
    np.testing.assert_array_equal(cols[:, ::-2], np.take_along_axis(a, idx, 1))
    np.testing.assert_array_equal(cols[:, ::2], np.zeros((3, 4)))
    b = np.arange(10.)
    gj.take(b, np.arange(10), 0, out=b[::-1])
    np.testing.assert_array_equal(b, np.arange(9., -1., -1.))
    # The result's dtype and shape are checked as for any out.
    with pytest.raises(TypeError, match="out has dtype float32"):
        gj.take(a, [2, 0], 0, out=np.zeros((2, 4), np.float32)[::-1])
    with pytest.raises(ValueError, match="out has shape"):
        gj.take(a, [2, 0], 0, out=np.zeros((3, 4))[::-1])
    ro = np.zeros((2, 4))[::-1]
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="^out is read-only"):
        gj.take(a, [2, 0], 0, out=ro)


def test_out_must_be_a_writable_array_in_the_results_byte_order():
    data = np.arange(4, dtype=np.float32)
    with pytest.raises(TypeError, match="out must be a numpy array"):
        gj.take(data, np.array([1, 0]), 0, out=[0.0, 0.0])
    with pytest.raises(TypeError, match="out must be a numpy array"):
        gj.take(data, np.array([1, 0]), 0, out=(0.0, 0.0))
    swapped = np.zeros(2, dtype=">f4")
    with pytest.raises(ValueError, match="big-endian"):
        gj.take(data, np.array([1, 0]), 0, out=swapped)
    with pytest.raises(ValueError, match="big-endian"):
        gj.compile("gather", data, np.zeros(2, np.int64))(data, np.array([1, 0]), out=swapped)
    np.testing.assert_array_equal(swapped, [0, 0])
    # Data in the other order moves into an out of the same order.
    big = data.astype(">f4")
    out = np.zeros(2, dtype=">f4")
    gj.take(big, np.array([3, 1]), 0, out=out)
    np.testing.assert_array_equal(out, [3, 1])
    # A compiled kernel moves the bytes of the order it was compiled for,
    # and refuses the other (its result would name the wrong order).
    k = gj.compile("gather", big, np.array([3, 1]), 0)
    got = k(big, np.array([3, 1]))
    assert got.dtype == np.dtype(">f4") and got.tolist() == [3, 1]
    with pytest.raises(ValueError, match="little-endian order, the kernel's is big-endian"):
        k(data, np.array([3, 1]))
    with pytest.raises(ValueError, match="big-endian order, the kernel's is little-endian"):
        gj.compile("gather", data, np.array([3, 1]), 0)(big, np.array([3, 1]))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(2, np.float32)
        ro.flags.writeable = False
        gj.take(data, np.array([1, 0]), 0, out=ro)


def test_out_of_range_indices_are_named_in_the_callers_shape():
    table = np.zeros((50000, 4), np.float32)
    with pytest.raises(IndexError, match=r"^indices\[5\] = 70000 is out of range for axis 0 of "
                                         r"size 50000; valid indices are -50000\.\.49999$"):
        gj.take(table, np.array([0, 1, 2, 3, 4, 70000]))
    with pytest.raises(IndexError, match=r"^indices\[1, 0\] = -9 is out of range for axis 0 "):
        gj.take(table[:5], np.array([[0, 1], [-9, 0]]), -2)
    with pytest.raises(IndexError, match=r"^indices\[0, 2\] = 9 is out of range for axis 1 of "
                                         r"size 4"):
        gj.take_along_axis(np.zeros((3, 4), np.float32), np.array([[0, 1, 9]]), 1)
    with pytest.raises(IndexError, match=r"^indices\[1, :\] = \(2, 9\) has component 1 = 9, out "
                                         r"of range for axis 1 of size 4"):
        gj.gather_nd(np.zeros((3, 4), np.float32), np.array([[0, 1], [2, 9]]))


def test_axes_and_integers_are_checked_as_numpy_checks_them():
    axis_error = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError
    data, ids = np.zeros((5, 4), np.float32), np.array([0, 1])
    for axis in (2, -3, 1 << 70):
        with pytest.raises(axis_error):
            gj.take(data, ids, axis)
    with pytest.raises(axis_error):
        gj.take_along_axis(data, np.zeros((5, 2), np.int64), 5)
    with pytest.raises(axis_error):
        gj.compile("gather", ((5, 4), "float32"), ((2,), "int64"), axis=7)
    for axis in ("0", 1.0):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
            gj.take(data, ids, axis)
    for axis in (True, np.bool_(False)):
        with pytest.raises(TypeError, match="axis must be an integer, not bool"):
            gj.take(data, ids, axis)
        with pytest.raises(TypeError, match="axis must be an integer, not bool"):
            gj.take_along_axis(data, np.zeros((5, 2), np.int64), axis)
    assert gj.take(data, ids, np.int64(1)).shape == (5, 2)
    with pytest.raises(ValueError, match="threads = -1"):
        gj.set_threads(-1)
    with pytest.raises(ValueError, match=r"shape \(-1, 4\)"):
        gj.compile("gather", ((-1, 4), "float32"), ((2,), "int64"))
    with pytest.raises(ValueError, match="batch_dims = -1"):
        gj.gather_nd(data, np.zeros((2, 1), np.int64), batch_dims=-1)


@pytest.mark.parametrize("mode", [None, 1, b"raise"])
def test_a_mode_that_is_not_a_string_is_a_type_error_naming_it(mode):
    a = np.arange(6.).reshape(2, 3)
    calls = [lambda: gj.take(a, [0], 0, mode=mode),
             lambda: gj.take_along_axis(a, np.zeros((2, 1), np.int64), 1, mode=mode),
             lambda: gj.gather_nd(a, np.zeros((1, 1), np.int64), mode=mode),
             lambda: gj.compile("gather", a, np.zeros(1, np.int64), 0, mode=mode)]
    for call in calls:
        with pytest.raises(TypeError, match=r"^mode must be a str: 'raise', 'clip', 'clamp' or "
                                            r"'wrap'; got " + type(mode).__name__):
            call()
    # compile's op likewise.
    with pytest.raises(TypeError, match=r"^compile: op must be .*; got " + type(mode).__name__):
        gj.compile(mode, a, np.zeros(1, np.int64), 0)


def test_sequences_of_indices_are_taken_as_numpy_takes_them():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    for ids, axis in (([2, 0], 0), ([[1], [3]], 1), ([], 0), ([], 1), ([[]], 0), ((1, -1), 1)):
        got, want = gj.take(data, ids, axis), np.take(data, ids, axis)
        assert got.shape == want.shape and got.dtype == want.dtype, (ids, axis)
        assert np.array_equal(got, want), (ids, axis)
    # An empty float array is not a sequence of integers, for numpy either.
    with pytest.raises(TypeError):
        np.take(data, np.array([]), 0)
    with pytest.raises(TypeError):
        gj.take(data, np.array([]), 0)


def test_a_second_process_loads_kernels_from_the_cache_directory(tmp_path):
    import os
    import subprocess
    import sys
    script = (
        "import numpy as np, gatherjit as gj\n"
        "gj.set_specialize('compile')\n"
        "print(gj.cache_dir())\n"
        "gj.take_along_axis(np.zeros((300, 64), np.float32), np.zeros((300, 16), np.int64), 1)\n"
        "s = gj.stats(); print(s['disk_loads'], s['disk_stores'])\n")
    env = dict(os.environ, GATHERJIT_CACHE_DIR=str(tmp_path / "kernels"))
    env.pop("GATHERJIT_NO_CACHE", None)
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split("\n") for _ in range(2)]
    assert runs[0][0] == str(tmp_path / "kernels")
    assert runs[0][1] == "0 1"  # compiled and stored
    assert runs[1][1] == "1 0"  # loaded
    # set_cache_dir(None) keeps none.
    script = script.replace("gj.set_specialize", "gj.set_cache_dir(None)\ngj.set_specialize")
    none = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          check=True).stdout.split("\n")
    assert none[0] == "" and none[1] == "0 0"


def test_the_cache_directory_keeps_the_command_lines_limit(tmp_path):
    import subprocess
    import sys
    script = (
        "import numpy as np, gatherjit as gj\n"
        "gj.set_specialize('compile')\n"
        "try:\n"
        "    gj.take_along_axis(np.zeros((300, 64), np.float32), np.zeros((300, 16), np.int64), 1)\n"
        "    print(gj.stats()['disk_stores'])\n"
        "except ValueError as e:\n"
        "    print(e)\n")

    def run(limit):
        kernels = tmp_path / f"kernels-{limit}"
        kernels.mkdir()
        # An entry of 2 MiB, older than what the run stores.
        old = kernels / "old.gjk"
        old.write_bytes(b"\0" * (2 << 20))
        os.utime(old, (1, 1))
        env = dict(os.environ, GATHERJIT_CACHE_DIR=str(kernels), GATHERJIT_CACHE_LIMIT_MIB=limit)
        env.pop("GATHERJIT_NO_CACHE", None)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True).stdout.splitlines()
        return out, old.exists()

    # Past a limit of 1 MiB the store removes the least recently used entry;
    # with none (0), or unset (256 MiB), it stays.
    assert run("1") == (["1"], False)
    assert run("0") == (["1"], True)
    assert run("") == (["1"], True)
    # A value that is no size is the first call's ValueError, named as the
    # command line names it.
    assert run("lots") == (["GATHERJIT_CACHE_LIMIT_MIB: 'lots' is not an integer in "
                            "0..1099511627776"], True)


def test_a_process_that_cannot_make_threads_still_gathers():
    # A stack limit past the address space: every thread the process asks
    # for fails, as under a container's process limit. Results split
    # across threads, shapes made hot and the background's wait all still
    # work, on the caller's thread.
    import resource
    import subprocess
    import sys
    script = (
        "import threading\n"
        "try:\n"
        "    threading.Thread(target=print).start(); print('threads')\n"
        "except RuntimeError:\n"
        "    pass\n"
        "try:\n"
        "    import numpy as np\n"
        "except ImportError:\n"
        "    print('numpy'); raise SystemExit\n"
        "import gatherjit as gj\n"
        "rng = np.random.default_rng(3)\n"
        "x = rng.random((1024, 512), dtype=np.float32)\n"
        "ids = rng.integers(0, 512, (1024, 512))\n"
        "for _ in range(40):\n"
        "    for rows in (16, 1024):\n"
        "        r = gj.take_along_axis(x[:rows], ids[:rows], axis=1)\n"
        "        assert np.array_equal(r, np.take_along_axis(x[:rows], ids[:rows], axis=1))\n"
        "gj.wait_background()\n"
        "print('gathered')\n")

    def no_threads():
        resource.setrlimit(resource.RLIMIT_STACK,
                           (1 << 50, resource.getrlimit(resource.RLIMIT_STACK)[1]))

    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    if hard != resource.RLIM_INFINITY and hard < 1 << 50:
        pytest.skip("the hard stack limit is below 1 PiB")
    # (A numpy whose BLAS starts its threads at import needs telling not to.)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", script], preexec_fn=no_threads, env=env,
                         capture_output=True, text=True, timeout=300)
    if "threads" in run.stdout.split("\n"):
        pytest.skip("threads could still be made under the limit")
    if "numpy" in run.stdout.split("\n"):
        pytest.skip("numpy itself cannot be imported without threads here")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "gathered\n"


@pytest.mark.parametrize("index_dtype", ["int8", "uint8", "int16", "uint16"])
def test_narrow_integer_indices_are_taken_as_numpy_takes_them(index_dtype):
    data = np.arange(30, dtype=np.float32).reshape(6, 5)
    ids = np.array([[4, 0], [1, 3], [2, 2], [0, 4], [3, 1], [1, 0]], dtype=index_dtype)
    np.testing.assert_array_equal(gj.take_along_axis(data, ids, 1),
                                  np.take_along_axis(data, ids, 1))
    np.testing.assert_array_equal(gj.take(data, ids[:, 0], 0), np.take(data, ids[:, 0], 0))
    np.testing.assert_array_equal(gj.gather_nd(data, ids[:, :1]), data[ids[:, 0]])


def test_wrap_mode_is_numpys():
    data = np.arange(20, dtype=np.float64).reshape(4, 5)
    ids = np.array([7, -1, -12, 3, 100])
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(gj.take(data, ids, axis, mode="wrap"),
                                      np.take(data, ids, axis, mode="wrap"))
    along = np.array([[7, -6]] * 4)
    np.testing.assert_array_equal(gj.take_along_axis(data, along, 1, mode="wrap"),
                                  np.take_along_axis(data, along % 5, 1))
    np.testing.assert_array_equal(gj.gather_nd(data, np.array([[4, -1], [1, 9]]), mode="wrap"),
                                  [data[0, 4], data[1, 4]])
    with pytest.raises(IndexError, match="empty"):
        gj.take(np.zeros((0, 2)), np.array([1]), 0, mode="wrap")
    # uint64 indices past 2**63 - 1 wrap as the numbers they are (numpy's
    # take refuses uint64): 2**64 - 1 is 0 modulo 5, 2**63 is 3.
    big = np.array([2**64 - 1, 2**63, 6], np.uint64)
    np.testing.assert_array_equal(gj.take(data, big, 1, mode="wrap"), data[:, [0, 3, 1]])
    np.testing.assert_array_equal(gj.gather_nd(data, np.array([[3, 2**63]], np.uint64),
                                               mode="wrap"), [data[3, 3]])
    with pytest.raises(ValueError, match="'wrap' \\(numpy's"):
        gj.take(data, ids, 0, mode="wrapp")


def test_object_arrays_gather_new_references_to_their_objects():
    # numpy's own TestTake: object arrays through every mode, out= over the
    # data itself, and every reference counted.
    objects = [object() for _ in range(10)]
    before = [sys.getrefcount(o) for o in objects]
    a = np.array(objects)
    ids = np.array([2, 2, 4, 5, 3, 5])
    for mode in ("raise", "clip", "wrap"):
        got = gj.take(a, ids, mode=mode)
        assert got.dtype == object and list(got) == [objects[i] for i in ids]
        del got
    gj.take(a, ids, out=a[:6])  # out overlaps the data
    assert list(a) == [objects[i] for i in (2, 2, 4, 5, 3, 5)] + objects[6:]
    b = np.array(objects * 2)[::2].reshape(5, 2)  # a strided view
    along = np.array([[1], [0], [1], [1], [0]])
    np.testing.assert_array_equal(gj.take_along_axis(b, along, 1), np.take_along_axis(b, along, 1))
    del a, b
    assert [sys.getrefcount(o) for o in objects] == before
    words = np.array([{"k": 1}, "s", 3, None], dtype=object)
    np.testing.assert_array_equal(gj.gather_nd(words, np.array([[3], [0], [1]])),
                                  words[[3, 0, 1]])
    with pytest.raises(IndexError):
        gj.take(words, np.array([4]))
    with pytest.raises(ValueError, match="out must be an array of dtype object and shape \\(2,\\)"):
        gj.take(words, np.array([0, 1]), out=np.empty(3, object))
    with pytest.raises(TypeError, match="moves bytes, not the references"):
        gj.compile("gather", (words.shape, words.dtype), ((2,), np.int64))


def test_records_holding_objects_gather_new_references_to_them():
    # A record with an object field is moved with its references counted
    # (a kernel copying its bytes would leave them owned twice).
    objects = [object() for _ in range(4)]
    before = [sys.getrefcount(o) for o in objects]
    records = np.zeros((2, 4), dtype=[("n", "i4"), ("o", "O")])
    records["n"] = np.arange(8).reshape(2, 4)
    records["o"] = [objects, objects[::-1]]
    ids = np.array([[3, 3, 0], [1, 2, 2]])
    np.testing.assert_array_equal(gj.take_along_axis(records, ids, 1),
                                  np.take_along_axis(records, ids, 1))
    np.testing.assert_array_equal(gj.take(records, [1, 0, 1], 0), np.take(records, [1, 0, 1], 0))
    np.testing.assert_array_equal(gj.gather_nd(records, np.array([[1, 2], [0, 3]])),
                                  records[[1, 0], [2, 3]])
    out = np.empty((2, 2), records.dtype)
    assert gj.take(records, [3, 1], 1, out=out) is out
    np.testing.assert_array_equal(out, records[:, [3, 1]])
    with pytest.raises(ValueError, match="out must be an array of dtype"):
        gj.take(records, [3, 1], 1, out=np.empty((2, 2), "i4,i8"))
    with pytest.raises(TypeError, match="holds object references"):
        gj.compile("gather", (records.shape, records.dtype), ((2,), np.int64))
    del records, out
    assert [sys.getrefcount(o) for o in objects] == before


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[ns]", "longdouble",
                                   "clongdouble", "V3"])
def test_every_dtype_of_plain_bytes_is_gathered_as_numpy_gathers_it(dtype):
    data = (np.arange(72, dtype="u1").view("V3") if dtype == "V3" else
            np.arange(24).astype(dtype)).reshape(4, 6)
    ids = np.array([[5, 0], [1, 1], [0, 3], [2, 4]])
    got = gj.take_along_axis(data, ids, 1)
    assert got.dtype == data.dtype
    np.testing.assert_array_equal(got, np.take_along_axis(data, ids, 1))
    np.testing.assert_array_equal(gj.take(data, [3, 0], 0), np.take(data, [3, 0], 0))


def test_a_dtype_of_no_bytes_is_a_clean_error():
    for data in (np.zeros(3, dtype=[]), np.zeros((3, 2), dtype=[])[:, ::2]):
        with pytest.raises(ValueError, match="no bytes"):
            gj.take(data, [0])


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_clip_and_wrap_into_an_empty_axis_raise_as_numpy_does(mode):
    # numpy's clip and wrap have no element to clip or wrap to: a non-empty
    # result is an IndexError, an empty one is not.
    for data, ids, axis in [(np.zeros((0, 3)), np.array([0]), 0),
                            (np.zeros((2, 0)), np.array([0, 5]), 1)]:
        with pytest.raises(IndexError):
            np.take(data, ids, axis, mode=mode)
        with pytest.raises(IndexError, match=f"empty axis \\(mode='{mode}'\\)"):
            gj.take(data, ids, axis, mode=mode)
    with pytest.raises(IndexError, match="empty axis"):
        gj.take_along_axis(np.zeros((0, 3)), np.zeros((2, 3), np.int64), 0, mode=mode)
    with pytest.raises(IndexError, match="empty axis"):
        gj.gather_nd(np.zeros((3, 0)), np.array([[1, 0]]), mode=mode)
    for data, ids, axis in [(np.zeros((0, 0)), np.array([0]), 1),
                            (np.zeros((0, 3, 0, 2)), np.array(4), 2)]:
        want = np.take(data, ids, axis, mode=mode)  # returns: no dimension before the axis
        assert gj.take(data, ids, axis, mode=mode).shape == want.shape == (0, *want.shape[1:])
    # (numpy 1.24's wrap never returns where dimensions before the empty
    # axis hold elements; the result is empty all the same.)
    assert gj.take(np.zeros((2, 0, 0)), np.array([1]), 1, mode=mode).shape == (2, 1, 0)
    assert gj.take_along_axis(np.zeros((0, 3)), np.zeros((0, 3), np.int64), 0,
                              mode=mode).shape == (0, 3)
    assert gj.take_along_axis(np.zeros((0, 0)), np.ones((0, 2), np.int64), 1,
                              mode=mode).shape == (0, 2)
    assert gj.gather_nd(np.zeros((0, 0, 0)), np.zeros((2, 3, 2), np.int64), batch_dims=0,
                        mode=mode).shape == (2, 3, 0)


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint32, np.int8])
def test_take_checks_its_indices_when_the_result_is_empty_as_numpy_does(index_dtype):
    # [2, 3, 0] on axis 1: nothing to write, but numpy still raises for an
    # index outside the axis, and names it.
    data = np.zeros((2, 3, 0), np.float32)
    good = np.array([[0, 2], [1, 0]], index_dtype)
    assert gj.take(data, good, 1).shape == np.take(data, good, 1).shape == (2, 2, 2, 0)
    bad = np.array([[0, 2], [3, 0]], index_dtype)
    with pytest.raises(IndexError):
        np.take(data, bad, 1)
    with pytest.raises(IndexError, match=r"indices\[1, 0\] = 3 is out of range for axis 1 "
                                         r"of size 3"):
        gj.take(data, bad, 1)
    if np.issubdtype(index_dtype, np.signedinteger):
        with pytest.raises(IndexError, match="= -4 is out of range"):
            gj.take(data, np.array([-4], index_dtype), 1)
    # No element before the axis: numpy reads no index, nor does gatherjit.
    assert gj.take(np.zeros((0, 3)), np.array([7]), 1).shape == (0, 1)


def test_gather_nd_checks_its_tuples_when_the_result_is_empty():
    # [2, 3, 0] by (row, column) tuples: each result slice is empty, but a
    # tuple outside the data is still an error, named by its component.
    data = np.zeros((2, 3, 0), np.float32)
    assert gj.gather_nd(data, np.array([[1, 2], [0, -3]])).shape == (2, 0)
    with pytest.raises(IndexError, match=r"component 1 = 3, out of range for axis 1 of size 3"):
        gj.gather_nd(data, np.array([[1, 2], [0, 3]]))


def test_large_results_reuse_the_buffers_of_dead_ones_and_never_a_live_one():
    table = np.arange(4096 * 256, dtype=np.float32).reshape(4096, 256)
    rng = np.random.default_rng(7)
    ids = [rng.integers(0, 4096, 1024) for _ in range(4)]  # 1 MiB results
    first = gj.take(table, ids[0], 0)
    where = first.ctypes.data
    assert where % 4096 == 0
    view = first[100:]  # keeps the buffer alive after its array goes
    del first
    second = gj.take(table, ids[1], 0)
    assert second.ctypes.data != where
    np.testing.assert_array_equal(view, table[ids[0][100:]])
    del view
    assert gj.stats()["output_pool_bytes"] >= 1 << 20
    third = gj.take(table, ids[2], 0)  # takes the buffer `first` had
    assert third.ctypes.data == where
    np.testing.assert_array_equal(third, table[ids[2]])  # every byte written anew
    np.testing.assert_array_equal(second, table[ids[1]])
    small = gj.take(table, ids[3][:100], 0)  # 100 KiB: not pooled at all
    assert small.ctypes.data != where and small.base is None
    np.testing.assert_array_equal(small, table[ids[3][:100]])
    # A result no idle buffer fits first releases the smaller ones (a
    # growing batch's results then map over their pages).
    del third, second
    assert gj.stats()["output_pool_bytes"] == 2 << 20
    larger = gj.take(table, np.concatenate(ids[:3]), 0)  # 3 MiB
    assert gj.stats()["output_pool_bytes"] == 0
    np.testing.assert_array_equal(larger, table[np.concatenate(ids[:3])])
    del larger
    assert gj.stats()["output_pool_bytes"] == 3 << 20
    # Arrays of references never take a pooled buffer's stale bytes.
    objects = gj._native.empty(np.dtype(object), (3 << 17,))
    assert gj.stats()["output_pool_bytes"] == 3 << 20
    assert all(o is None for o in objects[::4096])
    del objects
    floats = gj._native.empty(np.dtype(np.float32), (3 << 18,))  # dask's combine
    assert floats.ctypes.data % 4096 == 0 and gj.stats()["output_pool_bytes"] == 0
    del floats
    assert gj.set_output_pool(0) == 128 << 20  # the default it replaces
    try:
        assert gj.stats()["output_pool_bytes"] == 0
        second = gj.take(table, ids[1], 0)
        del second
        assert gj.stats()["output_pool_bytes"] == 0
    finally:
        assert gj.set_output_pool(128 << 20) == 0
    with pytest.raises(ValueError, match="bytes = -1"):
        gj.set_output_pool(-1)


def test_a_result_the_system_cannot_hold_is_a_memory_error_naming_it():
    # 4 EiB, more than any address space: refused on every machine,
    # whatever its overcommit policy.
    table = np.broadcast_to(np.float64(1), (1 << 20, 1 << 20))
    ids = np.broadcast_to(np.int64(0), (1 << 39,))
    shape = r"\(1048576, 549755813888\)"
    with pytest.raises(MemoryError, match=r"cannot allocate 4\.0 EiB for the result, of shape "
                       + shape + " and dtype float64"):
        gj.take(table, ids, axis=1)
    with pytest.raises(MemoryError, match=shape):
        gj.take_along_axis(table, np.broadcast_to(np.int64(0), (1 << 20, 1 << 39)), axis=1)
    small = np.arange(12.0).reshape(3, 4)  # the pool serves on
    np.testing.assert_array_equal(gj.take(small, [2, 0], axis=1), small[:, [2, 0]])


def test_results_that_grow_a_little_take_the_buffer_of_the_one_before():
    # Under 4 MiB a buffer is made up to a quarter of a power of two
    # larger: 200 KiB takes 224 KiB, which a result of 210 KiB fits and
    # one of 230 KiB does not.
    table = np.arange(4096 * 256, dtype=np.float32).reshape(4096, 256)
    ids = np.random.default_rng(5).integers(0, 4096, 230)
    old = gj.set_output_pool(0)  # Whatever earlier tests left idle goes.
    try:
        gj.set_output_pool(128 << 20)
        first = gj.take(table, ids[:200], 0)
        where = first.ctypes.data
        del first
        assert gj.stats()["output_pool_bytes"] == 224 << 10
        grown = gj.take(table, ids[:210], 0)
        assert grown.ctypes.data == where
        np.testing.assert_array_equal(grown, table[ids[:210]])
        del grown
        larger = gj.take(table, ids, 0)  # 230 KiB: a buffer of 256 KiB
        assert gj.stats()["output_pool_bytes"] == 0
        np.testing.assert_array_equal(larger, table[ids])
        del larger
        assert gj.stats()["output_pool_bytes"] == 256 << 10
    finally:
        gj.set_output_pool(old)


def wait_for_idle_pool(bytes, seconds=10):
    deadline = time.monotonic() + seconds
    while gj.stats()["output_pool_bytes"] != bytes and time.monotonic() < deadline:
        time.sleep(0.02)
    return gj.stats()["output_pool_bytes"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_buffers_past_the_pool_capacity_linger_then_go_back():
    # 2 MiB results against a capacity of 1 MiB: a dead result's buffer
    # lingers, the next result of its size takes it, and once its time is
    # up it goes back with no call to the pool (a thread of its own).
    table = np.arange(4096 * 256, dtype=np.float32).reshape(4096, 256)
    rng = np.random.default_rng(11)
    ids = [rng.integers(0, 4096, 2048) for _ in range(3)]
    old = gj.set_output_pool(0)  # Whatever earlier tests left idle goes.
    try:
        gj.set_output_pool(1 << 20, linger=60)
        assert gj.stats()["output_pool_bytes"] == 0
        first = gj.take(table, ids[0], 0)
        where = first.ctypes.data
        del first
        assert gj.stats()["output_pool_bytes"] == 2 << 20
        second = gj.take(table, ids[1], 0)
        assert second.ctypes.data == where
        np.testing.assert_array_equal(second, table[ids[1]])
        del second
        # A fork's child has no reaper thread of its parent's: it frees
        # what lingers with a thread of its own.
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                gj.set_output_pool(1 << 20, linger=0.2)
                ok = wait_for_idle_pool(0) == 0
                third = gj.take(table, ids[2], 0)
                ok = ok and np.array_equal(third, table[ids[2]])
                del third
                ok = ok and wait_for_idle_pool(0) == 0
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert gj.stats()["output_pool_bytes"] == 2 << 20  # the parent's lingers on
        gj.set_output_pool(1 << 20, linger=0.2)
        assert wait_for_idle_pool(0) == 0
        # Nothing lingers where the capacity is 0.
        gj.set_output_pool(0, linger=60)
        third = gj.take(table, ids[2], 0)
        del third
        assert gj.stats()["output_pool_bytes"] == 0
    finally:
        gj.set_output_pool(old, linger=1.0)
    with pytest.raises(ValueError, match="linger = -1.0"):
        gj.set_output_pool(1 << 20, linger=-1)
    with pytest.raises(TypeError, match="linger = '1'"):
        gj.set_output_pool(1 << 20, linger="1")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_compiles_in_the_background_of_its_own():
    # The parent's background thread is busy compiling when it forks (the
    # fork waits for that compile); the child has no such thread, starts
    # its own, and compiles a new row family there.
    data = np.random.default_rng(3).standard_normal((64, 48)).astype(np.float32)
    for rows in range(8, 40):
        for _ in range(40):
            gj.take_along_axis(data[:rows], np.zeros((rows, 12), np.int64), 1)
    pid = os.fork()
    if pid == 0:  # The child: no pytest here, only an exit status.
        ok = False
        try:
            before = gj.stats()["family_kernels"]
            wide = np.arange(80 * 72, dtype=np.float32).reshape(80, 72)
            for rows in range(40, 64):
                ids = (np.arange(rows * 20).reshape(rows, 20) * 7) % 72
                for _ in range(40):
                    got = gj.take_along_axis(wide[:rows], ids, 1)
            gj.wait_background()
            ok = (gj.stats()["family_kernels"] > before and
                  np.array_equal(got, np.take_along_axis(wide[:63], ids, 1)))
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's wait_background() did not return")
    assert os.waitstatus_to_exitcode(status) == 0
    gj.wait_background()  # The parent's own compiles went on.


def test_a_child_forked_while_kernels_run_split_gathers_on_its_own_thread():
    # Another thread's kernels run split across oneTBB's workers as the
    # process forks (a data loader's workers, say); a child whose kernels
    # used its parent's oneTBB waited forever for a worker it does not have.
    rng = np.random.default_rng(5)
    data = rng.random((2048, 1024), dtype=np.float32)
    ids = rng.integers(0, 1024, (2048, 256))
    expected = np.take_along_axis(data, ids, 1)
    stop = threading.Event()

    def spin():
        out = np.empty_like(expected)
        while not stop.is_set():
            gj.take_along_axis(data, ids, 1, out=out)

    spinner = threading.Thread(target=spin)
    spinner.start()
    statuses = []
    try:
        for _ in range(10):
            pid = os.fork()
            if pid == 0:  # The child: no pytest here, only an exit status.
                signal.alarm(20)
                try:
                    ok = np.array_equal(gj.take_along_axis(data, ids, 1), expected)
                finally:
                    os._exit(0 if ok else 1)
            statuses.append(os.waitpid(pid, 0)[1])
    finally:
        stop.set()
        spinner.join()
    assert [os.waitstatus_to_exitcode(s) for s in statuses] == [0] * 10


def test_exiting_while_daemon_threads_run_kernels_is_clean():
    # A daemon thread that wants the GIL back after the interpreter began
    # to exit is ended by Python (before 3.14) with pthread_exit. Its
    # unwinding must neither pass a destructor (std::terminate: SIGABRT)
    # nor release its frames' Python objects without the GIL (a crash
    # under ThreadSanitizer): the binding keeps such a thread waiting.
    import subprocess
    script = (
        "import sys, threading, time, numpy as np, gatherjit as gj\n"
        "x = np.random.rand(2048, 1024).astype(np.float32)\n"
        "ids = np.random.randint(0, 1024, (2048, 256))\n"
        "k = gj.compile('gather_elements', x, ids, axis=1)\n"
        "def spin(n):\n"
        "    while True:\n"
        "        k(x, ids) if n else gj.take_along_axis(x, ids, axis=1)\n"
        "for n in range(3):\n"
        "    threading.Thread(target=spin, args=(n % 2,), daemon=True).start()\n"
        "time.sleep(float(sys.argv[1]))\n")
    for wait in ("0.2", "0.4", "0.6"):
        run = subprocess.run([sys.executable, "-c", script, wait], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("module", ["__init__", "dask", "torch"])
def test_the_stubs_name_every_public_function_with_its_parameters(module):
    # The type stubs a type checker reads instead of the code: a parameter
    # missing there (device=, once) is an error in every caller that uses it.
    import ast

    here = os.path.dirname(gj.__file__)

    def signatures(path):
        with open(path) as f:
            tree = ast.parse(f.read())
        got = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                a = node.args
                got[node.name] = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
        return got

    code = signatures(os.path.join(here, module + ".py"))
    stubs = signatures(os.path.join(here, module + ".pyi"))
    assert code and code == stubs



def _random_layout(rng, values, dtype):
    """`values` as `dtype` (either byte order) laid out at random: packed,
    column-major, a strided view into a larger array, reversed (negative
    strides) or broadcast from one slice along a dimension."""
    dtype = np.dtype(dtype)
    if dtype.itemsize > 1 and rng.random() < 0.25:
        dtype = dtype.newbyteorder()
    values = np.asarray(values)
    kind = int(rng.integers(5))
    if kind == 1:
        return np.asfortranarray(values.astype(dtype))
    if kind == 2:
        big = np.zeros(tuple(2 * s + 1 for s in values.shape), dtype)
        view = big[tuple(slice(1, 2 * s + 1, 2) for s in values.shape)]
        view[...] = values
        return view
    if kind == 3:
        return np.flip(np.flip(values).astype(dtype))
    if kind == 4 and values.size > 1:
        d = int(rng.choice([i for i, s in enumerate(values.shape) if s > 1]))
        return np.broadcast_to(values.take([0], axis=d).astype(dtype), values.shape)
    return values.astype(dtype)


def test_compiled_kernels_run_their_layouts_and_refuse_others_never_misreading_them():
    # A kernel compiled from random layouts (strides, byte orders,
    # broadcasts) runs them as numpy does; given the same values in other
    # layouts, it answers numpy's result or refuses them, never another.
    rng = np.random.default_rng(20261128)
    dtypes = ["float32", "float64", "float16", "int16", "int64", "uint8"]
    refused = ran = 0
    for _ in range(120):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 5, size=rank))
        axis = int(rng.integers(rank))
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        idx_dtype = ["int64", "int32"][int(rng.integers(2))]
        values = rng.integers(-100, 100, size=shape)
        if rng.random() < 0.5:
            op, want = "gather_elements", lambda d, i: np.take_along_axis(d, i, axis)
            idx_shape = shape[:axis] + (int(rng.integers(1, 4)),) + shape[axis + 1:]
        else:
            op, want = "gather", lambda d, i: np.take(d, i, axis)
            idx_shape = tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(1, 3))))
        ids = rng.integers(-shape[axis], shape[axis], size=idx_shape)
        data = _random_layout(rng, values, dtype)
        idx = _random_layout(rng, ids, idx_dtype)
        try:
            k = gj.compile(op, data, idx, axis)
        except ValueError as e:
            # A layout of negative strides (a kernel reads none) is named.
            assert "negative strides" in str(e) and any(
                st < 0 for a in (data, idx) if a.size > 1 for st in a.strides)
            data, idx = np.ascontiguousarray(data), np.ascontiguousarray(idx)
            k = gj.compile(op, data, idx, axis)
        np.testing.assert_array_equal(k(data, idx), want(data, idx))
        for _ in range(3):
            other = _random_layout(rng, values, dtype)
            other_idx = _random_layout(rng, ids, idx_dtype)
            try:
                got = k(other, other_idx)
            except ValueError:
                refused += 1
                continue
            ran += 1
            expected = want(other, other_idx)
            assert got.dtype == data.dtype
            np.testing.assert_array_equal(got, expected)
    assert ran > 20 and refused > 100


def test_first_calls_from_several_threads_at_once_never_deadlock():
    # A fresh process whose first gathers come from four threads at once:
    # under numpy 2 the binding's first use of numpy's C API imported a
    # module with the GIL released inside a static's initialization, and
    # two first calls deadlocked.
    import subprocess
    script = (
        "import threading, numpy as np, gatherjit as gj\n"
        "a = np.arange(12.).reshape(3, 4); i = np.array([[1], [0], [3]])\n"
        "start = threading.Barrier(4)\n"
        "def run():\n"
        "    start.wait()\n"
        "    for _ in range(3):\n"
        "        assert gj.take_along_axis(a, i, 1).tolist() == [[1.0], [4.0], [11.0]]\n"
        "threads = [threading.Thread(target=run) for _ in range(4)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print('ok')\n")
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert got.returncode == 0 and got.stdout == "ok\n", got


def test_the_bench_module_runs_the_cases_it_is_asked_for():
    import subprocess
    run = [sys.executable, "-m", "gatherjit.bench"]
    got = subprocess.run(run + ["--cases", "GE5", "--seconds", "0.01"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert got[0] == "case | calls | median | vs gatherjit"
    rows = [line.split(" | ") for line in got[1:]]
    assert {r[0] for r in rows} == {"GE5"} and len(rows) >= 3, got
    assert rows[0][1] == "gatherjit.take_along_axis(out=)" and rows[0][3] == "1.00x"
    assert "numpy.take_along_axis" in [r[1] for r in rows]
    for args, message in ((["--cases", "GE5,G9"], "--cases G9: not a case; the cases are GE5"),
                          (["--seconds", "0"], "--seconds 0.0: must be above 0")):
        bad = subprocess.run(run + args, capture_output=True, text=True)
        assert bad.returncode == 2 and message in bad.stderr and bad.stdout == "", bad
    usage = subprocess.run(run + ["--help"], capture_output=True, text=True, check=True).stdout
    assert "--cases" in usage and "--seconds" in usage


def test_dlpack_exporters_are_read_and_else_their_numpy_view():
    # A CPU DLPack exporter is read through its capsule; one whose capsule
    # numpy cannot read (JAX's bfloat16, numpy's reader lacks the type; its
    # float8s, which JAX cannot export) through its own __array__; one with
    # neither is a TypeError naming the operand.
    class Exporter:
        def __init__(self, array, readable=True):
            self.array, self.readable = array, readable

        def __dlpack__(self, stream=None):
            if not self.readable:
                raise RuntimeError("Unsupported dtype in DLTensor.")
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    class WithView(Exporter):
        def __array__(self, dtype=None):
            return self.array

    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    ids = np.array([[3, 0], [1, 1], [2, 0]])
    want = np.take_along_axis(data, ids, 1)
    np.testing.assert_array_equal(gj.take_along_axis(Exporter(data), Exporter(ids), 1), want)
    np.testing.assert_array_equal(gj.take_along_axis(WithView(data, False), ids, 1), want)
    with pytest.raises(TypeError, match="indices: its DLPack capsule is not one numpy reads"):
        gj.take_along_axis(data, Exporter(ids, False), 1)
