"""Forward pass of assignment 2's from-scratch DistilBERT vs transformers', same weights, same input.

Why: the reference solution is what students measure themselves against; it should be as fast as
the library it reproduces, so that "from scratch" never reads as "slow". Both models run on the
CPU, in eval mode under ``torch.inference_mode``, with the same thread count, on the same padded
batch (default 32 sentences × 64 tokens from the course's training data). transformers' model uses
eager attention, the implementation whose attention maps the notebook matches; sdpa is timed too,
for information. Runs are interleaved (reference, transformers, reference, ...) after a warm-up, so
a change of machine load hits both alike; the medians are compared.

    python benchmarks/distilbert_forward.py [--runs 10] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from course import models
from course.fixtures import fixture_file
from staff.authoring import assignments
from staff.authoring.reference import solution_namespace

read_sentiment = assignments.recipe("02_distilbert").read_sentiment

GOAL = 1.1  # the reference may take at most 1.1× transformers' time


def timed(forward) -> float:
    start = time.perf_counter()
    forward()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    namespace = solution_namespace("02_distilbert")
    namespace["device"] = "cpu"
    hf_eager = models.load_classifier(fixture_file("02_distilbert", "classifier_head"))
    hf_sdpa = models.load_classifier(
        fixture_file("02_distilbert", "classifier_head"), attn_implementation="sdpa"
    )
    ours = namespace["load_pretrained"](hf_eager)

    sentences, _ = read_sentiment("train")
    batch = models.load_tokenizer()(
        sentences[: args.batch],
        padding="max_length",
        truncation=True,
        max_length=args.seq,
        return_tensors="pt",
    )
    input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
    candidates = {
        "reference solution": lambda: ours(input_ids, attention_mask),
        "transformers (eager)": lambda: hf_eager(input_ids=input_ids, attention_mask=attention_mask),
        "transformers (sdpa)": lambda: hf_sdpa(input_ids=input_ids, attention_mask=attention_mask),
    }
    times: dict[str, list[float]] = {name: [] for name in candidates}
    with torch.inference_mode():
        error = (
            ours(input_ids, attention_mask)[0]
            - hf_eager(input_ids=input_ids, attention_mask=attention_mask).logits
        )
        for _ in range(args.warmup):
            for forward in candidates.values():
                forward()
        for _ in range(args.runs):
            for name, forward in candidates.items():
                times[name].append(timed(forward))

    print(
        f"forward pass, batch {args.batch} × {args.seq} tokens ({int(attention_mask.sum())} real), "
        f"CPU, {torch.get_num_threads()} threads, median of {args.runs} runs after {args.warmup} warm-up"
    )
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, median in medians.items():
        print(f"  {name:22} {median * 1000:8.1f} ms  (min {min(times[name]) * 1000:.1f} ms)")
    ratio = medians["reference solution"] / medians["transformers (eager)"]
    print(
        f"ratio reference / transformers (eager): {ratio:.3f} (goal <= {GOAL}); "
        f"reference / sdpa: {medians['reference solution'] / medians['transformers (sdpa)']:.3f}"
    )
    print(f"max abs difference of the logits: {error.abs().max().item():.2g}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
