"""ONNX Runtime's Python API over memplan: code written for onnxruntime.InferenceSession runs by
changing its import.

memplan plans a model's memory for fixed input shapes. A session compiles on its first run with
the inputs' shapes, and again when a run brings shapes it has not seen: the plans of the most
recent `SessionOptions.memplan_max_cached_plans` shapes are kept (an LRU), so a model fed a few
shapes in turn compiles each once. Runs from several threads at once each take a memplan.Session of
their own (sessions share the compiled model: its weights and kernels exist once).
"""
import collections
import os
import tempfile
import threading

import numpy as np

from . import _memplan

_PROVIDER = "CPUExecutionProvider"

# ONNX's TensorProto.DataType numbers as ONNX Runtime names their tensor types.
_TYPE_NAMES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
    10: "float16", 11: "double", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16",
}


def get_available_providers():
    """memplan runs on the CPU only."""
    return [_PROVIDER]


def get_device():
    return "CPU"


class SessionOptions:
    """ONNX Runtime's SessionOptions. intra_op_num_threads sets memplan's threads (0: OpenMP's
    default); the other ONNX Runtime options are accepted and have no effect (memplan always plans
    one arena, runs nodes in order and fuses what it can). memplan's own options:

    - memplan_prefer: "balanced" (default), "memory" or "speed": how kernels are chosen when a
      faster one would need more memory (CompileOptions::prefer).
    - memplan_max_cached_plans: compiled plans kept for recent input shapes (default 4).
    - memplan_bounds: {tensor name: largest shape} for tensors whose size only the run decides.
    - memplan_check_memory: guard mode, every buffer checked for clobbering (slow; for debugging).
    """

    __slots__ = (
        "intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
        "execution_order", "log_severity_level", "log_verbosity_level", "logid", "enable_cpu_mem_arena",
        "enable_mem_pattern", "enable_mem_reuse", "enable_profiling", "profile_file_prefix",
        "optimized_model_filepath", "use_deterministic_compute", "memplan_prefer", "memplan_max_cached_plans",
        "memplan_bounds", "memplan_check_memory",
    )

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = None
        self.execution_mode = None
        self.execution_order = None
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.profile_file_prefix = "memplan_profile"
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False
        self.memplan_prefer = "balanced"
        self.memplan_max_cached_plans = 4
        self.memplan_bounds = None
        self.memplan_check_memory = False

    def add_session_config_entry(self, key, value):
        """Accepted for compatibility; memplan has no such entries."""

    def add_free_dimension_override_by_name(self, name, value):
        """Accepted for compatibility; the inputs' shapes fix every dim at the first run."""


class RunOptions:
    """Accepted for compatibility (ONNX Runtime's per-run options); memplan has none."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.tag = ""
        self.terminate = False


class NodeArg:
    """An input or output as the model declares it: name, shape (an int per known dim, the name of
    a symbolic dim as a string, None for a dim with neither) and type ("tensor(float)", ...)."""

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _node_arg(info):
    shape = None
    if info.ranked:
        shape = [d if d >= 0 else (n or None) for d, n in zip(info.shape, info.dim_names)]
    tensor = "tensor(%s)" % _TYPE_NAMES.get(info.elem_type, "undefined")
    # As ONNX Runtime names them: seq(tensor(float)), optional(tensor(float)), optional(seq(...)).
    kind = {"tensor": "%s", "sequence": "seq(%s)", "optional": "optional(%s)",
            "optional sequence": "optional(seq(%s))"}[info.kind]
    return NodeArg(info.name, shape if info.kind == "tensor" else None, kind % tensor)


def _check_providers(providers):
    for p in providers or []:
        name = p[0] if isinstance(p, (tuple, list)) else p
        if name != _PROVIDER:
            raise ValueError("memplan runs on the CPU only: provider %r is not available (available: %s)"
                             % (name, _PROVIDER))


class _Compiled:
    """One input shape's compiled model and its idle sessions."""

    def __init__(self, model):
        self.model = model
        self.idle = []


class InferenceSession:
    """onnxruntime.InferenceSession's API: InferenceSession(path_or_bytes, sess_options=None,
    providers=None); run(output_names, input_feed) returns a list of numpy arrays."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        _check_providers(providers)
        self._options = sess_options if sess_options is not None else SessionOptions()
        if not isinstance(self._options, SessionOptions):
            raise TypeError("sess_options must be a memplan.SessionOptions")
        self._temp = None
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            # memplan compiles files: the bytes go to a private file for the session's life.
            fd, self._temp = tempfile.mkstemp(prefix="memplan_", suffix=".onnx")
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(path_or_bytes))
            self._path = self._temp
        else:
            self._path = os.fspath(path_or_bytes)
        inputs, outputs, self._meta = _memplan.declared_model(self._path)
        self._inputs = [_node_arg(i) for i in inputs]
        self._outputs = [_node_arg(o) for o in outputs]
        self._input_dtypes = {i.name: i.dtype for i in inputs}
        self._input_kinds = {i.name: i.kind for i in inputs}
        self._plans = collections.OrderedDict()  # input shapes -> _Compiled, most recent last
        self._lock = threading.Lock()

    def __del__(self):
        temp = getattr(self, "_temp", None)
        if temp:
            try:
                os.unlink(temp)
            except OSError:
                pass

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def get_modelmeta(self):
        return self._meta

    def get_providers(self):
        return [_PROVIDER]

    def get_provider_options(self):
        return {_PROVIDER: {}}

    def get_session_options(self):
        return self._options

    def set_providers(self, providers=None, provider_options=None):
        _check_providers(providers)

    def run(self, output_names, input_feed, run_options=None):
        feed = self._feed(input_feed)
        names = [o.name for o in self._outputs] if not output_names else list(output_names)
        known = {o.name for o in self._outputs}
        for n in names:
            if n not in known:
                raise ValueError("%s: %r is not an output of the model (outputs: %s)"
                                 % (self._path, n, ", ".join(sorted(known))))
        compiled = self._compiled_for(feed)
        with self._lock:
            session = compiled.idle.pop() if compiled.idle else None
        if session is None:
            session = _memplan.Session(compiled.model, threads=self._options.intra_op_num_threads,
                                       check_memory=self._options.memplan_check_memory)
        try:
            results = session.run(feed)
        finally:
            with self._lock:
                compiled.idle.append(session)
        return [results[n] for n in names]

    def _feed(self, input_feed):
        declared = [i.name for i in self._inputs]
        for name in input_feed:
            if name not in self._input_dtypes:
                raise ValueError("%s: %r is not an input of the model (inputs: %s)"
                                 % (self._path, name, ", ".join(declared)))
        missing = [n for n in declared if n not in input_feed]
        if missing:
            raise ValueError("%s: no value for input(s) %s" % (self._path, ", ".join(missing)))
        feed = {}
        for name, value in input_feed.items():
            kind = self._input_kinds[name]
            if value is None and kind.startswith("optional"):
                feed[name] = None  # an optional holding nothing
            elif kind in ("sequence", "optional sequence"):
                if not isinstance(value, (list, tuple)):
                    raise TypeError("%s: input %r is a sequence: give a list of arrays" % (self._path, name))
                feed[name] = [self._array(name, v) for v in value]
            else:
                feed[name] = self._array(name, value)
        return feed

    def _array(self, name, value):
        array = np.asarray(value)
        want = self._input_dtypes[name]
        if want is not None and array.dtype != want:
            # As ONNX Runtime: no silent conversion (float64 data for a float input is refused).
            raise TypeError("%s: input %r is %s, the model takes %s" % (self._path, name, array.dtype, np.dtype(want)))
        return array

    def _compiled_for(self, feed):
        # A plan is made for the tensors' shapes; sequences and optionals are the session's, any size.
        tensors = {name: a for name, a in feed.items() if self._input_kinds[name] == "tensor"}
        key = tuple((name, tensors[name].shape) for name in sorted(tensors))
        with self._lock:
            compiled = self._plans.get(key)
            if compiled is not None:
                self._plans.move_to_end(key)
                return compiled
        o = self._options
        model = _memplan.compile(self._path, shapes={name: tuple(a.shape) for name, a in tensors.items()},
                                 bounds=o.memplan_bounds, threads=o.intra_op_num_threads, prefer=o.memplan_prefer)
        with self._lock:
            compiled = self._plans.setdefault(key, _Compiled(model))
            self._plans.move_to_end(key)
            while len(self._plans) > max(1, int(o.memplan_max_cached_plans)):
                self._plans.popitem(last=False)
        return compiled
