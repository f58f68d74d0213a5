#!/usr/bin/env python3
"""A spot job that resubmits itself after preemption, resuming from its checkpoint.

    export GPURENT_URL=https://gpus.example.com GPURENT_API_KEY=gpr_...   # or the CLI's config
    python3 spot_job.py [--gpu-type h100-80g] [--gpu-count 1] [--max-price 9.5] [--steps 20]

Spot work is cheaper and may be preempted: when on-demand or reserved work needs its GPUs, or
when the spot price rises above the job's --max-price, the platform stops it (SIGTERM, then
SIGKILL) and the job ends `preempted` (docs/scheduler.md, "Preemption"). This example keeps its
progress on a volume, submits the job, and each time it is preempted submits it again; the new
run waits in the queue until GPUs are free and resumes where the checkpoint says.

The "training" is a shell loop of --steps steps, checkpointing after each (it runs anywhere: a
container or a node's processes). A real job would run e.g. `python train.py --resume
/ckpt/last.pt` and save its checkpoint there; GPURENT_VOLUMES says where the volume is mounted
(`/ckpt` in a container, under the instance's home for a process).
"""
import argparse
import sys
import time

from gpurent import JOB_FINAL_STATES, Client, GpurentError, models

VOLUME = "spot-checkpoints"

# One step per STEP_SECONDS; the checkpoint is written atomically after each step.
TRAIN = r"""
ckpt="${GPURENT_VOLUMES#*=}/$RUN_ID.step"
step=$(cat "$ckpt" 2>/dev/null || echo 0)
echo "resuming at step $step of $STEPS"
while [ "$step" -lt "$STEPS" ]; do
  sleep "$STEP_SECONDS"
  step=$((step + 1))
  echo "$step" > "$ckpt.tmp" && mv "$ckpt.tmp" "$ckpt"
  echo "step $step"
done
echo "finished after $STEPS steps"
"""


def checkpoint_volume(client: Client) -> models.Volume:
    """The tenant's checkpoint volume, made on first use (volumes outlive jobs)."""
    for volume in client.volumes.list():
        if volume.name == VOLUME:
            return volume
    return client.volumes.create(name=VOLUME, size_gb=10)


def why_preempted(client: Client, job: models.Job) -> str:
    """The reason the platform gave the preempted member (e.g. the prices, for --max-price)."""
    for instance in client.jobs.instances(job.id):
        if instance.state == "preempted" and instance.reason:
            return instance.reason
    return job.reason or "preempted"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-type", default="h100-80g")
    parser.add_argument("--gpu-count", type=int, default=1)
    parser.add_argument("--max-price", type=float,
                        help="the most to pay per GPU-hour (platform currency); default: any")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-seconds", type=float, default=0.25)
    parser.add_argument("--attempts", type=int, default=5, help="submissions at most")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per submission")
    args = parser.parse_args()

    client = Client()  # GPURENT_URL / GPURENT_API_KEY, else ~/.config/gpurent/config.toml
    volume = checkpoint_volume(client)
    run_id = time.strftime("run-%Y%m%d-%H%M%S")
    spec = models.JobCreate(
        name="spot-train", command=["/bin/sh", "-c", TRAIN], gpu_type=args.gpu_type,
        gpu_count=args.gpu_count, pricing="spot",
        max_price_micros=round(args.max_price * 1e6) if args.max_price else None,
        env={"RUN_ID": run_id, "STEPS": str(args.steps), "STEP_SECONDS": str(args.step_seconds)},
        volumes=[models.VolumeMount(volume_id=volume.id, mount_path="/ckpt")])

    for attempt in range(1, args.attempts + 1):
        job = client.jobs.create(spec)  # a fresh Idempotency-Key each time: a new job
        print(f"attempt {attempt}: submitted spot job {job.id}", flush=True)
        done = client.jobs.wait_until(job.id, JOB_FINAL_STATES, timeout=args.timeout)
        if done.state == "succeeded":
            print(f"attempt {attempt}: {job.id} succeeded; its log:")
            print("".join("  | " + line for line in client.jobs.logs(job.id).splitlines(True)))
            return 0
        if done.state != "preempted":
            print(f"attempt {attempt}: {job.id} {done.state}: {done.reason}", file=sys.stderr)
            return 1
        print(f"attempt {attempt}: {job.id} preempted ({why_preempted(client, done)}); "
              f"resubmitting, it resumes from its checkpoint", flush=True)
    print(f"preempted {args.attempts} times; giving up", file=sys.stderr)
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GpurentError as e:
        sys.exit(f"error: {e}")
