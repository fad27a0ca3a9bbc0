"""Fused C epilogues from Python: element and row epilogues through the
function forms and compiled kernels, against numpy doing the same in two
steps; errors as ValueError; kernels with epilogues pickle."""

import os
import pickle

import numpy as np
import pytest

import gatherjit as gj

pytestmark = pytest.mark.skipif(not gj.EPILOGUES,
                                reason="built without clang's libraries (GATHERJIT_EPILOGUES=OFF)")

AFFINE = """
typedef struct { float scale, bias; } P;
float affine(float16_t x, const P *p) { return (float)x * p->scale + p->bias; }
"""

ROWWISE = """
void dequant(const uint8_t *row, float *out) {
  float scale = gj_load_f32(row + GJ_ROW_OUT), bias = gj_load_f32(row + GJ_ROW_OUT + 4);
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j] * scale + bias;
}
"""


def rowwise_table(rng, rows, dim):
    q = rng.integers(0, 256, size=(rows, dim), dtype=np.uint8)
    # Powers of two and small integers: exact however the product and sum
    # are rounded, fused or not.
    scale = (2.0 ** rng.integers(-4, 2, size=rows)).astype(np.float32)
    bias = rng.integers(-8, 8, size=rows).astype(np.float32)
    table = np.concatenate([q, scale.view(np.uint8).reshape(rows, 4),
                            bias.view(np.uint8).reshape(rows, 4)], axis=1)
    return table, q.astype(np.float32) * scale[:, None] + bias[:, None]


def test_element_epilogue_converts_float16_to_float32_with_params():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((6, 9)).astype(np.float16)
    idx = rng.integers(-9, 9, size=(6, 5))
    params = np.array([2.0, -0.5], dtype=np.float32)
    e = gj.Epilogue(AFFINE, "affine", params=params)
    got = gj.take_along_axis(data, idx, 1, epilogue=e)
    assert got.dtype == np.float32 and got.shape == (6, 5)
    want = np.take_along_axis(data, idx, 1).astype(np.float32) * np.float32(2.0) - np.float32(0.5)
    np.testing.assert_array_equal(got, want)


def test_row_epilogue_dequantizes_an_embedding_lookup():
    rng = np.random.default_rng(2)
    table, dense = rowwise_table(rng, 40, 16)
    ids = rng.integers(-40, 40, size=(3, 7))
    e = gj.Epilogue(ROWWISE, "dequant", row_out=16)
    got = gj.take(table, ids, axis=0, epilogue=e)
    assert got.dtype == np.float32 and got.shape == (3, 7, 16)
    np.testing.assert_array_equal(got, dense[ids])
    # The same as a compiled kernel, into out=, and after pickling.
    k = gj.compile("gather", data=(table.shape, "uint8"), indices=(ids.shape, "int64"),
                   epilogue=e)
    assert k.output_shape == [3, 7, 16]
    out = np.empty((3, 7, 16), np.float32)
    assert k(table, ids, out=out) is out
    np.testing.assert_array_equal(out, dense[ids])
    k2 = pickle.loads(pickle.dumps(k))
    np.testing.assert_array_equal(k2(table, ids), dense[ids])
    assert "fmul" in k.ir() or "fma" in k.ir()


def test_gather_nd_and_descriptor_with_epilogue():
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5, 3)).astype(np.float16)
    idx = rng.integers(0, 4, size=(6, 2)) % np.array([4, 5])
    e = gj.Epilogue("float up(float16_t x) { return (float)x * 4.0f; }", "up")
    got = gj.gather_nd(data, idx, epilogue=e)
    np.testing.assert_array_equal(got, data[idx[:, 0], idx[:, 1]].astype(np.float32) * 4)
    desc = {"operator": "GATHER_ELEMENTS",
            "input": {"data_type": "FLOAT16", "sizes": [2, 3]},
            "indices": {"data_type": "INT32", "sizes": [2, 2]},
            "output": {"data_type": "FLOAT16", "sizes": [2, 2]},
            "axis": 1}
    k = gj.compile(desc, epilogue=e)
    d = np.arange(6, dtype=np.float16).reshape(2, 3)
    i = np.array([[2, 0], [1, 1]], dtype=np.int32)
    np.testing.assert_array_equal(k(d, i), np.take_along_axis(d, i, 1).astype(np.float32) * 4)


def test_an_element_epilogue_in_tiled_rows():
    # Axis 0 of FLOAT16 rows of 4200 bytes from 8.8 MB: the kernel takes
    # its rows in tiles of columns (1024, then 1024, then 52), each element
    # through the epilogue; the first bad index in the output's order is
    # named, not the one a tile reaches first.
    rng = np.random.default_rng(5)
    data = rng.standard_normal((2100, 2100)).astype(np.float16)
    idx = rng.integers(0, 2100, size=(60, 2100))
    e = gj.Epilogue("float up(float16_t x) { return (float)x * 4.0f; }", "up")
    got = gj.take_along_axis(data, idx, 0, epilogue=e)
    np.testing.assert_array_equal(got, np.take_along_axis(data, idx, 0).astype(np.float32) * 4)
    idx[3, 2099] = 2100
    idx[20, 1] = 2101
    with pytest.raises(IndexError, match=r"indices\[3, 2099\] = 2100"):
        gj.take_along_axis(data, idx, 0, epilogue=e)


def test_an_epilogue_computes_on_values_whatever_the_datas_byte_order():
    # Big-endian data: the function forms hand the epilogue its values; a
    # compiled kernel with an epilogue reads the machine's order only.
    twice = gj.Epilogue("float f(float x) { return x * 2; }", "f")
    big = np.arange(4, dtype=">f4")
    got = gj.take(big, [1, 3], epilogue=twice)
    assert got.dtype == np.float32 and got.tolist() == [2.0, 6.0]
    for layout in (big, big.astype("<f4")):
        k = gj.compile("gather", layout, np.array([1, 3]), 0, epilogue=twice)
        assert k(big.astype("<f4"), np.array([1, 3])).tolist() == [2.0, 6.0]
        with pytest.raises(ValueError, match="big-endian order, the kernel's is little-endian"):
            k(big, np.array([1, 3]))


def test_the_epilogue_is_part_of_the_kernel_identity():
    data = np.arange(8, dtype=np.float32)
    idx = np.array([7, 0, 3])
    twice = gj.Epilogue("float f(float x) { return x * 2.0f; }", "f")
    thrice = gj.Epilogue("float f(float x) { return x * 3.0f; }", "f")
    np.testing.assert_array_equal(gj.take(data, idx, epilogue=twice), data[idx] * 2)
    np.testing.assert_array_equal(gj.take(data, idx, epilogue=thrice), data[idx] * 3)
    np.testing.assert_array_equal(gj.take(data, idx), data[idx])


@pytest.mark.parametrize("source, function, message", [
    ("float f(float x) { return x +; }", "f", "epilogue.c:1:"),
    ("float f(float x) { return x; }", "g", "g"),
    ("double f(double x) { return x; }", "f", "FLOAT32"),
    ("float f(float x) { return __builtin_expf(x); }", "f", "expf"),
    ("int n; float f(float x) { return x + n++; }", "f", "error:"),
])
def test_bad_epilogues_raise_value_error(source, function, message):
    data = np.ones(4, np.float32)
    with pytest.raises(ValueError, match=message):
        gj.take(data, np.array([0]), epilogue=gj.Epilogue(source, function))


def test_bad_arguments():
    data = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="gatherjit.Epilogue"):
        gj.take(data, np.array([0]), epilogue="float f(float x) { return x; }")
    with pytest.raises(ValueError, match="row_out"):
        gj.Epilogue("", "f", row_out=0)
    e = gj.Epilogue("float f(float16_t x) { return (float)x; }", "f")
    with pytest.raises(ValueError, match=r"C-contiguous float32 array of shape \(2,\)"):
        gj.take(np.ones(4, np.float16), np.array([0, 1]), out=np.empty(2, np.float16), epilogue=e)
    with pytest.raises(IndexError):
        gj.take(np.ones(4, np.float16), np.array([4]), epilogue=e)


def test_from_file_names_the_file_in_errors(tmp_path):
    path = tmp_path / "bad.c"
    path.write_text("float f(float x) {\n  return y;\n}\n")
    with pytest.raises(ValueError, match=r"bad\.c:2:10: error:"):
        gj.take(np.ones(3, np.float32), np.array([1]), epilogue=gj.Epilogue.from_file(path, "f"))
    # A path, never a file descriptor (which open() would read and close).
    fd = os.dup(0)
    try:
        with pytest.raises(TypeError):
            gj.Epilogue.from_file(fd, "f")
    finally:
        os.close(fd)  # raises if from_file closed it


def test_hostile_sources_are_errors_and_the_interpreter_goes_on(tmp_path):
    data = np.arange(4, dtype=np.float32)
    secret = tmp_path / "secret.h"
    secret.write_text('"the secret"\n')
    deep = "float f(float x) { return " + "+".join(["x"] * 300000) + "; }"
    for source, message in [
            ('float f(float x) { return x; }\n#embed "/nonexistent"\n', "may not embed"),
            ('static const char s[] =\n#include "%s"\n;\nfloat f(float x) { return x + s[0]; }'
             % secret, "file not found"),
            (deep, "the epilogue's compile was stopped: clang crashed")]:
        with pytest.raises(ValueError, match=message) as raised:
            gj.take(data, np.array([0]), epilogue=gj.Epilogue(source, "f"))
        assert "the secret" not in str(raised.value)
    np.testing.assert_array_equal(
        gj.take(data, np.array([3, 1]), epilogue=gj.Epilogue("float f(float x) { return -x; }", "f")),
        [-3, -1])


PAST_THE_ROW = """
void shift(const float *row, float *out) {
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j + (row[0] > 100.0f)];
}
"""


def test_checked_epilogue_raises_instead_of_reading_past_its_row():
    table = np.arange(64, dtype=np.float32).reshape(8, 8)
    ids = np.array([1, 2, 3], dtype=np.int64)
    checked = gj.Epilogue(PAST_THE_ROW, "shift", checked=True)
    assert checked.checked and "checked=True" in repr(checked)
    # Rows whose first value is at most 100 stay inside: the same as numpy.
    np.testing.assert_array_equal(gj.take(table, ids, 0, epilogue=checked), table[ids])
    # In an 8 x 16 table row 7 starts at 112: its epilogue reads one float
    # past the row (here, past the whole table).
    wide = np.arange(128, dtype=np.float32).reshape(8, 16)
    out = np.full((2, 16), -1.0, dtype=np.float32)
    with pytest.raises(ValueError, match="checked epilogue"):
        gj.take(wide, np.array([0, 7]), 0, out=out, epilogue=checked)
    np.testing.assert_array_equal(out[0], wide[0])  # row 0 ran before the fault
    # Checked mode is part of the epilogue's identity and survives pickling.
    unchecked = gj.Epilogue(PAST_THE_ROW, "shift")
    assert checked != unchecked
    assert pickle.loads(pickle.dumps(checked)) == checked


def test_checked_epilogue_refuses_integer_to_pointer_casts_at_their_line():
    source = "float f(float x) {\n  return x + *(const float *)(unsigned long)64;\n}\n"
    data = np.arange(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"epilogue\.c:2:\d+: error: the epilogue casts an "
                                         r"integer to a pointer"):
        gj.take(data, np.array([0, 1]), 0, epilogue=gj.Epilogue(source, "f", checked=True))
