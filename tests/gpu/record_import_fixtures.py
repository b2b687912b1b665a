"""Records the traces `perfscope import` reads, as users make them, for the CI fixtures:
- ONNX Runtime's profile (`enable_profiling`) of a small model exported from PyTorch, run on the
  CUDA execution provider (some nodes fall back to the CPU provider, as they do for users);
- a PyTorch profiler trace (`export_chrome_trace`, CPU and CUDA activity) of a few iterations of
  the same model in PyTorch.
The files are written as each tool writes them; the CI fixtures are trimmed copies
(`tests/fixtures/*/README.md` say how).
Usage: record_import_fixtures.py OUT_DIR
"""
import json
import os
import shutil
import sys
import traceback

import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
versions = {"torch": torch.__version__, "cuda": torch.version.cuda}


class SmallModel(torch.nn.Module):
    """Layers whose ONNX nodes cover matmul, normalization, activation, softmax and a reduction."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(256, 512)
        self.norm = torch.nn.LayerNorm(512)
        self.fc2 = torch.nn.Linear(512, 64)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.norm(self.fc1(x)))
        return torch.softmax(self.fc2(h), dim=-1).argmax(dim=-1)


model = SmallModel().eval()
example = torch.randn(8, 256)


def record_onnxruntime():
    import onnxruntime as ort
    versions["onnxruntime"] = ort.__version__
    path = os.path.join(out, "small_model.onnx")
    torch.onnx.export(model, (example,), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(out, "ort_profile")
    providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
    versions["onnxruntime_providers"] = providers
    session = ort.InferenceSession(path, options, providers=providers)
    for batch in (8, 8, 8, 16, 16):
        session.run(None, {"x": torch.randn(batch, 256).numpy()})
    written = session.end_profiling()
    shutil.move(written, os.path.join(out, "onnxruntime_profile.json"))
    os.remove(path)


def record_torch_profiler():
    cuda_model = model.cuda()
    x = example.cuda()
    with torch.no_grad():
        for _ in range(3):  # warm-up outside the trace
            cuda_model(x)
        torch.cuda.synchronize()
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            for _ in range(3):
                cuda_model(x)
                x2 = torch.zeros(1024, device="cuda")  # a memset
                x2.copy_(torch.ones(1024))  # a host-to-device copy
            torch.cuda.synchronize()
    path = os.path.join(out, "torch_profiler_trace.json")
    prof.export_chrome_trace(path)
    # The trace names the file it was written to: a path of this machine, kept out of fixtures.
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace(json.dumps(path), json.dumps(os.path.basename(path))))


status = 0
for step in (record_onnxruntime, record_torch_profiler):
    try:
        step()
        print(f"{step.__name__}: ok")
    except Exception:  # noqa: BLE001 - each recording is reported on its own
        traceback.print_exc()
        print(f"{step.__name__}: failed")
        status = 1
with open(os.path.join(out, "versions.json"), "w") as f:
    json.dump(versions, f, indent=1)
print(json.dumps(versions))
sys.exit(status)
