"""Run every rule snippet and print what it does at run time (a tool for people, not a pytest test).

For each snippet: exec it, instantiate the last ``nn.Module`` subclass it defines that can be built
(with no arguments, or with an instance of a ``*Config`` dataclass from the snippet), feed it a small
input guessed from its first layer, and report: ``crash`` (with the exception), ``nan``, or ``ok``,
plus ``leaks-future`` / ``causal`` (does output position 0 change when the last token changes?) and
``perm-equivariant`` (does permuting the tokens just permute the output?).

    python tests/snippets/verify_runtime.py [sc101 ...]
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import traceback
import types
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent
CORPUS = HERE.parents[1] / "shapecheck" / "rules" / "examples"
T = 6


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(ns: dict):
    classes = [v for v in ns.values() if isinstance(v, type) and issubclass(v, nn.Module) and v.__module__ == "snippet"]
    configs = [v for v in ns.values() if dataclasses.is_dataclass(v) and isinstance(v, type)]
    for cls in reversed(classes):
        for args in ([], [c() for c in configs[:1]]):
            try:
                return cls(*args)
            except TypeError:
                continue
            except Exception as exc:  # noqa: BLE001
                return exc
    return None


def _inputs(model: nn.Module):
    for sub in model.modules():
        if isinstance(sub, nn.Embedding):
            yield torch.randint(0, sub.num_embeddings, (2, T))
            break
        if isinstance(sub, nn.Linear):
            yield torch.randn(2, T, sub.in_features)
        if isinstance(sub, nn.MultiheadAttention):
            yield torch.randn(2, T, sub.embed_dim)
        if isinstance(sub, nn.LayerNorm):
            yield torch.randn(2, T, sub.normalized_shape[-1])
    for d in (32, 64, 16):  # fallbacks for modules without a telling first layer
        yield torch.randn(2, T, d)
    yield torch.randn(2, 3, 16, 16)


_SOFTMAX_CALLS: list = []


def _record(fn):
    def wrapper(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        if isinstance(input, torch.Tensor) and input.dim() >= 3 and input.shape[-1] == input.shape[-2]:
            _SOFTMAX_CALLS.append((input.detach(), out.detach()))
        return out
    return wrapper


torch.softmax = _record(torch.softmax)
torch.nn.functional.softmax = _record(torch.nn.functional.softmax)
torch.Tensor.softmax = _record(torch.Tensor.softmax)


def _softmax_notes() -> list[str]:
    """Describe the square softmax inputs seen: score std, mean max prob, do rows over the last dim sum to 1."""
    notes = []
    for scores, probs in _SOFTMAX_CALLS[:1]:
        finite = scores[torch.isfinite(scores)]
        rows = probs.nan_to_num().sum(-1)
        notes.append(f"scores.std={finite.std().item():.2f} maxp={probs.nan_to_num().amax(-1).mean().item():.2f}")
        if not torch.allclose(rows, torch.ones_like(rows), atol=1e-4):
            notes.append("rows(-1)!=1")
        if torch.allclose(scores.nan_to_num(), scores.transpose(-2, -1).nan_to_num(), atol=1e-5):
            notes.append("scores-symmetric")
    return notes


def _extra_args(model: nn.Module, x: torch.Tensor) -> list:
    """Guess the forward arguments after the first: masks (nothing padded) and cross-attention memory."""
    import inspect

    extra = []
    for p in list(inspect.signature(model.forward).parameters.values())[1:]:
        if p.default is not inspect.Parameter.empty or p.kind is not p.POSITIONAL_OR_KEYWORD:
            break
        name = p.name.lower()
        if "keep" in name:
            extra.append(torch.ones(x.shape[0], x.shape[1], dtype=torch.bool))
        elif "mask" in name:
            extra.append(torch.ones(x.shape[0], x.shape[1], dtype=torch.long))
        elif x.dtype == torch.long:
            extra.append(torch.randint(0, int(x.max()) + 1, (x.shape[0], x.shape[1] + 1)))
        else:
            extra.append(torch.randn(x.shape[0], x.shape[1] + 1, x.shape[2]))
    return extra


def _pe_notes(model: nn.Module) -> list[str]:
    """Compare a buffer named like ``pe`` with the sinusoidal reference (interleaved or in halves)."""
    for name, buf in model.named_buffers():
        if "pe" not in name.split(".")[-1].lower() or buf.squeeze().dim() != 2 or not buf.is_floating_point():
            continue
        table = buf.squeeze()
        length, d = table.shape
        pos = torch.arange(length).float()[:, None]
        angle = pos / 10000 ** (torch.arange(0, d, 2).float() / d)
        interleaved = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)
        halves = torch.cat([angle.sin(), angle.cos()], dim=-1)
        if torch.allclose(table, interleaved, atol=1e-4):
            return ["sinusoid=interleaved"]
        if torch.allclose(table, halves, atol=1e-4):
            return ["sinusoid=halves"]
        return [f"sinusoid=WRONG(max diff {(table - interleaved).abs().max().item():.2f})"]
    return []


def _describe(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0][:100] if lines else ''}"


def _first(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def run_snippet(code: str) -> str:
    module = types.ModuleType("snippet")
    sys.modules["snippet"] = module
    ns = module.__dict__
    try:
        exec(compile(code, "<snippet>", "exec"), ns)
    except Exception as exc:  # noqa: BLE001
        return f"crash at import: {_describe(exc)}"
    torch.manual_seed(0)
    model = _build(ns)
    if isinstance(model, Exception):
        return f"crash at build: {_describe(model)}"
    if model is None:
        return "not run (no buildable module)"
    model.eval()
    last_error = None
    for x in _inputs(model):
        _SOFTMAX_CALLS.clear()
        extra = _extra_args(model, x)
        try:
            with torch.no_grad():
                out = _first(model(x, *extra))
        except Exception as exc:  # noqa: BLE001
            last_error = last_error or exc  # the first guess is the most telling
            continue
        notes = ["nan" if torch.isnan(out).any() else "ok"] + _softmax_notes() + _pe_notes(model)
        if out.dim() >= 2 and out.shape[:2] == x.shape[:2]:
            x2 = x.clone()
            x2[:, -1] = x2[:, 0] if x.dtype == torch.long else torch.randn_like(x2[:, -1])
            with torch.no_grad():
                out2 = _first(model(x2, *extra))
            same0 = torch.allclose(out[:, 0].nan_to_num(), out2[:, 0].nan_to_num(), atol=1e-5)
            notes.append("causal" if same0 else "leaks-future")
            perm = torch.randperm(T)
            while torch.equal(perm, torch.arange(T)):
                perm = torch.randperm(T)
            with torch.no_grad():
                out3 = _first(model(x[:, perm], *extra))
            if torch.allclose(out3.nan_to_num(), out[:, perm].nan_to_num(), atol=1e-5):
                notes.append("perm-equivariant")
        return " ".join(notes) + f" out{tuple(out.shape)}"
    if isinstance(last_error, TypeError) and "required positional argument" in str(last_error):
        return "not run (forward needs more inputs)"
    if last_error is not None:
        return f"crash: {_describe(last_error)}"
    return "not run (no input guess)"


def main(argv: list[str]) -> None:
    files = sorted(CORPUS.glob("sc[0-9][0-9][0-9].py"))
    if argv:
        files = [f for f in files if f.stem in argv]
    for path in files:
        module = _load(path)
        print(f"== {path.stem}")
        for kind in ("INVALID", "VALID"):
            for title, code in getattr(module, kind):
                try:
                    result = run_snippet(code)
                except Exception:  # noqa: BLE001
                    result = "harness error: " + traceback.format_exc().splitlines()[-1]
                print(f"  {kind:7} {title[:60]:60} | {result}")


if __name__ == "__main__":
    main(sys.argv[1:])
