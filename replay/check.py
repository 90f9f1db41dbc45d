"""Open-loop replay of recorded actions, compared with the recorded states step by step."""

from __future__ import annotations

import numpy as np
import torch

from envs.core.pose import pose_mul
from replay.control import ConvertLimits
from replay.batch import open_loop, start
from replay.trajectory import Episode


def check_replay(env, episodes: list[Episode], limits: ConvertLimits) -> list[tuple[bool, str]]:
    """Replays each episode's actions in env i (num_envs >= len(episodes), any obs mode) from its
    recorded initial state. Per episode: (success at its last step, "success" or why not, naming
    the first step where the TCP or an object strayed past the limits' tolerances from the
    recorded state)."""
    base = env.unwrapped
    k = len(episodes)
    padded = start(env, episodes)
    agent = base.agent
    dof = agent.dof
    name = agent.name
    # recorded TCP poses in the env frame, (T + 1, 3) per episode
    tcps = []
    for i, e in enumerate(episodes):
        q = torch.from_numpy(e.env_states["articulations"][name][:, 13 : 13 + dof]).double()
        root = agent.root_pose[i : i + 1].double().expand(len(q), 7)
        tcps.append(pose_mul(root, agent.tcp_pose_root(q))[:, :3].float().numpy())
    lost: list[tuple[int, float, float] | None] = [None] * k
    success = [False] * k
    for t, (*_, info) in open_loop(env, padded):
        tcp = agent.tcp_pose[:, :3].numpy()
        actors = {a: g.pose()[:, :3].numpy() for a, g in base.world.actors.items() if a in padded[0].env_states["actors"]}
        for i, e in enumerate(episodes):
            if t >= e.length:
                continue
            if t == e.length - 1:
                success[i] = bool(info["success"][i])
            if lost[i] is None:
                tcp_err = float(np.linalg.norm(tcp[i] - tcps[i][t + 1]))
                obj_err = max((float(np.linalg.norm(p[i] - e.env_states["actors"][a][t + 1, :3])) for a, p in actors.items()), default=0.0)
                if tcp_err > limits.tcp_tolerance or obj_err > limits.object_tolerance:
                    lost[i] = (t + 1, tcp_err, obj_err)
    out = []
    for ok, where in zip(success, lost):
        if ok:
            out.append((True, "success"))
            continue
        why = "recorded actions do not reproduce success"
        if where is not None:
            why += f" (replay left the recorded states at step {where[0]}: TCP {where[1] * 100:.1f} cm, objects {where[2] * 100:.1f} cm off)"
        out.append((False, why + "; --use-env-states renders the states as recorded"))
    return out
