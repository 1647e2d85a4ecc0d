"""The transformer zoo: public attention, MatMul and LayerNorm architectures from torchvision and
torchaudio (Debian's torch 1.13), exported by tracing at fixed shapes. Each maker returns (module,
example inputs, input names, output names); export_zoo.py --transformers exports them and records
torch's outputs. Weights are random (seeded by the caller); sizes are the architectures' own, so
these are the MatMul shapes users run, not toy ones."""
import torch
import torchaudio
import torchvision
from torch import nn


def _image():
    return torch.rand(1, 3, 224, 224) * 2 - 1


def vit_b_16():
    return torchvision.models.vit_b_16(weights=None), [_image()], ["input"], ["logits"]


def swin_t():
    return torchvision.models.swin_t(weights=None), [_image()], ["input"], ["logits"]


def convnext_tiny():
    return torchvision.models.convnext_tiny(weights=None), [_image()], ["input"], ["logits"]


class _Features(nn.Module):
    """wav2vec2's forward returns (features, lengths); lengths is None without an input length."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, waveform):
        return self.model(waveform)[0]


def wav2vec2_base():
    """One second of 16 kHz audio through wav2vec2 base (12 layers, 768 wide, 49 frames)."""
    model = _Features(torchaudio.models.wav2vec2_base())
    return model, [torch.randn(1, 16000) * 0.1], ["waveform"], ["features"]


def conformer_encoder():
    """A Conformer encoder at Conformer-S's width (144, 4 heads, depthwise 31; 4 of its 16 layers) on a
    batch of two utterances of 200 and 160 frames (the lengths input becomes a key padding mask)."""
    model = torchaudio.models.Conformer(input_dim=144, num_heads=4, ffn_dim=576, num_layers=4,
                                        depthwise_conv_kernel_size=31)
    return (model, [torch.randn(2, 200, 144), torch.tensor([200, 160], dtype=torch.int64)],
            ["features", "lengths"], ["encoded", "encoded_lengths"])


class BertLike(nn.Module):
    """A BERT-style encoder: token and position embeddings, post-norm layers with GELU, and the
    attention mask of a padded batch (1 = token, 0 = padding) turned into an additive -inf mask."""

    def __init__(self, vocab=8000, width=384, heads=6, layers=6, max_len=128):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(max_len, width)
        self.norm = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(width, width)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(input_ids) + self.positions(positions))
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return x, torch.tanh(self.pooler(x[:, 0]))


def bert_like_encoder():
    ids = torch.randint(1, 8000, (2, 128))
    mask = torch.ones(2, 128, dtype=torch.int64)
    mask[1, 90:] = 0  # the second sequence is 90 tokens long, padded to 128
    return BertLike(), [ids, mask], ["input_ids", "attention_mask"], ["hidden", "pooled"]


class PredictorJoiner(nn.Module):
    """torchaudio's RNN-T prediction network (embedding, layer-normed LSTMs) and joiner, the part of a
    streaming recogniser that runs once per emitted token, on a block of 10 tokens against 20
    encoder frames."""

    def __init__(self):
        super().__init__()
        rnnt = torchaudio.models.emformer_rnnt_model(
            input_dim=80, encoding_dim=512, num_symbols=1024, segment_length=4, right_context_length=1,
            time_reduction_input_dim=128, time_reduction_stride=4, transformer_num_heads=4,
            transformer_ffn_dim=1024, transformer_num_layers=2, transformer_dropout=0.0,
            transformer_activation="gelu", transformer_left_context_length=30,
            transformer_max_memory_size=0, transformer_weight_init_scale_strategy="depthwise",
            transformer_tanh_on_mem=True, symbol_embedding_dim=512, num_lstm_layers=3,
            lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0)
        self.predictor = rnnt.predictor
        self.joiner = rnnt.joiner

    def forward(self, tokens, encodings):
        lengths = torch.full((tokens.shape[0],), tokens.shape[1], dtype=torch.int32)
        frames = torch.full((encodings.shape[0],), encodings.shape[1], dtype=torch.int32)
        predicted, predicted_lengths, _ = self.predictor(tokens, lengths)
        logits, _, _ = self.joiner(encodings, frames, predicted, predicted_lengths)
        return logits


def rnnt_predictor_joiner():
    return (PredictorJoiner(), [torch.randint(0, 1024, (1, 10)), torch.randn(1, 20, 512)],
            ["tokens", "encodings"], ["logits"])


TRANSFORMER_MODELS = {
    "vit_b_16": vit_b_16,
    "swin_t": swin_t,
    "convnext_tiny": convnext_tiny,
    "wav2vec2_base": wav2vec2_base,
    "conformer_encoder": conformer_encoder,
    "bert_like_encoder": bert_like_encoder,
    "rnnt_predictor_joiner": rnnt_predictor_joiner,
}
