"""`demos generate`: batched motion-planned demonstrations written as they are made.

Seeds: attempt j of shard i/K uses seed `seed + j * K + i`, so K machines cover disjoint seeds.
With only-success (the default), a failed attempt is simply followed by the next seed.
`resume` continues after the last attempt whose episode was committed, with the file's own seed
and settings: nothing is duplicated and episode ids stay contiguous.
`overwrite` writes OUT.pending.h5 and renames it over OUT only once it holds all n episodes, so
the old file survives an interrupted run; `resume` then continues the pending file
(`replay.trajectory.Output`, the commit protocol conversions share).
"""

from __future__ import annotations

import gc
import math
import platform
import re
import time
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Callable

import tyro

from demos.solutions import solution_for
from demos.workers import GenerationJob
from envs.core.registry import TASKS, check_env_id
from envs.robots.base import robot_family
from envs.executor import Executor, Lost, make_pool, parse_executor
from envs.modes import ControlMode, ObsMode, parse_mode
from replay.trajectory import Output, read_meta


def _shard(text: str) -> tuple[int, int]:
    i, sep, k = text.partition("/")
    try:
        return int(i), int(k)
    except ValueError:
        raise ValueError(f"expected i/K, e.g. 0/4, got {text!r}") from None


_SHARD = tyro.constructors.PrimitiveConstructorSpec(  # `--shard 0/4` on the command line
    nargs=1, metavar="i/K", instance_from_str=lambda a: _shard(a[0]),
    is_instance=lambda x: isinstance(x, tuple), str_from_instance=lambda t: [f"{t[0]}/{t[1]}"])


@dataclass
class GenerateConfig:
    """`demos generate TASK --n N`: the fields are the command's flags (demos/cli.py)."""

    task: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="TASK")]
    """task id, e.g. PickCube or PickCube-v1"""
    n: int
    """demonstrations to save"""
    out: Annotated[Path | None, tyro.conf.arg(metavar="PATH", help_behavior_hint="(default: out/TASK.motionplanning.CONTROL.h5)")] = None
    """output .h5"""
    seed: int = 0
    """first seed"""
    num_envs: int = 16
    """envs run together in one batch"""
    workers: Annotated[int | None, tyro.conf.arg(metavar="INT", default=None, help_behavior_hint="(default: one per CPU of this machine, or of the Ray cluster)")] = 2
    """generation workers, each with its env and planner (None: one per CPU)"""
    control_mode: str = "pd_joint_pos"
    """control mode of the recorded actions (pd_joint_pos; other modes by `replay convert`)"""
    obs_mode: str = "none"
    """obs mode recorded: none or state (render images later with `replay convert`)"""
    robot_uids: Annotated[str | None, tyro.conf.arg(metavar="UID", help_behavior_hint="(default: the first robot the task's solution supports)")] = None
    """robot (`demos list` shows each task's robots)"""
    only_success: bool = True
    """keep successes only (--no-only-success: save failed attempts too)"""
    resume: bool = False
    """continue an interrupted run's file"""
    overwrite: bool = False
    """replace an existing file"""
    shard: Annotated[tuple[int, int], _SHARD] = (0, 1)
    """i/K: this machine's part of the seed space"""
    hold: int = 1
    """end an episode once the task has succeeded this many steps in a row (1: at first success);
    a longer hold shows policies how to stay at the goal"""
    speed: float = 1.0
    """planned motions' speed as a fraction of the planner's joint limits (2 rad/s, 5 rad/s^2);
    slower demos have more, smaller steps"""
    max_episode_steps: int = 0
    """step limit of the recording env (0: the solution's, else the task's); slow or long-holding
    demos need more than the task's"""
    executor: str = "local"
    """local (worker processes on this machine) or ray (Ray actors on a cluster; pip install -e ".[ray]")"""
    address: Annotated[str | None, tyro.conf.arg(metavar="ADDR", help_behavior_hint="(default: a local Ray started for the run)")] = None
    """the Ray cluster to join, e.g. HEAD:6379"""
    keep_workers: Annotated[float, tyro.conf.arg(metavar="MINUTES")] = 0.0
    """with --address: the Ray workers stay up this long after the run, idle, and the next command
    on that cluster takes them over instead of starting its own (0: they stop with the run)"""

    def __post_init__(self) -> None:
        self.env_id = check_env_id(self.task)
        self.solution = solution_for(self.env_id)
        if self.robot_uids is None:
            self.robot_uids = self.solution.robots[0]
        if robot_family(self.robot_uids) not in self.solution.robots:  # panda_wristcam plans as a panda
            raise ValueError(f"{self.env_id}'s solution supports robots: {', '.join(self.solution.robots)}")
        if self.n <= 0:
            raise ValueError(f"--n must be a positive number of demonstrations, got {self.n}")
        if self.num_envs <= 0 or (self.workers is not None and self.workers <= 0):
            raise ValueError("--num-envs and --workers must be positive")
        self.executor_kind = parse_executor(self.executor, self.address, self.keep_workers)
        if self.hold < 1:
            raise ValueError(f"--hold must be at least 1 step, got {self.hold}")
        if self.max_episode_steps < 0:
            raise ValueError(f"--max-episode-steps must be >= 0, got {self.max_episode_steps}")
        if not 0.05 <= self.speed <= 1.0:
            raise ValueError(f"--speed must be in [0.05, 1] (a fraction of the planner's joint speed limits), got {self.speed}")
        mode = parse_mode(ControlMode, self.control_mode, "control mode")
        if mode is not ControlMode.PD_JOINT_POS:
            raise ValueError("demos are generated in pd_joint_pos; convert them with `replay convert --control-mode ...`")
        obs = parse_mode(ObsMode, self.obs_mode, "obs mode")
        if obs not in (ObsMode.NONE, ObsMode.STATE):
            raise ValueError("--obs-mode must be none or state here; render images with `replay convert --obs-mode ...`")
        i, k = self.shard
        if not (k >= 1 and 0 <= i < k):
            raise ValueError(f"--shard must be i/K with 0 <= i < K, got {i}/{k}")
        if self.out is None:
            suffix = f".shard{i}of{k}" if k > 1 else ""
            self.out = Path("out") / f"{self.env_id}.motionplanning.{self.control_mode}{suffix}.h5"
        self.out = Path(self.out)
        Output.check(self.out, self.resume, self.overwrite, whole=False)

    @property
    def env_kwargs(self) -> dict:
        """Stored in the file: replays build their envs with them. Isolated physics makes an
        episode's replay bit-identical whatever batch it runs in; on a shared PhysX system its
        place and neighbours move the last bits, which a grasp amplifies. A solution that needs
        longer episodes than the task's default stores its own limit; so do slow or long-holding
        demos given --max-episode-steps."""
        kwargs = {"obs_mode": self.obs_mode, "control_mode": self.control_mode, "robot_uids": self.robot_uids,
                  "physics": {"isolated": True}}
        steps = self.max_episode_steps or self.solution.max_episode_steps
        if steps is not None:
            kwargs["max_episode_steps"] = steps
        return kwargs


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("skillforge", "sapien", "mplib", "torch", "numpy", "gymnasium", "h5py"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def _check_resumable(cfg: GenerateConfig, path: Path) -> None:
    """Takes the file's seed; refuses a file made by another task or with other settings."""
    old = read_meta(path)
    gen = old.get("generation")
    if not isinstance(gen, dict) or "seed" not in gen:
        raise ValueError(f"{path} was not made by `demos generate` (no generation settings): cannot resume it")
    mine = {"env_id": cfg.env_id, "env_kwargs": cfg.env_kwargs, "shard": list(cfg.shard), "only_success": cfg.only_success,
            "hold": cfg.hold, "speed": cfg.speed}
    theirs = {"env_id": old["env_info"].get("env_id"), "env_kwargs": old["env_info"].get("env_kwargs"),
              "shard": gen.get("shard"), "only_success": gen.get("only_success"), "hold": gen.get("hold", 1),
              "speed": gen.get("speed", 1.0)}
    diff = [f"{k} {theirs[k]} (this run: {mine[k]})" for k in mine if mine[k] != theirs[k]]
    if diff:
        raise ValueError(f"{path} was made with {'; '.join(diff)}: resume with the same settings")
    cfg.seed = gen["seed"]


HOPELESS_ATTEMPTS = 64  # with no success after this many attempts (and at least 4 batches), a run stops


@dataclass
class Progress:
    saved: int
    attempts: int
    successes: int
    elapsed: float
    resumed_from: int = 0  # episodes in the file when this run started
    retried: int = 0  # batches run again because their worker died (a lost process or node)
    lost: int = 0  # batches given up after their workers died too often (counted as failed attempts)


def generate(cfg: GenerateConfig, on_progress: Callable[[Progress], None] | None = None) -> Progress:
    """Runs until cfg.n episodes are in cfg.out; returns the counts of this run. Batches of
    num_envs attempts go to the workers (local processes or Ray actors); results are staged in
    attempt order, so the file does not depend on which worker was first, and committed as often as
    a twentieth of the time allows (TrajectoryWriter.commit_if_due) and when the run ends, however
    it ends.
    The file is opened before the workers start, so a file problem shows at once."""
    output = Output.plan(cfg.out, cfg.resume, cfg.overwrite, whole=False)
    if output.resume:
        _check_resumable(cfg, output.path)
    meta = {
        "env_info": {"env_id": cfg.env_id, "env_kwargs": cfg.env_kwargs, "max_episode_steps": cfg.env_kwargs.get("max_episode_steps", TASKS[cfg.env_id].default_max_episode_steps)},
        "source_type": "motionplanning",
        "source_desc": f"SkillForge mplib solution for {cfg.env_id}",
        "generation": {"seed": cfg.seed, "shard": list(cfg.shard), "only_success": cfg.only_success, "hold": cfg.hold, "speed": cfg.speed},
        "versions": versions(),
    }
    i, k = cfg.shard
    writer = output.writer(meta)
    workers = None
    complete = False
    try:
        job = GenerationJob(cfg.env_id, cfg.env_kwargs, cfg.num_envs, cfg.robot_uids, cfg.obs_mode == "state", cfg.hold, cfg.speed)
        start = time.perf_counter()
        # local workers are forked: this process has imported what they need (torch, SAPIEN, the
        # tasks; mplib for their planner processes) and built no env, so none imports it all again
        # (seconds of CPU each). What it holds then is frozen out of the garbage collector, so that
        # no worker or planner walks (and copies) the imported objects again
        if cfg.executor_kind is Executor.LOCAL:
            from demos.planner import import_mplib

            import_mplib()
            gc.freeze()
        workers = make_pool(cfg.executor_kind, job, cfg.workers, address=cfg.address, start="fork", keep_minutes=cfg.keep_workers)
        next_attempt = max((e["info"]["attempt"] + 1 for e in writer.meta["episodes"]), default=0)
        progress = Progress(writer.num_episodes, 0, 0, 0.0, resumed_from=writer.num_episodes)
        failures: Counter[str] = Counter()  # failure reasons, numbers blanked: "solution took # steps > ..."
        example: dict[str, str] = {}
        done: dict[int, list] = {}  # finished batches waiting for earlier ones
        span: dict[int, tuple[int, int]] = {}  # submitted batch -> its first attempt and its size
        next_batch = commit_batch = kept = 0

        def refill() -> None:
            # attempts in flight (or finished, not yet committed) cover the demos still wanted at
            # the rate kept so far, with 5 % to spare; when fewer are wanted than the idle
            # workers' envs (at the start or the end of a run), they are shared out among them as
            # smaller batches (an env per seed), not run as whole ones. Which attempts are kept
            # does not depend on it: the first n, in order
            nonlocal next_attempt, next_batch
            rate = max(kept / progress.attempts, 0.1) if progress.attempts else 1.0
            while workers.idle:
                wanted = math.ceil(1.05 * (cfg.n - writer.num_episodes) / rate) - sum(s for _, s in span.values())
                if wanted <= 0:
                    break
                size = min(cfg.num_envs, math.ceil(wanted / workers.idle))
                first = next_attempt
                workers.submit(next_batch, [cfg.seed + (first + b) * k + i for b in range(size)])
                span[next_batch] = (first, size)
                next_attempt += size
                next_batch += 1

        while writer.num_episodes < cfg.n:
            refill()
            batch, outcomes = workers.next_result()
            done[batch] = outcomes
            refill()  # the worker that answered gets its next batch before this process commits
            progress.retried = workers.retried
            while commit_batch in done and writer.num_episodes < cfg.n:
                outcomes = done.pop(commit_batch)
                first, size = span.pop(commit_batch)
                commit_batch += 1
                progress.attempts += size
                if isinstance(outcomes, Lost):  # its workers kept dying: the whole batch failed
                    progress.lost += 1
                    failures[outcomes.reason] += size
                    example.setdefault(outcomes.reason, outcomes.reason)
                    outcomes = []
                for b, o in enumerate(outcomes):
                    progress.successes += int(o.success)
                    if not o.success:
                        kind = re.sub(r"\d+(\.\d+)?", "#", o.reason)
                        failures[kind] += 1
                        example.setdefault(kind, o.reason)
                    keep = o.episode is not None and (o.success or not cfg.only_success)
                    kept += keep
                    if keep and writer.num_episodes < cfg.n:
                        o.episode.info = {"attempt": first + b, "reason": o.reason}
                        writer.add_staged(o.episode, cfg.control_mode)
                # judged batch by batch, in order: the count it names does not depend on which worker was first
                if cfg.only_success and progress.successes == 0 and progress.attempts >= max(HOPELESS_ATTEMPTS, 4 * cfg.num_envs):
                    kind, count = failures.most_common(1)[0]
                    raise ValueError(
                        f"no attempt succeeded in {progress.attempts}; the most common failure ({count} of them): "
                        f"{example[kind]}"
                    )
            writer.commit_if_due()  # at every batch while the file is small; what is staged, finish() commits
            progress.saved = writer.num_episodes
            progress.elapsed = time.perf_counter() - start
            if on_progress:
                on_progress(progress)
        complete = True
    finally:
        if workers is not None:
            workers.close()
        gc.unfreeze()  # what was frozen for the workers is this process's own again (a no-op if nothing was)
        output.finish(writer, complete)  # an --overwrite run's file replaces the old one once complete
    return progress
