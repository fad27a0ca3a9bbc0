"""device="cuda" on a real GPU, with PyTorch CUDA tensors (skipped where
PyTorch has no CUDA device): results equal PyTorch's own gathers, taken
where the tensors lie (views, out=, a side stream), and a bad index is the
IndexError the same tensors on the CPU raise."""

import pytest

import gatherjit as gj

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def cuda(x):
    return x.to("cuda")


def test_take_along_axis_matches_torch_gather():
    gen = torch.Generator().manual_seed(1)
    data = cuda(torch.randn(64, 1000, generator=gen))
    for index_type in (torch.int64, torch.int32):
        idx = cuda(torch.randint(-1000, 1000, (64, 500), generator=gen).to(index_type))
        got = gj.take_along_axis(data, idx, 1, device="cuda")
        assert got.is_cuda and got.dtype == torch.float32 and got.shape == (64, 500)
        assert torch.equal(got, torch.gather(data, 1, (idx.long() % 1000)))
    # A transposed view, read where it lies; axis 0.
    view = data.t()
    idx = cuda(torch.randint(0, 1000, (300, 64), generator=gen))
    assert torch.equal(gj.take_along_axis(view, idx, 0, device="cuda"),
                       torch.gather(view, 0, idx))


def test_take_and_gather_nd_match_torch():
    gen = torch.Generator().manual_seed(2)
    table = cuda(torch.randn(5000, 128, generator=gen).half())
    ids = cuda(torch.randint(0, 5000, (300,), generator=gen).int())
    assert torch.equal(gj.take(table, ids, 0, device="cuda"), table[ids.long()])
    points = cuda(torch.stack([torch.randint(0, 5000, (4096,), generator=gen),
                               torch.randint(0, 128, (4096,), generator=gen)], dim=1))
    assert torch.equal(gj.gather_nd(table, points, device="cuda"),
                       table[points[:, 0], points[:, 1]])


def test_out_on_a_side_stream_and_clamp():
    gen = torch.Generator().manual_seed(3)
    data = cuda(torch.randn(128, 256, generator=gen))
    idx = cuda(torch.randint(-300, 300, (128, 64), generator=gen))
    out = cuda(torch.full((128, 64), -1.0))
    where = out.data_ptr()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = gj.take_along_axis(data, idx, 1, out=out, mode="clamp", device="cuda")
    side.synchronize()
    assert got is out and out.data_ptr() == where
    # Negative indices count from the end, then every index is clamped.
    wrapped = torch.where(idx < 0, idx + 256, idx).clamp(0, 255)
    assert torch.equal(out, torch.gather(data, 1, wrapped))
    on_cpu = gj.take_along_axis(data.cpu(), idx.cpu(), 1, mode="clamp")
    assert torch.equal(out.cpu(), on_cpu)


def test_calls_of_one_layout_run_on_their_own_tensors_and_streams():
    # Later calls of a layout (its kernel found in the cache) read their own
    # tensors' pointers and launch on their own current stream.
    gen = torch.Generator().manual_seed(4)
    for _ in range(3):
        data = cuda(torch.randn(50, 70, generator=gen))
        idx = cuda(torch.randint(0, 70, (50, 9), generator=gen))
        assert torch.equal(gj.take_along_axis(data, idx, 1, device="cuda"),
                           torch.gather(data, 1, idx))
        out = cuda(torch.empty(50, 9))
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            gj.take_along_axis(data[:, :], idx, 1, out=out, device="cuda")
        side.synchronize()
        assert torch.equal(out, torch.gather(data, 1, idx))
    # A bad index in a layout run before: the same error as on a CPU.
    idx[7, 3] = 70
    with pytest.raises(IndexError, match=r"indices\[7, 3\] = 70"):
        gj.take_along_axis(data, idx, 1, device="cuda")


def test_a_bad_index_is_the_cpus_error():
    data = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    idx = torch.tensor([[3, 2], [0, 1], [1, 9]])
    with pytest.raises(IndexError) as on_cpu:
        gj.take_along_axis(data, idx, 1)
    with pytest.raises(IndexError) as on_device:
        gj.take_along_axis(cuda(data), cuda(idx), 1, device="cuda")
    assert str(on_device.value) == str(on_cpu.value)
    assert "indices[2, 1] = 9" in str(on_device.value)


def test_broadcast_and_gatherjit_torch_on_cuda_tensors():
    import gatherjit.torch as gjt
    gen = torch.Generator().manual_seed(5)
    data = cuda(torch.randn(6, 40, generator=gen, dtype=torch.float64))
    # numpy's broadcast: one row of indices against six rows of data.
    row = cuda(torch.randint(0, 40, (1, 7), generator=gen))
    assert torch.equal(gj.take_along_axis(data, row, 1, device="cuda"),
                       torch.gather(data, 1, row.expand(6, 7)))
    # torch's rule: indices smaller than the data off the axis.
    idx = cuda(torch.randint(0, 40, (4, 9), generator=gen))
    got = gjt.gather_elements(data, idx, 1)
    assert got.is_cuda and torch.equal(got, torch.gather(data, 1, idx))
    ids = cuda(torch.randint(0, 6, (5,), generator=gen))
    assert torch.equal(gjt.gather(data, ids, 0), data[ids])
    gjt.register()  # the dispatcher's operators, CUDA kernels too
    assert torch.equal(torch.ops.gatherjit.gather_elements(data, idx, 1),
                       torch.gather(data, 1, idx))
    assert torch.equal(torch.ops.gatherjit.gather(data, ids, 0), data[ids])
    assert torch.equal(gjt.gather_nd(data, cuda(torch.tensor([[1, 2], [5, 39]]))),
                       data[[1, 5], [2, 39]])
    # Their gradients, on the device too.
    leaf = data.clone().requires_grad_()
    gjt.gather_elements(leaf, idx, 1).sum().backward()
    want = torch.zeros_like(data).scatter_add_(1, idx, torch.ones(idx.shape, device="cuda",
                                                                  dtype=data.dtype))
    assert leaf.grad.is_cuda and torch.equal(leaf.grad, want)
    leaf = data.clone().requires_grad_()
    tuples = cuda(torch.tensor([[1, 2], [5, 39], [1, 2]]))
    gjt.gather_nd(leaf, tuples).sum().backward()
    want = torch.zeros_like(data)
    want[1, 2], want[5, 39] = 2, 1
    assert leaf.grad.is_cuda and torch.equal(leaf.grad, want)


def test_conjugated_and_negated_views_gather_the_values_they_show():
    # x.conj() and its imaginary part show other values than their memory
    # holds (PyTorch's conjugate and negative bits); the CUDA array
    # interface gives the memory: the values are made on the device first.
    gen = torch.Generator().manual_seed(6)
    x = cuda(torch.complex(torch.randn(8, 30, generator=gen), torch.randn(8, 30, generator=gen)))
    idx = cuda(torch.randint(0, 30, (8, 5), generator=gen))
    for lazy in (x.conj(), x.conj().imag, x.conj().imag.t().t()):
        assert lazy.is_conj() or lazy.is_neg()
        for _ in range(2):  # the second call of a layout takes the fast path
            assert torch.equal(gj.take_along_axis(lazy, idx, 1, device="cuda"),
                               torch.gather(lazy, 1, idx))
            assert torch.equal(gj.take(lazy, idx[0], 1, device="cuda"), lazy[:, idx[0]])
    with pytest.raises(ValueError, match="out is a conjugated or negated view"):
        gj.take_along_axis(x, idx, 1, out=torch.empty_like(x[:, :5]).conj(), device="cuda")
