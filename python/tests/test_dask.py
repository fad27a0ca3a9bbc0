"""gatherjit.dask on a LocalCluster of two worker processes, against numpy."""

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gatherjit
import gatherjit.dask as gjd

with open("/proc/self/maps") as maps:
    ADDRESS_SANITIZED = "libasan" in maps.read()  # python3 started with its runtime


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


@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler")
def test_take_along_axis_errors_name_the_index(client):
    x = da.zeros((4, 4), chunks=2)
    bad = np.zeros((4, 4), np.int64)
    bad[3, 2] = 9  # in the last block of indices, named where the whole array has it
    idx = da.from_array(bad, chunks=2)
    for scheduler in ("threads", None):  # None: the cluster's workers
        with pytest.raises(IndexError) as error:
            gjd.take_along_axis(x, idx, 1).compute(scheduler=scheduler)
        assert str(error.value).startswith("indices[3, 2] = 9 is out of range for axis 1 of "
                                           "size 4")
    # Blocks along two dimensions besides the axis.
    cube = da.zeros((4, 3, 5), chunks=(2, 2, 5))
    bad = np.zeros((4, 3, 2), np.int64)
    bad[3, 2, 1] = -6
    with pytest.raises(IndexError, match=r"^indices\[3, 2, 1\] = -6 is out of range for axis 2 "
                                         r"of size 5"):
        gjd.take_along_axis(cube, da.from_array(bad, chunks=(2, 2, 2)), 2).compute()
    with pytest.raises(ValueError, match="differ at dimension 0"):
        gjd.take_along_axis(x, da.zeros((3, 2), dtype=np.int64), 1)


@pytest.mark.skipif(ADDRESS_SANITIZED,
                    reason="the workers' memory limit leaves no room for AddressSanitizer")
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


@pytest.mark.skipif(not gatherjit.EPILOGUES, reason="built without clang's libraries")
def test_embedding_lookup_dequantizes_on_the_workers(client):
    # 8-bit rows with a trailing float scale and bias: the workers gather
    # and dequantize, and FLOAT32 rows of 16 come back.
    rows, dim = 3000, 16
    rng = np.random.default_rng(10)
    q = rng.integers(0, 256, size=(rows, dim), dtype=np.uint8)
    scale = (2.0 ** rng.integers(-3, 3, size=rows)).astype(np.float32)
    bias = rng.integers(-4, 4, size=rows).astype(np.float32)
    packed = np.concatenate([q, scale.view(np.uint8).reshape(rows, 4),
                             bias.view(np.uint8).reshape(rows, 4)], axis=1)
    table = da.from_array(packed, chunks=(700, dim + 8))
    dequant = gatherjit.Epilogue("""
void dequant(const uint8_t *row, float *out) {
  float s = gj_load_f32(row + GJ_ROW_OUT), b = gj_load_f32(row + GJ_ROW_OUT + 4);
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j] * s + b;
}""", "dequant", row_out=dim)
    ids = rng.integers(-rows, rows, size=777)
    expected = (q.astype(np.float32) * scale[:, None] + bias[:, None])[ids]
    for given in (ids, da.from_array(ids, chunks=300)):  # eager and lazy ids
        got = gjd.embedding_lookup(table, given, epilogue=dequant)
        assert got.dtype == np.float32 and got.shape == (777, dim)
        np.testing.assert_array_equal(got.compute(), expected)


_id_blocks_computed = []


def _counted(block):
    _id_blocks_computed.append(len(block))
    return block


def test_embedding_lookup_keeps_dask_ids_lazy(client):
    table = np.arange(200, dtype=np.float32).reshape(50, 4)
    dt = da.from_array(table, chunks=(12, 4))
    ids = np.random.default_rng(12).integers(-50, 50, size=300)
    calls = _id_blocks_computed
    calls.clear()
    lazy_ids = da.from_array(ids, chunks=70).map_blocks(_counted, dtype=ids.dtype,
                                                        meta=np.array((), ids.dtype))
    with dask.config.set(scheduler="sync"):  # the ids' blocks run in this process
        got = gjd.embedding_lookup(dt, lazy_ids)
        assert calls == []  # building the lookup computed no id
        np.testing.assert_array_equal(got.compute(), table[ids])
        assert sorted(calls) == [20, 70, 70, 70, 70]  # each block of ids once
        for mode in ("clip", "clamp"):
            wild = da.from_array(np.array([-51, 3, 70, -1]), chunks=2)
            np.testing.assert_array_equal(
                gjd.embedding_lookup(dt, wild, mode=mode).compute(),
                gatherjit.take(table, np.array([-51, 3, 70, -1]), 0, mode=mode))
        # An out-of-range id raises when computed, named as eagerly.
        bad = gjd.embedding_lookup(dt, da.from_array(np.array([0, 7, 50]), chunks=2))
        with pytest.raises(IndexError) as lazily:
            bad.compute()
        with pytest.raises(IndexError) as eagerly:
            gjd.embedding_lookup(dt, np.array([0, 7, 50]))
        assert str(lazily.value) == str(eagerly.value)


def test_take_and_gather_nd_match_numpy(client):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((30, 40, 6)).astype(np.float32)
    dx = da.from_array(x, chunks=(7, 15, 3))
    idx = rng.integers(-40, 40, size=(5, 9))
    for ids in (idx, da.from_array(idx, chunks=(2, 4))):
        np.testing.assert_array_equal(gjd.take(dx, ids, 1).compute(), np.take(x, idx, 1))
    tuples = np.stack([rng.integers(0, 30, 50), rng.integers(-40, 40, 50)], axis=1)
    got = gjd.gather_nd(dx, da.from_array(tuples, chunks=(20, 1))).compute()
    np.testing.assert_array_equal(got, x[tuples[:, 0], tuples[:, 1]])
    # One batch dimension: x[b, ids[b, j, 0]].
    ids = rng.integers(0, 40, size=(30, 4, 1))
    got = gjd.gather_nd(dx, da.from_array(ids, chunks=(10, 2, 1)), batch_dims=1).compute()
    want = np.stack([x[b, ids[b, :, 0]] for b in range(30)])
    np.testing.assert_array_equal(got, want)


def test_take_of_chunked_rows_gathers_where_the_rows_lie(client):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 4, 3)).astype(np.float32)
    dx = da.from_array(x, chunks=(7, 4, 3))
    idx = rng.integers(-30, 30, size=(5, 9))
    for ids in (idx, da.from_array(idx, chunks=(2, 4)), np.int64(-4), idx[0]):
        got = gjd.take(dx, ids, 0)
        # No rechunk of x into one chunk of rows: routed by chunk of rows.
        assert not any(layer.startswith("rechunk") and dx.name in deps
                       for layer, deps in got.dask.dependencies.items())
        np.testing.assert_array_equal(got.compute(), np.take(x, np.asarray(ids), 0))
    wide = rng.integers(-60, 60, size=(4, 6))
    for mode in ("clip", "clamp"):
        np.testing.assert_array_equal(gjd.take(dx, da.from_array(wide, chunks=3), 0,
                                               mode=mode).compute(),
                                      gatherjit.take(x, wide, 0, mode=mode))
    # A bad index is named where the whole indices array has it, as
    # gatherjit.take names it.
    idx[3, 7] = 31
    with pytest.raises(IndexError) as local:
        gatherjit.take(x, idx, 0)
    with pytest.raises(IndexError) as chunked:
        gjd.take(dx, da.from_array(idx, chunks=(2, 4)), 0).compute()
    assert str(chunked.value) == str(local.value)
    assert "indices[3, 7] = 31" in str(chunked.value)


def test_gather_nd_on_chunked_rows_gathers_where_the_rows_lie(client):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((30, 40, 6)).astype(np.float32)
    dx = da.from_array(x, chunks=(7, 15, 3))
    tuples = rng.integers(-60, 60, size=(4, 5, 2))
    dt = da.from_array(tuples, chunks=(3, 2, 1))
    by_rows = da.from_array(x, chunks=(7, 40, 6))
    for mode in ("clip", "clamp"):
        np.testing.assert_array_equal(gjd.gather_nd(dx, dt, mode=mode).compute(),
                                      gatherjit.gather_nd(x, tuples, mode=mode))
        # x chunked by rows alone is read where its chunks lie: per block of
        # tuples, a task to route them, a bucket and a gather per chunk of
        # rows, one to order them; no rechunk.
        got = gjd.gather_nd(by_rows, da.from_array(tuples, chunks=(3, 2, 2)), mode=mode)
        keys = [k for k in dict(got.dask) if "gather-nd" in str(k)]
        # dt's 2 x 3 blocks routed, x's 5 chunks of rows a bucket each.
        assert len(keys) == 6 + 6 * 5 * 2 + 6
        assert not any("rechunk" in str(k) for k in dict(got.dask))
        np.testing.assert_array_equal(got.compute(), gatherjit.gather_nd(x, tuples, mode=mode))
    ok = np.stack([rng.integers(-30, 30, 50), rng.integers(-40, 40, 50)], axis=1)
    np.testing.assert_array_equal(gjd.gather_nd(dx, da.from_array(ok, chunks=(20, 2))).compute(),
                                  x[ok[:, 0], ok[:, 1]])
    rows = rng.integers(0, 30, size=(10, 1))
    np.testing.assert_array_equal(gjd.gather_nd(dx, rows).compute(), x[rows[:, 0]])
    assert gjd.gather_nd(dx, np.zeros((0, 2), np.int64)).compute().shape == (0, 6)
    # Errors name the tuple where the whole indices array has it, as
    # gatherjit.gather_nd does.
    for bad, component in (([[0, 1], [31, 0]], 0), ([[0, 1], [-3, 45]], 1)):
        with pytest.raises(IndexError) as local:
            gatherjit.gather_nd(x, np.array(bad))
        with pytest.raises(IndexError) as chunked:
            gjd.gather_nd(dx, da.from_array(np.array(bad), chunks=(1, 2))).compute()
        assert str(chunked.value) == str(local.value)
        assert f"component {component}" in str(chunked.value)


def test_modes_and_ids_are_checked_as_gatherjit_take_checks_them(client):
    table = np.arange(20, dtype=np.float32).reshape(10, 2)
    dt = da.from_array(table, chunks=(4, 2))
    ids = np.array([-1, 3, 12, -15])
    for mode in ("clip", "clamp"):
        np.testing.assert_array_equal(gjd.embedding_lookup(dt, ids, mode=mode).compute(),
                                      gatherjit.take(table, ids, 0, mode=mode))
    with pytest.raises(ValueError, match="'raiss' is not"):
        gjd.embedding_lookup(dt, ids, mode="raiss")
    with pytest.raises(ValueError, match="'wrapp' is not"):
        gjd.take(dt, ids, 0, mode="wrapp")
    with pytest.raises(TypeError, match="must be integers"):
        gjd.embedding_lookup(dt, np.array([1.5]))
    with pytest.raises(TypeError, match="must be integers"):
        gjd.take_along_axis(dt, da.from_array(np.zeros((10, 2))), 1)
    empty = da.zeros((0, 2), chunks=(1, 2), dtype=np.float32)
    got = gjd.embedding_lookup(empty, np.array([0, -1]), mode="clamp").compute()
    np.testing.assert_array_equal(got, np.zeros((2, 2), np.float32))
    with pytest.raises(IndexError, match=r"ids\[0\] = 0 is out of range for a table of 0 rows"):
        gjd.embedding_lookup(empty, np.array([0, -1]))


def test_wrap_takes_indices_modulo_the_size_as_numpy_does(client):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((30, 8)).astype(np.float32)
    by_rows = da.from_array(x, chunks=(7, 8))
    split = da.from_array(x, chunks=(7, 3))
    idx = rng.integers(-100, 100, size=(6, 5))
    for dx in (by_rows, split):
        np.testing.assert_array_equal(gjd.take(dx, idx, 0, mode="wrap").compute(),
                                      np.take(x, idx, 0, mode="wrap"))
        np.testing.assert_array_equal(gjd.take(dx, da.from_array(idx, chunks=2), 1,
                                               mode="wrap").compute(),
                                      np.take(x, idx, 1, mode="wrap"))
        along = rng.integers(-50, 50, size=(30, 4))
        np.testing.assert_array_equal(
            gjd.take_along_axis(dx, da.from_array(along, chunks=(7, 4)), 1, mode="wrap").compute(),
            np.take_along_axis(x, np.mod(along, 8), 1))
        pairs = rng.integers(-90, 90, size=(20, 2))
        np.testing.assert_array_equal(gjd.gather_nd(dx, pairs, mode="wrap").compute(),
                                      x[np.mod(pairs[:, 0], 30), np.mod(pairs[:, 1], 8)])
        ids = idx[0]
        np.testing.assert_array_equal(gjd.embedding_lookup(dx, ids, mode="wrap").compute(),
                                      x[np.mod(ids, 30)])
        np.testing.assert_array_equal(
            gjd.embedding_lookup(dx, da.from_array(ids, chunks=2), mode="wrap").compute(),
            x[np.mod(ids, 30)])
    # uint64 ids past 2**63 - 1, routed to the chunks of rows: the numbers
    # they are, wrapped (2**64 - 1 is 15 modulo 30), clipped or clamped to
    # the last row, or out of range.
    big = np.array([2**64 - 1, 2**63, 4], np.uint64)
    for mode, rows in (("wrap", [15, 8, 4]), ("clip", [29, 29, 4]), ("clamp", [29, 29, 4])):
        for ids in (big, da.from_array(big, chunks=2)):
            np.testing.assert_array_equal(gjd.take(by_rows, ids, 0, mode=mode).compute(),
                                          x[rows])
            np.testing.assert_array_equal(gjd.embedding_lookup(by_rows, ids, mode=mode).compute(),
                                          x[rows])
        # Every component of a tuple (2**64 - 1 is 7 modulo 8, 2**63 is 0).
        columns = [7, 0, 4] if mode == "wrap" else [7, 7, 4]
        pairs = np.stack([big, big], axis=1)
        np.testing.assert_array_equal(gjd.gather_nd(by_rows, pairs, mode=mode).compute(),
                                      x[rows, columns])
    with pytest.raises(IndexError, match=r"indices\[0\] = 18446744073709551615 is out of range"):
        gjd.take(by_rows, da.from_array(big, chunks=2), 0).compute()
    # A table of no rows: gatherjit.take's error or result, for numpy and
    # dask ids alike (clip and wrap have no row to go to, clamp reads zeros).
    for dtype in (np.float32, object):
        empty = da.from_array(np.zeros((0, 2), dtype), chunks=(1, 2))
        for ids in (np.array([3]), da.from_array(np.array([3]))):
            for mode in ("clip", "wrap"):
                with pytest.raises(IndexError, match=f"empty axis \\(mode='{mode}'\\)"):
                    gjd.embedding_lookup(empty, ids, mode=mode).compute()
            got = gjd.embedding_lookup(empty, ids, mode="clamp").compute()
            want = gatherjit.take(np.zeros((0, 2), dtype), np.array([3]), 0, mode="clamp")
            assert got.dtype == want.dtype and got.shape == (1, 2)
            np.testing.assert_array_equal(got, want)


def test_take_along_axis_names_the_index_in_the_whole_array(client):
    x = da.from_array(np.zeros((40, 8), np.float32), chunks=(10, 8))
    idx = np.zeros((40, 3), np.int64)
    idx[27, 2] = 8
    with pytest.raises(IndexError, match=r"indices\[27, 2\] = 8 is out of range for axis 1"):
        gjd.take_along_axis(x, da.from_array(idx, chunks=(10, 3)), 1).compute()


def test_take_and_gather_nd_name_the_index_in_the_whole_array(client):
    # The blockwise plans (x in one chunk of rows, or batch dimensions):
    # the bad index lies in a later block of indices, and is named where the
    # whole array has it, as gatherjit names it in the same arrays.
    x = np.zeros((4, 5), np.float32)
    idx = np.zeros((4, 3), np.int64)
    idx[3, 2] = 9
    tuples = np.zeros((4, 3, 2), np.int64)
    tuples[2, 1] = (0, 7)
    batched = np.zeros((4, 3, 1), np.int64)
    batched[3, 1, 0] = -6
    cases = [
        (lambda a, i: gjd.take(a, i, 1), (4, 2), idx, (3, 2),
         r"^indices\[3, 2\] = 9 is out of range for axis 1 of size 5"),
        (lambda a, i: gjd.gather_nd(a, i), (4, 2), tuples, (3, 2, 2),
         r"^indices\[2, 1, :\] = \(0, 7\) has component 1 = 7, out of range for axis 1"),
        (lambda a, i: gjd.gather_nd(a, i, batch_dims=1), (2, 5), batched, (2, 2, 1),
         r"^indices\[3, 1, :\] = \(-6,\) has component 0 = -6, out of range for axis 1"),
    ]
    eager = [lambda a, i: gatherjit.take(a, i, 1), lambda a, i: gatherjit.gather_nd(a, i),
             lambda a, i: gatherjit.gather_nd(a, i, batch_dims=1)]
    for (gather, x_chunks, bad, chunks, message), whole in zip(cases, eager):
        with pytest.raises(IndexError, match=message):
            whole(x, bad)
        lazy = gather(da.from_array(x, chunks=x_chunks), da.from_array(bad, chunks=chunks))
        assert lazy.npartitions > 1
        with pytest.raises(IndexError, match=message):
            lazy.compute()


def test_indices_of_unknown_chunk_sizes_gather_by_rows(client):
    # Ids that a filter made (chunks of unknown sizes), looked up in a table
    # chunked by rows: the result's chunks are unknown too, its values
    # numpy's, and a bad id is named where the filtered array has it.
    x = np.arange(40.0).reshape(10, 4)
    table = da.from_array(x, chunks=(3, 4))
    ids = np.array([1, 5, -2, 9, 3, 0, 7, 30])
    lazy = da.from_array(ids, chunks=3)
    kept = lazy[lazy >= 0]
    assert np.isnan(kept.chunks[0][0])
    good = ids[(ids >= 0) & (ids < 10)]
    within = kept[kept < 10]
    np.testing.assert_array_equal(gjd.take(table, within, 0).compute(), x[good])
    np.testing.assert_array_equal(gjd.embedding_lookup(table, within).compute(), x[good])
    pairs = da.from_array(np.stack([ids, ids % 4], axis=1), chunks=(3, 2))[lazy < 10]
    np.testing.assert_array_equal(gjd.gather_nd(table, pairs).compute(),
                                  x[ids[ids < 10], ids[ids < 10] % 4])
    with pytest.raises(IndexError, match=r"^indices\[6\] = 30 is out of range for axis 0"):
        gjd.take(table, kept, 0).compute()
    with pytest.raises(IndexError, match=r"^embedding_lookup: ids\[6\] = 30 is out of range"):
        gjd.embedding_lookup(table, kept).compute()
    # A table whose rows a filter kept: the row count is unknown, and named.
    rows = table[table[:, 0] >= 8]
    for function in (lambda: gjd.take(rows, [0], 0), lambda: gjd.embedding_lookup(rows, [0]),
                     lambda: gjd.gather_nd(rows, [[0, 1]]),
                     lambda: gjd.take_along_axis(rows, np.zeros((3, 4), np.int64), 0)):
        with pytest.raises(ValueError, match="dimension 0, which the indices address, have "
                                             "unknown sizes"):
            function()
    np.testing.assert_array_equal(gjd.take(rows, [3, 0], 1).compute(), x[2:, [3, 0]])
    # Indices made block by block from those rows (their sizes unknown as
    # well) pair with them block by block; a known size cannot pair with
    # an unknown one.
    top = rows.rechunk({1: -1}).map_blocks(lambda b: np.argsort(-b, axis=1)[:, :2],
                                           dtype=np.int64, chunks=(rows.chunks[0], (2,)))
    np.testing.assert_array_equal(gjd.take_along_axis(rows, top, 1).compute(),
                                  x[2:, [3, 2]])
    # A bad index is named in the whole indices array, its block's offset
    # summed from the blocks' shapes: one bad index, in the third block of
    # rows (x's row 7, the 6th kept).
    bad = rows.map_blocks(lambda b: np.where(b[:, :2] == 28, 9, 0).astype(np.int64),
                          dtype=np.int64, chunks=(rows.chunks[0], (2,)))
    with pytest.raises(IndexError, match=r"^indices\[5, 0\] = 9 is out of range for axis 1"):
        gjd.take_along_axis(rows, bad, 1).compute()
    # Columns a filter kept, along the axis as well.
    wide = rows.map_blocks(lambda b: np.tile([3, 1, -1, 0, 7, 2], (len(b), 1)), dtype=np.int64,
                           chunks=(rows.chunks[0], (6,)))
    columns = da.from_array(np.array([3, 1, -1, 0, 7, 2]), chunks=2)
    # (Every row has the 7; a cluster may name any of them first.)
    with pytest.raises(IndexError, match=r"^indices\[[0-7], 3\] = 7 is out of range for axis"):
        gjd.take_along_axis(rows, wide[:, (columns != 1) & (columns != 2)], 1).compute()
    np.testing.assert_array_equal(
        gjd.take_along_axis(rows, wide[:, (columns != 1) & (columns != 2) & (columns != 7)],
                            1).compute(),
        x[2:, [3, 3, 0]])
    # take along an axis but the first: the same blockwise plan.
    ids1 = da.from_array(np.array([1, -9, 3, 0, 8, 2]), chunks=2)
    with pytest.raises(IndexError, match=r"^indices\[3\] = 8 is out of range for axis 1"):
        gjd.take(table, ids1[ids1 != -9], 1).compute()
    with pytest.raises(ValueError, match="x's chunks along dimension 0 have unknown sizes"):
        gjd.take_along_axis(rows, np.zeros((8, 2), np.int64), 1)
    with pytest.raises(ValueError, match="the indices' chunks along dimension 0 have unknown"):
        gjd.take_along_axis(table, top, 1)


@pytest.mark.filterwarnings("ignore:Running on a single-machine scheduler")
def test_chunks_of_size_zero_gather_as_the_others():
    # Chunks of no elements, as a filter leaves them, in x and in indices, on
    # every plan: numpy's results. (Computed by threads: a graph that lacks
    # a block raises KeyError there, where the cluster would wait for it.)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 6))
    dx = da.from_array(x, chunks=((4, 0), (1, 2, 2, 0, 1)))
    idx = rng.integers(0, 4, size=(3, 1))
    didx = da.from_array(idx, chunks=((1, 0, 2), (1, 0)))
    np.testing.assert_array_equal(gjd.take(dx, didx, 1).compute(scheduler="threads"), np.take(x, idx, 1))
    np.testing.assert_array_equal(gjd.take(dx, didx, 0).compute(scheduler="threads"), np.take(x, idx, 0))
    along = rng.integers(0, 6, size=(4, 2))
    np.testing.assert_array_equal(
        gjd.take_along_axis(dx, da.from_array(along, chunks=((1, 0, 3), (2, 0))), 1).compute(scheduler="threads"),
        np.take_along_axis(x, along, 1))
    pairs = np.concatenate([idx, idx], axis=1)
    np.testing.assert_array_equal(
        gjd.gather_nd(dx, da.from_array(pairs, chunks=((2, 0, 1), (2,)))).compute(scheduler="threads"),
        x[pairs[:, 0], pairs[:, 1]])
    rows = da.from_array(x, chunks=((2, 0, 2), (6,)))
    np.testing.assert_array_equal(
        gjd.embedding_lookup(rows, da.from_array(idx[:, 0], chunks=((0, 3),))).compute(scheduler="threads"),
        x[idx[:, 0]])
