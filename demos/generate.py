"""`demos generate`: batched motion-planned demonstrations written as they are made.

Seeds: attempt j of shard i/K uses seed `seed + j * K + i`, so K machines cover disjoint seeds.
With only-success (the default), a failed attempt is simply followed by the next seed.
`resume` continues after the last attempt whose episode was committed: nothing is duplicated and
episode ids stay contiguous.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

from demos.solutions import solution_for
from demos.workers import GenerationWorkers, WorkerSpec
from envs.core.registry import check_env_id
from envs.modes import ControlMode, ObsMode, parse_mode
from replay.trajectory import TrajectoryWriter, read_meta


@dataclass
class GenerateConfig:
    task: str
    n: int
    out: Path | None = None
    seed: int = 0
    num_envs: int = 16
    workers: int = 2
    control_mode: str = "pd_joint_pos"
    obs_mode: str = "none"
    robot_uids: str = "panda"
    only_success: bool = True
    resume: bool = False
    overwrite: bool = False
    shard: tuple[int, int] = (0, 1)

    def __post_init__(self) -> None:
        self.env_id = check_env_id(self.task)
        self.solution = solution_for(self.env_id)
        if self.robot_uids not in self.solution.robots:
            raise ValueError(f"{self.env_id}'s solution supports robots: {', '.join(self.solution.robots)}")
        if self.n <= 0:
            raise ValueError(f"--n must be a positive number of demonstrations, got {self.n}")
        if self.num_envs <= 0 or self.workers <= 0:
            raise ValueError("--num-envs and --workers must be positive")
        mode = parse_mode(ControlMode, self.control_mode, "control mode")
        if mode is not ControlMode.PD_JOINT_POS:
            raise ValueError("demos are generated in pd_joint_pos; convert them with `replay convert --control ...`")
        obs = parse_mode(ObsMode, self.obs_mode, "obs mode")
        if obs not in (ObsMode.NONE, ObsMode.STATE):
            raise ValueError("--obs-mode must be none or state here; render images with `replay convert --obs ...`")
        i, k = self.shard
        if not (k >= 1 and 0 <= i < k):
            raise ValueError(f"--shard must be i/K with 0 <= i < K, got {i}/{k}")
        if self.resume and self.overwrite:
            raise ValueError("--resume and --overwrite exclude each other")
        if self.out is None:
            suffix = f".shard{i}of{k}" if k > 1 else ""
            self.out = Path("out") / f"{self.env_id}.motionplanning.{self.control_mode}{suffix}.h5"
        self.out = Path(self.out)
        if self.out.exists() and not (self.resume or self.overwrite):
            raise ValueError(f"{self.out} exists: pass --resume to continue it or --overwrite to replace it")
        parent = self.out.parent if str(self.out.parent) else Path(".")
        probe = parent if parent.exists() else next((p for p in parent.parents if p.exists()), Path("."))
        import os

        if not os.access(probe, os.W_OK):
            raise ValueError(f"cannot write to {parent}")

    @property
    def env_kwargs(self) -> dict:
        return {"obs_mode": self.obs_mode, "control_mode": self.control_mode, "robot_uids": self.robot_uids}


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("skillforge", "sapien", "mplib", "torch", "numpy", "gymnasium", "h5py"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class Progress:
    saved: int
    attempts: int
    successes: int
    elapsed: float


def generate(cfg: GenerateConfig, on_progress: Callable[[Progress], None] | None = None) -> Progress:
    """Runs until cfg.n episodes are in cfg.out; returns the counts of this run. Batches of
    num_envs attempts go to the workers; results are committed in attempt order."""
    resume = cfg.resume and cfg.out.exists()
    if resume:
        old = read_meta(cfg.out)
        gen = old.get("generation", {})
        if old["env_info"]["env_id"] != cfg.env_id or gen.get("shard") != list(cfg.shard):
            raise ValueError(f"{cfg.out} holds {old['env_info']['env_id']} shard {gen.get('shard')}: not this run's")
        cfg.seed = gen["seed"]
    spec = WorkerSpec(cfg.env_id, cfg.env_kwargs, cfg.num_envs, cfg.robot_uids, cfg.obs_mode == "state")
    workers = GenerationWorkers(spec, cfg.workers)
    meta = {
        "env_info": {"env_id": cfg.env_id, "env_kwargs": cfg.env_kwargs, "max_episode_steps": workers.max_episode_steps},
        "source_type": "motionplanning",
        "source_desc": f"SkillForge mplib solution for {cfg.env_id}",
        "generation": {"seed": cfg.seed, "shard": list(cfg.shard), "only_success": cfg.only_success},
        "versions": versions(),
    }
    i, k = cfg.shard
    start = time.perf_counter()
    try:
        writer = TrajectoryWriter(cfg.out, meta, resume=resume)
        next_attempt = max((e["info"]["attempt"] + 1 for e in writer.meta["episodes"]), default=0)
        progress = Progress(writer.num_episodes, 0, 0, 0.0)
        done: dict[int, list] = {}  # finished batches waiting for earlier ones
        next_batch = commit_batch = 0
        while writer.num_episodes < cfg.n:
            while workers.idle and (next_batch - commit_batch) * cfg.num_envs < 1.05 * (cfg.n - writer.num_episodes):
                first = next_attempt + next_batch * cfg.num_envs
                workers.submit(next_batch, [cfg.seed + (first + b) * k + i for b in range(cfg.num_envs)])
                next_batch += 1
            batch, outcomes = workers.next_result()
            done[batch] = outcomes
            while commit_batch in done and writer.num_episodes < cfg.n:
                outcomes = done.pop(commit_batch)
                first = next_attempt + commit_batch * cfg.num_envs
                commit_batch += 1
                progress.attempts += cfg.num_envs
                for b, o in enumerate(outcomes or []):
                    progress.successes += int(o.success)
                    keep = o.episode is not None and (o.success or not cfg.only_success)
                    if keep and writer.num_episodes < cfg.n:
                        o.episode.info = {"attempt": first + b, "reason": o.reason}
                        writer.add(o.episode, cfg.control_mode)
            progress.saved = writer.num_episodes
            progress.elapsed = time.perf_counter() - start
            if on_progress:
                on_progress(progress)
    finally:
        workers.close()
        if "writer" in locals():
            writer.close()
    return progress
