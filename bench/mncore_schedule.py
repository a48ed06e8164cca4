"""Programs from convert-task-to-mncore on mncore2: scheduled cycles against a lower bound.

For square matmuls (one task each) and the MLP training step (forward, backward, SGD):
the simulated cycles divided by a lower bound, the larger of

* MAU cycles: multiply-adds / (16 per cycle per MAB x 1024 MABs), and
* transfer cycles: the words of the program's inputs and outputs / 16 words per cycle
  (the DMA engine's bandwidth; every word crosses it at least once);

then the compile time of convert-task-to-mncore, mncore-forward-stores and
mncore-schedule, the simulator's speed in simulated steps per second (the first run:
decoding, not verifying again since the pipeline did, and every hazard check; second:
the next run, values only, which also makes the run's plan; again: a later run, as the
lazy device's later steps) and, again, in issued instructions and in millions of
instruction slots (6 a step, empty or not) per second, and useful FLOP/cycle against
peak.
Matmuls run with both kernels; the streaming one (the first version) is the baseline of
the same process. Whole training steps (MLP SGD, one-layer GPT-2 AdamW, the small CNN's
SGD step) go through the ``mncore`` device's own pipeline. Last, the compile time of the
GPT-2 AdamW step at 1, 2, 4 and 8 layers and its scaling exponent (the slope of log time
over log layers). ``--resnet compile|simulate``: torchvision's resnet18 training step
too (minutes); ``--gpt-forward LAYERS``: a 768-wide GPT-2 forward pass. Program size
is given as written (``ops``: a repeated group and its body once) and as issued.
Figures are simulated cycles, deterministic; only the seconds are noisy.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
import torch

from mncore_ir.dialects import graph as g
from mncore_ir.dialects import mncore as m
from mncore_ir.dialects import task as t
from mncore_ir.dialects.mncore_machines import MACHINES
from mncore_ir.frontends.fx import capture, import_captured
from mncore_ir.parsing import parse_module
from mncore_ir.pipeline import MNCORE_GRAPH_PIPELINE, MNCORE_TASKS, apply_pipeline, make_context
from mncore_ir.targets.graph_interpreter import run_function
from mncore_ir.targets.mncore_simulator import Simulator, find_program, simulate
from mncore_ir.targets.task_simulator import find_kernel
from mncore_ir.testing.model_zoo import (
    GPT,
    TrainingStep,
    cnn_sgd,
    gpt_adamw,
    mlp_sgd,
    resnet18_sgd,
)


def matmul_text(n: int) -> str:
    typ = f"tensor<{n}x{n}xf32>"
    return (f"func.func @main(%a: {typ}, %b: {typ}) -> {typ} {{\n"
            f"  %c = graph.matmul %a, %b : {typ}, {typ} -> {typ}\n"
            f"  func.return %c : {typ}\n}}")


def multiply_adds(kernel: t.KernelOp) -> int:
    total, bodies = 0, kernel.bodies()
    for task in kernel.tasks():
        if isinstance(t.computation(task, bodies), g.MATMULS):
            (_, a), _ = task.reads()
            ((_, c),) = task.writes()
            total += math.prod(c.sizes) * a.sizes[-1]
    return total


def measure(name: str, module: Any, inputs: list[np.ndarray], options: str) -> dict[str, Any]:
    """Lower the task-level ``module`` for mncore2, simulate it, compare with the bound."""
    machine = MACHINES["mncore2"]
    fmas = multiply_adds(find_kernel(module))
    start = time.perf_counter()
    apply_pipeline(module, f"convert-task-to-mncore{{machine=mncore2 {options}}},"
                           "mncore-forward-stores,mncore-schedule")
    compile_s = time.perf_counter() - start
    program = find_program(module)
    start = time.perf_counter()
    simulator = Simulator(program, verify=False)  # as the device: the pipeline verified it
    _, report = simulator.run(inputs)
    sim_s = time.perf_counter() - start
    start = time.perf_counter()
    simulator.run(inputs)  # as the lazy device's second step: values only, by a new plan
    plan_s = time.perf_counter() - start
    start = time.perf_counter()
    simulator.run(inputs)  # as its later steps
    again_s = time.perf_counter() - start
    words = sum(math.prod(x.type.get_shape()) for x in program.tensors("input")) + sum(
        math.prod(x.type.get_shape()) for x in program.tensors("output"))
    mau = fmas / (machine.mau_fma_per_cycle_per_mab * machine.pes // machine.pe_per_mab)
    transfer = words / machine.dma_words_per_cycle
    bound = max(mau, transfer)
    return {"case": name, "ops": program_size(program),
            "instructions": len(program.instructions()), "compile_s": compile_s,
            "steps": report.steps, "cycles": report.cycles, "mau": mau, "transfer": transfer,
            "ratio": report.cycles / bound, "mau_util": report.utilisation("mau"),
            "steps_per_s": report.steps / sim_s, "again_per_s": report.steps / again_s,
            "issues_per_s": len(program.instructions()) / again_s,
            "second_per_s": report.steps / plan_s, "slots_per_s": 6 * report.steps / again_s,
            "useful": 2 * fmas / report.cycles / machine.peak_flops_per_cycle,
            "l2bs": len({op.block for op in program.instructions()
                         if isinstance(op, m.DmaOp) and op.block is not None}) or 1}


def program_size(program: m.ProgramOp) -> int:
    """Instructions as written: a repeated group counts its body and itself once."""
    return sum(1 + len(op.group()) if isinstance(op, m.RepeatOp) else 1
               for op in program.units())


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'case':<30}{'ops':>7}{'issued':>8}{'compile s':>10}{'cycles':>9}{'MAU bd':>8}"
          f"{'DMA bd':>8}{'/bound':>8}{'MAU %':>7}{'L2Bs':>5}{'useful':>8}{'steps/s':>9}"
          f"{'second/s':>9}{'again/s':>9}{'issues/s':>9}{'Mslots/s':>9}")
    for r in rows:
        print(f"{r['case']:<30}{r['ops']:>7}{r['instructions']:>8}{r['compile_s']:>10.1f}{r['cycles']:>9}"
              f"{r['mau']:>8.0f}{r['transfer']:>8.0f}{r['ratio']:>7.2f}x"
              f"{r['mau_util']:>7.1%}{r['l2bs']:>5}{r['useful']:>8.1%}{r['steps_per_s']:>9.0f}"
              f"{r['second_per_s']:>9.0f}{r['again_per_s']:>9.0f}{r['issues_per_s']:>9.0f}"
              f"{r['slots_per_s'] / 1e6:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[64, 128, 256, 512],
                        help="square matmul sizes (none: skip them)")
    parser.add_argument("--baseline-up-to", type=int, default=256,
                        help="largest size also run with the streaming kernel")
    parser.add_argument("--no-steps", action="store_true", help="matmuls only")
    parser.add_argument("--layers", type=int, nargs="*", default=[1, 2, 4, 8],
                        help="GPT-2 step sizes of the compile-time scaling (none: skip it)")
    parser.add_argument("--resnet", choices=("compile", "simulate"),
                        help="also torchvision's resnet18 SGD step (batch 2, 32x32): compile "
                             "it, or compile, simulate and compare with eager (minutes)")
    parser.add_argument("--gpt-forward", type=int, metavar="LAYERS",
                        help="also a 768-wide GPT-2 forward pass (sequence 64, 12 heads) of "
                             "LAYERS layers: compile it (minutes for 12)")
    parser.add_argument("--simulate-forward", action="store_true",
                        help="and simulate it: cycles against the bound")
    parser.add_argument("--frozen-norms", action="store_true",
                        help="the resnet with batch norm in eval mode (a fine-tuning step)")
    args = parser.parse_args()
    machine = MACHINES["mncore2"]
    print(machine.describe())
    print(f"DMA: {machine.dma_words_per_cycle} words/cycle, {machine.dma_setup_cycles} cycles "
          f"set-up; MAU peak {machine.peak_flops_per_cycle} FLOP/cycle; 1 step = 4 cycles\n")
    rng = np.random.default_rng(0)
    rows = []
    for n in args.sizes:
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        for kernel in ("stationary", "streaming"):
            if kernel == "streaming" and n > args.baseline_up_to:
                continue
            module = parse_module(make_context(), matmul_text(n), "matmul.mlir")
            apply_pipeline(module, f"convert-graph-to-task{{target=mncore matmul_tile={n},{n}}}")
            rows.append(measure(f"matmul {n}^3 {kernel}", module, [a, b],
                                f"matmul_kernel={kernel}"))
    if not args.no_steps:
        steps = (("MLP SGD step", mlp_sgd()), ("GPT-2 1 layer AdamW", gpt_adamw(layers=1)),
                 ("CNN SGD step", cnn_sgd()))
        for name, step in steps:
            module, inputs, tasks = task_level(step)
            rows.append(measure(f"{name} ({tasks} tasks)", module, inputs, ""))
    if rows:
        print_rows(rows)
    stationary = {r["case"].split()[1]: r["ratio"] for r in rows if "stationary" in r["case"]}
    streaming = {r["case"].split()[1]: r["ratio"] for r in rows if "streaming" in r["case"]}
    if streaming:
        print("\nstreaming / stationary cycles: " + ", ".join(
            f"{size} {streaming[size] / stationary[size]:.1f}x" for size in streaming))
    if args.layers:
        scaling(args.layers)
    if args.resnet:
        resnet(args.resnet == "simulate", args.frozen_norms)
    if args.gpt_forward:
        gpt_forward(args.gpt_forward, args.simulate_forward)


def task_level(step: TrainingStep) -> tuple[Any, list[np.ndarray], int]:
    """A training step captured and lowered to the task level as the mncore device
    does it."""
    captured = capture(step, *step.example_inputs())
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}}")
    return module, [x.numpy() for x in captured.example_inputs], len(find_kernel(module).tasks())


def resnet(simulated: bool, frozen_norms: bool) -> None:
    """torchvision's resnet18 training step (SGD with momentum, batch 2, 32x32 images)
    for mncore2: tasks, instructions and compile seconds per phase; ``simulated``: the
    cycles against the bound and the largest differences (relative to each output's
    largest value) of the simulated step from the graph interpreter (f32, numpy) and of
    the interpreter from eager. ``frozen_norms``: batch norm in eval mode (a fine-tuning
    step): in training mode, normalising layer 4's 2 values per channel makes the f32
    gradients chaotic, so no two f32 computations of them agree."""
    step = resnet18_sgd()
    if frozen_norms:
        step.model.eval()
    print(f"\nresnet18 SGD step (torchvision, batch 2, 32x32, batch norm "
          f"{'frozen' if frozen_norms else 'training'}) for mncore2:")
    start = time.perf_counter()
    captured = capture(step, *step.example_inputs())
    module = import_captured(captured)
    apply_pipeline(module, MNCORE_GRAPH_PIPELINE)
    graph = module.clone()
    apply_pipeline(module, f"convert-graph-to-task{{{MNCORE_TASKS}}}")
    kernel = find_kernel(module)
    fmas = multiply_adds(kernel)
    print(f"  capture, graph pipeline, tasks: {time.perf_counter() - start:.1f} s, "
          f"{len(kernel.tasks())} tasks")
    start = time.perf_counter()
    apply_pipeline(module, "convert-task-to-mncore{machine=mncore2},mncore-forward-stores")
    program = find_program(module)
    print(f"  convert-task-to-mncore, mncore-forward-stores: {time.perf_counter() - start:.1f} s, "
          f"{len(program.instructions())} instructions")
    start = time.perf_counter()
    apply_pipeline(module, "mncore-schedule")
    print(f"  mncore-schedule: {time.perf_counter() - start:.1f} s")
    if not simulated:
        return
    inputs = [x.numpy() for x in captured.example_inputs]
    start = time.perf_counter()
    outputs, report = simulate(program, inputs)
    sim_s = time.perf_counter() - start
    machine = MACHINES["mncore2"]
    words = sum(math.prod(x.type.get_shape()) for x in program.tensors("input")) + sum(
        math.prod(x.type.get_shape()) for x in program.tensors("output"))
    bound = max(fmas / (machine.mau_fma_per_cycle_per_mab * machine.pes // machine.pe_per_mab),
                words / machine.dma_words_per_cycle)
    interpreted = run_function(graph, inputs)
    eager = [x.detach().numpy() for x in captured.gm(*captured.example_inputs)]
    print(f"  simulated in {sim_s:.0f} s ({len(program.instructions()) / sim_s:.0f} "
          f"instructions/s): {report.cycles} cycles, {report.cycles / bound:.1f}x the bound")
    print(f"  loss: simulated {float(outputs[0]):.6f}, interpreter "
          f"{float(interpreted[0]):.6f}, eager {float(eager[0]):.6f}; largest difference "
          f"of any output: simulated-interpreter {_difference(outputs, interpreted):.1e}, "
          f"interpreter-eager {_difference(interpreted, eager):.1e}")


def gpt_forward(layers: int, simulated: bool) -> None:
    """A GPT-2-sized forward pass (768 wide, 12 heads, sequence 64, vocabulary 768) of
    ``layers`` layers for mncore2: compile seconds per phase, program size as written
    and as issued; ``simulated``: cycles against the bound and the largest difference
    from eager."""
    torch.manual_seed(0)
    model = GPT(vocab=768, ctx=64, dim=768, heads=12, layers=layers).eval()
    idx = torch.randint(0, 768, (1, 64))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def forward(params: dict[str, torch.Tensor], idx: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(model, params, (idx,))

    print(f"\nGPT-2 forward, {layers} layer(s) of width 768, sequence 64, for mncore2:")
    start = time.perf_counter()
    with torch.no_grad():
        captured = capture(forward, params, idx)
    module = import_captured(captured)
    apply_pipeline(module, f"{MNCORE_GRAPH_PIPELINE},convert-graph-to-task{{{MNCORE_TASKS}}}")
    kernel = find_kernel(module)
    fmas = multiply_adds(kernel)
    print(f"  capture, graph pipeline, tasks: {time.perf_counter() - start:.1f} s, "
          f"{len(kernel.tasks())} tasks", flush=True)
    total = 0.0
    for phase in ("convert-task-to-mncore{machine=mncore2}", "mncore-forward-stores",
                  "mncore-schedule"):
        start = time.perf_counter()
        apply_pipeline(module, phase)
        total += time.perf_counter() - start
        print(f"  {phase.split('{')[0]}: {time.perf_counter() - start:.1f} s", flush=True)
    program = find_program(module)
    print(f"  compile {total:.1f} s: {program_size(program)} instructions as written, "
          f"{len(program.instructions())} issued")
    if not simulated:
        return
    inputs = [x.numpy() for x in captured.example_inputs]
    start = time.perf_counter()
    outputs, report = simulate(program, inputs)
    machine = MACHINES["mncore2"]
    words = sum(math.prod(x.type.get_shape()) for x in program.tensors("input")) + sum(
        math.prod(x.type.get_shape()) for x in program.tensors("output"))
    bound = max(fmas / (machine.mau_fma_per_cycle_per_mab * machine.pes // machine.pe_per_mab),
                words / machine.dma_words_per_cycle)
    eager = [x.detach().numpy() for x in captured.gm(*captured.example_inputs)]
    print(f"  simulated in {time.perf_counter() - start:.0f} s: {report.cycles} cycles, "
          f"{report.cycles / bound:.2f}x the bound; largest difference from eager "
          f"{_difference(outputs, eager):.1e}")


def _difference(ours: list[Any], theirs: list[Any]) -> float:
    """The largest difference of any pair of outputs, relative to the largest value of
    the second (at least 1)."""
    return max(float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())
               / max(1.0, float(np.abs(np.asarray(b, np.float64)).max()))
               for a, b in zip(ours, theirs, strict=True))


def scaling(layers: list[int]) -> None:
    """Compile seconds (convert-task-to-mncore, mncore-forward-stores, mncore-schedule) of the
    GPT-2 AdamW step per layer count, and the exponent of time in layers."""
    print("\nGPT-2 AdamW step compile time for mncore2 (task level to scheduled program):")
    seconds, sizes = [], []
    for n in layers:
        module, _, tasks = task_level(gpt_adamw(layers=n))
        start = time.perf_counter()
        apply_pipeline(module, "convert-task-to-mncore{machine=mncore2},mncore-forward-stores,"
                               "mncore-schedule")
        seconds.append(time.perf_counter() - start)
        sizes.append(len(find_program(module).instructions()))
        print(f"  {n} layer(s): {tasks:5d} tasks {sizes[-1]:8d} instructions "
              f"{seconds[-1]:7.1f} s")
    if len(layers) > 1:
        slope = np.polyfit(np.log(layers), np.log(seconds), 1)[0]
        grows = np.polyfit(np.log(layers), np.log(sizes), 1)[0]
        print(f"  scaling exponent: time {slope:.2f}, instructions {grows:.2f}")


if __name__ == "__main__":
    main()
