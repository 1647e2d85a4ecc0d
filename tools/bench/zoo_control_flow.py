"""The zoo's control-flow models, written for torch.jit.script so that data-dependent control flow
exports as ONNX If and Loop. State lives in tensors (no Python lists, which would export as ONNX
sequences, which memplan refuses). Each maker returns (module, example inputs, input names, output
names); export_zoo.py scripts, exports and records the outputs."""
import torch
from torch import nn


class IfHeads(nn.Module):
    """A small CNN backbone, then an If on an input flag that picks one of two classifier heads."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.small_head = nn.Linear(128, 10)
        self.big_head = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x: torch.Tensor, use_big_head: torch.Tensor) -> torch.Tensor:
        f = self.backbone(x)
        if bool(use_big_head):
            y = self.big_head(f)
        else:
            y = self.small_head(f)
        return y


class RecurrentLoop(nn.Module):
    """An Elman RNN written as a loop over the sequence: h = tanh(Wx x_t + Wh h)."""

    def __init__(self, features: int = 64, hidden: int = 128):
        super().__init__()
        self.hidden = hidden
        self.wx = nn.Linear(features, hidden)
        self.wh = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(xs.size(1), self.hidden)
        for t in range(xs.size(0)):
            h = torch.tanh(self.wx(xs[t]) + self.wh(h))
        return self.out(h)


class LoopWithBranch(nn.Module):
    """A loop whose trip count is an input and whose body branches on the data: a positive mean
    takes the first layer (whose output is never positive), otherwise the second (always positive),
    so the iterations alternate between the branches. (A constant trip count would be unrolled by
    torch's exporter.)"""

    def __init__(self, width: int = 256):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        h = x
        for _ in range(int(steps)):
            if bool(h.mean() > 0):
                h = -torch.relu(self.a(h))
            else:
                h = torch.sigmoid(self.b(h))
        return h


class WhileDataExit(nn.Module):
    """A while loop whose exit depends on the data: grow h until its L1 norm passes a limit; also
    returns the number of iterations it took."""

    def __init__(self, width: int = 128):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x: torch.Tensor):
        h = x
        steps = torch.zeros((), dtype=torch.int64)
        while bool(h.abs().sum() < 10000.0):
            h = 2.0 * h + torch.tanh(self.lin(h))
            steps = steps + 1
        return h, steps


class DesignExample(nn.Module):
    """The design notes' example graph (models/example) as torch writes it: Conv-Relu, an If on an
    input flag taking {Conv, a loop adding a per-channel step three times} or {times 0.5}, then an
    Add of a second input. [1, 8, 112, 112] activations."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.register_buffer("step", torch.arange(1, channels + 1, dtype=torch.float32).reshape(1, channels, 1, 1) * 0.1)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, add_in: torch.Tensor) -> torch.Tensor:
        r = torch.relu(self.conv0(x))
        if bool(cond):
            t = self.conv1(r)
            for _ in range(3):
                t = t + self.step
            y = t
        else:
            y = r * 0.5
        return y + add_in


def _if_heads():
    m = IfHeads()
    with torch.no_grad():
        for bn in (m.backbone[1], m.backbone[4]):
            bn.running_mean.uniform_(-0.1, 0.1)
            bn.running_var.uniform_(0.75, 1.25)
    return m, [torch.rand(1, 3, 128, 128), torch.tensor(True)], ["image", "use_big_head"], ["logits"]


CONTROL_FLOW_MODELS = {
    "cf_if_heads": _if_heads,
    "cf_rnn_loop": lambda: (RecurrentLoop(), [torch.randn(32, 1, 64)], ["sequence"], ["logits"]),
    "cf_loop_branch": lambda: (LoopWithBranch(), [torch.randn(1, 256), torch.tensor(8)], ["x", "steps"], ["y"]),
    "cf_while_exit": lambda: (WhileDataExit(), [torch.randn(1, 128)], ["x"], ["y", "steps"]),
    "cf_design_example": lambda: (DesignExample(), [torch.randn(1, 8, 112, 112), torch.tensor(True),
                                                    torch.randn(1, 8, 112, 112)], ["input", "cond", "add_in"], ["output"]),
}
