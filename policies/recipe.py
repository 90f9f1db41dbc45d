"""Training recipes: one YAML file says how a dataset is made and how a policy learns from it.

    task: PickCube-v1
    demos:      {n: 100, seed: 0, robot_uids: panda, hold: 25, speed: 0.5}   # demos generate
    conversion: {obs: state, control: pd_ee_delta_pos}                         # replay convert
    perturbed:  {noise: 0.1, seeds: [1, 2, 3]}                                 # one DART copy per seed
    policy: diffusion
    config: configs/diffusion_state.yaml
    run: {train: {max_steps: 7000, max_minutes: 7}, eval: {max_episode_steps: 100}}

`build` makes the dataset: motion-planned demos (`demos generate`, in the demos' control mode),
their conversion to the recipe's obs and control mode, one perturbed conversion per noise seed
(`replay convert --action-noise`), all merged (`replay merge`). File names under `data_dir` spell
the settings, so recipes that share steps share files, and a file that exists is used as it is
(an interrupted generation or conversion is resumed); once the dataset exists, the files that made
it may go (a finished dataset travels alone to a training host). `run` builds, then trains the policy with
the config file's sections overlaid by `run` (`policies train`), and evaluates its best checkpoint.

Each step runs as its own process through the project's CLIs (motion planning and Lightning do not
share a process well). Evaluation seeds must not be demo seeds: `run` checks it on the built data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.config import RunConfig, check, from_dict, read_yaml
from policies.kinds import KINDS, load_run

ROOT = Path(__file__).resolve().parents[1]  # a recipe's config path is relative to the project


@dataclass
class DemoSettings:
    n: int = 100
    """demonstrations to generate (successful ones)"""
    seed: int = 0
    """first seed of the demos (attempts take the seeds after it)"""
    robot_uids: str = ""
    """robot (empty: the task's default), e.g. panda (base camera only) or panda_wristcam (a hand camera too)"""
    control_mode: str = "pd_joint_pos"
    """the planner's control mode (conversion turns it into conversion.control)"""
    hold: int = 25
    """demos end after this many successful steps in a row, the robot holding still"""
    speed: float = 0.5
    """the planner's joint speed, as a share of its limits"""
    max_episode_steps: int = 0
    """step limit of the recording env (0: the task's or its solution's); slow, long-holding demos
    need more than ManiSkill's 50 for the cube tasks. Evaluation sets its own (run.eval.max_episode_steps)"""
    num_envs: int = 16
    """envs planned together per worker"""
    workers: int = 4
    """generation workers"""

    def __post_init__(self) -> None:
        check(self.n > 0 and self.hold > 0 and self.num_envs > 0 and self.workers > 0,
              "demos.n, demos.hold, demos.num_envs and demos.workers must be > 0")
        check(0 < self.speed <= 1, f"demos.speed must be in (0, 1], got {self.speed}")
        check(self.seed >= 0 and self.max_episode_steps >= 0, "demos.seed and demos.max_episode_steps must be >= 0")


@dataclass
class ConversionSettings:
    obs: str = "state"
    """obs mode the policy learns from (replay convert --obs): state, state_dict, rgb, rgbd"""
    control: str = "pd_ee_delta_pos"
    """control mode the policy acts in (replay convert --control)"""
    cam_width: int = 0
    """camera image width (0: the task's cameras as ManiSkill sets them)"""
    cam_height: int = 0
    """camera image height (0: the task's)"""
    workers: int = 4
    """conversion workers per conversion"""

    def __post_init__(self) -> None:
        check((self.cam_width > 0) == (self.cam_height > 0), "conversion.cam_width and cam_height go together")
        check(self.workers > 0, "conversion.workers must be > 0")


@dataclass
class PerturbSettings:
    noise: float = 0.1
    """std of the action noise of each perturbed copy (replay convert --action-noise)"""
    seeds: tuple[int, ...] = ()
    """one perturbed copy per noise seed (empty: the clean conversion alone)"""

    def __post_init__(self) -> None:
        check(self.noise > 0, f"perturbed.noise must be > 0, got {self.noise}")
        check(len(set(self.seeds)) == len(self.seeds), f"perturbed.seeds repeat: {list(self.seeds)}")


@dataclass
class Recipe:
    task: str = ""
    """env id, e.g. PickCube-v1"""
    policy: str = "diffusion"
    """policy kind (policies train KIND)"""
    config: str = ""
    """the policy's config file (relative to the project; empty: the kind's defaults)"""
    run: dict[str, Any] = field(default_factory=dict)
    """sections laid over the config file (dataset, policy, train, eval)"""
    demos: DemoSettings = field(default_factory=DemoSettings)
    conversion: ConversionSettings = field(default_factory=ConversionSettings)
    perturbed: PerturbSettings = field(default_factory=PerturbSettings)
    data_dir: str = "out/demos"
    """folder of the dataset's files (shared by recipes)"""
    runs_dir: str = "runs/recipes"
    """folder of the training runs; this recipe's run is RUNS_DIR/NAME"""
    name: str = ""
    """run name (default: the recipe file's name)"""
    file: str = ""
    """the recipe's file (set when loaded)"""

    def __post_init__(self) -> None:
        check(bool(self.task), "task is required (an env id such as PickCube-v1)")
        check(self.policy in KINDS, f"policy {self.policy!r}; allowed: {', '.join(KINDS)}")
        check(not self.config or self.config_path.is_file(), f"config {self.config}: no such file")

    @property
    def config_path(self) -> Path:
        return Path(self.config) if Path(self.config).is_absolute() else ROOT / self.config

    def run_config(self, data: str = "", **train: Any) -> RunConfig:
        """The policy's run: the config file, the recipe's `run` sections, the data and run name."""
        over = {**self.run, "train": {**self.run.get("train", {}), "out": self.runs_dir, "name": self.name, **train}}
        return load_run(self.policy, self.config_path if self.config else None, data, over)


def load_recipe(path: str | Path) -> Recipe:
    """A recipe from its YAML file; every key and value checked (one ValueError)."""
    path = Path(path)
    check(path.is_file(), f"{path}: no such recipe")
    raw = read_yaml(path) or {}
    check(isinstance(raw, dict), f"{path}: expected a mapping")
    raw.setdefault("name", path.stem)
    check("file" not in raw, f"{path}: `file` is set from where the recipe is read")
    raw["file"] = str(path)
    try:
        recipe = from_dict(Recipe, raw)
        recipe.run_config()  # the run sections are valid for the policy
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return recipe


# ---- the dataset's files -------------------------------------------------------------------------
def _tag(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Files:
    raw: Path
    clean: Path
    noisy: tuple[Path, ...]
    merged: Path | None

    @property
    def dataset(self) -> Path:
        return self.merged or self.clean


def files(recipe: Recipe) -> Files:
    """Where each step's output lives; the names spell the settings that made them."""
    d, c, p = recipe.demos, recipe.conversion, recipe.perturbed
    robot = f".{d.robot_uids}" if d.robot_uids else ""
    limit = f"-steps{d.max_episode_steps}" if d.max_episode_steps else ""
    base = Path(recipe.data_dir) / (f"{recipe.task.split('-')[0]}{robot}.{d.control_mode}.n{d.n}-seed{d.seed}"
                                    f".hold{d.hold}-speed{_tag(d.speed)}{limit}")
    cam = f".{c.cam_width}x{c.cam_height}" if c.cam_width else ""
    conv = f"{base}.{c.obs}.{c.control}{cam}"
    noisy = tuple(Path(f"{conv}.noise{_tag(p.noise)}-{s}.h5") for s in p.seeds)
    merged = None
    if p.seeds:
        seeds = sorted(p.seeds)
        contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
        tag = f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else "_".join(map(str, seeds))
        merged = Path(f"{conv}.noise{_tag(p.noise)}-seeds{tag}.h5")
    return Files(Path(f"{base}.h5"), Path(f"{conv}.h5"), noisy, merged)


def _complete(path: Path, n: int) -> bool:
    """A demo file holding all n of its episodes."""
    from replay.trajectory import pending_path, read_meta

    if not path.is_file() or pending_path(path).exists():
        return False
    try:
        return len(read_meta(path)["episodes"]) >= n
    except (ValueError, KeyError, OSError):
        return False


def _cli(module: str, *args: Any) -> list[str]:
    return [sys.executable, "-m", module, *map(str, args)]


Step = tuple[list[str], Path]  # a command and the file it makes


def _steps(recipe: Recipe, f: Files) -> list[tuple[str, list[Step]]]:
    """(what, steps) for each stage still to do; a stage's steps may run at once."""
    from replay.trajectory import pending_path

    d, c, p = recipe.demos, recipe.conversion, recipe.perturbed
    stages: list[tuple[str, list[Step]]] = []
    if not _complete(f.raw, d.n):
        cmd = _cli("demos.cli", "generate", recipe.task, "--n", d.n, "--seed", d.seed, "--num-envs", d.num_envs,
                   "--workers", d.workers, "--control-mode", d.control_mode, "--obs-mode", "state", "--hold", d.hold,
                   "--speed", d.speed, "--out", f.raw)
        cmd += ["--robot-uids", d.robot_uids] if d.robot_uids else []
        cmd += ["--max-episode-steps", d.max_episode_steps] if d.max_episode_steps else []
        cmd += ["--resume"] if f.raw.exists() or pending_path(f.raw).exists() else []
        stages.append((f"generate {f.raw}", [(list(map(str, cmd)), f.raw)]))
    converts = []
    for out, seed in [(f.clean, None), *zip(f.noisy, p.seeds)]:
        if out.is_file():
            continue
        cmd = _cli("replay.cli", "convert", f.raw, "--obs-mode", c.obs, "--control-mode", c.control, "--out", out,
                   "--workers", c.workers, "--no-progress")
        cmd += ["--cam-width", c.cam_width, "--cam-height", c.cam_height] if c.cam_width else []
        cmd += ["--action-noise", p.noise, "--noise-seed", seed] if seed is not None else []
        cmd += ["--resume"] if pending_path(out).exists() else []  # an interrupted conversion
        converts.append((list(map(str, cmd)), out))
    if converts:
        stages.append((f"convert {len(converts)} of {1 + len(f.noisy)} files", converts))
    if f.merged is not None and not f.merged.is_file():
        stages.append((f"merge {f.merged}", [(_cli("replay.cli", "merge", f.merged, f.clean, *f.noisy), f.merged)]))
    return stages


class BuildError(Exception):
    """A step of a build failed (its log says why)."""


def _run_all(steps: list[Step], log_dir: Path, jobs: int, env: dict[str, str]) -> None:
    """Run steps, at most `jobs` at once, each logged to LOG_DIR/<its output's name>.log; a failure names its log."""
    running: list[tuple[subprocess.Popen, Path]] = []
    failed: list[Path] = []
    pending = [(cmd, log_dir / f"{out.stem}.log") for cmd, out in steps]
    while pending or running:
        while pending and len(running) < jobs:
            cmd, log = pending.pop(0)
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "w") as out:
                out.write(" ".join(cmd) + "\n")
                out.flush()
                running.append((subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=os.getcwd(), env=env), log))
        proc, log = running.pop(0)
        if proc.wait() != 0:
            failed.append(log)
    if failed:
        raise BuildError(f"{len(failed)} step(s) failed: see {', '.join(map(str, failed))}")


def build(recipe: Recipe, jobs: int = 0, dry_run: bool = False, echo=print, demos_only: bool = False) -> Path:
    """Make the recipe's dataset, reusing every file that exists; returns the dataset's path (the
    raw demos' with `demos_only`, which stops after generating them: motion planning on one machine,
    rendering and training on another). `jobs`: conversions at once (0: all of them); `dry_run`:
    only print the commands."""
    f = files(recipe)
    if not demos_only and _complete(f.dataset, recipe.demos.n):
        echo(f"reusing {f.dataset}")  # the steps before it are not needed again (their files may be gone)
        return f.dataset
    Path(recipe.data_dir).mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    stages = _steps(recipe, f)
    if demos_only:
        stages = [(what, steps) for what, steps in stages if any(out == f.raw for _, out in steps)]
        f = Files(f.raw, f.raw, (), None)
    todo = {out for _, steps in stages for _, out in steps}
    for p in (f.raw, f.clean, *f.noisy, *([f.merged] if f.merged else [])):
        if p not in todo and not dry_run:
            echo(f"reusing {p}")
    for what, steps in stages:
        if dry_run:
            echo("\n".join(" ".join(cmd) for cmd, _ in steps))
            continue
        echo(f"{what} ...")
        _run_all(steps, Path(recipe.data_dir) / "logs", jobs or len(steps), env)
    if not dry_run:
        made = [p for p in (f.raw, f.clean, *f.noisy, *([f.merged] if f.merged else [])) if not p.is_file()]
        if made:
            raise BuildError(f"{made[0]} was not made (see {Path(recipe.data_dir) / 'logs'})")
    return f.dataset


def check_seeds(data: Path, raw: Path, run: RunConfig) -> None:
    """Evaluation seeds (the evaluations during training and the final one) are none of the demos'."""
    from policies.train import FINAL_SEED_OFFSET
    from replay.trajectory import read_meta

    demo_seeds = {int(e["seed"]) for e in read_meta(raw if raw.is_file() else data)["episodes"] if "seed" in e}
    e = run.eval
    ranges = [range(e.seed, e.seed + e.episodes), range(e.seed + FINAL_SEED_OFFSET, e.seed + FINAL_SEED_OFFSET + e.final_episodes)]
    clash = sorted(s for r in ranges for s in r if s in demo_seeds)
    check(not clash, f"evaluation seeds {clash[:5]}{'...' if len(clash) > 5 else ''} are demo seeds: "
                      "move eval.seed or demos.seed apart")


def run(recipe: Recipe, run_cfg: RunConfig, jobs: int = 0, echo=print) -> dict[str, Any]:
    """Build the dataset, then train and evaluate `run_cfg` (the recipe's, maybe overridden) on it."""
    data = build(recipe, jobs, echo=echo)
    run_cfg.data = str(data)
    run_cfg = type(run_cfg)(**{k: getattr(run_cfg, k) for k in ("data", "dataset", "policy", "train", "eval")})
    check_seeds(data, files(recipe).raw, run_cfg)
    from policies.train import train

    results = train(run_cfg)
    if results:
        results["recipe"] = {"name": recipe.name, "file": recipe.file, "data": str(data), "episodes": _episodes(data)}
        (Path(results["run"]) / "results.json").write_text(json.dumps(results, indent=1))
    return results


def _episodes(path: Path) -> int:
    from replay.trajectory import read_meta

    return len(read_meta(path)["episodes"])
