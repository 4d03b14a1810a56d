"""One step of next-token training, then a check that no position sees the future: fails
(the last position sees nothing at all and gives NaN; the others see only the future)."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent / "src"))

from tinylm import TinyLM  # noqa: E402


def main():
    torch.manual_seed(0)
    model = TinyLM()
    idx = torch.randint(0, 50, (2, 8))
    logits = model(idx)
    assert not torch.isnan(logits).any(), "NaN logits: a row of the attention is fully masked"
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 50
    assert torch.allclose(model(changed)[:, 0], logits[:, 0]), "position 0 sees the last token"


if __name__ == "__main__":
    main()
