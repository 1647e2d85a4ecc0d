"""The Python module (python/memplan_module.cpp) against models in the repository.

ctest runs it as `/usr/bin/python3 -m unittest` with PYTHONPATH=BUILD/python and MEMPLAN_SOURCE_DIR
set; by hand, from the repository root after the build:

    PYTHONPATH=build/python /usr/bin/python3 -m unittest discover -s test/python -v
"""
import gc
import json
import os
import tempfile
import threading
import unittest

import numpy as np

import memplan

ROOT = os.environ.get("MEMPLAN_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "models")
TINY = os.path.join(MODELS, "tiny_mlp", "model.onnx")


def data_set(name, k=0):
    """Inputs and expected outputs of models/<name>/test_data_set_<k>, from its .npy files."""
    d = os.path.join(MODELS, name, "test_data_set_%d" % k)
    load = lambda sub: {f[:-4]: np.load(os.path.join(d, sub, f)) for f in sorted(os.listdir(os.path.join(d, sub)))}
    return load("inputs"), load("expected")


def read_pb(path):
    from onnx import TensorProto, numpy_helper
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def assert_close(test, got, want, what):
    test.assertEqual(got.dtype, want.dtype, what)
    test.assertEqual(got.shape, want.shape, what)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=what)


class CompileAndRun(unittest.TestCase):
    def test_tiny_mlp_matches_expected(self):
        inputs, expected = data_set("tiny_mlp")
        m = memplan.compile(TINY, shapes={"x": [1, 64]})
        out = m.run(inputs)
        self.assertEqual(list(out), ["probs"])
        assert_close(self, out["probs"], expected["probs"], "probs")
        self.assertTrue(out["probs"].flags.owndata or out["probs"].base is not None)
        self.assertTrue(out["probs"].flags.writeable)  # a copy the caller owns

    def test_the_issue_example(self):
        m = memplan.compile(TINY, shapes={"x": [1, 64]})
        out = m.run({"x": np.ones((1, 64), np.float32)})
        self.assertEqual(out["probs"].shape, (1, 10))
        self.assertAlmostEqual(float(out["probs"].sum()), 1.0, places=5)
        self.assertGreater(m.arena_bytes, 0)

    def test_control_flow_model_both_branches(self):
        m = memplan.compile(os.path.join(MODELS, "example", "model.onnx"))
        for k in (0, 1):
            inputs, expected = data_set("example", k)
            assert_close(self, m.run(inputs)["output"], expected["output"], "example set %d" % k)

    def test_a_real_model_from_its_pb_files(self):
        d = os.path.join(MODELS, "real", "wonnx_opt_mnist")
        name, x = read_pb(os.path.join(d, "test_data_set_0", "input_0.pb"))
        out_name, want = read_pb(os.path.join(d, "test_data_set_0", "output_0.pb"))
        m = memplan.compile(os.path.join(d, "model.onnx"), shapes={name: list(x.shape)})
        self.assertEqual([i.name for i in m.inputs], [name])
        self.assertEqual([o.name for o in m.outputs], [out_name])
        assert_close(self, m.run({name: x})[out_name], want, out_name)

    def test_outputs_are_copies_by_default_views_on_request(self):
        m = memplan.compile(TINY)
        s = memplan.Session(m)
        a = s.run({"x": np.full((1, 64), 0.5, np.float32)})["probs"]
        first = a.copy()
        view = s.run({"x": np.full((1, 64), 0.5, np.float32)}, copy=False)["probs"]
        np.testing.assert_array_equal(view, first)
        self.assertFalse(view.flags.writeable)
        self.assertIsInstance(view.base, memplan.Session)  # the view keeps its session alive
        s.run({"x": np.full((1, 64), -3.0, np.float32)})
        np.testing.assert_array_equal(a, first)  # the copy does not change
        self.assertFalse(np.array_equal(view, first))  # the view shows the latest run
        del s
        gc.collect()
        self.assertEqual(view.shape, (1, 10))  # still readable: the session lives on in view.base

    def test_inputs_zero_copy_when_aligned_and_contiguous(self):
        m = memplan.compile(TINY)
        s = memplan.Session(m)
        x = memplan.aligned_empty((1, 64), np.float32)
        self.assertEqual(x.ctypes.data % 64, 0)
        x[...] = 0.25
        want = s.run({"x": np.full((1, 64), 0.25, np.float32)})["probs"]
        got = s.run({"x": x})["probs"]
        self.assertEqual(s.zero_copy_inputs, ["x"])
        np.testing.assert_array_equal(got, want)
        # Misaligned or strided arrays are copied.
        raw = memplan.aligned_empty((65,), np.float32)
        raw[...] = 0.25
        s.run({"x": raw[1:].reshape(1, 64)})
        self.assertEqual(s.zero_copy_inputs, [])
        strided = np.full((1, 128), 0.25, np.float32)[:, ::2]
        np.testing.assert_array_equal(s.run({"x": strided})["probs"], want)
        self.assertEqual(s.zero_copy_inputs, [])
        big_endian = np.full((1, 64), 0.25, ">f4")
        np.testing.assert_array_equal(s.run({"x": big_endian})["probs"], want)
        self.assertEqual(s.zero_copy_inputs, [])
        with self.assertRaises(memplan.Error):  # a list becomes float64: memplan does not convert
            s.run({"x": [[0.25] * 64]})

    def test_external_inputs_take_no_arena_bytes(self):
        inputs, expected = data_set("example")
        inside = memplan.compile(os.path.join(MODELS, "example", "model.onnx"), prefer="memory")
        m = memplan.compile(os.path.join(MODELS, "example", "model.onnx"), prefer="memory", external_inputs=True)
        self.assertTrue(m.external_inputs)
        self.assertFalse(inside.external_inputs)
        # Two inputs of 401,408 bytes are the caller's now.
        self.assertGreaterEqual(inside.arena_bytes - m.arena_bytes, 401408)
        self.assertTrue(json.loads(m.report("json"))["external_inputs"])
        aligned = {}
        for name, a in inputs.items():
            aligned[name] = memplan.aligned_empty(a.shape, a.dtype)
            aligned[name][...] = a
        s = memplan.Session(m, check_memory=True)
        got = s.run(aligned)
        self.assertEqual(sorted(s.zero_copy_inputs), sorted(n for n, a in inputs.items() if a.nbytes > 0))
        for name, want in expected.items():
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)
        for name, a in inputs.items():  # never written
            np.testing.assert_array_equal(aligned[name], a)
        # Misaligned arrays are copied, into the session's own buffers, with the same answer.
        def misaligned(a):
            raw = memplan.aligned_empty((a.size + 1,), a.dtype)
            out = raw[1:].reshape(a.shape)
            out[...] = a
            return out
        copied = s.run({name: misaligned(a) for name, a in inputs.items()})
        self.assertEqual(s.zero_copy_inputs, [])
        for name, want in expected.items():
            np.testing.assert_allclose(copied[name], want, rtol=1e-5, atol=1e-5)

    def test_dims_bounds_and_strategy(self):
        m = memplan.compile(os.path.join(MODELS, "bad", "symbolic_dim.onnx"), dims={"N": 4}, strategy="naive")
        self.assertEqual(m.inputs[0].shape, (4, 3))
        x = np.arange(-6, 6, dtype=np.float32).reshape(4, 3)
        np.testing.assert_array_equal(m.run({"x": x})["y"], np.maximum(x, 0))
        self.assertEqual(json.loads(m.report("json"))["chosen_strategy"], "naive")

        path = os.path.join(MODELS, "loop_data_dependent_scan", "model.onnx")
        bounded = memplan.compile(path, bounds={"sums": [16]}, static_only=True)
        dynamic = memplan.compile(path)
        for k in range(3):
            inputs, expected = data_set("loop_data_dependent_scan", k)
            for m in (bounded, dynamic):
                out = m.run(inputs)
                for name, want in expected.items():
                    assert_close(self, out[name], want, "%s set %d" % (name, k))
        with self.assertRaises(memplan.Error) as e:
            memplan.compile(path, static_only=True)
        self.assertIn("bounds[sums] = <dims>", str(e.exception))
        self.assertEqual(e.exception.kind, memplan.ErrorKind.InvalidInput)

    def test_reports_and_arena(self):
        m = memplan.compile(TINY)
        text = m.report()
        self.assertIn("memory plan for", text)
        self.assertEqual(m.report("text"), text)
        j = json.loads(m.report("json"))
        self.assertEqual(j["arena_bytes"], m.arena_bytes)
        with self.assertRaises(ValueError):
            m.report("xml")

    def test_a_budget_runs_the_first_layers_in_patches(self):
        stem = os.path.join(MODELS, "cnn_stem", "model.onnx")
        whole = memplan.compile(stem)
        m = memplan.compile(stem, max_arena=240000)
        self.assertLessEqual(m.arena_bytes, 240000)
        self.assertLess(m.arena_bytes, whole.arena_bytes)
        regions = json.loads(m.report("json"))["patch_regions"]
        self.assertEqual(len(regions), 1)
        self.assertEqual(regions[0]["first"], "conv1")
        inputs, expected = data_set("cnn_stem")
        assert_close(self, m.run(inputs)["y"], expected["y"], "cnn_stem in patches")
        with self.assertRaises(memplan.Error) as e:
            memplan.compile(stem, max_arena=1000)
        self.assertIn("the smallest arena memplan can plan is", str(e.exception))

    def test_preferring_speed_runs_winograd_convolutions_on_avx512(self):
        stem = os.path.join(MODELS, "cnn_stem", "model.onnx")
        fast = json.loads(memplan.compile(stem, prefer="speed").report("json"))
        # oneDNN 2.6 has Winograd kernels on AVX-512 only.
        running = [w for w in fast["winograd_convs"] if w["runs"]]
        self.assertEqual(len(running), 1 if fast["isa"].startswith("avx512") else 0)
        lean = json.loads(memplan.compile(stem, prefer="memory").report("json"))
        self.assertEqual(lean["winograd_convs"], [])
        inputs, expected = data_set("cnn_stem")
        assert_close(self, memplan.compile(stem, prefer="speed").run(inputs)["y"], expected["y"], "cnn_stem, Winograd")

    def test_save_plan_and_load(self):
        m = memplan.compile(TINY)
        with tempfile.TemporaryDirectory() as tmp:
            plan = os.path.join(tmp, "m.mplan")
            m.save_plan(plan)
            self.assertGreater(os.path.getsize(plan), 0)
            loaded = memplan.load(TINY, plan)
            self.assertEqual(loaded.arena_bytes, m.arena_bytes)
            x = {"x": np.full((1, 64), 0.1, np.float32)}
            np.testing.assert_array_equal(loaded.run(x)["probs"], m.run(x)["probs"])
            # A plan fixes no thread count: a plan made for two threads loads for one.
            two = os.path.join(tmp, "two.mplan")
            memplan.compile(TINY, threads=2).save_plan(two)
            for threads in (2, 1):
                self.assertEqual(memplan.load(TINY, two, threads=threads).threads, threads)
            with self.assertRaises(memplan.Error) as e:
                memplan.load(os.path.join(MODELS, "example", "model.onnx"), plan)
            self.assertEqual(e.exception.kind, memplan.ErrorKind.InvalidInput)

    def test_more_sessions_of_one_model(self):
        m = memplan.compile(TINY)
        s1, s2 = memplan.Session(m), memplan.Session(m)
        a = np.full((1, 64), 1.0, np.float32)
        b = np.full((1, 64), -1.0, np.float32)
        ya = s1.run({"x": a}, copy=False)["probs"]
        yb = s2.run({"x": b}, copy=False)["probs"]
        np.testing.assert_array_equal(ya, m.run({"x": a})["probs"])  # separate arenas
        np.testing.assert_array_equal(yb, m.run({"x": b})["probs"])
        self.assertFalse(np.array_equal(ya, yb))

    def test_sessions_run_from_threads(self):
        m = memplan.compile(TINY)
        want = m.run({"x": np.full((1, 64), 0.5, np.float32)})["probs"]
        sessions = [memplan.Session(m) for _ in range(3)]
        shared = memplan.Session(m)
        errors = []

        def work(s):
            try:
                for _ in range(20):
                    np.testing.assert_array_equal(s.run({"x": np.full((1, 64), 0.5, np.float32)})["probs"], want)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in sessions + [shared, shared]]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):  # reading a running session's state must not deadlock
            self.assertIn(shared.zero_copy_inputs, ([], ["x"]))
            shared.dynamic_tensors()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_threads(self):
        small = memplan.compile(TINY)
        self.assertEqual(small.threads, 1)  # a few thousand FLOP: one thread
        two = memplan.compile(TINY, threads=2)
        self.assertEqual(two.threads, 2)
        want = small.run({"x": np.full((1, 64), 0.5, np.float32)})["probs"]
        one = memplan.Session(two, threads=1)
        np.testing.assert_allclose(one.run({"x": np.full((1, 64), 0.5, np.float32)})["probs"], want, rtol=1e-5)
        self.assertEqual(one.runs_by_threads(), [0, 1])
        fixed = memplan.Session(two, adapt_to_load=False)
        for _ in range(3):
            fixed.run({"x": np.full((1, 64), 0.5, np.float32)})
        self.assertEqual(fixed.runs_by_threads(), [0, 0, 3])  # every run on both, whatever the load
        with self.assertRaises(memplan.Error) as e:
            memplan.Session(two, threads=3)
        self.assertIn("compiled for 2", str(e.exception))

    def test_denormals_flushed_unless_kept(self):
        from onnx import TensorProto, helper, numpy_helper
        g = helper.make_graph([helper.make_node("Mul", ["x", "tiny"], ["y"])], "scale",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                              [numpy_helper.from_array(np.array([1e-20], np.float32), "tiny")])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "scale.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            m = memplan.compile(path)
        x = {"x": np.full((1, 64), 1e-20, np.float32)}  # x * 1e-20 = 1e-40, a denormal
        self.assertTrue(np.all(memplan.Session(m).run(x)["y"] == 0))
        kept = memplan.Session(m, flush_denormals=False).run(x)["y"]
        np.testing.assert_allclose(kept, np.full((1, 64), 1e-40, np.float32), rtol=1e-4)
        self.assertTrue(np.all(kept > 0))

    def test_profile_and_dynamic_tensors(self):
        m = memplan.compile(TINY)
        s = memplan.Session(m, profile=True)
        s.run({"x": np.zeros((1, 64), np.float32)})
        ops = {row["op_type"] for row in s.profile()}
        self.assertIn("MatMul", ops)
        s.reset_profile()
        self.assertTrue(all(row["calls"] == 0 for row in s.profile()))
        dyn = memplan.Session(memplan.compile(os.path.join(MODELS, "loop_data_dependent_scan", "model.onnx")))
        inputs, _ = data_set("loop_data_dependent_scan", 2)
        dyn.run(inputs)
        self.assertIn("sums", dyn.dynamic_tensors())


class Errors(unittest.TestCase):
    def setUp(self):
        self.m = memplan.compile(TINY)

    def check(self, inputs, kind, text):
        with self.assertRaises(memplan.Error) as e:
            self.m.run(inputs)
        self.assertIsInstance(e.exception, RuntimeError)
        self.assertEqual(e.exception.kind, kind)
        self.assertEqual(int(e.exception.kind), int(kind))
        self.assertIn(text, str(e.exception))
        return e.exception

    def test_wrong_input_name(self):
        self.check({"nope": np.zeros((1, 64), np.float32)}, memplan.ErrorKind.InvalidInput, "no input named 'nope'")

    def test_wrong_dtype(self):
        self.check({"x": np.zeros((1, 64), np.float64)}, memplan.ErrorKind.InvalidInput, "float64")
        self.check({"x": np.zeros((1, 64), np.complex64)}, memplan.ErrorKind.InvalidInput, "complex64")

    def test_wrong_shape(self):
        self.check({"x": np.zeros((1, 65), np.float32)}, memplan.ErrorKind.InvalidInput, "shape")
        self.check({"x": np.zeros((64,), np.float32)}, memplan.ErrorKind.InvalidInput, "rank")

    def test_missing_input(self):
        self.check({}, memplan.ErrorKind.InvalidInput, "input 'x' is not set")

    def test_the_session_works_after_an_error(self):
        self.check({"x": np.zeros((1, 65), np.float32)}, memplan.ErrorKind.InvalidInput, "shape")
        self.assertEqual(self.m.run({"x": np.zeros((1, 64), np.float32)})["probs"].shape, (1, 10))

    def test_compile_errors(self):
        with self.assertRaises(memplan.Error) as e:
            memplan.compile(os.path.join(MODELS, "bad", "truncated.onnx"))
        self.assertEqual(e.exception.kind, memplan.ErrorKind.InvalidInput)
        with self.assertRaises(memplan.Error) as e:
            memplan.compile(os.path.join(MODELS, "bad", "unknown_domain.onnx"))
        self.assertEqual(e.exception.kind, memplan.ErrorKind.Unsupported)
        with self.assertRaises(memplan.Error) as e:
            memplan.compile(os.path.join(MODELS, "no_such_folder", "model.onnx"))
        self.assertIn("no_such_folder", str(e.exception))
        with self.assertRaises(memplan.Error):
            memplan.compile(TINY, strategy="no-such-strategy")
        with self.assertRaises(TypeError):
            memplan.compile(TINY, shapes={"x": "1x64"})

    def test_error_kinds(self):
        self.assertEqual(int(memplan.ErrorKind.InvalidInput), 2)
        self.assertEqual(int(memplan.ErrorKind.Unsupported), 3)
        self.assertEqual(int(memplan.ErrorKind.Verification), 4)
        self.assertEqual(int(memplan.ErrorKind.Internal), 70)
        self.assertTrue(issubclass(memplan.Error, RuntimeError))


if __name__ == "__main__":
    unittest.main()
