"""torch.nn layer kinds by what they do to the shape of what they are given."""

from __future__ import annotations

from shapecheck.engine.domain.values import ModuleValue, ObjectValue, Value

#: Layers whose output has their input's shape, whatever it is (no width of their own).
SHAPE_PRESERVING = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Identity", "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid",
    "LeakyReLU", "ELU", "Mish", "Softplus", "Hardtanh", "ReLU6", "SELU", "CELU", "PReLU", "Softsign", "GLU_",
})
#: The shape-preserving layers that compute something (not dropouts or identities).
ACTIVATIONS = SHAPE_PRESERVING - {"Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "Identity"}

#: Where an instance of a subclass of a torch.nn layer keeps the layer it is (its parameters, its
#: forward): ``class LayerNorm(nn.LayerNorm)`` with an overridden forward calling super().forward.
NN_BASE = "__nn_base__"


def torch_layer(item: Value) -> Value:
    """A subclass of a torch.nn layer (whisper's ``class Linear(nn.Linear)`` with its own forward) is
    that layer as its base was built (``super().__init__`` or the inherited constructor): its
    ``in_features`` and ``out_features`` are the base's."""
    base = item.attrs.get(NN_BASE) if isinstance(item, ObjectValue) else None
    return base if isinstance(base, ModuleValue) else item
