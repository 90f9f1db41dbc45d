"""`policies`: train imitation policies on demonstrations and evaluate their checkpoints.

    policies train bc|diffusion|act --data FILE.h5 [--config configs/NAME.yaml] [--section.key value ...]
    policies eval CHECKPOINT [--episodes 100] [--num-envs 16] [--action-horizon K] [--video DIR]
    policies recipe build configs/recipes/NAME.yaml [--jobs N] [--dry-run] [--demos-only]
    policies recipe run configs/recipes/NAME.yaml [--jobs N] [--section.key value ...]

`policies train diffusion --help` lists every field of the config with its meaning and default
(the defaults shown are those after --config). Errors in a config are one line and exit 2.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from envs.cli import Command, parse
from envs.cli import main as run_cli
from policies.config import Rollouts
from policies.kinds import KINDS, load_run

TRAIN_USAGE = f"""usage: policies train {{{','.join(KINDS)}}} --data FILE.h5 [--config FILE.yaml] [--section.key VALUE ...]

Train a policy. --config (a YAML file under configs/) sets the config's defaults; the options
after it override them. `policies train KIND --help` lists every field of KIND's config with its
default (those after --config when given)."""


@dataclass(kw_only=True)
class EvalArgs(Rollouts):
    checkpoint: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="CHECKPOINT")]
    """checkpoint written by `policies train` (best.ckpt or last.ckpt)"""
    # the rollouts' settings with this command's defaults (their help is written in Rollouts)
    episodes: int = 100
    num_envs: int = 16
    seed: int = 200_000
    video: Annotated[str, tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: no videos)")] = ""
    action_horizon: int = 0
    """actions executed from each predicted chunk before predicting again (0: the checkpoint's;
    at most pred_horizon - obs_horizon + 1); fewer react sooner, more act smoother"""
    device: str = "auto"
    """torch device of the policy: auto (cuda when available), cpu, cuda, cuda:1, ..."""
    json: Annotated[str | None, tyro.conf.arg(metavar="PATH", help_behavior_hint="(default: none)")] = None
    """also write the results to this JSON file"""
    executor: str = "local"
    """local (this process and its env worker processes) or ray (Ray actors, each with an env of
    num_envs and its copy of the policy; pip install -e ".[ray]")"""
    address: Annotated[str | None, tyro.conf.arg(metavar="ADDR", help_behavior_hint="(default: a local Ray started for the run)")] = None
    """the Ray cluster to join, e.g. HEAD:6379"""
    keep_workers: Annotated[float, tyro.conf.arg(metavar="MINUTES")] = 0.0
    """with --address: the Ray workers stay up this long after the run, idle, and the next command
    on that cluster takes them over instead of starting its own (0: they stop with the run)"""
    workers: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(default: 1; with --executor ray, one per CPU of the cluster, per render slot for camera policies)")] = None
    """workers: env worker processes (envs.parallel), or Ray actors with --executor ray"""

    def __post_init__(self) -> None:
        if not Path(self.checkpoint).is_file():
            raise ValueError(f"{self.checkpoint}: no such file")
        super().__post_init__()
        if self.episodes == 0:
            raise ValueError("--episodes must be > 0")
        if self.action_horizon < 0:
            raise ValueError(f"--action-horizon must be >= 0, got {self.action_horizon}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {self.workers}")
        from envs.executor import parse_executor

        parse_executor(self.executor, self.address, self.keep_workers)


def _train(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(TRAIN_USAGE)
        return 0
    if not argv or argv[0].startswith("-"):
        raise ValueError(f"policies train: a policy is required: {', '.join(KINDS)} (see policies train --help)")
    kind, rest = argv[0], argv[1:]
    config = None
    if "--config" in rest:
        i = rest.index("--config")
        if i + 1 >= len(rest):
            raise ValueError("--config needs a file")
        config, rest = rest[i + 1], rest[:i] + rest[i + 2 :]
    default = load_run(kind, config)
    run = parse(type(default), rest, default=default, prog=f"policies train {kind}",
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


def _eval(args: EvalArgs) -> int:
    import torch

    from policies.evaluate import evaluate, summary
    from policies.module import load_policy

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    policy, module = load_policy(args.checkpoint, device)
    if args.action_horizon:  # the policy config validates it against the checkpoint's horizons
        policy.cfg = dataclasses.replace(policy.cfg, action_horizon=args.action_horizon)
    result = evaluate(policy, module.env, args.episodes, args.num_envs, args.workers, args.seed,
                      args.max_episode_steps, args.video, args.executor, args.address, args.keep_workers)
    result.update(checkpoint=args.checkpoint, env_id=module.env["env_id"], obs_mode=module.spec.obs_mode,
                  control_mode=module.env["control_mode"], policy=module.run_cfg.kind,
                  action_horizon=policy.cfg.action_horizon)
    print(summary(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


@dataclass
class RecipeArgs:
    action: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="{build,run}")]
    """build (the dataset) or run (build, then train and evaluate)"""
    recipe: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="RECIPE")]
    """recipe file, e.g. configs/recipes/diffusion_state_PickCube.yaml"""
    jobs: int = 0
    """conversions run at once (0: all of the recipe's)"""
    dry_run: bool = False
    """build: print the commands still to run, run none"""
    demos_only: bool = False
    """build: stop after the motion-planned demos (plan on one machine, render and train on another)"""

    def __post_init__(self) -> None:
        if self.action not in ("build", "run"):
            raise ValueError(f"unknown action {self.action!r}; allowed: build, run")
        if self.jobs < 0:
            raise ValueError(f"--jobs must be >= 0, got {self.jobs}")


RECIPE_USAGE = """usage: policies recipe build RECIPE.yaml [--jobs N] [--dry-run] [--demos-only]
       policies recipe run RECIPE.yaml [--jobs N] [--section.key VALUE ...]

build: make the recipe's dataset (demos, conversion, perturbed copies, merge), reusing the files
that exist. run: build, then train and evaluate the recipe's policy on it; options after the
recipe override its run settings as `policies train KIND` takes them (see its --help)."""

_RECIPE_FLAGS = {"--jobs": 2, "--dry-run": 1, "--demos-only": 1}  # RecipeArgs' own; the rest are the run's


def _recipe(argv: list[str]) -> int:
    if not argv or argv[:1] in (["-h"], ["--help"]):
        print(RECIPE_USAGE)
        return 0 if argv else 2
    own, rest = argv, []
    if argv[0] == "run":  # RecipeArgs' own flags; the rest are the run's settings
        own, rest, i = argv[:2], [], 2
        while i < len(argv):
            name = argv[i].partition("=")[0]
            take = (1 if "=" in argv[i] else _RECIPE_FLAGS[name]) if name in _RECIPE_FLAGS else 0
            (own if take else rest).extend(argv[i : i + (take or 1)])
            i += take or 1
    args = parse(RecipeArgs, own, prog="policies recipe", description=RECIPE_USAGE)
    from policies import recipe as recipes

    recipe = recipes.load_recipe(args.recipe)
    try:
        if args.action == "build":
            print(recipes.build(recipe, args.jobs, args.dry_run, demos_only=args.demos_only))
            return 0
        # the run's options are checked before the build (the recipe file stands in for the data until it exists)
        default = recipe.run_config(data=args.recipe)
        run = parse(type(default), rest, default=default, prog=f"policies recipe run {args.recipe}",
                    description=f"Train and evaluate recipe {recipe.name} ({recipe.policy}); options override its run settings.")
        _print_results(recipes.run(recipe, run, args.jobs))
    except recipes.BuildError as e:
        raise ValueError(str(e)) from None
    return 0


COMMANDS = {
    "train": Command("train a policy (" + ", ".join(KINDS) + ") on demonstrations", _train),
    "eval": Command("evaluate a checkpoint in the batched simulator", _eval, EvalArgs, {"--num-workers": "--workers"}),
    "recipe": Command("build a recipe's dataset (build), or build it and train and evaluate (run)", _recipe),
}


def main(argv: list[str] | None = None) -> int:
    return run_cli("policies", "Train imitation policies on demonstrations and evaluate their checkpoints.", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
