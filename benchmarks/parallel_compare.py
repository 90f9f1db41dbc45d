"""How close rollouts over workers come to the in-process rollout (the numbers in docs/PERFORMANCE.md).

    python -m benchmarks.parallel_compare --num-envs 8 --workers 2 4 --seeds 0 1 2 3 [--steps 100]

For each seed: W = 1 and each W run the same random actions (state observations) from
`reset(seed=...)`; prints the largest difference in observations and rewards over the rollout,
the first step at which anything differs, and how many envs differ at the end.
"""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym
import numpy as np
import torch

import envs
from envs.modes import ControlMode


def rollout(env: gym.Env, seed: int, actions: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    for a in actions:
        obs, reward, *_ = env.step(a)
        observations.append(obs)
        rewards.append(reward)
    return torch.stack(observations), torch.stack(rewards)  # (T + 1, N, D), (T, N)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.parallel_compare", description=__doc__.split("\n\n")[0])
    p.add_argument("-e", "--env-id", default="PickCube-v1", help=f"one of: {', '.join(envs.env_ids())}")
    p.add_argument("-n", "--num-envs", type=int, default=8)
    p.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("-c", "--control-mode", default="pd_joint_delta_pos", help=f"one of: {', '.join(m.value for m in ControlMode)}")
    args = p.parse_args(argv)
    try:
        env_id = envs.check_env_id(args.env_id)
        made = {w: gym.make(env_id, num_envs=args.num_envs, num_workers=w, control_mode=args.control_mode) for w in [1, *args.workers]}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{env_id}  N={args.num_envs}  control={args.control_mode}  steps={args.steps}  (differences vs W=1)")
    print(f"{'seed':>4} {'W':>3} {'max |obs|':>10} {'max |reward|':>12} {'first step':>10} {'envs differing':>14}")
    try:
        for seed in args.seeds:
            rng = np.random.default_rng(seed)
            space = made[1].action_space
            actions = [rng.uniform(space.low, space.high).astype(np.float32) for _ in range(args.steps)]
            o1, r1 = rollout(made[1], seed, actions)
            for w in args.workers:
                o, r = rollout(made[w], seed, actions)
                d = (o - o1).abs().amax(dim=2)  # (T + 1, N)
                differs = torch.nonzero(d.amax(dim=1) > 0).flatten()
                first = str(int(differs[0])) if len(differs) else "-"
                print(
                    f"{seed:>4} {w:>3} {d.max():>10.1e} {(r - r1).abs().max():>12.1e} {first:>10} "
                    f"{int((d[-1] > 0).sum()):>8} of {args.num_envs}"
                )
    finally:
        for env in made.values():
            env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
