"""A torch.compile'd step of gatherjit.torch.gather_elements and two
element-wise operations, traced into the graph (the function as its
operator, PyTorch 2.5 and later) against the same call kept out of the graph
by torch.compiler.disable (a graph break, as the functions were before),
and eagerly: medians of interleaved rounds, one thread, a tiny and a large
shape in one run.

    PYTHONPATH=build/python .venv-peers/bin/python bench/torch_compile_step.py [--rounds N]
"""

import argparse
import statistics
import time

import torch

import gatherjit
import gatherjit.torch as gjt


def step(x, i):
    return (gjt.gather_elements(x, i, 1) * 2 + 1).relu()


@torch.compiler.disable
def _outside(x, i):
    return gjt.gather_elements(x, i, 1)


def step_with_break(x, i):
    return (_outside(x, i) * 2 + 1).relu()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    torch.set_num_threads(1)
    engines = {"in the graph": torch.compile(step), "graph break": torch.compile(step_with_break),
               "eager": step}
    print("| data by indices | " + " | ".join(engines) + " | break / in the graph |")
    print("|---|" + "---|" * (len(engines) + 1))
    for rows, cols, picks, calls in ((64, 32, 8, 500), (2048, 1024, 256, 20)):
        x = torch.randn(rows, cols)
        i = torch.randint(0, cols, (rows, picks))
        want = step(x, i)
        times = {}
        for name, f in engines.items():
            assert torch.equal(f(x, i), want), name
            for _ in range(calls // 5):
                f(x, i)
            times[name] = []
        gatherjit.wait_background()  # every engine on the specialized kernel
        for _ in range(args.rounds):
            for name, f in engines.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    f(x, i)
                times[name].append((time.perf_counter() - t0) / calls * 1e6)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"| [{rows}, {cols}] by [{rows}, {picks}] | "
              + " | ".join(f"{m:.1f} us" for m in med.values())
              + f" | {med['graph break'] / med['in the graph']:.2f}x |")
    print(f"\nPyTorch {torch.__version__}, one thread, medians of {args.rounds} rounds.")


if __name__ == "__main__":
    main()
