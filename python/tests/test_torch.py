"""gatherjit on PyTorch tensors: zero-copy operands (strided views, bfloat16),
results as tensors, and the torch.ops.gatherjit operators against
torch.gather and torch.index_select, eagerly and from torch.jit.script."""

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gatherjit as gj
import gatherjit.torch as gjt

gjt.register()

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64]
INDEX_DTYPES = [torch.int64, torch.int32]


def random_tensor(gen, shape, dtype):
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * 50
    if dtype == torch.complex64:
        return torch.complex(x, -x).to(dtype)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_gather_elements_matches_torch_gather(dtype, index_dtype):
    gen = torch.Generator().manual_seed(hash((str(dtype), str(index_dtype))) % 2**31)
    for rank in range(1, 5):
        shape = torch.randint(1, 5, (rank,), generator=gen).tolist()
        data = random_tensor(gen, shape, dtype)
        for axis in range(-rank, rank):
            # torch.gather's rule: the indices may be smaller off the axis.
            ishape = [int(torch.randint(1, s + 1, (1,), generator=gen)) for s in shape]
            ishape[axis] = int(torch.randint(1, 6, (1,), generator=gen))
            idx = torch.randint(0, shape[axis], ishape, generator=gen).to(index_dtype)
            got = torch.ops.gatherjit.gather_elements(data, idx, axis)
            assert got.dtype == dtype
            assert torch.equal(got, torch.gather(data, axis, idx.long()))


def test_zero_dimensional_tensors_gather_as_torch_gathers_them():
    # torch.gather takes a 0-d tensor as a 1-d one of one element.
    for data, idx in ((torch.tensor(5.0), torch.tensor(0)), (torch.tensor(5.0), torch.tensor([0, 0])),
                      (torch.tensor([1.0, 2.0]), torch.tensor(1))):
        for axis in (0, -1):
            want = torch.gather(data, axis, idx)
            for got in (gjt.gather_elements(data, idx, axis),
                        torch.ops.gatherjit.gather_elements(data, idx, axis)):
                assert got.shape == want.shape and torch.equal(got, want)
    # Gradients of 0-d data, through the function and the operator (whose
    # formulas torch.library registers in PyTorch 2.4 and later).
    gathers = [gjt.gather_elements]
    if hasattr(torch.library, "register_autograd"):
        gathers.append(torch.ops.gatherjit.gather_elements)
    for gather in gathers:
        data = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
        gather(data, torch.tensor([0, 0, 0]), 0).sum().backward()
        assert data.grad.item() == 3.0
    with pytest.raises(IndexError):
        gjt.gather_elements(torch.tensor(5.0), torch.tensor(1), 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_matches_index_select(dtype):
    gen = torch.Generator().manual_seed(7)
    data = random_tensor(gen, [5, 6, 3], dtype)
    for axis in range(3):
        idx = torch.randint(0, data.shape[axis], (4,), generator=gen)
        assert torch.equal(torch.ops.gatherjit.gather(data, idx, axis),
                           torch.index_select(data, axis, idx))
    idx2 = torch.randint(-5, 5, (2, 3), generator=gen)
    want = torch.from_numpy(np.take(np.arange(5), idx2.numpy()))
    assert torch.equal(torch.ops.gatherjit.gather(data, idx2),
                       data[want.reshape(-1)].reshape(2, 3, 6, 3))


def test_strided_views_are_read_in_place_and_out_is_written_in_place():
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    view = base.t()[2:7]  # 5 x 6 with strides (1, 10): read where it lies
    idx = torch.tensor([[5, 0, 1], [2, 2, 4], [0, 0, 0], [1, 2, 3], [4, 4, 5]])
    out = torch.empty(5, 3)
    got = gj.take_along_axis(view, idx, 1, out=out)
    assert got is out
    assert torch.equal(out, torch.gather(view, 1, idx))
    # A strided out= view is written in place: its tensor changes.
    whole = torch.zeros(6, 4)
    gj.take(base, torch.tensor([9, 0]), 1, out=whole[:, ::2])
    assert torch.equal(whole[:, 0::2], base[:, [9, 0]])
    assert torch.equal(whole[:, 1::2], torch.zeros(6, 2))
    # Tensors that require grad are read through detach().
    param = torch.nn.Parameter(torch.arange(4.))
    assert gj.take(param, torch.tensor([3])).tolist() == [3.0]


def test_conjugated_and_negated_views_gather_the_values_they_show():
    # x.conj() and its imaginary part are views whose memory holds other
    # values than they show (PyTorch's conjugate and negative bits): every
    # path gathers what they show, after calls on plain tensors of the same
    # layouts (whose layouts the native paths keep).
    x = torch.tensor([[1 + 2j, 3 - 4j, 5 + 6j]] * 2, dtype=torch.complex64)
    ids = torch.tensor([[2, 0], [1, 1]])
    k = gj.compile("gather_elements", data=((2, 3), "float32", (6, 2)),
                   indices=((2, 2), "int64"), axis=1)
    for plain, lazy in ((x, x.conj()), (x.imag, x.conj().imag),
                        (x.real.contiguous(), torch._neg_view(x.real.contiguous()))):
        assert lazy.is_conj() or lazy.is_neg()
        want = torch.gather(lazy, 1, ids)
        for tensor in (plain, lazy, plain, lazy):
            expected = torch.gather(tensor, 1, ids)
            for got in (gj.take_along_axis(tensor, ids, 1), gjt.gather_elements(tensor, ids, 1),
                        torch.ops.gatherjit.gather_elements(tensor, ids, 1)):
                assert torch.equal(got, expected)
            assert torch.equal(gj.take(tensor, ids[0], 1), torch.index_select(tensor, 1, ids[0]))
        if plain.dtype == torch.float32 and plain.stride() == (6, 2):
            assert torch.equal(k(plain, ids), torch.gather(plain, 1, ids))
            assert torch.equal(k(lazy, ids), want)
    with pytest.raises(ValueError, match="out is a conjugated or negated view"):
        gj.take_along_axis(x, ids, 1, out=torch.empty(2, 2, dtype=torch.complex64).conj())


def test_results_are_tensors_sharing_the_kernels_output():
    data = torch.arange(10, dtype=torch.int16)
    got = gj.take(data, torch.tensor([3, -1]))
    assert isinstance(got, torch.Tensor) and got.tolist() == [3, 9]
    bf = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    got = gj.take(bf, torch.tensor([2, 0]))
    assert got.dtype == torch.bfloat16 and got.tolist() == [3.0, 1.5]
    # numpy in, numpy out.
    assert isinstance(gj.take(np.arange(4), np.array([1])), np.ndarray)
    k = gj.compile("gather", data=((10,), "int16"), indices=((2,), "int64"))
    assert isinstance(k(data, torch.tensor([0, 1])), torch.Tensor)
    assert k(data.numpy(), np.array([0, 1])).tolist() == [0, 1]


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="PyTorch without float8 dtypes")
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_tensors_are_gathered_as_their_bytes(name):
    # An FP8 KV cache's blocks: torch.gather has no float8 kernel on the
    # CPU; gatherjit moves the bytes, and the result keeps the dtype.
    dtype = getattr(torch, name)
    data = (torch.arange(48.).reshape(4, 12) / 8).to(dtype)
    raw = data.view(torch.uint8)
    idx = torch.tensor([[11, 0, 5]] * 4)
    for _ in range(2):  # the second call on the direct path
        got = gjt.gather_elements(data, idx, 1)
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8), torch.gather(raw, 1, idx))
        got = gjt.gather(data, torch.tensor([3, 1]), 0)
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8), raw[[3, 1]])
        got = gjt.gather_nd(data, torch.tensor([[2], [0]]))
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8), raw[[2, 0]])
    k = gj.compile("gather", data.t(), torch.tensor([2, 7]), 0)
    for _ in range(2):
        got = k(data.t(), torch.tensor([2, 7]))
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8), raw.t()[[2, 7]])


@pytest.mark.skipif(not hasattr(torch, "complex32"), reason="PyTorch without complex32")
def test_complex32_tensors_are_gathered_as_their_bytes_and_quantized_ones_refused():
    # numpy has no complex32: its elements move as 4 bytes, the result keeps
    # the dtype. A quantized tensor's values are not its bytes alone.
    raw = torch.arange(48, dtype=torch.int32).reshape(4, 12)
    data = raw.view(torch.complex32)
    idx = torch.tensor([[11, 0, 5]] * 4)
    for _ in range(2):  # the second call on the direct path
        got = gjt.gather_elements(data, idx, 1)
        assert got.dtype == torch.complex32
        assert torch.equal(got.view(torch.int32), torch.gather(raw, 1, idx))
        got = gj.take(data, torch.tensor([3, 1]), 0)
        assert got.dtype == torch.complex32 and torch.equal(got.view(torch.int32), raw[[3, 1]])
    k = gj.compile("gather", data.t(), torch.tensor([2, 7]), 0)
    assert torch.equal(k(data.t(), torch.tensor([2, 7])).view(torch.int32), raw.t()[[2, 7]])
    quantized = torch.quantize_per_tensor(torch.arange(4.0), 0.5, 0, torch.quint8)
    with pytest.raises(TypeError, match="torch.quint8, which gatherjit does not gather"):
        gj.take(quantized, torch.tensor([1]), 0)


def test_errors_are_python_exceptions():
    data = torch.arange(6.).reshape(2, 3)
    with pytest.raises(IndexError, match="3"):
        torch.ops.gatherjit.gather_elements(data, torch.tensor([[0, 3]]), 1)
    # The functions name a bad index in the caller's shapes, with or
    # without autograd.
    for d in (data, data.clone().requires_grad_()):
        with pytest.raises(IndexError, match=r"^indices\[0, 1\] = 3 is out of range for axis 1 "
                                             r"of size 3; valid indices are -3..2$"):
            gjt.gather_elements(d, torch.tensor([[0, 3]]), 1)
        with pytest.raises(IndexError, match=r"^indices\[1\] = 2 is out of range for axis 0 "):
            gjt.gather(d, torch.tensor([0, 2]), 0)
    with pytest.raises(ValueError, match="mode"):
        torch.ops.gatherjit.gather(data, torch.tensor([0]), 0, "wrapp")
    with pytest.raises(TypeError, match="^mode must be a str"):
        gjt.gather_elements(data, torch.tensor([[0]]), 1, None)
    clipped = torch.ops.gatherjit.gather_elements(data, torch.tensor([[7, -9]]), 1, "clip")
    assert clipped.tolist() == [[2.0, 0.0]]
    with pytest.raises(ValueError, match="meta"):
        gj.take(torch.zeros(3, device="meta"), torch.tensor([0]))


def test_sparse_tensors_are_refused_by_name():
    data, ids = torch.arange(6.).reshape(2, 3), torch.tensor([[0, 2], [1, 1]])
    sparse = data.to_sparse()
    for d in (sparse, sparse.clone().requires_grad_()):
        with pytest.raises(TypeError, match=r"^data is a tensor of layout torch.sparse_coo; "
                                            r"gatherjit gathers strided \(dense\) tensors: "
                                            r"pass data.to_dense\(\)$"):
            gjt.gather_elements(d, ids, 1)
    with pytest.raises(TypeError, match="^indices is a tensor of layout torch.sparse_coo"):
        gj.take_along_axis(data, ids.to_sparse(), 1)
    with pytest.raises(TypeError, match=r"^out is a tensor of layout torch.sparse_coo; "
                                        r"gatherjit writes into strided \(dense\) tensors$"):
        gj.take_along_axis(data, ids, 1, out=torch.zeros(2, 2).to_sparse())


def test_bad_arguments_raise_the_same_errors_with_or_without_autograd():
    # With data that requires grad the functions are autograd.Functions,
    # whose bookkeeping must not fail before the kernel names the problem.
    along = torch.zeros(2, 2, dtype=torch.long)
    for data in (torch.ones(2, 3), torch.ones(2, 3, requires_grad=True)):
        for call in (lambda: gjt.gather_elements(data, along, 2),
                     lambda: gjt.gather(data, torch.tensor([0]), -3)):
            with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions")
                               else np.AxisError, match="axis -?[23] is out of bounds"):
                call()
        for call in (lambda: gjt.gather_elements(data, along, None),
                     lambda: gjt.gather(data, torch.tensor([0]), 1.0),
                     lambda: gjt.gather_nd(data, torch.tensor([[0]]), None)):
            with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
                call()
        with pytest.raises(ValueError, match="^GatherND: indices must have rank >= 1"):
            gjt.gather_nd(data, torch.tensor(0))
        with pytest.raises(TypeError, match="indices must be integers"):
            gjt.gather_elements(data, along.float(), 1)


def test_empty_indices_give_their_shape_as_torch_gather_does():
    # torch.gather compares no sizes with empty indices, of any rank; the
    # axis, the mode and the index type are still checked.
    for data in (torch.arange(6.).reshape(2, 3), torch.arange(6.).reshape(2, 3).requires_grad_()):
        for shape in ((5, 0), (0,), (2, 0, 4), (0, 9)):
            idx = torch.zeros(shape, dtype=torch.long)
            want = torch.gather(data, 1, idx)
            got = gjt.gather_elements(data, idx, 1)
            assert got.shape == want.shape == shape and got.dtype == data.dtype
            assert got.requires_grad == data.requires_grad
        with pytest.raises(IndexError, match="axis 2"):
            gjt.gather_elements(data, torch.zeros(5, 0, dtype=torch.long), 2)
        with pytest.raises(ValueError, match="mode"):
            gjt.gather_elements(data, torch.zeros(5, 0, dtype=torch.long), 1, "bogus")
        with pytest.raises(TypeError, match="indices must be integers"):
            gjt.gather_elements(data, torch.zeros(5, 0), 1)
    data = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    gjt.gather_elements(data, torch.zeros(5, 0, dtype=torch.long), 1).sum().backward()
    assert torch.equal(data.grad, torch.zeros(2, 3, dtype=torch.float64))
    assert torch.ops.gatherjit.gather_elements(torch.ones(4), torch.zeros(3, 0, dtype=torch.long),
                                               0).shape == (3, 0)


@pytest.mark.skipif(not hasattr(torch.library, "register_fake"),
                    reason="fake implementations need torch.library.register_fake (PyTorch 2.4)")
def test_meta_tensors_give_shapes():
    data = torch.empty(4, 5, 6, device="meta")
    assert torch.ops.gatherjit.gather(data, torch.empty(2, 3, dtype=torch.long, device="meta"),
                                      1).shape == (4, 2, 3, 6)
    assert torch.ops.gatherjit.gather_elements(
        data, torch.empty(4, 2, 6, dtype=torch.long, device="meta"), 1).shape == (4, 2, 6)
    assert torch.ops.gatherjit.gather_nd(
        data, torch.empty(4, 7, 2, dtype=torch.long, device="meta"), 1).shape == (4, 7)
    assert torch.ops.gatherjit.gather_nd(
        data, torch.empty(3, 1, dtype=torch.long, device="meta")).shape == (3, 5, 6)


@pytest.mark.skipif(not hasattr(torch.library, "register_fake"),
                    reason="fake implementations need torch.library.register_fake (PyTorch 2.4)")
def test_the_functions_give_shapes_of_meta_and_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode
    data = torch.empty(4, 5, 6)
    along = torch.zeros(4, 2, 6, dtype=torch.long)
    ids = torch.zeros(2, 3, dtype=torch.int32)
    tuples = torch.zeros(4, 7, 2, dtype=torch.long)
    calls = [(gjt.gather_elements, along, 1, (4, 2, 6)), (gjt.gather, ids, -2, (4, 2, 3, 6)),
             (gjt.gather_nd, tuples, 1, (4, 7))]
    for f, indices, axis, shape in calls:
        got = f(data.to("meta"), indices.to("meta"), axis)
        assert got.device.type == "meta" and got.shape == shape and got.dtype == data.dtype
        with FakeTensorMode() as mode:
            got = f(mode.from_tensor(data), mode.from_tensor(indices), axis)
        assert got.shape == shape and got.dtype == data.dtype
    # A bad axis is still refused without values to read.
    with pytest.raises(IndexError):
        gjt.gather(data.to("meta"), ids.to("meta"), 3)


@pytest.mark.skipif(not hasattr(torch.library, "opcheck"),
                    reason="torch.library.opcheck is PyTorch 2.4's")
def test_the_operators_pass_torch_library_opcheck():
    # PyTorch's own checks of a custom operator: its schema (no input
    # returned or mutated), its autograd registration, its fake
    # implementation against real runs and AOT autograd with dynamic shapes.
    gen = torch.Generator().manual_seed(11)
    data = torch.randn(4, 5, 3, dtype=torch.float64, generator=gen)
    grad = data.clone().requires_grad_()
    ops = torch.ops.gatherjit
    samples = [
        (ops.gather_elements, (grad, torch.randint(-5, 5, (4, 2, 3), generator=gen), 1)),
        (ops.gather_elements, (data, torch.randint(0, 4, (2, 5, 1), generator=gen).int(), 0,
                               "clip")),
        (ops.gather_elements, (grad.transpose(0, 2), torch.zeros(3, 5, 0, dtype=torch.long),
                               -1)),
        (ops.gather, (grad, torch.tensor([[1, -1], [0, 4]]), 1)),
        (ops.gather, (data[:, ::2], torch.tensor([9, -9], dtype=torch.int32), -2, "clamp")),
        (ops.gather, (grad, torch.tensor(2), 0)),
        (ops.gather_nd, (grad, torch.tensor([[0, 4], [3, -1]]), 0)),
        (ops.gather_nd, (grad, torch.tensor([[[1], [4]], [[0], [0]], [[2], [3]], [[4], [1]]]),
                         1)),
        (ops.gather_nd, (data, torch.tensor([[7, 0]]), 0, "clip")),
    ]
    for op, args in samples:
        torch.library.opcheck(op.default, args)


@pytest.mark.skipif(not hasattr(torch, "func") or not hasattr(torch.autograd.Function,
                                                              "setup_context"),
                    reason="torch.func's transforms of autograd.Functions are PyTorch 2.0's")
def test_the_functions_follow_torch_func_transforms():
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(3, 4, 5, dtype=torch.float64, generator=gen)
    batch = torch.randn(6, 3, 4, 5, dtype=torch.float64, generator=gen)
    along = torch.randint(-4, 4, (3, 2, 5), generator=gen)
    ids = torch.tensor([[1, -1], [0, 2]])
    tuples = torch.tensor([[0, 1], [2, 3], [1, -1]])
    pairs = [  # ours, torch's
        (lambda d: gjt.gather_elements(d, along, 1), lambda d: torch.gather(d, 1, along % 4)),
        (lambda d: gjt.gather(d, ids, 1), lambda d: d[:, ids % 4]),
        (lambda d: gjt.gather(d, torch.tensor([9, -9]), -1, "clip"), lambda d: d[..., [4, 0]]),
        (lambda d: gjt.gather_nd(d, tuples), lambda d: d[tuples[:, 0], tuples[:, 1] % 4]),
    ]
    func = torch.func
    for ours, theirs in pairs:
        transforms = [
            lambda f: func.grad(lambda d: f(d).pow(2).sum())(x),
            lambda f: func.jacrev(f)(x),
            lambda f: func.jacfwd(f)(x),
            lambda f: func.jvp(f, (x,), (torch.ones_like(x),))[1],
            lambda f: func.hessian(lambda d: f(d).pow(3).sum())(x),
            lambda f: func.vmap(f)(batch),
            lambda f: func.vmap(f, in_dims=2)(batch.movedim(0, 2)),
            lambda f: func.vmap(func.vmap(f))(batch.expand(2, *batch.shape)),
            lambda f: func.vmap(func.grad(lambda d: f(d).pow(2).sum()))(batch),
        ]
        for transform in transforms:
            want = transform(theirs)
            got = transform(ours)
            assert got.shape == want.shape and torch.equal(got, want)
    # Batched indices, with the data batched or not.
    rows = torch.randn(6, 3, 4, generator=gen)
    idx = torch.randint(-4, 4, (6, 2, 5), generator=gen)
    vmap = func.vmap
    cases = [
        (vmap(lambda d, i: gjt.gather_elements(d, i[:3], 1))(rows, idx.transpose(1, 2)),
         torch.stack([torch.gather(rows[b], 1, idx[b].t()[:3] % 4) for b in range(6)])),
        (vmap(lambda i: gjt.gather_elements(rows[0], i[:3], 1))(idx.transpose(1, 2)),
         torch.stack([torch.gather(rows[0], 1, idx[b].t()[:3] % 4) for b in range(6)])),
        (vmap(lambda d, i: gjt.gather(d, i, 1))(rows, idx),
         torch.stack([rows[b][:, idx[b] % 4] for b in range(6)])),
        (vmap(lambda d, i: gjt.gather(d, i, 0), in_dims=(0, 1))(rows, (idx % 3).movedim(0, 1)),
         torch.stack([rows[b][idx[b] % 3] for b in range(6)])),
        (vmap(lambda i: gjt.gather(rows[1], i, -1), in_dims=2)(idx.movedim(0, 2)),
         torch.stack([rows[1][..., idx[b] % 4] for b in range(6)])),
        (vmap(lambda d, i: gjt.gather_nd(d, i.reshape(5, 2) % 3))(rows, idx),
         torch.stack([rows[b][(idx[b].reshape(5, 2) % 3).unbind(-1)] for b in range(6)])),
    ]
    for got, want in cases:
        assert got.shape == want.shape and torch.equal(got, want)
    # A bad index in a batch is the same IndexError.
    with pytest.raises(IndexError, match="out of range"):
        vmap(lambda d: gjt.gather(d, torch.tensor([4]), 1))(rows)
    # Plain tensors within a transform are constants to it, for the
    # numpy-style functions and kernels too; those refuse the tensors a
    # transform wraps, which have no memory to read.
    weights = torch.randn(2, 3, dtype=torch.float64, generator=gen)
    ids = torch.tensor([2, 0])
    table = x[0, :, :3]
    kernel = gj.compile("gather", table, ids)
    for f in (lambda t: gjt.gather(t, ids, 0), lambda t: gj.take(t, ids, 0),
              lambda t: kernel(t, ids)):
        assert torch.equal(func.grad(lambda w: (w * f(table)).sum())(weights), table[ids])
        assert torch.equal(vmap(lambda w: w * f(table))(batch[:, 0, :2, :3]),
                           batch[:, 0, :2, :3] * table[ids])
    for f in (lambda t: gj.take(t, ids, 0), lambda t: gj.take_along_axis(t, ids[:, None], 0),
              lambda t: gj.gather_nd(t, ids[:, None]), lambda t: kernel(t, ids)):
        for transform in (vmap, func.grad):
            with pytest.raises(TypeError, match="^data is a tensor of a torch.func transform"):
                transform(lambda t: f(t).sum())(batch[:, 0, :, :3] if transform is vmap
                                                 else table)


@torch.jit.script
def _scripted(data: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return torch.ops.gatherjit.gather_elements(data, index, 1) * 2


@torch.jit.script
def _scripted_nd(data: torch.Tensor, tuples: torch.Tensor) -> torch.Tensor:
    return torch.ops.gatherjit.gather_nd(data, tuples, 0, "clip")


def test_callable_from_torch_jit_script():
    data = torch.arange(12.).reshape(3, 4)
    idx = torch.tensor([[3, 0], [1, 1], [2, 3]])
    assert torch.equal(_scripted(data, idx), torch.gather(data, 1, idx) * 2)
    assert "gatherjit::gather_elements" in str(_scripted.graph)
    # clip: 9 reads the last column, -1 the first row.
    assert _scripted_nd(data, torch.tensor([[1, 9], [-1, 2]])).tolist() == [7.0, 2.0]
    assert "gatherjit::gather_nd" in str(_scripted_nd.graph)


def test_an_out_that_requires_grad_is_refused_as_torch_refuses_it():
    data = torch.arange(4, dtype=torch.float32)
    out = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        gj.take(data, torch.tensor([1, 0]), 0, out=out)
    assert out.detach().tolist() == [0, 0]


def test_gradients_are_scatter_adds_and_gradcheck_passes():
    gen = torch.Generator().manual_seed(3)
    data = torch.randn(4, 5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    # Repeated and negative indices: their gradients add up.
    along = torch.tensor([[[0, 4, 4], [-1, 0, 2]]] * 4)
    ids = torch.tensor([[1, 1], [-1, 0]])
    tuples = torch.tensor([[0, 4], [0, 4], [3, -5]])
    batched = torch.tensor([[[1], [1]], [[4], [0]], [[2], [2]], [[0], [-1]]])
    cases = [
        (lambda x: gjt.gather_elements(x, along, 1), lambda x: torch.gather(x, 1, along % 5)),
        (lambda x: gjt.gather(x, ids, 1), lambda x: x[:, ids % 5]),
        (lambda x: gjt.gather_nd(x, tuples), lambda x: x[tuples[:, 0], tuples[:, 1] % 5]),
        (lambda x: gjt.gather_nd(x, batched, batch_dims=1),
         lambda x: torch.stack([x[b, batched[b, :, 0] % 5] for b in range(4)])),
        (lambda x: gjt.gather(x, torch.tensor([9, -9]), 1, mode="clip"),
         lambda x: x[:, [4, 0]]),
    ]
    for ours, reference in cases:
        assert torch.autograd.gradcheck(ours, (data,))
        weights = torch.randn(reference(data).shape, dtype=torch.float64, generator=gen)
        (g_ours,) = torch.autograd.grad((ours(data) * weights).sum(), data)
        (g_ref,) = torch.autograd.grad((reference(data) * weights).sum(), data)
        assert torch.equal(g_ours, g_ref)
    # Without grad, the plain kernel's result and no graph.
    with torch.no_grad():
        assert gjt.gather(data, ids, 1).grad_fn is None


@pytest.mark.skipif(not hasattr(torch.library, "register_autograd"),
                    reason="operators' gradients need torch.library.register_autograd (2.4)")
def test_the_operators_gradients_are_the_functions():
    gen = torch.Generator().manual_seed(5)
    data = torch.randn(4, 5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    along = torch.tensor([[[0, 4, 4], [-1, 0, 2]]] * 4)
    ids = torch.tensor([[1, 1], [-1, 0]])
    tuples = torch.tensor([[0, 4], [0, 4], [3, -5]])
    batched = torch.tensor([[[1], [1]], [[4], [0]], [[2], [2]], [[0], [-1]]])
    cases = [
        (lambda x: torch.ops.gatherjit.gather_elements(x, along, 1),
         lambda x: torch.gather(x, 1, along % 5)),
        (lambda x: torch.ops.gatherjit.gather(x, ids, 1), lambda x: x[:, ids % 5]),
        (lambda x: torch.ops.gatherjit.gather(x, torch.tensor([9, -9]), -2, "clip"),
         lambda x: x[:, [4, 0]]),
        (lambda x: torch.ops.gatherjit.gather_nd(x, tuples),
         lambda x: x[tuples[:, 0], tuples[:, 1] % 5]),
        (lambda x: torch.ops.gatherjit.gather_nd(x, batched, 1),
         lambda x: torch.stack([x[b, batched[b, :, 0] % 5] for b in range(4)])),
    ]
    for ours, reference in cases:
        assert torch.equal(ours(data), reference(data))
        assert torch.autograd.gradcheck(ours, (data,))
        weights = torch.randn(reference(data).shape, dtype=torch.float64, generator=gen)
        (g_ours,) = torch.autograd.grad((ours(data) * weights).sum(), data)
        (g_ref,) = torch.autograd.grad((reference(data) * weights).sum(), data)
        assert torch.equal(g_ours, g_ref)


@pytest.mark.skipif(not hasattr(torch.library, "register_fake") or not hasattr(torch, "compile"),
                    reason="fake implementations need PyTorch 2.4")
def test_torch_compile_traces_the_operators_into_one_graph():
    # fullgraph: a graph break (an operator torch.compile cannot trace) is
    # an error; dynamic: the fake implementations' shapes are symbolic.
    ops = torch.ops.gatherjit

    def step(x, along, ids, tuples):
        return (ops.gather_elements(x, along, 1) * 2 + ops.gather(x, ids, 1).sum()
                + ops.gather_nd(x, tuples).sum())

    compiled = torch.compile(step, dynamic=True, fullgraph=True)
    gen = torch.Generator().manual_seed(9)
    for rows in (3, 5, 8):
        x = torch.randn(rows, 7, dtype=torch.float64, generator=gen)
        along = torch.randint(-7, 7, (rows, 4), generator=gen)
        ids = torch.randint(-7, 7, (3,), generator=gen)
        tuples = torch.randint(0, 3, (5, 2), generator=gen)
        want = (torch.gather(x, 1, along % 7) * 2 + x[:, ids % 7].sum()
                + x[tuples[:, 0], tuples[:, 1]].sum())
        torch.testing.assert_close(compiled(x, along, ids, tuples), want)
    # Gradients through the compiled operators.
    data = torch.randn(4, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    tuples = torch.tensor([[1], [3], [1]])
    loss = torch.compile(lambda d: ops.gather_nd(d, tuples).pow(2).sum(), fullgraph=True)
    (grad,) = torch.autograd.grad(loss(data), data)
    (want,) = torch.autograd.grad(data[tuples[:, 0]].pow(2).sum(), data)
    assert torch.equal(grad, want)
    # A bad index is the same IndexError as an eager call's.
    with pytest.raises(IndexError, match="indices\\[0\\] = 9 is out of range for axis 0"):
        torch.compile(lambda d: ops.gather(d, torch.tensor([9]), 0))(torch.zeros(3))


@pytest.mark.skipif(not hasattr(getattr(torch, "compiler", None), "substitute_in_graph"),
                    reason="dynamo's substitutes need PyTorch 2.5")
def test_torch_compile_traces_the_functions_as_the_operators():
    # In a new process, as a user's program runs: this module imported
    # before torch.compile's first call imports dynamo. fullgraph: the
    # built-in functions broke the graph, an error there.
    import subprocess
    import sys
    code = """
import sys, torch, gatherjit.torch as gjt
assert "torch._dynamo" not in sys.modules
def step(x, along, ids, tuples):
    return (gjt.gather_elements(x, along, 1) * 2 + gjt.gather(x, ids, axis=1).sum()
            + gjt.gather_nd(x, tuples, batch_dims=0, mode="clip").sum())
compiled = torch.compile(step, dynamic=True, fullgraph=True)
gen = torch.Generator().manual_seed(5)
for rows in (3, 5, 8):
    x = torch.randn(rows, 7, dtype=torch.float64, generator=gen, requires_grad=True)
    along = torch.randint(-7, 7, (rows, 4), generator=gen)
    ids = torch.randint(-7, 7, (3,), generator=gen)
    tuples = torch.randint(0, 3, (5, 2), generator=gen)
    want = (torch.gather(x, 1, along % 7) * 2 + x[:, ids % 7].sum()
            + x[tuples[:, 0], tuples[:, 1]].sum())
    got = compiled(x, along, ids, tuples)
    torch.testing.assert_close(got, want)
    (g_got,) = torch.autograd.grad(got.sum(), x)
    (g_want,) = torch.autograd.grad(want.sum(), x)
    torch.testing.assert_close(g_got, g_want)
# torch.export, which allows no graph break, records the operators.
class Step(torch.nn.Module):
    def forward(self, x, along, ids, tuples):
        return step(x, along, ids, tuples)
exported = torch.export.export(Step(), (x.detach(), along, ids, tuples))
assert "torch.ops.gatherjit.gather_nd.default" in exported.graph_module.code
torch.testing.assert_close(exported.module()(x.detach(), along, ids, tuples), want.detach())
try:
    torch.compile(lambda d: gjt.gather(d, torch.tensor([9])), fullgraph=True)(torch.zeros(3))
except IndexError as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("indices[0] = 9 is out of range for axis 0"), out.stdout


def test_repeated_layouts_run_on_each_calls_tensors():
    # The second and later calls of a layout take the tensors' pointers
    # directly: each call must see its own tensors, strided or narrow.
    for step in range(3):
        data = torch.arange(40, dtype=torch.float32).reshape(8, 5) * (step + 1)
        view = data[::2, 1:]
        ids = torch.tensor([[3, 0], [1, 1], [2, 0], [0, 3]])
        out = torch.empty(4, 2)
        assert gj.take_along_axis(view, ids, 1, out=out) is out
        assert torch.equal(out, torch.gather(view, 1, ids))
        narrow = torch.tensor([4, 0, 2], dtype=torch.int8)
        assert torch.equal(gj.take(data, narrow, 0), data[narrow.long()])
        half = data.to(torch.bfloat16)
        assert torch.equal(gj.take(half, torch.tensor([1, 7]), 0), half[[1, 7]])


def test_a_compiled_kernel_runs_on_each_calls_tensors_and_checks_their_layouts():
    # After its first call on tensors, a kernel reads later tensors of the
    # same dtypes directly: each call must still see its own tensors, and a
    # tensor of another layout or dtype must still be refused.
    k = gj.compile("gather_elements", data=((4, 5), "float32", (1, 4)),
                   indices=((4, 2), "int64"), axis=1)
    for step in range(4):
        data = (torch.arange(20, dtype=torch.float32).reshape(5, 4) * (step + 1)).t()
        ids = torch.tensor([[4, 0], [1, 1], [2, -1], [0, 3]]) if step % 2 else \
            torch.tensor([[3, 2], [0, 0], [1, 4], [4, 4]])
        want = torch.gather(data, 1, ids % 5)
        got = k(data, ids)
        assert isinstance(got, torch.Tensor) and torch.equal(got, want)
        out = torch.full((4, 2), -1.0)
        assert k(data, ids, out=out) is out and torch.equal(out, want)
    with pytest.raises(ValueError, match="data: the array's shape, dtype or strides differ"):
        k(data.contiguous(), ids)  # the same shape and dtype, other strides
    with pytest.raises(ValueError, match="data: the array's shape, dtype or strides differ"):
        k(data.to(torch.int32), ids)  # the same layout, another dtype
    with pytest.raises(ValueError, match="indices: the array's shape, dtype or strides differ"):
        k(data, ids[:2])
    with pytest.raises(ValueError, match="indices: the array's shape, dtype or strides differ"):
        k(data, ids[0])  # a lower rank, where the kernel's leading dimension is not 1
    with pytest.raises(ValueError, match="out: the array's shape, dtype or strides differ"):
        k(data, ids, out=torch.empty(2, 4))
    with pytest.raises(RuntimeError, match="requires grad"):
        k(data, ids, out=torch.empty(4, 2, requires_grad=True))
    with pytest.raises(IndexError, match="5"):
        k(data, torch.tensor([[0, 0], [0, 5], [0, 0], [0, 0]]))
    # A tensor without strided storage has no data pointer to read: the
    # general path names its layout.
    sparse = data.contiguous().to_sparse()
    with pytest.raises(TypeError, match="^data is a tensor of layout torch.sparse_coo"):
        k(sparse, ids)
    # Narrow indices are copied to the kernel's width: every call takes the
    # general path, and reads its own indices.
    narrow = gj.compile("gather", data=((6, 3), "float64"), indices=((2,), "int32"))
    table = torch.arange(18, dtype=torch.float64).reshape(6, 3)
    for ids in ([5, 0], [1, 2], [4, 3]):
        ids = torch.tensor(ids, dtype=torch.int16)
        assert torch.equal(narrow(table, ids), table[ids.long()])


def test_a_kernel_compiled_from_tensors_takes_their_layouts():
    # compile() given tensors makes the kernel of their strides and dtypes
    # (bfloat16 too), which then runs on them, pickled or not.
    ids = torch.tensor([[1, 0], [2, 2], [0, 1]])
    for data in (torch.arange(12.).reshape(4, 3).t(),
                 torch.arange(9.).reshape(3, 3).to(torch.bfloat16),
                 torch.arange(15.).reshape(3, 5)[:, 1:4],
                 torch.arange(3.).expand(3, 3)):
        k = gj.compile("gather_elements", data, ids, 1)
        want = torch.gather(data, 1, ids)
        for run in (k, pickle.loads(pickle.dumps(k))):
            got = run(data, ids)
            assert got.dtype == data.dtype and torch.equal(got, want)


def test_a_large_tensor_result_keeps_its_buffer_while_it_lives():
    # A result of 1 MiB or more comes from the process's pool of buffers; a
    # tensor over one holds it as long as the tensor lives.
    table = torch.arange(4096 * 256, dtype=torch.float32).reshape(4096, 256)
    ids = torch.randint(0, 4096, (1024,))
    kept = gjt.gather(table, ids, 0)
    for _ in range(3):
        other = gjt.gather(table, torch.randint(0, 4096, (1024,)), 0)
        assert other.data_ptr() != kept.data_ptr()
        del other
    assert torch.equal(kept, table[ids])


def test_tensor_results_own_their_memory_and_give_large_buffers_back():
    # A result tensor is made over memory of its own (small) or from the
    # pool (1 MiB or more), which it gives back when it dies: the next
    # result of that size takes the same buffer, with every byte written
    # anew.
    table = torch.arange(2048 * 256, dtype=torch.float32).reshape(2048, 256)
    gen = torch.Generator().manual_seed(3)
    ids = [torch.randint(0, 2048, (1024,), generator=gen) for _ in range(3)]
    old = gj.set_output_pool(64 << 20)
    try:
        first = gj.take(table, ids[0], 0)  # 1 MiB
        where = first.data_ptr()
        assert first.is_contiguous() and where % 4096 == 0
        idle = gj.stats()["output_pool_bytes"]
        del first
        assert gj.stats()["output_pool_bytes"] == idle + (1 << 20)
        second = gj.take(table, ids[1], 0)
        assert second.data_ptr() == where
        assert torch.equal(second, table[ids[1]])
        second[0, 0] = -1.0  # writable, as from_numpy's tensors are
        assert second[0, 0].item() == -1.0
        small = gj.take_along_axis(table[:3], torch.tensor([[2, 1]] * 3), 1)
        assert small.tolist() == [[2.0, 1.0], [258.0, 257.0], [514.0, 513.0]]
        assert small.data_ptr() % 64 == 0
        # Every dtype a result is made of keeps its type and values.
        for dtype in DTYPES:
            data = random_tensor(gen, [5, 4], dtype)
            got = gj.take(data, torch.tensor([4, 0, 4]), 0)
            assert got.dtype == dtype and torch.equal(got, data[[4, 0, 4]])
    finally:
        gj.set_output_pool(old)


def _random_tensor_layout(gen, values, dtype):
    """`values` as a `dtype` tensor laid out at random: packed, column-major,
    a strided view into a larger tensor, or expanded from one slice."""
    values = values.to(dtype)
    kind = int(torch.randint(4, (1,), generator=gen))
    if kind == 1 and values.dim() > 1:
        return values.permute(*reversed(range(values.dim()))).contiguous().permute(
            *reversed(range(values.dim())))
    if kind == 2:
        big = torch.zeros([2 * s + 1 for s in values.shape], dtype=dtype)
        view = big[tuple(slice(1, 2 * s + 1, 2) for s in values.shape)]
        view.copy_(values)
        return view
    if kind == 3 and values.numel() > 1:
        d = max(range(values.dim()), key=lambda i: values.shape[i])
        return values.narrow(d, 0, 1).expand(values.shape)
    return values.contiguous()


def test_compiled_kernels_on_random_tensor_layouts_never_misread_them():
    # As test_gatherjit's test on arrays, with tensors: each call twice (the
    # second on the direct path once the dtypes have been seen).
    gen = torch.Generator().manual_seed(20261128)
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8]
    ran = refused = 0
    for _ in range(80):
        rank = int(torch.randint(1, 5, (1,), generator=gen))
        shape = [int(s) for s in torch.randint(1, 5, (rank,), generator=gen)]
        axis = int(torch.randint(rank, (1,), generator=gen))
        dtype = dtypes[int(torch.randint(len(dtypes), (1,), generator=gen))]
        values = torch.randint(-100, 100, shape, generator=gen)
        idx_shape = list(shape)
        idx_shape[axis] = int(torch.randint(1, 4, (1,), generator=gen))
        ids = torch.randint(0, shape[axis], idx_shape, generator=gen)
        data = _random_tensor_layout(gen, values, dtype)
        idx = _random_tensor_layout(gen, ids, torch.int64)
        k = gj.compile("gather_elements", data, idx, axis)
        for _ in range(2):
            assert torch.equal(k(data, idx), torch.gather(data, axis, idx))
        for _ in range(3):
            other = _random_tensor_layout(gen, values, dtype)
            other_idx = _random_tensor_layout(gen, ids, torch.int64)
            for _ in range(2):
                try:
                    got = k(other, other_idx)
                except ValueError:
                    refused += 1
                    continue
                ran += 1
                assert got.dtype == dtype
                assert torch.equal(got, torch.gather(other, axis, other_idx))
    assert ran > 20 and refused > 100


def test_the_functions_take_their_arguments_as_python_functions_do():
    import inspect
    data = torch.arange(12.).reshape(3, 4)
    for f, args, want in [
            (gjt.gather_elements, (data, torch.tensor([[3], [0], [1]]), 1),
             torch.gather(data, 1, torch.tensor([[3], [0], [1]]))),
            (gjt.gather, (data, torch.tensor([2, -1])), data[[2, 2]]),
            (gjt.gather_nd, (data, torch.tensor([[0, 3], [2, 1]])), torch.tensor([3., 9.]))]:
        names = list(inspect.signature(f).parameters)
        assert names[:2] == ["data", "indices"] and names[3:] == ["mode"]
        assert pickle.loads(pickle.dumps(f)) is f
        assert f.__doc__ and f.__module__ == "gatherjit.torch"
        by_name = dict(zip(names, args))
        for got in (f(*args), f(**by_name), f(*args[:1], **dict(list(by_name.items())[1:])),
                    f(*args, mode="clamp"), f(*args, **{"mode": "raise"})):
            assert torch.equal(got, want)
        # Through the general path: autograd records it.
        leaf = data.clone().requires_grad_()
        grad_args = (leaf,) + args[1:]
        assert f(*grad_args).grad_fn is not None
        with torch.no_grad():
            assert f(*grad_args).grad_fn is None
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\) got an unexpected keyword "
                                            r"argument 'modes'"):
            f(*args, modes="raise")
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\) got multiple values for "
                                            r"argument 'indices'"):
            f(*args, indices=args[1])
        # Operands that are not tensors are refused as torch refuses them.
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\): argument 'indices' must be "
                                            r"Tensor, not list"):
            f(args[0], args[1].tolist(), *args[2:])
        with pytest.raises(TypeError, match=rf"^{f.__name__}\(\): argument 'data' must be "
                                            r"Tensor, not ndarray"):
            f(args[0].numpy(), *args[1:])
        # Meta tensors: the result's shape where PyTorch has fake
        # implementations (test_meta_tensors_give_shapes), else refused.
        meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
        if hasattr(torch.library, "register_fake"):
            got = f(*meta)
            assert got.device.type == "meta" and got.shape == want.shape
        else:
            with pytest.raises(ValueError, match=r"^data is on meta; gatherjit runs on the CPU "
                                                 r"and CUDA devices"):
                f(*meta)
    with pytest.raises(IndexError, match=r"^indices\[1\] = 3 is out of range for axis 0 of size "
                                         r"3"):
        gjt.gather(data, torch.tensor([0, 3]))
