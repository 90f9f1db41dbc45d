"""PullCube-v1, as ManiSkill 3.0.1 defines it.

Task: pull a 4 cm cube ("cube") along the table back towards the robot into a goal region
("goal_region"): a red and white target of 10 cm radius drawn flat on the table, with no
collision, seen by every camera.

Randomisation: the cube's centre is uniform in x, y in [-0.1, 0.1] (m, table frame), resting on
the table, never turned (identity orientation); the goal region sits a fixed 0.2 m (0.1 m plus its
radius) back along -x, 1 mm above the table; the arm starts at its rest keyframe with
N(0, 0.02) rad noise.

Success: the cube's centre is less than the goal radius (0.1 m) from the goal region's centre in
the table plane, at any height. No fail condition.

Reward (dense, at most 3; `compute_dense_reward` divides by 3): reaching the pull pose (1 cm
beyond the cube's far face, `1 - tanh(5 d)`), then, once within 1 cm of it, the cube's
closeness to the goal (`1 - tanh(5 d)`); 3 on success.

For a motion planner: as PushCube-v1; `push_point()` lies on the cube's far side here: lower the
closed gripper there and move back along `goal_pos - cube`.
"""

from __future__ import annotations

import torch

from envs.core.registry import register_env
from envs.tasks.push_cube import PushCubeEnv


@register_env("PullCube-v1", max_episode_steps=50)
class PullCubeEnv(PushCubeEnv):
    goal_dx = -(0.1 + PushCubeEnv.goal_radius)
    success_max_z = None
    push_offset = (PushCubeEnv.cube_half_size + 2 * 0.005, 0.0, 0.0)
    max_reward = 3.0
    base_camera_eye_target = ((-0.5, 0.0, 0.25), (0.2, 0.0, -0.5))

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose, "goal_pos": self.goal_pos}
        if self.obs_mode.include_state:
            obs["obj_pose"] = self.cube.pose()
        return obs

    def dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        reach, reached, place_ = self._reach_and_place()
        reward = reach + place_ * reached
        return torch.where(info["success"], torch.full_like(reward, self.max_reward), reward)
