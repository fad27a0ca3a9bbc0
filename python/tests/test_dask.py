"""gatherjit.dask on a LocalCluster of two worker processes, against numpy."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gatherjit.dask as gjd


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit="400MB", dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_take_along_axis_blockwise(client):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    idx = rng.integers(-300, 300, size=(64, 120))
    dx = da.from_array(x, chunks=(16, 300))  # The axis in one chunk.
    didx = da.from_array(idx, chunks=(8, 60))
    got = gjd.take_along_axis(dx, didx, 1).compute()
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, 1))


def test_take_along_axis_rechunks_a_split_axis(client):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 50)).astype(np.float64)
    idx = rng.integers(0, 40, size=(30, 50))
    dx = da.from_array(x, chunks=(10, 25))  # Axis 0 spans four chunks.
    got = gjd.take_along_axis(dx, da.from_array(idx, chunks=(15, 25)), 0).compute()
    np.testing.assert_array_equal(got, np.take_along_axis(x, idx, 0))


def test_take_along_axis_errors_name_the_index(client):
    x = da.zeros((4, 4), chunks=2)
    idx = da.from_array(np.full((4, 2), 9), chunks=2)
    with pytest.raises(IndexError, match="= 9"):
        gjd.take_along_axis(x, idx, 1).compute()
    with pytest.raises(ValueError, match="differ at dimension 0"):
        gjd.take_along_axis(x, da.zeros((3, 2), dtype=np.int64), 1)


def test_embedding_lookup_larger_than_one_worker(client):
    # A 480 MB INT32 table (1.875 M rows of 64) in 30 MB row chunks, made
    # on the workers: more than one worker's 400 MB limit. Row r holds
    # r * 64 + [0, 64).
    rows, dim = 1_875_000, 64
    table = (da.arange(rows * dim, dtype=np.int32, chunks=120_000 * dim)
             .reshape(rows, dim).rechunk((120_000, dim)))
    rng = np.random.default_rng(9)
    ids = rng.integers(-rows, rows, size=5000)
    got = gjd.embedding_lookup(table, ids).compute()
    wrapped = np.where(ids < 0, ids + rows, ids)
    expected = (wrapped[:, None] * dim + np.arange(dim)).astype(np.int32)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(IndexError, match=r"ids\[1\] = 1875000"):
        gjd.embedding_lookup(table, np.array([0, rows]))
