"""`policies`: train imitation policies on demonstrations and evaluate their checkpoints.

    policies train bc|diffusion|act --data FILE.h5 [--config configs/NAME.yaml] [--section.key value ...]
    policies eval CHECKPOINT [--episodes 100] [--num-envs 16] [--action-horizon K] [--video DIR]
    policies recipe build RECIPE.yaml [--jobs N] [--dry-run] [--demos-only]
    policies recipe run RECIPE.yaml [--jobs N] [--section.key value ...]

`policies train diffusion --help` lists every field of the config with its meaning and default
(the defaults shown are those after --config). Errors in a config are one line and exit 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import tyro

from policies.config import RUNS, load_run

USAGE = f"""usage: policies train {{{','.join(RUNS)}}} --data FILE.h5 [--config FILE.yaml] [--section.key VALUE ...]
       policies eval CHECKPOINT [--episodes N] [--num-envs N] [--video DIR] [--executor ray [--address ADDR]]
       policies recipe {{build,run}} configs/recipes/NAME.yaml [--jobs N] [--dry-run | --section.key VALUE ...]
       policies {{train KIND,eval}} --help"""


@dataclass
class EvalArgs:
    checkpoint: Annotated[str, tyro.conf.Positional]
    """checkpoint written by `policies train` (best.ckpt or last.ckpt)"""
    episodes: int = 100
    """episodes (seeds seed, seed + 1, ...)"""
    num_envs: int = 16
    """envs simulated together"""
    num_workers: int = 1
    """env worker processes"""
    seed: int = 200_000
    """first seed"""
    max_episode_steps: int = 0
    """episode length (0: the one the policy was trained for)"""
    action_horizon: int = 0
    """actions executed from each predicted chunk before predicting again (0: the checkpoint's;
    at most pred_horizon - obs_horizon + 1); fewer react sooner, more act smoother"""
    video: str = ""
    """folder for tiled mp4 videos (empty: none)"""
    device: str = "auto"
    """torch device of the policy: auto (cuda when available), cpu, cuda, cuda:1, ..."""
    json: str = ""
    """also write the results to this JSON file"""
    executor: str = "local"
    """local (this process and its num_workers env processes) or ray (Ray actors, each with an env of
    num_envs and its copy of the policy; pip install -e ".[ray]")"""
    address: str = ""
    """the Ray cluster to join, e.g. HEAD:6379 (empty: a local Ray started for the run)"""
    workers: int = 0
    """Ray actors (0: one per CPU of the cluster, per render slot for camera policies)"""

    def __post_init__(self) -> None:
        if self.episodes <= 0 or self.num_envs <= 0 or self.num_workers <= 0:
            raise ValueError("--episodes, --num-envs and --num-workers must be > 0")
        if self.action_horizon < 0:
            raise ValueError(f"--action-horizon must be >= 0, got {self.action_horizon}")
        if self.workers < 0:
            raise ValueError(f"--workers must be >= 0, got {self.workers}")
        from envs.executor import parse_executor

        parse_executor(self.executor, self.address or None)


def _parse(cls: type, argv: list[str], **kwargs: Any) -> Any:
    """tyro.cli, with its error box (exit 2) turned into one ValueError line."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return tyro.cli(cls, args=argv, **kwargs)
    except SystemExit as e:
        if e.code == 0:
            raise
        blocks, block = [], []  # the box's text, split at its separator lines (plain or drawn)
        for ln in captured.getvalue().splitlines():
            if ln.lstrip().startswith("╭"):
                continue  # the drawn box's title
            ln = re.sub(r"^[\s│|╭╰]+|[\s│|╮╯]+$", "", ln).strip("─ ")
            if ln and set(ln) - set("-─"):
                block.append(ln)
            elif block:
                blocks, block = blocks + [block], []
        blocks += [block] if block else []
        text = next((b for b in blocks if not (len(b) == 1 and b[0].lower().endswith(("error", "options")))), [])
        message = " ".join(text) or "invalid arguments"
        if message.startswith("Missing from"):
            message = "missing required argument"
        raise ValueError(re.sub(r"^Error parsing (?!--)[^:]+: ", "", message)) from None  # keep flag names


def _train(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\npolicies: {', '.join(RUNS)}; `policies train KIND --help` lists every field of its config")
        return 0
    if not argv or argv[0].startswith("-"):
        raise ValueError(f"policies train needs a policy: {', '.join(RUNS)}")
    kind, rest = argv[0], argv[1:]
    config = None
    if "--config" in rest:
        i = rest.index("--config")
        if i + 1 >= len(rest):
            raise ValueError("--config needs a file")
        config, rest = rest[i + 1], rest[:i] + rest[i + 2 :]
    default = load_run(kind, config)
    run = _parse(type(default), rest, default=default, prog=f"policies train {kind}",
                 description=f"Train a {kind} policy. Options after --config override the file.")
    from policies.train import train  # heavy imports only once the config is valid

    _print_results(train(run))
    return 0


def _print_results(results: dict[str, Any]) -> None:
    """A run's results.json, less the evaluation history and per-episode lists (they stay in the file)."""
    if results:
        shown = {k: v for k, v in results.items() if k != "eval_history"}
        if isinstance(shown.get("final"), dict):
            shown["final"] = {k: v for k, v in shown["final"].items() if k != "per_episode"}
        print(json.dumps(shown, indent=1))


def _eval(argv: list[str]) -> int:
    args = _parse(EvalArgs, argv, prog="policies eval", description="Evaluate a checkpoint in the batched simulator.")
    import torch

    from policies.evaluate import evaluate, summary
    from policies.module import load_policy

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    policy, module = load_policy(args.checkpoint, device)
    if args.action_horizon:  # the policy config validates it against the checkpoint's horizons
        policy.cfg = dataclasses.replace(policy.cfg, action_horizon=args.action_horizon)
    result = evaluate(policy, module.env, args.episodes, args.num_envs, args.num_workers, args.seed,
                      args.max_episode_steps, args.video or None, args.executor, args.address or None, args.workers or None)
    result.update(checkpoint=args.checkpoint, env_id=module.env["env_id"], obs_mode=module.spec.obs_mode,
                  control_mode=module.env["control_mode"], policy=module.run_cfg.kind.value,
                  action_horizon=policy.cfg.action_horizon)
    print(summary(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


@dataclass
class RecipeArgs:
    action: Annotated[str, tyro.conf.Positional]
    """build (the dataset) or run (build, then train and evaluate)"""
    recipe: Annotated[str, tyro.conf.Positional]
    """recipe file, e.g. configs/recipes/diffusion_state_PickCube.yaml"""
    jobs: int = 0
    """build: conversions run at once (0: all of the recipe's)"""
    dry_run: bool = False
    """build: print the commands still to run, run none"""
    demos_only: bool = False
    """build: stop after the motion-planned demos (plan on one machine, render and train on another)"""

    def __post_init__(self) -> None:
        if self.action not in ("build", "run"):
            raise ValueError(f"policies recipe {self.action!r}; allowed: build, run")
        if self.jobs < 0:
            raise ValueError(f"--jobs must be >= 0, got {self.jobs}")


RECIPE_HELP = """usage: policies recipe build RECIPE.yaml [--jobs N] [--dry-run] [--demos-only]
       policies recipe run RECIPE.yaml [--jobs N] [--section.key VALUE ...]

build: make the recipe's dataset (demos, conversion, perturbed copies, merge), reusing the files
that exist. run: build, then train and evaluate the recipe's policy on it; options after the
recipe override its run settings as in `policies train KIND` (see its --help)."""


def _recipe(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(RECIPE_HELP)
        return 0 if argv else 2
    own, rest, i = argv[:2], [], 2  # this command's options; the rest are the run's
    while i < len(argv):
        take = 2 if argv[i] == "--jobs" else 1 if argv[i] in ("--dry-run", "--demos-only") or argv[i].startswith("--jobs=") else 0
        (own if take else rest).extend(argv[i : i + (take or 1)])
        i += take or 1
    args = _parse(RecipeArgs, own, prog="policies recipe", description=RECIPE_HELP)
    from policies import recipe as recipes

    recipe = recipes.load_recipe(args.recipe)
    if args.action == "build":
        if rest:
            raise ValueError(f"policies recipe build takes no run settings: {' '.join(rest)}")
        try:
            print(recipes.build(recipe, args.jobs, args.dry_run, demos_only=args.demos_only))
        except recipes.BuildError as e:
            raise ValueError(str(e)) from None
        return 0
    # the run's options are checked before the build (the dataset stands in as the recipe file until it exists)
    default = recipe.run_config(data=args.recipe)
    run = _parse(type(default), rest, default=default, prog=f"policies recipe run {args.recipe}",
                 description=f"Train and evaluate recipe {recipe.name} ({recipe.policy}). Options override its run settings.")
    try:
        results = recipes.run(recipe, run, args.jobs)
    except recipes.BuildError as e:
        raise ValueError(str(e)) from None
    _print_results(results)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"train": _train, "eval": _eval, "recipe": _recipe}
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] not in commands:
        print(f"error: unknown command {argv[0]!r}; allowed: {', '.join(commands)}", file=sys.stderr)
        return 2
    try:
        return commands[argv[0]](argv[1:])
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
