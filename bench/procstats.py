"""What the fleet benchmarks read of a process while it runs: its resident set and CPU time
sampled over time (ProcSampler), each thread's CPU time (thread_cpu), and a `perf record` of it."""
import os
import signal
import subprocess
import threading
import time


class ProcSampler:
    """Samples a process's resident set and CPU time (all threads) every `every` seconds."""

    def __init__(self, pid, every=0.5):
        self.pid, self.every = pid, every
        self.samples = []  # (monotonic s, rss MiB, cpu s)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def read(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            return rss / 1024, cpu
        except (OSError, StopIteration, ValueError, IndexError):
            return None

    def run(self):
        while not self.done.wait(self.every):
            value = self.read()
            if value:
                self.samples.append((time.monotonic(), *value))

    def stop(self, t0):
        self.done.set()
        self.thread.join()
        if not self.samples:
            return {}
        peak = max(s[1] for s in self.samples)
        return {"server_peak_rss_mib": peak,
                "server_peak_rss_at_s": next(t - t0 for t, rss, _ in self.samples
                                             if rss >= 0.98 * peak),
                "server_cpu_s": self.samples[-1][2] - self.samples[0][2],
                "server_trace": [(round(t - t0, 1), round(rss), round(cpu, 1))
                                 for t, rss, cpu in self.samples]}


def thread_cpu(pid):
    """{thread name: CPU seconds} of a process's threads (threads of one name summed); {} when
    it is gone. Read at a phase's start and end, the difference is the phase's CPU exactly (to
    the clock tick), which the 0.5 s sampler cannot give for a phase shorter than a second."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_delta(before, after):
    """Per thread name, the CPU seconds between two thread_cpu() readings (names seen in both)."""
    return {name: round(after[name] - before.get(name, 0.0), 2) for name in after
            if after[name] - before.get(name, 0.0) > 0}


def start_perf(pids, output):
    """`perf record` of these processes (call graphs by DWARF unwinding: the Release build keeps
    no frame pointers), until stop_perf()."""
    return subprocess.Popen(["perf", "record", "-q", "-F", "499", "--call-graph", "dwarf,16384",
                             "-p", ",".join(str(p) for p in pids), "-o", output],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_perf(perf):
    perf.send_signal(signal.SIGINT)
    perf.wait()
