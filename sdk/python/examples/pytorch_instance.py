#!/usr/bin/env python3
"""Launch a PyTorch instance, wait until it runs, stream its logs, stop it.

    export GPURENT_URL=https://gpus.example.com GPURENT_API_KEY=gpr_...   # or the CLI's config
    python3 pytorch_instance.py [--gpu-type h100-80g] [--keep]

The instance starts from the platform's `pytorch` template: on a node with a container engine it
runs in the pytorch/pytorch image, elsewhere as a process with the node's python3-torch. It trains
a small model (on the GPU when CUDA is there), then stays up as a box you could `gpurent exec`
into; the example follows its log until training is finished and stops it (and, without --keep,
deletes it). Where torch is missing (a test machine) it says so and trains a stand-in in plain
Python, so the example runs anywhere.
"""
import argparse
import sys

from gpurent import Client, GpurentError

TRAIN = r"""
import random, time
try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__} on {device}", flush=True)
    x = torch.randn(1024, 8, device=device)
    y = x @ torch.arange(1.0, 9.0, device=device) + 0.5 + 0.1 * torch.randn(1024, device=device)
    model = torch.nn.Linear(8, 1).to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, 6):
        for _ in range(5):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
            loss.backward()
            optimiser.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
else:
    print("torch is not installed here: training a stand-in model in plain Python", flush=True)
    xs = [random.uniform(-1, 1) for _ in range(256)]
    data = [(x, 3 * x + 0.5 + random.gauss(0, 0.1)) for x in xs]
    w = b = 0.0
    for epoch in range(1, 6):
        for _ in range(5):
            gw = sum(2 * (w * x + b - y) * x for x, y in data) / len(data)
            gb = sum(2 * (w * x + b - y) for x, y in data) / len(data)
            w, b = w - 0.1 * gw, b - 0.1 * gb
        loss = sum((w * x + b - y) ** 2 for x, y in data) / len(data)
        print(f"epoch {epoch} loss {loss:.4f}", flush=True)
print("training finished", flush=True)
"""

# Train, then stay up (as an interactive box would) until stopped.
COMMAND = ["/bin/sh", "-c", 'python3 -c "$TRAIN_PY" && exec sleep infinity']


def pick_gpu_type(client: Client) -> str:
    """The cheapest GPU type with a free GPU now."""
    free = [o for o in client.offers() if o.free > 0]
    if not free:
        sys.exit("no GPU is free right now; pass --gpu-type to queue for one")
    return min(free, key=lambda o: o.price_per_gpu_hour_micros).gpu_type


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-type", help="default: the cheapest type with a free GPU")
    parser.add_argument("--keep", action="store_true", help="stop the instance, do not delete it")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for it")
    args = parser.parse_args()

    client = Client()  # GPURENT_URL / GPURENT_API_KEY, else ~/.config/gpurent/config.toml
    gpu_type = args.gpu_type or pick_gpu_type(client)
    spec = dict(name="pytorch-example", template="pytorch", gpu_type=gpu_type, gpu_count=1,
                command=COMMAND, env={"TRAIN_PY": TRAIN})
    price = client.estimate(**spec)
    print(f"launching on {gpu_type} at {price.per_hour_micros.total / 1e6:.2f} "
          f"{price.currency}/hour")
    instance = client.instances.create(**spec)
    try:
        running = client.instances.wait_until(instance.id, "running", timeout=args.timeout)
        print(f"{instance.id} is running on node {running.node_id}")
        for line in client.instances.stream_logs(instance.id, read_timeout=args.timeout):
            print("  | " + line, end="")
            if line.startswith("training finished"):
                break  # leaving the loop closes the stream; the instance runs on
    finally:
        # However the above ended (even Ctrl-C), do not leave a GPU running and billed.
        client.instances.stop(instance.id)
    stopped = client.instances.wait_until(instance.id, "stopped", timeout=args.timeout)
    print(f"{instance.id} is {stopped.state}")
    if not args.keep:
        client.instances.delete(instance.id)
        print(f"{instance.id} deleted")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GpurentError as e:
        sys.exit(f"error: {e}")
