"""``shapecheck trace pkg.module:factory --kwargs k=v --input "idx: int64[2, 16]"``: the shapes of one
forward pass of any importable model factory."""

from __future__ import annotations

import argparse
import ast
import re
import sys

from shapecheck.commands import EXIT_FINDINGS, EXIT_OK, UsageError

NAME = "trace"
HELP = "run one forward pass of a model and print every submodule call with its shapes"
DESCRIPTION = """\
Build a model by calling FACTORY (`pkg.module:function_or_class`, imported from the current folder or
the path) with --kwargs, feed it the --input tensors, and print the tree of submodule calls with
input and output shapes; dims are named from the jaxtyping annotations of each forward. Inputs
are zeros (integer and bool dtypes) or standard normal (float dtypes). With --device meta the
model is built on the meta device: no memory, any size, in milliseconds (ops that need values,
such as .item(), cannot run there). Exit codes: 0 traced, 1 a runtime shape check failed (the
message is printed), 2 bad input or a forward pass that fails otherwise.

examples:
  shapecheck trace reference_model:MiniGPT --kwargs vocab_size=65 d_model=64 n_heads=4 n_layers=2 \\
      max_len=32 --input "idx: int64[2, 16]"
  shapecheck trace mymodel:build --input "float32[1, 3, 224, 224]" --device meta --format mermaid
"""

_INPUT = re.compile(r"^\s*(?:(?P<name>[A-Za-z_]\w*)\s*:\s*)?(?P<dtype>\w+)\s*\[(?P<shape>[\d,\s]*)\]\s*$")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("factory", metavar="MODULE:FACTORY", help="e.g. reference_model:MiniGPT")
    parser.add_argument("--kwargs", nargs="*", default=[], metavar="NAME=VALUE", help="arguments of the factory")
    parser.add_argument(
        "--input", action="append", default=[], metavar='"[NAME:] DTYPE[SHAPE]"', help="a model input (repeatable)"
    )
    parser.add_argument("--device", default=None, help="run on this device, e.g. meta (default: where the model is)")
    parser.add_argument("--format", choices=("text", "mermaid"), default="text", help="output format (default: text)")


def parse_kwargs(items: list[str]) -> dict[str, object]:
    """``["vocab_size=65", "act=gelu"]`` -> ``{"vocab_size": 65, "act": "gelu"}`` (Python literals, else text)."""
    kwargs: dict[str, object] = {}
    for item in items:
        for piece in (p for p in item.split(",") if p.strip()) if "=" in item and item.count("=") > 1 else [item]:
            name, equals, text = piece.partition("=")
            if not equals or not name.strip().isidentifier():
                raise UsageError(f"--kwargs: expected NAME=VALUE, got {piece!r}")
            try:
                kwargs[name.strip()] = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError):
                kwargs[name.strip()] = text.strip()
    return kwargs


def parse_input(spec: str) -> tuple[str | None, str, tuple[int, ...]]:
    """``"idx: int64[2, 16]"`` -> ``("idx", "int64", (2, 16))``."""
    found = _INPUT.match(spec)
    if not found:
        raise UsageError(f'--input: expected "[NAME:] DTYPE[SIZES]" such as "idx: int64[2, 16]", got {spec!r}')
    sizes = tuple(int(s) for s in found["shape"].replace(",", " ").split())
    return found["name"], found["dtype"], sizes


def run(args: argparse.Namespace) -> int:
    kwargs = parse_kwargs(args.kwargs)
    inputs = [parse_input(spec) for spec in args.input]
    module_name, colon, attribute = args.factory.partition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(f"expected MODULE:FACTORY such as reference_model:MiniGPT, got {args.factory!r}")

    import importlib

    import torch

    from shapecheck.runtime.tracing import trace

    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        factory: object = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"cannot import {module_name}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise UsageError(f"{module_name} has no attribute {attribute!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise UsageError(f"{args.factory} is not callable")
    device = torch.device(args.device) if args.device else None
    positional, keywords = [], {}
    for name, dtype_name, sizes in inputs:
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise UsageError(f"--input: unknown dtype {dtype_name!r} (e.g. float32, int64, bool)")
        tensor = torch.randn(sizes, dtype=dtype) if dtype.is_floating_point else torch.zeros(sizes, dtype=dtype)
        if name:
            keywords[name] = tensor
        else:
            positional.append(tensor)
    from shapecheck.runtime import ShapeCheckError

    try:
        with device if device is not None else _no_device():
            model = factory(**kwargs)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the user's factory: any failure is bad input
        call = f"{args.factory}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
        raise UsageError(f"{call}: {_first_line(error)}") from None
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{args.factory} returned a {type(model).__name__}, not a torch.nn.Module")
    model.eval()
    try:
        result = trace(model, *positional, device=args.device, **keywords)
    except ShapeCheckError as error:
        sys.stderr.write(f"shapecheck: {error}\n")
        return EXIT_FINDINGS
    except Exception as error:  # noqa: BLE001 - the user's forward pass failed
        where = f" on {args.device}" if args.device else ""
        raise UsageError(f"the forward pass failed{where}: {_first_line(error)}") from None
    if args.format == "mermaid":
        sys.stdout.write(result.to_mermaid() + "\n")
    else:
        from rich.console import Console

        Console(width=None if sys.stdout.isatty() else 1000).print(result)
    return EXIT_OK


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


class _no_device:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
