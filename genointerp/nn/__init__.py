"""Transformer building blocks shared by every model (attention, position encodings, encoder layers)."""

from genointerp.nn.attention import MultiHeadAttention
from genointerp.nn.encoder import EncoderLayer
from genointerp.nn.positional import LearnedPositions, RelativePositionKeys, RotaryEmbedding, SinusoidalPositions, sinusoidal_table
from genointerp.nn.window import WindowAttention

__all__ = [
    "EncoderLayer", "LearnedPositions", "MultiHeadAttention", "RelativePositionKeys", "RotaryEmbedding",
    "SinusoidalPositions", "WindowAttention", "sinusoidal_table",
]
