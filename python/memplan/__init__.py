"""memplan: ONNX inference on the CPU in one buffer planned at compile time.

Two ways in:

- ONNX Runtime's API, for code written for it (change the import):

      sess = memplan.InferenceSession("model.onnx")
      outputs = sess.run(None, {"x": x})

- memplan's own, which exposes the plan:

      model = memplan.compile("model.onnx", shapes={"x": (1, 3, 224, 224)})
      print(model.arena_bytes, model.report())
      outputs = model.run({"x": x})            # {name: array}
      session = memplan.Session(model, threads=2)

Errors raise memplan.Error, whose str() is memplan's one-line message and whose kind is a
memplan.ErrorKind.
"""
from ._memplan import (
    Error,
    ErrorKind,
    Model,
    ModelMetadata,
    Session,
    TensorInfo,
    __version__,
    aligned_empty,
    compile,
    declared_model,
    load,
    model_inputs,
)
from .inference_session import (
    InferenceSession,
    NodeArg,
    RunOptions,
    SessionOptions,
    get_available_providers,
    get_device,
)

__all__ = [
    "Error", "ErrorKind", "InferenceSession", "Model", "ModelMetadata", "NodeArg", "RunOptions", "Session",
    "SessionOptions", "TensorInfo", "__version__", "aligned_empty", "compile", "declared_model",
    "get_available_providers", "get_device", "load", "model_inputs",
]
