"""Greedy decoding with a static KV cache on the mncore device, against eager PyTorch.

    python examples/generate.py [--device cpu|interp|task|triton|mncore]
                                [--model gpt2-tiny|llama-tiny|...] [--tokens 32]
                                [--path lazy|fx]

``--path lazy``: the model moved with ``.mncore()``, a ``sync()`` per token (the step
compiles once: position and caches are device tensors). ``--path fx``: the decode step
captured once with FX (``CompiledStep``) and called per token. Either way the tokens must
equal eager PyTorch's greedy decoding of the same model.
"""

from __future__ import annotations

import argparse
import time

import torch

import torch_mncore
from mncore_ir.frontends.fx_steps import CompiledStep
from mncore_ir.testing.decoders import (
    CONFIGS,
    Decoder,
    decode_step,
    decoder,
    greedy_decode,
    greedy_steps,
    prompt_tokens,
    step_inputs,
)


def lazy_decode(model: Decoder, prompt: torch.Tensor, tokens: int) -> tuple[torch.Tensor,
                                                                            list[float]]:
    """The lazy runtime: every step traced, compiled once, synced per token."""
    model.reset_cache()
    model.mncore()
    chosen, seconds = [], []
    for token in greedy_steps(model, prompt, tokens, device="mncore"):
        start = time.perf_counter()
        torch_mncore.sync()
        chosen.append(token.cpu())
        seconds.append(time.perf_counter() - start)
    return torch.cat(chosen[prompt.shape[1] - 1:], dim=1), seconds


def fx_decode(model: Decoder, prompt: torch.Tensor, tokens: int, device: str
              ) -> tuple[torch.Tensor, list[float], CompiledStep]:
    """The FX path: the decode step captured and compiled once, called per token with
    the caches and the position updated in place."""
    weights, caches, token, pos = step_inputs(model)
    step = CompiledStep(decode_step(model), weights, caches, token, pos, device_name=device)
    length = prompt.shape[1]
    chosen, seconds = [], []
    token = prompt[:, :1].clone()
    for index in range(length + tokens - 1):
        start = time.perf_counter()
        best, _logits = step(weights, caches, token, pos)
        seconds.append(time.perf_counter() - start)
        chosen.append(best)
        token = prompt[:, index + 1:index + 2].clone() if index + 1 < length else best
    return torch.cat(chosen[length - 1:], dim=1), seconds, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--model", default="gpt2-tiny", choices=sorted(CONFIGS))
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=4, help="prompt length")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--path", default="lazy", choices=("lazy", "fx"))
    args = parser.parse_args()

    model = decoder(args.model, batch=args.batch)
    prompt = prompt_tokens(model.cfg, args.prompt)
    eager = greedy_decode(model, prompt, args.tokens)
    if args.path == "lazy":
        torch_mncore.init(device=args.device)
        got, seconds = lazy_decode(model, prompt, args.tokens)
        compiled = f"{torch_mncore.counter_value('UncachedCompile') or 0} compiles"
    else:
        got, seconds, step = fx_decode(model, prompt, args.tokens, args.device)
        compiled = f"one CompiledStep called {step.calls} times"
    steady = sorted(seconds[2:] or seconds)[len(seconds[2:] or seconds) // 2]
    print(f"model {args.model} ({model.cfg.layers} layers, width {model.cfg.dim}), "
          f"device {args.device}, {args.path} path, batch {args.batch}")
    print(f"prompt      {prompt[0].tolist()}")
    print(f"eager       {eager[0].tolist()}")
    print(f"{args.device:<12}{got[0].tolist()}")
    print(f"tokens equal eager's: {torch.equal(eager, got)}; {compiled} for "
          f"{len(seconds)} steps; median step {steady * 1e3:.2f} ms")
    if not torch.equal(eager, got):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
