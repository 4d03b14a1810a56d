"""The attention scale lives here (trap: applied in another module than the product)."""


def scale_queries(q, head_dim):
    return q * head_dim ** -0.5
