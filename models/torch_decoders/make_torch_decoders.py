#!/usr/bin/python3
"""Export small PyTorch greedy-decoding loops to ONNX, with ONNX Runtime's outputs as expected.

    /usr/bin/python3 models/torch_decoders/make_torch_decoders.py           # (re)write everything
    /usr/bin/python3 models/torch_decoders/make_torch_decoders.py --memplan /tmp/memplan
                                                # ... and also run that memplan binary on each set

Needs Debian's python3-torch (1.13), python3-onnx (1.12) and python3-numpy, plus node with
onnxruntime-node for the expected outputs: NODE_PATH (default <repo>/build/bench/node_modules,
where tools/benchmark.sh installs it) must hold it.
Fixed seeds; a file is rewritten only when its bytes change.

What it exports (random weights, torch.jit.script so the control flow is a real ONNX Loop, then
torch.onnx.export at opset 17; inputs have static shapes):

  greedy_transformer      inputs  memory [1,6,32] f32, max_len [] i64, end_token [] i64
                          output  ys [1, n+1] i64
      A 2-layer post-norm transformer decoder (d_model 32, 2 heads, FFN 64, vocab 20, learned
      position embedding of 32 positions), attention written by hand: nn.MultiheadAttention and
      nn.TransformerDecoder do not export from a scripted module with torch 1.13 ("ScalarType
      UNKNOWN_SCALAR is an unexpected tensor scalar type", raised in prim_if shape inference).
      ys starts as [[1]]; `while i < max_len and not done` the decoder runs over the whole ys
      (causal mask, cross-attention to memory), the argmax of the last position is appended, and
      the loop stops when that token equals end_token. So ys grows [1,1] -> [1,2] -> ... inside
      the Loop, n = the number of steps run.
      The model.onnx files are torch.onnx.export's bytes, unchanged. torch 1.13 declares each
      Loop-carried body input with the static shape of its initial value (ys: [1, 1], though the
      body output is [Loopys_dim_0, Loopys_dim_1]) and folds shapes read from it: an earlier
      version that used ys.size(1) for the positions, the causal mask and the attention reshapes
      exported a graph that always computed with length 1 (ORT then failed on iteration 2:
      "Shape mismatch attempting to re-use buffer. {1,1,32} != {1,2,32}"). So the code takes
      the length from the loop counter and reshapes with -1; the wrong [1, 1] declaration
      stays in the file (ORT ignores it).

  greedy_lstm_attention   inputs  enc [1,7,32] f32, max_len [] i64, end_token [] i64
                          outputs ys [1, n+1] i64, attn [n, 7] f32
      An nn.LSTMCell decoder (embedding 16 + input feeding of the previous context, hidden 32)
      with dot-product attention over enc, initial (h, c) from the mean of enc, the same greedy
      loop carrying (h, c, context), appending the token to ys and the attention weights to attn.

Each model gets three data sets: test_data_set_0 stops early on end_token (end_token chosen from
a torch run without stopping: the first token that is new at step >= 3), test_data_set_1 runs to
max_len (end_token is a vocabulary id the run never produces), test_data_set_2 has max_len = 0
(no iteration: ys = [[1]], attn is [0, 7]).

Layout as in models/make_models.py: <name>/model.onnx, <name>/test_data_set_K/input_N.pb,
output_N.pb, inputs/<name>.npy, expected/<name>.npy. The expected outputs are ONNX Runtime's
(run_ort.js, graph optimizations disabled, one thread). They are compared with the eager torch
module and the scripted one (int64 outputs must be identical, floats within 1e-5) and with
ONNX Runtime at graph optimization level 'all'; the script fails if any of these disagree.
"""

import io
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
SEED = 20240617
START = 1
VOCAB = 20
FLOAT_TOL = 1e-5

sys.path.insert(0, os.path.dirname(HERE))
import torch_fixtures as fx  # noqa: E402  (models/torch_fixtures.py: data sets, ONNX Runtime, memplan)

NAME = os.path.basename(HERE)
write_bytes = fx.folder_writer(NAME)


class Attention(nn.Module):
    """Multi-head attention written out (nn.MultiheadAttention does not export when scripted)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.dh = d // heads
        self.scale = 1.0 / float(self.dh) ** 0.5
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)

    def forward(self, x, kv, mask):
        # Batch 1; lengths as -1, not x.size(1): see GreedyTransformer.forward.
        q = self.q(x).reshape(1, -1, self.heads, self.dh).transpose(1, 2)      # [1,h,lq,dh]
        k = self.k(kv).reshape(1, -1, self.heads, self.dh).transpose(1, 2)     # [1,h,lk,dh]
        v = self.v(kv).reshape(1, -1, self.heads, self.dh).transpose(1, 2)
        s = torch.matmul(q, k.transpose(2, 3)) * self.scale + mask              # [1,h,lq,lk]
        a = torch.softmax(s, dim=-1)
        y = torch.matmul(a, v).transpose(1, 2).reshape(1, -1, self.heads * self.dh)
        return self.o(y)


class DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.cross_attn = Attention(d, heads)
        self.ff1 = nn.Linear(d, ff)
        self.ff2 = nn.Linear(ff, d)
        self.n1 = nn.LayerNorm(d)
        self.n2 = nn.LayerNorm(d)
        self.n3 = nn.LayerNorm(d)

    def forward(self, x, memory, causal, no_mask):
        x = self.n1(x + self.self_attn(x, x, causal))
        x = self.n2(x + self.cross_attn(x, memory, no_mask))
        return self.n3(x + self.ff2(F.relu(self.ff1(x))))


class GreedyTransformer(nn.Module):
    def __init__(self, vocab=VOCAB, d=32, heads=2, layers=2, ff=64, max_pos=32, start=START):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.layers = nn.ModuleList([DecoderLayer(d, heads, ff) for _ in range(layers)])
        self.out = nn.Linear(d, vocab)
        self.start = start

    def forward(self, memory, max_len, end_token):
        ys = torch.full([1, 1], self.start, dtype=torch.long)
        no_mask = torch.zeros([1, 1])
        i = 0
        done = False
        while i < int(max_len) and not done:
            # The length of ys is i + 1. Not ys.size(1): torch 1.13's exporter gives the carried
            # ys the static shape of its initial value, [1, 1], and folds ys.size(1) to 1.
            n = i + 1
            x = self.tok(ys) + self.pos(torch.arange(n).unsqueeze(0))
            causal = torch.triu(torch.full([n, n], float("-inf")), diagonal=1)
            for layer in self.layers:
                x = layer(x, memory, causal, no_mask)
            logits = self.out(x[:, -1])                                       # [1, vocab]
            nxt = torch.argmax(logits, dim=-1, keepdim=True)                  # [1, 1]
            ys = torch.cat([ys, nxt], dim=1)
            done = bool(nxt[0, 0] == end_token)
            i += 1
        return ys


# ----------------------------------------------------------------------------------------------
# greedy_lstm_attention

class GreedyLstmAttention(nn.Module):
    def __init__(self, vocab=VOCAB, emb=16, hidden=32, start=START):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.cell = nn.LSTMCell(emb + hidden, hidden)
        self.init_h = nn.Linear(hidden, hidden)
        self.init_c = nn.Linear(hidden, hidden)
        self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.start = start

    def forward(self, enc, max_len, end_token):
        mean = enc.mean(dim=1)                                                # [1, H]
        h = torch.tanh(self.init_h(mean))
        c = self.init_c(mean)
        ctx = torch.zeros_like(mean)
        ys = torch.full([1, 1], self.start, dtype=torch.long)
        attn = torch.zeros([0, enc.size(1)])
        i = 0
        done = False
        while i < int(max_len) and not done:
            e = self.emb(ys[:, -1])                                           # [1, E]
            h, c = self.cell(torch.cat([e, ctx], dim=1), (h, c))
            scores = torch.bmm(enc, h.unsqueeze(2)).squeeze(2)                # [1, S]
            w = torch.softmax(scores, dim=-1)
            ctx = torch.bmm(w.unsqueeze(1), enc).squeeze(1)                   # [1, H]
            o = torch.tanh(self.combine(torch.cat([h, ctx], dim=1)))
            nxt = torch.argmax(self.out(o), dim=-1, keepdim=True)             # [1, 1]
            ys = torch.cat([ys, nxt], dim=1)
            attn = torch.cat([attn, w], dim=0)
            done = bool(nxt[0, 0] == end_token)
            i += 1
        return ys, attn


# ----------------------------------------------------------------------------------------------
# export, expected outputs, data sets

def export(module, example, in_names, out_names):
    """torch.jit.script, then torch.onnx.export; returns (scripted module, model bytes, model)."""
    scripted = torch.jit.script(module)
    buf = io.BytesIO()
    torch.onnx.export(scripted, example, buf, opset_version=OPSET, input_names=in_names,
                      output_names=out_names)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model, full_check=True)
    return scripted, buf.getvalue(), model


def pick_sets(scripted, x, max_len):
    """Three (x, max_len, end_token) sets: stop early on end_token, run to max_len, max_len 0."""
    ys = scripted(x, torch.tensor(max_len), torch.tensor(-1))
    ys = (ys[0] if isinstance(ys, tuple) else ys)[0].tolist()
    generated = ys[1:]
    early = None
    for k in range(2, len(generated) - 1):        # stop after step k+1 >= 3, before max_len
        if generated[k] not in generated[:k]:
            early = generated[k]
            break
    assert early is not None, f"no token is new at step >= 3: {generated}"
    unused = [t for t in range(VOCAB) if t not in generated]
    assert unused, f"every token appears: {generated}"
    return [(max_len, early), (max_len, unused[0]), (0, unused[0])]


def build(name, module, x_name, x, max_len, out_names, memplan):
    torch.manual_seed(0)
    module.eval()
    in_names = [x_name, "max_len", "end_token"]
    example = (x, torch.tensor(max_len), torch.tensor(-1))
    with torch.no_grad():
        scripted, data, model = export(module, example, in_names, out_names)
        write_bytes(f"{name}/model.onnx", data)
        graph_in = [i.name for i in model.graph.input]
        graph_out = [o.name for o in model.graph.output]
        assert graph_in == in_names and graph_out == out_names, (graph_in, graph_out)
        loop = [n for n in model.graph.node if n.op_type == "Loop"]
        body_ops = sorted({n.op_type for n in loop[0].attribute[0].g.node}) if loop else []
        print(f"{name}: {len(data)} bytes, opset {OPSET}, {len(loop)} Loop node(s); "
              f"main graph ops {sorted({n.op_type for n in model.graph.node})}; "
              f"Loop body ops {body_ops}")
        for node in loop:
            body = node.attribute[0].g
            print("  Loop carried values, declared shape of the body input -> body output: " +
                  ", ".join(f"{i.name} {fx.shape_str(i)} -> {fx.shape_str(o)}"
                            for i, o in zip(body.input[2:], body.output[1:])))
        model_path = os.path.join(HERE, name, "model.onnx")
        for k, (ml, end) in enumerate(pick_sets(scripted, x, max_len)):
            inputs = {x_name: x.numpy(), "max_len": np.array(ml, np.int64),
                      "end_token": np.array(end, np.int64)}
            d = f"{NAME}/{name}/test_data_set_{k}"
            fx.write_inputs(d, in_names, inputs)
            targs = (x, torch.tensor(ml), torch.tensor(end))
            eager = fx.as_np(module(*targs))
            script = fx.as_np(scripted(*targs))
            for j, n in enumerate(out_names):
                fx.max_diff(eager[j], script[j], f"{d} {n} eager vs scripted", FLOAT_TOL)
            ort, report = fx.expect_ort(model_path, d, out_names, script, FLOAT_TOL)
            ys = ort["ys"][0].tolist()
            print(f"  set {k}: max_len {ml}, end_token {end}, {len(ys) - 1} steps, ys {ys}")
            print("         " + report)
            if memplan:
                fx.run_memplan(memplan, model_path, d, in_names, out_names)


def main():
    memplan = None
    if "--memplan" in sys.argv[1:]:
        memplan = sys.argv[sys.argv.index("--memplan") + 1]
    torch.set_num_threads(1)

    torch.manual_seed(SEED + 1)
    transformer = GreedyTransformer()
    memory = torch.randn(1, 6, 32)
    build("greedy_transformer", transformer, "memory", memory, 12, ["ys"], memplan)

    torch.manual_seed(SEED + 2)
    lstm = GreedyLstmAttention()
    enc = torch.randn(1, 7, 32)
    build("greedy_lstm_attention", lstm, "enc", enc, 10, ["ys", "attn"], memplan)

    print(f"{len(fx.changed)} file(s) written, the rest unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
