"""Where a Ray pool's start-up goes: `ray.init`, then for each of `--workers` actors the wait for
its process, the process's own start (Python and Ray), the workers' imports (envs.executor's
WORKER_IMPORTS) and the generation handler's build (env and planner), read from clocks inside the
actors. One line per phase, median and slowest actor, seconds from the moment the actors were asked for.

    python -m benchmarks.ray_startup [--workers 16] [--address ADDR] [--what bare|imports|handler]

"bare" actors import nothing of ours, "imports" import WORKER_IMPORTS, "handler" also build the
generation handler, as `demos generate --executor ray` does; "node" is one actor taking all the
CPUs that builds a local pool of `--workers` handlers, forked from a forkserver holding the imports
("node-fork": forked from the actor itself).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _process_start() -> float:
    """This process's start, wall clock (from /proc: boot time plus start ticks)."""
    with open("/proc/stat") as f:
        boot = next(float(line.split()[1]) for line in f if line.startswith("btime"))
    with open("/proc/self/stat") as f:
        ticks = float(f.read().rsplit(")", 1)[1].split()[19])
    return boot + ticks / os.sysconf("SC_CLK_TCK")


class Probe:
    def __init__(self, what: str, job, count: int = 1):
        self.t = {"process": _process_start(), "init": time.time()}
        if what != "bare":
            import importlib

            from envs.executor import WORKER_IMPORTS

            for name in WORKER_IMPORTS:
                importlib.import_module(name)
        self.t["imports"] = time.time()
        if what == "handler":
            from envs.executor import _setup_worker

            _setup_worker()
            self.handler = job.setup()
        elif what.startswith("node"):  # one actor per node, its workers forked from a process with the imports
            import multiprocessing as mp

            from envs.executor import ProcessPool

            start = "forkserver" if what == "node" else "fork"
            if start == "forkserver":
                mp.get_context(start).set_forkserver_preload(list(WORKER_IMPORTS))
            self.pool = ProcessPool(job, count, start=start)
        self.t["handler"] = time.time()

    def times(self) -> dict:
        return self.t


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--address", default=None)
    p.add_argument("--what", choices=["bare", "imports", "handler", "node", "node-fork"], default="handler")
    p.add_argument("--task", default="PickCube-v1")
    args = p.parse_args()
    import ray

    from envs.executor import RENDER, WORKER_IMPORTS

    job = None
    if args.what != "bare" and args.what != "imports":
        from demos.generate import GenerateConfig
        from demos.workers import GenerationJob

        cfg = GenerateConfig(task=args.task, n=1, num_envs=16)
        job = GenerationJob(cfg.env_id, cfg.env_kwargs, cfg.num_envs, cfg.robot_uids, cfg.obs_mode == "state")
    t0 = time.time()
    if args.address is None:
        ray.init(address="local", num_cpus=args.workers, resources={RENDER: args.workers}, include_dashboard=False,
                 log_to_driver=False, configure_logging=False,
                 _system_config={"preload_python_modules": list(WORKER_IMPORTS)})
    else:
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    t1 = time.time()
    print(f"ray.init {t1 - t0:.2f} s ({'started for the run' if args.address is None else 'connect'})", flush=True)
    if args.what.startswith("node"):
        actors = [ray.remote(Probe).options(num_cpus=args.workers).remote(args.what, job, args.workers)]
    else:
        actors = [ray.remote(Probe).options(num_cpus=1).remote(args.what, job) for _ in range(args.workers)]
    refs = [a.times.remote() for a in actors]
    ready = []
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        ready.append(time.time() - t1)
    marks = ray.get(refs)
    print(f"actors ({args.what}): first ready {ready[0]:.2f} s, half {ready[len(ready) // 2]:.2f}, last {ready[-1]:.2f}")
    for a, b, label in (("process", "init", "process start -> actor __init__ (Python, Ray worker)"),
                        ("init", "imports", "imports"), ("imports", "handler", "handler build")):
        d = [m[b] - m[a] for m in marks]
        print(f"  {label:55s} median {statistics.median(d):5.2f} s, max {max(d):5.2f}")
    d = [m["process"] - t1 for m in marks]
    print(f"  {'process started, after the actors were asked for':55s} median {statistics.median(d):5.2f} s, "
          f"min {min(d):5.2f}, max {max(d):5.2f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
