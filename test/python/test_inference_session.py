"""ONNX Runtime's API over memplan (python/memplan/inference_session.py): the same script an
onnxruntime user writes, on every models/real model against ONNX Runtime 1.30's outputs (the
folders' output_N.pb), plus symbolic dims, recompiling for new shapes, bytes, threads and errors.

ctest runs it with the other Python tests (PYTHONPATH=BUILD/python); by hand:

    PYTHONPATH=build/python /usr/bin/python3 -m unittest discover -s test/python -p 'test_inference*' -v
"""
import json
import os
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import memplan

ROOT = os.environ.get("MEMPLAN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL = os.path.join(ROOT, "models", "real")


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def symbolic_batch_model():
    """y = relu(x @ W + b) for x [batch, 4] and a second output z = x * 2."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "W")
    b = numpy_helper.from_array(np.array([-1, 0, 1], dtype=np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Relu", ["pre"], ["y"]), helper.make_node("Add", ["x", "x"], ["z"])]
    g = helper.make_graph(nodes, "symbolic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", None])], [w, b])
    m = helper.make_model(g, producer_name="memplan-test", opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    m.doc_string = "a test model"
    helper.set_model_props(m, {"purpose": "tests"})
    return m


def reference(x):
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    return np.maximum(x @ w + np.array([-1, 0, 1], np.float32), 0), x + x


class RealModels(unittest.TestCase):
    def test_every_real_model_gives_onnx_runtimes_outputs(self):
        names = sorted(d for d in os.listdir(REAL) if os.path.isfile(os.path.join(REAL, d, "model.onnx")))
        self.assertGreaterEqual(len(names), 20)
        for name in names:
            with self.subTest(model=name):
                folder = os.path.join(REAL, name)
                with open(os.path.join(folder, "SOURCE.json")) as f:
                    tol = json.load(f).get("suggested_tolerance", {})
                sess = memplan.InferenceSession(os.path.join(folder, "model.onnx"))
                data = os.path.join(folder, "test_data_set_0")
                feed = {i.name: read_pb(os.path.join(data, "input_%d.pb" % k)) for k, i in enumerate(sess.get_inputs())}
                outputs = sess.run(None, feed)
                self.assertEqual(len(outputs), len(sess.get_outputs()))
                for k, got in enumerate(outputs):
                    want = read_pb(os.path.join(data, "output_%d.pb" % k))
                    self.assertEqual(got.shape, want.shape)
                    np.testing.assert_allclose(got, want, rtol=tol.get("rtol", 1e-3), atol=tol.get("atol", 1e-4))


class Api(unittest.TestCase):
    def setUp(self):
        self.bytes = symbolic_batch_model().SerializeToString()

    def test_inputs_and_outputs_are_declared_as_onnx_runtime_gives_them(self):
        sess = memplan.InferenceSession(self.bytes)
        (x,) = sess.get_inputs()
        self.assertEqual((x.name, x.type, x.shape), ("x", "tensor(float)", ["batch", 4]))
        y, z = sess.get_outputs()
        self.assertEqual((y.name, y.shape), ("y", ["batch", 3]))
        self.assertEqual(z.shape, ["batch", None])
        meta = sess.get_modelmeta()
        self.assertEqual((meta.producer_name, meta.graph_name, meta.description), ("memplan-test", "symbolic", "a test model"))
        self.assertEqual(meta.custom_metadata_map, {"purpose": "tests"})
        self.assertEqual(sess.get_providers(), ["CPUExecutionProvider"])
        self.assertEqual(memplan.get_available_providers(), ["CPUExecutionProvider"])

    def test_new_shapes_compile_again_and_recent_ones_stay_compiled(self):
        options = memplan.SessionOptions()
        options.intra_op_num_threads = 1
        options.memplan_max_cached_plans = 2
        sess = memplan.InferenceSession(self.bytes, sess_options=options, providers=["CPUExecutionProvider"])
        for batch in (1, 5, 1, 3, 5):
            x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
            y, z = sess.run(None, {"x": x})
            want_y, want_z = reference(x)
            np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(z, want_z)
            self.assertLessEqual(len(sess._plans), 2)
        self.assertEqual([dict(k)["x"] for k in sess._plans], [(3, 4), (5, 4)])
        (only_z,) = sess.run(["z"], {"x": np.ones((2, 4), np.float32)})
        np.testing.assert_array_equal(only_z, np.full((2, 4), 2, np.float32))

    def test_runs_from_several_threads_at_once_each_get_their_answer(self):
        sess = memplan.InferenceSession(self.bytes)
        inputs = [np.random.default_rng(k).standard_normal((4, 4)).astype(np.float32) for k in range(8)]
        results = [None] * len(inputs)

        def work(k):
            for _ in range(20):
                results[k] = sess.run(["y"], {"x": inputs[k]})[0]

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, x in enumerate(inputs):
            np.testing.assert_allclose(results[k], reference(x)[0], rtol=1e-5, atol=1e-6)

    def test_bad_calls_raise_one_clear_error(self):
        sess = memplan.InferenceSession(self.bytes)
        with self.assertRaisesRegex(ValueError, "'w' is not an input of the model"):
            sess.run(None, {"w": np.ones((1, 4), np.float32)})
        with self.assertRaisesRegex(ValueError, "no value for input"):
            sess.run(None, {})
        with self.assertRaisesRegex(TypeError, "input 'x' is float64, the model takes float32"):
            sess.run(None, {"x": np.ones((1, 4))})
        with self.assertRaisesRegex(ValueError, "'q' is not an output"):
            sess.run(["q"], {"x": np.ones((1, 4), np.float32)})
        with self.assertRaisesRegex(ValueError, "CPU only"):
            memplan.InferenceSession(self.bytes, providers=["CUDAExecutionProvider"])
        with self.assertRaises(memplan.Error) as e:
            memplan.InferenceSession(b"not an onnx model")
        self.assertEqual(e.exception.kind, memplan.ErrorKind.InvalidInput)
        with self.assertRaises(memplan.Error):  # the shapes do not fit the weights: memplan's own message
            sess.run(None, {"x": np.ones((1, 5), np.float32)})


class Containers(unittest.TestCase):
    """Sequences are lists of arrays, an optional holding nothing is None, as in ONNX Runtime."""

    def test_sequence_input_and_output(self):
        folder = os.path.join(ROOT, "models", "sequence_list", "test_data_set_0")
        sess = memplan.InferenceSession(os.path.join(ROOT, "models", "sequence_list", "model.onnx"))
        self.assertEqual(sess.get_inputs()[0].type, "seq(tensor(float))")
        self.assertEqual([o.type for o in sess.get_outputs()],
                         ["tensor(int64)", "tensor(float)", "seq(tensor(float))", "tensor(float)"])
        parts = [np.load(os.path.join(folder, "inputs", "parts", "%d.npy" % k)) for k in range(3)]
        count, doubled, halves, last = sess.run(None, {"parts": parts})
        self.assertEqual(int(count), 3)
        np.testing.assert_array_equal(doubled, np.load(os.path.join(folder, "expected", "doubled.npy")))
        self.assertIsInstance(halves, list)
        self.assertEqual(len(halves), 3)
        for k, h in enumerate(halves):
            np.testing.assert_array_equal(h, np.load(os.path.join(folder, "expected", "halves", "%d.npy" % k)))
        np.testing.assert_array_equal(last, parts[-1])
        # Another length, then a bad element type and a tensor where a list belongs.
        count, doubled, halves, _ = sess.run(None, {"parts": parts[:1]})
        self.assertEqual((int(count), doubled.shape, len(halves)), (1, (1, 3), 1))
        with self.assertRaisesRegex(TypeError, "float64"):
            sess.run(None, {"parts": [np.ones((1, 3))]})
        with self.assertRaisesRegex(TypeError, "give a list of arrays"):
            sess.run(None, {"parts": parts[0]})

    def test_optional_input_may_be_none(self):
        value = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
        maybe = helper.make_value_info("maybe", helper.make_optional_type_proto(value))
        graph = helper.make_graph([helper.make_node("OptionalHasElement", ["maybe"], ["has"])], "optional", [maybe],
                                  [helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        sess = memplan.InferenceSession(model.SerializeToString())
        self.assertEqual(sess.get_inputs()[0].type, "optional(tensor(float))")
        self.assertTrue(bool(sess.run(None, {"maybe": np.ones(2, np.float32)})[0]))
        # A 64-byte-aligned array, which a tensor input would read in place, is copied in too.
        self.assertTrue(bool(sess.run(None, {"maybe": memplan.aligned_empty((2,), np.float32)})[0]))
        self.assertFalse(bool(sess.run(None, {"maybe": None})[0]))


if __name__ == "__main__":
    unittest.main()
